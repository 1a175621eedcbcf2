package kernels

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zone tests must not depend on the host's tzdata

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/internal/testutil"
)

// The time references work on time.Time values in the zone's location and
// build results with time.Date, independently of the kernels' arithmetic.

// timeRefTime is the instant of ticks of unit, in loc.
func timeRefTime(ticks int64, unit arrow.TimeUnit, loc *time.Location) time.Time {
	switch unit {
	case arrow.Second:
		return time.Unix(ticks, 0).In(loc)
	case arrow.Millisecond:
		return time.UnixMilli(ticks).In(loc)
	case arrow.Microsecond:
		return time.UnixMicro(ticks).In(loc)
	}
	return time.Unix(0, ticks).In(loc)
}

func timeRefTicks(t time.Time, unit arrow.TimeUnit) int64 {
	switch unit {
	case arrow.Second:
		return t.Unix()
	case arrow.Millisecond:
		return t.UnixMilli()
	case arrow.Microsecond:
		return t.UnixMicro()
	}
	return t.UnixNano()
}

// timeRefDay is the date of a date32 value, as a UTC midnight.
func timeRefDay(days int64) time.Time { return time.Unix(days*86400, 0).UTC() }

// timeRefFloorTime floors t to the start of unit u in t's location: the
// local clock fields below u cleared, weeks starting on Monday.
func timeRefFloorTime(t time.Time, u string) time.Time {
	y, m, d := t.Date()
	loc := t.Location()
	clock := time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
		time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
	switch u {
	case "MILLISECOND":
		return t.Add(-time.Duration(t.Nanosecond() % 1e6))
	case "SECOND":
		return t.Add(-time.Duration(t.Nanosecond()))
	case "MINUTE":
		return t.Add(-(clock % time.Minute))
	case "HOUR":
		return t.Add(-(clock % time.Hour))
	case "DAY":
		return time.Date(y, m, d, 0, 0, 0, 0, loc)
	case "WEEK":
		back := (int(t.Weekday()) + 6) % 7
		return time.Date(y, m, d-back, 0, 0, 0, 0, loc)
	case "MONTH":
		return time.Date(y, m, 1, 0, 0, 0, 0, loc)
	case "QUARTER":
		return time.Date(y, (m-1)/3*3+1, 1, 0, 0, 0, 0, loc)
	case "YEAR":
		return time.Date(y, 1, 1, 0, 0, 0, 0, loc)
	}
	panic("unit " + u)
}

// timeRefNext is the start of the unit after the one starting at f.
func timeRefNext(f time.Time, u string) time.Time {
	y, m, d := f.Date()
	loc := f.Location()
	switch u {
	case "MILLISECOND":
		return f.Add(time.Millisecond)
	case "SECOND":
		return f.Add(time.Second)
	case "MINUTE":
		return f.Add(time.Minute)
	case "HOUR":
		return f.Add(time.Hour)
	case "DAY":
		return time.Date(y, m, d+1, 0, 0, 0, 0, loc)
	case "WEEK":
		return time.Date(y, m, d+7, 0, 0, 0, 0, loc)
	case "MONTH":
		return time.Date(y, m+1, 1, 0, 0, 0, 0, loc)
	case "QUARTER":
		return time.Date(y, m+3, 1, 0, 0, 0, 0, loc)
	}
	return time.Date(y+1, 1, 1, 0, 0, 0, 0, loc)
}

var timeRefUnitTicks = map[arrow.TimeUnit]time.Duration{
	arrow.Second: time.Second, arrow.Millisecond: time.Millisecond, arrow.Microsecond: time.Microsecond, arrow.Nanosecond: 1,
}

// timeRefFloorCeil is floor_time/ceil_time of a timestamp of unit in loc;
// unit "date" means a date32 value.
func timeRefFloorCeil(v, u any, unit arrow.TimeUnit, loc *time.Location, ceil bool) (any, error) {
	if v == nil || u == nil {
		return nil, nil
	}
	name := strings.ToUpper(u.(string))
	t := timeRefTime(v.(int64), unit, loc)
	f := timeRefFloorTime(t, name)
	if ceil && !f.Equal(t) {
		f = timeRefNext(f, name)
	}
	return timeRefTicks(f, unit), nil
}

