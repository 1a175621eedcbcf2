package kernels

// Time functions. ts is a timestamp of any unit, and also a date32 or
// date64 where noted. NULL in, NULL out. unit and pattern arguments must
// be constant strings; units are case-insensitive.
//
// Time zone: calendar fields (year, month, day, hour, ...) are those of the
// wall clock in the timestamp type's TimeZone. A timestamp without a zone
// (Flink TIMESTAMP) or with "UTC" counts its ticks in UTC, the fast path. A
// zone such as "Europe/Paris" (Flink TIMESTAMP_LTZ with that session zone)
// is loaded with Go's time package (arrow's TimestampType.GetZone; the
// tzdata of the host or of a binary that imports time/tzdata), an offset
// such as "+05:30" is fixed. A zone that cannot be loaded is a compile
// error. Dates are calendar days without a zone.
//
//	floor_time(ts, unit) -> type of ts
//	    FLOOR(ts TO unit): the start of the unit containing ts, toward the
//	    past (also before 1970). unit: MILLISECOND, SECOND, MINUTE, HOUR,
//	    DAY, WEEK, MONTH, QUARTER, YEAR. Weeks start on Monday (ISO 8601;
//	    Calcite, hence Flink, floors weeks to Sunday). A unit finer than
//	    the timestamp's unit returns ts. Dates accept DAY and coarser.
//	    In a zone with daylight saving time, a local midnight that does
//	    not exist or exists twice resolves as Go's time.Date does.
//	ceil_time(ts, unit) -> type of ts
//	    CEIL(ts TO unit): ts when it is already at the start of a unit,
//	    else the start of the next unit.
//	extract(unit, ts) -> int64
//	    EXTRACT(unit FROM ts), as Flink: YEAR; QUARTER 1-4; MONTH 1-12;
//	    WEEK 1-53 (ISO 8601 week of the ISO year); DAY (of month); DOW
//	    1 = Sunday .. 7 = Saturday (Flink DAYOFWEEK); DOY 1-366; HOUR 0-23;
//	    MINUTE 0-59; SECOND 0-59; MILLISECOND 0-999 and MICROSECOND
//	    0-999999 within the second (Flink; PostgreSQL would add the
//	    seconds); EPOCH, the seconds since 1970-01-01 00:00:00 UTC floored
//	    (for a zoned timestamp the instant's, for a zoneless one its wall
//	    clock's). Dates accept YEAR, QUARTER, MONTH, WEEK, DAY, DOW, DOY
//	    and EPOCH.
//	date_format(ts, pattern) -> string
//	    Formats ts with a constant pattern in the style of Java's
//	    DateTimeFormatter, which Flink's DATE_FORMAT uses (and which
//	    mostly agrees with SimpleDateFormat):
//	      yyyy year padded to 4 digits (a '+' sign above 9999), yy last two
//	        digits, y unpadded; the year of era, as Java prints it (1 BC is
//	        year 1)
//	      M, MM month 1-12 (MM padded), MMM Jan, MMMM January
//	      d, dd day of month; D, DD, DDD day of year
//	      H, HH hour 0-23; h, hh hour 1-12; a AM/PM
//	      m, mm minute; s, ss second
//	      S..SSSSSSSSS the first 1 to 9 digits of the fraction of second
//	      E, EE, EEE Mon; EEEE Monday
//	      'text' literal text; '' a single quote (also inside quotes)
//	    Any other ASCII letter, or too many repetitions of one (ddd), is a
//	    compile error; other characters are copied, also [ ] # { } (Java
//	    reserves them for optional sections). Names are English. Dates
//	    format with a time of 00:00:00.