func timeRefFloorCeilDate(v, u any, ceil bool) (any, error) {
	if v == nil {
		return nil, nil
	}
	name := strings.ToUpper(u.(string))
	t := timeRefDay(v.(int64))
	f := timeRefFloorTime(t, name)
	if ceil && !f.Equal(t) {
		f = timeRefNext(f, name)
	}
	return f.Unix() / 86400, nil
}

// timeRefFields is extract's reference on a time in its location.
func timeRefFields(t time.Time, u string) int64 {
	_, week := t.ISOWeek()
	switch u {
	case "YEAR":
		return int64(t.Year())
	case "QUARTER":
		return int64(t.Month()+2) / 3
	case "MONTH":
		return int64(t.Month())
	case "WEEK":
		return int64(week)
	case "DAY":
		return int64(t.Day())
	case "DOW":
		return int64(t.Weekday()) + 1
	case "DOY":
		return int64(t.YearDay())
	case "HOUR":
		return int64(t.Hour())
	case "MINUTE":
		return int64(t.Minute())
	case "SECOND":
		return int64(t.Second())
	case "MILLISECOND":
		return int64(t.Nanosecond() / 1e6)
	case "MICROSECOND":
		return int64(t.Nanosecond() / 1e3)
	case "EPOCH":
		return t.Unix()
	}
	panic("unit " + u)
}

func timeRefExtract(u, v any, unit arrow.TimeUnit, loc *time.Location) (any, error) {
	if v == nil || u == nil {
		return nil, nil
	}
	return timeRefFields(timeRefTime(v.(int64), unit, loc), strings.ToUpper(u.(string))), nil
}