import (
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

func init() {
	registerFunc("floor_time", func(c *compiler, call *CallExpr, args []node) (node, error) {
		return compileFloorTime(call, args, false)
	})
	registerFunc("ceil_time", func(c *compiler, call *CallExpr, args []node) (node, error) {
		return compileFloorTime(call, args, true)
	})
	registerFunc("extract", compileExtract)
	registerFunc("date_format", compileDateFormat)
}

// tmUnit is a unit of floor_time, ceil_time and extract.
type tmUnit uint8

const (
	tmMillisecond tmUnit = iota
	tmSecond
	tmMinute
	tmHour
	tmDay
	tmWeek
	tmMonth
	tmQuarter
	tmYear
	// extract only
	tmMicrosecond
	tmDOW
	tmDOY
	tmEpoch
)

var tmUnitNames = map[string]tmUnit{
	"MILLISECOND": tmMillisecond, "SECOND": tmSecond, "MINUTE": tmMinute, "HOUR": tmHour,
	"DAY": tmDay, "WEEK": tmWeek, "MONTH": tmMonth, "QUARTER": tmQuarter, "YEAR": tmYear,
	"MICROSECOND": tmMicrosecond, "DOW": tmDOW, "DOY": tmDOY, "EPOCH": tmEpoch,
}

// tmFixedNanos is the length of the fixed-length units in nanoseconds.
var tmFixedNanos = [...]int64{
	tmMillisecond: 1e6, tmSecond: 1e9, tmMinute: 60e9, tmHour: 3600e9, tmDay: 86400e9, tmWeek: 7 * 86400e9,
}

const secondsPerDay = 86400

// ---- time zones ----

type tmZoneKind uint8

const (
	tmUTC   tmZoneKind = iota
	tmFixed            // a constant offset
	tmLoc              // a time.Location with transitions
)

// tmZone is the time zone in which the calendar fields of a temporal value
// are computed.
type tmZone struct {
	kind tmZoneKind
	off  int64 // seconds east of UTC (tmFixed)
	loc  *time.Location
}

// tmZoneOf returns the zone of a timestamp type (UTC for other types).
func tmZoneOf(dt arrow.DataType) (tmZone, error) {
	ts, ok := dt.(*arrow.TimestampType)
	if !ok {
		return tmZone{}, nil
	}
	switch strings.ToUpper(ts.TimeZone) {
	case "", "UTC", "Z", "ETC/UTC", "GMT", "ETC/GMT", "UCT", "ZULU", "UNIVERSAL", "+00:00", "-00:00":
		return tmZone{}, nil
	}
	if off, ok := tmParseOffset(ts.TimeZone); ok {
		return tmZone{kind: tmFixed, off: off}, nil
	}
	loc, err := ts.GetZone()
	if err != nil {
		return tmZone{}, err
	}
	return tmZone{kind: tmLoc, loc: loc}, nil
}

// tmParseOffset parses a [+-]HH:MM offset into seconds.
func tmParseOffset(s string) (int64, bool) {
	if len(s) != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':' {
		return 0, false
	}
	d := func(c byte) (int64, bool) { return int64(c - '0'), c >= '0' && c <= '9' }
	h1, ok1 := d(s[1])
	h2, ok2 := d(s[2])
	m1, ok3 := d(s[4])
	m2, ok4 := d(s[5])
	if !ok1 || !ok2 || !ok3 || !ok4 || m1 > 5 {
		return 0, false
	}
	off := (h1*10+h2)*3600 + (m1*10+m2)*60
	if s[0] == '-' {
		off = -off
	}
	return off, true
}

// offsetAt is the zone's offset from UTC in seconds at the instant secs.
func (z *tmZone) offsetAt(secs int64) int64 {
	switch z.kind {
	case tmUTC:
		return 0
	case tmFixed:
		return z.off
	}
	_, off := time.Unix(secs, 0).In(z.loc).Zone()
	return int64(off)
}

// instantOf is the instant (seconds since the epoch) of the local wall
// clock time ls (seconds since 1970-01-01 00:00 local).
func (z *tmZone) instantOf(ls int64) int64 {
	switch z.kind {
	case tmUTC:
		return ls
	case tmFixed:
		return ls - z.off
	}
	days, sod := tmFloorDiv(ls, secondsPerDay), tmFloorMod(ls, secondsPerDay)
	y, m, d := tmCivil(days)
	return time.Date(int(y), time.Month(m), d, int(sod/3600), int(sod/60%60), int(sod%60), 0, z.loc).Unix()
}

// ---- temporal arguments ----

// tmSource describes the values of a temporal argument: timestamps and
// date64 count ticks (perSec of them per second) since the epoch, date32
// counts days.
type tmSource struct {
	typ    arrow.DataType
	days   bool  // date32
	perSec int64 // ticks per second (timestamps, date64)
	zone   tmZone

	sec, day tmDivider // by perSec, by ticks per day
}

func newTmSource(typ arrow.DataType, perSec int64, zone tmZone) tmSource {
	return tmSource{typ: typ, perSec: perSec, zone: zone, sec: newTmDivider(perSec), day: newTmDivider(perSec * secondsPerDay)}
}

// tmSourceOf describes dt, or reports that it is not a supported temporal
// type.
func tmSourceOf(dt arrow.DataType) (tmSource, bool, error) {
	switch t := dt.(type) {
	case *arrow.TimestampType:
		z, err := tmZoneOf(t)
		if err != nil {
			return tmSource{}, true, err
		}
		return newTmSource(dt, 1e9/unitNanos(t.Unit), z), true, nil
	case *arrow.Date32Type:
		return tmSource{typ: dt, days: true}, true, nil
	case *arrow.Date64Type:
		return newTmSource(dt, 1000, tmZone{}), true, nil
	}
	return tmSource{}, false, nil
}

func (s *tmSource) isDate() bool { return s.days || s.typ.ID() == arrow.DATE64 }

// local returns the wall-clock seconds of x (seconds since 1970-01-01
// 00:00 in the zone) and the nanoseconds within the second.
func (s *tmSource) local(x int64) (ls, nanos int64) {
	if s.days {
		return x * secondsPerDay, 0
	}
	secs, sub := s.sec.divMod(x)
	nanos = sub * (1e9 / s.perSec)
	return secs + s.zone.offsetAt(secs), nanos
}

// localDays returns the local calendar day of x, in days since 1970-01-01.
func (s *tmSource) localDays(x int64) int64 {
	if s.days {
		return x
	}
	if s.zone.kind == tmUTC {
		q, _ := s.day.divMod(x)
		return q
	}
	ls, _ := s.local(x)
	return tmFloorDiv(ls, secondsPerDay)
}

// fromLocal converts local wall-clock seconds (at a whole second) back to a
// value of the source type, reporting overflow.
func (s *tmSource) fromLocal(ls int64) (int64, bool) {
	if s.days {
		return tmFloorDiv(ls, secondsPerDay), true
	}
	secs := s.zone.instantOf(ls)
	if secs > math.MaxInt64/s.perSec || secs < math.MinInt64/s.perSec {
		return 0, false
	}
	return secs * s.perSec, true
}

func tmFloorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func tmFloorMod(a, b int64) int64 {
	m := a % b
	if m != 0 && ((m < 0) != (b < 0)) {
		m += b
	}
	return m
}

// tmDivider divides by a positive divisor fixed when an expression is
// compiled. A 64-bit hardware division by a divisor unknown to the Go
// compiler costs tens of cycles and dominates the time kernels; here a
// float64 estimate of the quotient is corrected exactly with integer
// arithmetic (a step or two: the estimate is off by at most
// |x/d| * 2^-52 + 1).
type tmDivider struct {
	d   int64
	inv float64
}

func newTmDivider(d int64) tmDivider { return tmDivider{d: d, inv: 1 / float64(d)} }

// divMod returns floor(x/d) and x - d*floor(x/d), in [0, d).
func (v tmDivider) divMod(x int64) (q, r int64) {
	if v.d == 1 {
		return x, 0
	}
	// Flooring the estimate (one instruction on amd64) makes the
	// corrections below rare, hence well predicted, also for x < 0.
	q = int64(math.Floor(float64(x) * v.inv))
	// r is exact even when q*d wraps: its true value is small.
	r = x - q*v.d
	for r < 0 {
		q--
		r += v.d
	}
	for r >= v.d {
		q++
		r -= v.d
	}
	return q, r
}

// tmCivil converts days since 1970-01-01 to a proleptic Gregorian date
// (Howard Hinnant's algorithm; exact for every int64 day count that
// these types can hold).
func tmCivil(days int64) (y int64, m, d int) {
	z := days + 719468
	era := tmFloorDiv(z, 146097)
	doe := z - era*146097                                  // [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // [0, 399]
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100) // [0, 365]
	mp := (5*doy + 2) / 153                  // [0, 11], March = 0
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
		y++
	}
	return y, m, d
}