// timeRefFormat formats t by a DateTimeFormatter-style pattern, letter by
// letter with fmt and time.Time's accessors.
func timeRefFormat(t time.Time, p string) (string, error) {
	var sb strings.Builder
	for i := 0; i < len(p); {
		c := p[i]
		if c == '\'' {
			j := i + 1
			for {
				if j >= len(p) {
					return "", errors.New("unterminated quote")
				}
				if p[j] == '\'' {
					if j+1 < len(p) && p[j+1] == '\'' {
						sb.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				sb.WriteByte(p[j])
				j++
			}
			if j == i+1 {
				sb.WriteByte('\'') // '' outside quotes
			}
			i = j + 1
			continue
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			sb.WriteByte(c)
			i++
			continue
		}
		w := 1
		for i+w < len(p) && p[i+w] == c {
			w++
		}
		i += w
		switch {
		case c == 'y':
			y := t.Year()
			if y <= 0 {
				y = 1 - y
			}
			switch {
			case w == 2:
				fmt.Fprintf(&sb, "%02d", y%100)
			case w >= 4 && len(fmt.Sprint(y)) > w:
				fmt.Fprintf(&sb, "+%d", y)
			default:
				fmt.Fprintf(&sb, "%0*d", w, y)
			}
		case c == 'M' && w <= 2:
			fmt.Fprintf(&sb, "%0*d", w, int(t.Month()))
		case c == 'M' && w == 3:
			sb.WriteString(t.Month().String()[:3])
		case c == 'M' && w == 4:
			sb.WriteString(t.Month().String())
		case c == 'd' && w <= 2:
			fmt.Fprintf(&sb, "%0*d", w, t.Day())
		case c == 'D' && w <= 3:
			fmt.Fprintf(&sb, "%0*d", w, t.YearDay())
		case c == 'H' && w <= 2:
			fmt.Fprintf(&sb, "%0*d", w, t.Hour())
		case c == 'h' && w <= 2:
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			fmt.Fprintf(&sb, "%0*d", w, h)
		case c == 'm' && w <= 2:
			fmt.Fprintf(&sb, "%0*d", w, t.Minute())
		case c == 's' && w <= 2:
			fmt.Fprintf(&sb, "%0*d", w, t.Second())
		case c == 'S' && w <= 9:
			sb.WriteString(fmt.Sprintf("%09d", t.Nanosecond())[:w])
		case c == 'a' && w == 1:
			if t.Hour() < 12 {
				sb.WriteString("AM")
			} else {
				sb.WriteString("PM")
			}
		case c == 'E' && w <= 3:
			sb.WriteString(t.Weekday().String()[:3])
		case c == 'E' && w == 4:
			sb.WriteString(t.Weekday().String())
		default:
			return "", fmt.Errorf("pattern letter %q x%d", c, w)
		}
	}
	return sb.String(), nil
}

func timeRefDateFormat(v, p any, unit arrow.TimeUnit, loc *time.Location) (any, error) {
	if v == nil || p == nil {
		return nil, nil
	}
	return timeRefFormat(timeRefTime(v.(int64), unit, loc), p.(string))
}

// ---- random values ----

var (
	timeRandLo = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	timeRandHi = time.Date(2100, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
)

// timeRandTicks is a random timestamp of unit between 1900 and 2100;
// a third of them fall on a whole day, hour or minute (with a sub-second
// part of zero) so that ceil meets values already on a boundary.
func timeRandTicks(unit arrow.TimeUnit) func(*rand.Rand) any {
	per := int64(time.Second / timeRefUnitTicks[unit])
	return func(rng *rand.Rand) any {
		sec := timeRandLo + rng.Int64N(timeRandHi-timeRandLo)
		switch rng.IntN(9) {
		case 0:
			return tmFloorDiv(sec, 86400) * 86400 * per
		case 1:
			return tmFloorDiv(sec, 3600) * 3600 * per
		case 2:
			return tmFloorDiv(sec, 60) * 60 * per
		}
		return sec*per + rng.Int64N(per)
	}
}

func timeRandDays(rng *rand.Rand) any {
	return tmFloorDiv(timeRandLo, 86400) + rng.Int64N((timeRandHi-timeRandLo)/86400)
}

// timeCols are timestamp columns of every unit and several zones, with
// the location their reference computes in.
var timeCols = []struct {
	name string
	unit arrow.TimeUnit
	zone string
}{
	{"ts_s", arrow.Second, ""},
	{"ts_ms", arrow.Millisecond, "UTC"},
	{"ts_us", arrow.Microsecond, ""},
	{"ts_ns", arrow.Nanosecond, "UTC"},
	{"ts_us_kolkata", arrow.Microsecond, "+05:30"},
	{"ts_ms_ny", arrow.Millisecond, "America/New_York"},
	{"ts_ns_howe", arrow.Nanosecond, "Australia/Lord_Howe"},
	{"ts_s_paris", arrow.Second, "Europe/Paris"},
}

func timeLoc(t *testing.T, zone string) *time.Location {
	switch zone {
	case "", "UTC":
		return time.UTC
	case "+05:30":
		return time.FixedZone(zone, 5*3600+1800)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func timeTestCols() []strCol {
	var cols []strCol
	for _, c := range timeCols {
		cols = append(cols, strCol{c.name, &arrow.TimestampType{Unit: c.unit, TimeZone: c.zone}, timeRandTicks(c.unit)})
	}
	return append(cols,
		strCol{"d32", arrow.FixedWidthTypes.Date32, timeRandDays},
		strCol{"d64", arrow.FixedWidthTypes.Date64, func(rng *rand.Rand) any { return timeRandDays(rng).(int64) * 86400000 }},
	)
}

var (
	timeFloorUnits   = []string{"MILLISECOND", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"}
	timeExtractUnits = []string{"YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "DOW", "DOY", "HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND", "EPOCH"}
	timeDateUnits    = map[string]bool{"YEAR": true, "QUARTER": true, "MONTH": true, "WEEK": true, "DAY": true, "DOW": true, "DOY": true, "EPOCH": true}
)

func TestTimeFloorCeilMatchesReference(t *testing.T) {
	cols := timeTestCols()
	var cases []strCase
	for i, c := range timeCols {
		loc := timeLoc(t, c.zone)
		for k, u := range timeFloorUnits {
			for _, ceil := range []bool{false, true} {
				if (i+k+int(b2i(ceil)))%2 != 0 {
					continue // floor or ceil, alternately
				}
				fn := "floor_time"
				if ceil {
					fn = "ceil_time"
				}
				unit, ceil, col := c.unit, ceil, i
				unitArg := u
				if col%2 == 1 {
					unitArg = strings.ToLower(u) // units are case-insensitive
				}
				cases = append(cases, strCase{Call(fn, Col(c.name), Lit(unitArg)), func(row []any) (any, error) {
					return timeRefFloorCeil(row[col], unitArg, unit, loc, ceil)
				}})
			}
		}
	}
	d32, d64 := len(timeCols), len(timeCols)+1
	for _, u := range timeFloorUnits[4:] {
		for _, ceil := range []bool{false, true} {
			fn := "floor_time"
			if ceil {
				fn = "ceil_time"
			}
			u, ceil := u, ceil
			cases = append(cases,
				strCase{Call(fn, Col("d32"), Lit(u)), func(row []any) (any, error) { return timeRefFloorCeilDate(row[d32], u, ceil) }},
				strCase{Call(fn, Col("d64"), Lit(u)), func(row []any) (any, error) {
					return timeRefFloorCeil(row[d64], u, arrow.Millisecond, time.UTC, ceil)
				}})
		}
	}
	// The generator's reference, on microseconds.
	cases = append(cases,
		strCase{Call("floor_time", Col("ts_us"), Lit("hour")), strRefCall(refStringTimeFuncs["floor_time"], strColRef(2), "hour")},
		strCase{Call("ceil_time", Col("ts_us"), Lit("week")), strRefCall(refStringTimeFuncs["ceil_time"], strColRef(2), "week")},
	)
	strCheck(t, 11, cols, cases)
}

func TestTimeExtractMatchesReference(t *testing.T) {
	cols := timeTestCols()
	var cases []strCase
	for i, c := range timeCols {
		loc := timeLoc(t, c.zone)
		for _, u := range timeExtractUnits {
			col, unit, u := i, c.unit, u
			cases = append(cases, strCase{Call("extract", Lit(u), Col(c.name)), func(row []any) (any, error) {
				if row[col] == nil {
					return nil, nil
				}
				v := timeRefFields(timeRefTime(row[col].(int64), unit, loc), u)
				if u == "EPOCH" && c.zone != "" && c.zone != "UTC" {
					// the instant's seconds, whatever the zone
					v = timeRefTime(row[col].(int64), unit, time.UTC).Unix()
				}
				return v, nil
			}})
		}
	}
	d32, d64 := len(timeCols), len(timeCols)+1
	for _, u := range timeExtractUnits {
		u := u
		if timeDateUnits[u] {
			cases = append(cases, strCase{Call("extract", Lit(strings.ToLower(u)), Col("d32")), func(row []any) (any, error) {
				if row[d32] == nil {
					return nil, nil
				}
				return timeRefFields(timeRefDay(row[d32].(int64)), u), nil
			}})
		}
		cases = append(cases, strCase{Call("extract", Lit(u), Col("d64")), func(row []any) (any, error) {
			return timeRefExtract(u, row[d64], arrow.Millisecond, time.UTC)
		}})
	}
	cases = append(cases, strCase{Call("extract", Lit("dow"), Col("ts_us")), strRefCall(refStringTimeFuncs["extract"], "dow", strColRef(2))})
	strCheck(t, 12, cols, cases)
}

// timeFormatPatterns are date_format patterns with a Go layout that
// formats the same text (nil where Go has no equivalent).
var timeFormatPatterns = []struct {
	java, goLayout string
}{
	{"yyyy-MM-dd HH:mm:ss", "2006-01-02 15:04:05"},
	{"yyyy-MM-dd", "2006-01-02"},
	{"HH:mm", "15:04"},
	{"yyyyMMdd", "20060102"},
	{"yyyy-MM-dd'T'HH:mm:ss.SSS", "2006-01-02T15:04:05.000"},
	{"yyyy-MM-dd HH:mm:ss.SSSSSSSSS", "2006-01-02 15:04:05.000000000"},
	{"EEE, d MMM yyyy hh:mm:ss a", "Mon, 2 Jan 2006 03:04:05 PM"},
	{"EEEE MMMM yy", "Monday January 06"},
	{"h:m:s M/d", "3:4:5 1/2"},
	{"DDD", "002"},
	{"D 'day' S SS SSSSSS '''x'''", ""},
	{"'It''s' yyy y E EE", ""},
	{"[yyyy] #{MM}", ""},
}

func TestTimeDateFormatMatchesReference(t *testing.T) {
	cols := timeTestCols()
	var cases []strCase
	for i, c := range timeCols {
		loc := timeLoc(t, c.zone)
		for k, p := range timeFormatPatterns {
			if (i+k)%3 != 0 {
				continue // each pattern on a third of the columns
			}
			col, unit, p := i, c.unit, p
			cases = append(cases, strCase{Call("date_format", Col(c.name), Lit(p.java)), func(row []any) (any, error) {
				if row[col] == nil {
					return nil, nil
				}
				tm := timeRefTime(row[col].(int64), unit, loc)
				want, err := timeRefFormat(tm, p.java)
				if err != nil {
					return nil, err
				}
				if p.goLayout != "" {
					if g := tm.Format(p.goLayout); g != want {
						return nil, fmt.Errorf("references disagree: %q (Go layout) vs %q", g, want)
					}
				}
				return want, nil
			}})
		}
	}
	d32 := len(timeCols)
	cases = append(cases,
		strCase{Call("date_format", Col("d32"), Lit("yyyy/MM/dd EEE HH")), func(row []any) (any, error) {
			if row[d32] == nil {
				return nil, nil
			}
			return timeRefDay(row[d32].(int64)).Format("2006/01/02 Mon 15"), nil
		}},
		strCase{Call("date_format", Col("ts_us"), Lit("yyyy-MM-dd HH:mm:ss.SSS")), strRefCall(refStringTimeFuncs["date_format"], strColRef(2), "yyyy-MM-dd HH:mm:ss.SSS")},
		strCase{Call("date_format", Col("ts_us"), Lit(nil)), func([]any) (any, error) { return nil, nil }},
	)
	strCheck(t, 13, cols, cases)
}

// TestTimeKnownValues spot-checks facts of the calendar and of Flink's
// conventions that a shared misunderstanding could make both the kernels
// and the references get wrong.
func TestTimeKnownValues(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	us := &arrow.TimestampType{Unit: arrow.Microsecond}
	ts := func(s string) int64 {
		tm, err := time.Parse("2006-01-02 15:04:05.999999", s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMicro()
	}
	cols := []strCol{{"t", us, nil}}
	for _, tc := range []struct {
		e    Expr
		in   string
		want any
	}{
		{Call("extract", Lit("DOW"), Col("t")), "2024-06-02 12:00:00", int64(1)}, // a Sunday
		{Call("extract", Lit("DOW"), Col("t")), "2024-06-08 12:00:00", int64(7)}, // a Saturday
		{Call("extract", Lit("WEEK"), Col("t")), "2021-01-03 00:00:00", int64(53)},
		{Call("extract", Lit("WEEK"), Col("t")), "2020-12-31 00:00:00", int64(53)},
		{Call("extract", Lit("WEEK"), Col("t")), "2019-12-30 00:00:00", int64(1)},
		{Call("extract", Lit("DOY"), Col("t")), "2020-12-31 00:00:00", int64(366)},
		{Call("extract", Lit("MILLISECOND"), Col("t")), "1969-12-31 23:59:58.123456", int64(123)},
		{Call("extract", Lit("MICROSECOND"), Col("t")), "1969-12-31 23:59:58.123456", int64(123456)},
		{Call("extract", Lit("EPOCH"), Col("t")), "1969-12-31 23:59:58.5", int64(-2)},
		{Call("floor_time", Col("t"), Lit("SECOND")), "1969-12-31 23:59:59.5", ts("1969-12-31 23:59:59")},
		{Call("floor_time", Col("t"), Lit("WEEK")), "1970-01-01 10:00:00", ts("1969-12-29 00:00:00")}, // a Monday
		{Call("floor_time", Col("t"), Lit("QUARTER")), "1960-08-15 10:00:00", ts("1960-07-01 00:00:00")},
		{Call("ceil_time", Col("t"), Lit("MONTH")), "2023-12-15 00:00:00", ts("2024-01-01 00:00:00")},
		{Call("ceil_time", Col("t"), Lit("DAY")), "2023-12-15 00:00:00", ts("2023-12-15 00:00:00")},
		{Call("date_format", Col("t"), Lit("EEE dd MMM yyyy hh 'o''clock' a")), "2024-06-02 15:04:05", "Sun 02 Jun 2024 03 o'clock PM"},
		{Call("date_format", Col("t"), Lit("S SS SSSSSSS")), "2024-06-02 15:04:05.123456", "1 12 1234560"},
	} {
		cols[0].gen = func(*rand.Rand) any { return ts(tc.in) }
		rec, _ := strBuildBatch(t, mem, rand.New(rand.NewPCG(1, 1)), cols, 1, 0)
		prog, err := Compile(tc.e, rec.Schema())
		if err != nil {
			t.Fatalf("%s: %v", tc.e, err)
		}
		got, err := prog.Eval(mem, rec, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.e, err)
		}
		if g := strValue(got, 0); g != tc.want {
			t.Errorf("%s at %s: got %v, want %v", tc.e, tc.in, g, tc.want)
		}
		got.Release()
		rec.Release()
	}
}

// TestTimeFloorOverflow: a floor below the smallest timestamp fails naming
// the row instead of wrapping around.
func TestTimeFloorOverflow(t *testing.T) {
	cols := []strCol{{"t", &arrow.TimestampType{Unit: arrow.Nanosecond}, func(*rand.Rand) any { return int64(math.MinInt64 + 5) }}}
	strCheck(t, 14, cols, []strCase{
		{Call("floor_time", Col("t"), Lit("DAY")), func(row []any) (any, error) {
			if row[0] == nil {
				return nil, nil
			}
			return nil, errors.New("out of range")
		}},
		{Call("floor_time", Col("t"), Lit("MONTH")), func(row []any) (any, error) {
			if row[0] == nil {
				return nil, nil
			}
			return nil, errors.New("out of range")
		}},
		{Call("ceil_time", Col("t"), Lit("MILLISECOND")), func(row []any) (any, error) {
			if row[0] == nil {
				return nil, nil
			}
			return row[0].(int64) / 1e6 * 1e6, nil // truncation rounds a negative value up
		}},
	})
}

func TestTimeCompileErrors(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "i", Type: arrow.PrimitiveTypes.Int64},
		{Name: "bad", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "Mars/Olympus"}},
	}, nil)
	for _, tc := range []struct {
		e    Expr
		want string
	}{
		{Call("floor_time", Col("t"), Lit("FORTNIGHT")), `does not support the unit "FORTNIGHT"`},
		{Call("floor_time", Col("t"), Lit("DOW")), `does not support the unit "DOW"`},
		{Call("floor_time", Col("d"), Lit("HOUR")), `does not support the unit "HOUR"`},
		{Call("floor_time", Col("t"), Col("s")), "must be a constant unit name"},
		{Call("floor_time", Col("s"), Lit("DAY")), "argument 1 of floor_time must be a timestamp or date, got utf8"},
		{Call("ceil_time", Col("i"), Lit("DAY")), "must be a timestamp or date, got int64"},
		{Call("floor_time", Col("t")), "takes 2 arguments"},
		{Call("extract", Lit("HOUR"), Col("d")), `does not support the unit "HOUR"`},
		{Call("extract", Col("s"), Col("t")), "must be a constant unit name"},
		{Call("extract", Lit("CENTURY"), Col("t")), `does not support the unit "CENTURY"`},
		{Call("extract", Lit("YEAR"), Col("s")), "argument 2 of extract must be a timestamp or date"},
		{Call("date_format", Col("t"), Col("s")), "pattern (argument 2) must be a constant"},
		{Call("date_format", Col("t"), Lit("yyyy-QQ")), "unsupported pattern letter 'Q'"},
		{Call("date_format", Col("t"), Lit("ddd")), `too many pattern letters "ddd"`},
		{Call("date_format", Col("t"), Lit("MMMMM")), "too many pattern letters"},
		{Call("date_format", Col("t"), Lit("yyyy 'oops")), "unterminated quote"},
		{Call("date_format", Col("i"), Lit("yyyy")), "argument 1 of date_format must be a timestamp or date"},
		{Call("date_format", Col("t"), Col("i")), "argument 2 of date_format must be a string"},
		{Call("extract", Lit("YEAR"), Col("bad")), "time zone"},
	} {
		_, err := Compile(tc.e, schema)
		var ee *ExprError
		if !errors.As(err, &ee) || ee.Row != -1 {
			t.Errorf("%s: want a compile error, got %v", tc.e, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.e.String()) {
			t.Errorf("%s: error %q does not name the expression or say %q", tc.e, err, tc.want)
		}
	}
}

func TestTimeKernelsDoNotAllocate(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(9, 9))
	rec, _ := strBuildBatch(t, mem, rng, timeTestCols(), 4096, 0.1)
	defer rec.Release()
	for _, sel := range [][]int32{nil, strRandSel(rng, 4096)} {
		for _, e := range []Expr{
			Call("floor_time", Col("ts_us"), Lit("HOUR")),
			Call("floor_time", Col("ts_ms_ny"), Lit("DAY")),
			Call("ceil_time", Col("ts_ns"), Lit("MONTH")),
			Call("floor_time", Col("d32"), Lit("WEEK")),
			Call("extract", Lit("HOUR"), Col("ts_us")),
			Call("extract", Lit("YEAR"), Col("ts_ms_ny")),
			Call("extract", Lit("WEEK"), Col("d32")),
			Call("date_format", Col("ts_us"), Lit("yyyy-MM-dd HH:mm:ss.SSS")),
			Call("date_format", Col("ts_s_paris"), Lit("EEE, d MMM yyyy")),
		} {
			strAllocRun(t, rec, sel, e)
		}
	}
}

// TestTimeDividerMatchesDivision checks the reciprocal divider against
// exact floor division, at the extremes of int64 and near multiples.
func TestTimeDividerMatchesDivision(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 15))
	divisors := []int64{1, 2, 3, 7, 60, 1000, 3600, 86400, 1e6, 1e9, 3600e9, 86400e9, 7 * 86400e9, math.MaxInt64}
	for range 20 {
		divisors = append(divisors, 1+rng.Int64N(1<<uint(1+rng.IntN(62))))
	}
	for _, d := range divisors {
		v := newTmDivider(d)
		xs := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1, d, -d, d - 1, -d + 1}
		for range 2000 {
			x := int64(rng.Uint64())
			if rng.IntN(3) == 0 {
				x = x / d * d // a multiple of d
			}
			xs = append(xs, x, x+1, x-1)
		}
		for _, x := range xs {
			wantQ := new(big.Int)
			wantR := new(big.Int)
			wantQ.DivMod(big.NewInt(x), big.NewInt(d), wantR) // Euclidean: r >= 0, as floor for d > 0
			q, r := v.divMod(x)
			if q != wantQ.Int64() || r != wantR.Int64() {
				t.Fatalf("%d / %d: got (%d, %d), want (%s, %s)", x, d, q, r, wantQ, wantR)
			}
		}
	}
}