// tmDays converts a proleptic Gregorian date to days since 1970-01-01; m
// may be any month number (13 is January of the next year).
func tmDays(y int64, m, d int) int64 {
	y += tmFloorDiv(int64(m-1), 12)
	m = int(tmFloorMod(int64(m-1), 12)) + 1
	if m <= 2 {
		y--
	}
	era := tmFloorDiv(y, 400)
	yoe := y - era*400
	mp := int64((m + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// tmISOWeekday is 1 for Monday .. 7 for Sunday (1970-01-01 was a Thursday).
func tmISOWeekday(days int64) int { return int(tmFloorMod(days+3, 7)) + 1 }

// tmISOWeek is the ISO 8601 week number of a day: the week (Monday to
// Sunday) whose Thursday lies in the ISO year, counted from the week with
// the year's first Thursday.
func tmISOWeek(days int64) int {
	thursday := days - int64(tmISOWeekday(days)) + 4
	y, _, _ := tmCivil(thursday)
	return int((thursday-tmDays(y, 1, 1))/7) + 1
}

// tmUnitArg reads a constant unit argument.
func tmUnitArg(call *CallExpr, args []node, i int, allowed func(tmUnit) bool) (tmUnit, error) {
	s, ok, isNull := constString(args[i])
	if !ok || isNull || args[i].dtype().ID() != arrow.STRING {
		return 0, compileErr(call, "argument %d of %s must be a constant unit name (a string), got %s", i+1, call.Func, args[i].source())
	}
	u, known := tmUnitNames[strings.ToUpper(s)]
	if !known || !allowed(u) {
		return 0, compileErr(call, "%s does not support the unit %q", call.Func, s)
	}
	return u, nil
}

// tmSourceArg type-checks a temporal argument.
func tmSourceArg(call *CallExpr, args []node, i int) (tmSource, error) {
	src, ok, err := tmSourceOf(args[i].dtype())
	if !ok {
		return src, strArgErr(call, i, "a timestamp or date", args[i].dtype())
	}
	if err != nil {
		return src, compileErr(call, "time zone of %s: %v", args[i].dtype(), err)
	}
	return src, nil
}
