package format

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Scalar parsers shared by the text formats: JSON (numbers and strings) and
// CSV fields. They take bytes, never allocate on success, and return small
// errors that the caller wraps in a RecordError with field and offset.

var (
	errNotInteger = errors.New("not an integer")
	errNotNumber  = errors.New("not a number")
	errNotBool    = errors.New("not a boolean (true or false)")
	errBadDate    = errors.New("not a date (yyyy-MM-dd)")
	errBadTime    = errors.New("not a time of day (HH:mm[:ss[.fffffffff]])")
	errBadTS      = errors.New("not a timestamp (yyyy-MM-dd[T| ]HH:mm[:ss[.fffffffff]][Z|±HH:mm])")
	errBadDecimal = errors.New("not a decimal number")
)

// rangeError says a value does not fit its column's type.
type rangeError struct {
	text string
	typ  arrow.DataType
}

func (e *rangeError) Error() string {
	return fmt.Sprintf("%s is out of range for %s", e.text, e.typ)
}

func errRange(b []byte, t arrow.DataType) error {
	s := string(b)
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return &rangeError{text: s, typ: t}
}

// unsafeString views b as a string for calls that do not keep it.
func unsafeString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// parseInt parses an optionally signed decimal integer.
func parseInt(b []byte) (v int64, ok, inRange bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	u, ok, inRange := parseUint(b)
	if !ok || !inRange {
		return 0, ok, inRange
	}
	if neg {
		if u > 1<<63 {
			return 0, true, false
		}
		return -int64(u), true, true
	}
	if u > math.MaxInt64 {
		return 0, true, false
	}
	return int64(u), true, true
}

// parseUint parses unsigned decimal digits.
func parseUint(b []byte) (v uint64, ok, inRange bool) {
	if len(b) == 0 {
		return 0, false, false
	}
	inRange = true
	for _, c := range b {
		d := uint64(c - '0')
		if d > 9 {
			return 0, false, false
		}
		if v > (math.MaxUint64-d)/10 {
			inRange = false
		}
		v = v*10 + d
	}
	return v, true, inRange
}

// parseFloat parses a float in any syntax strconv accepts, including NaN
// and Infinity.
func parseFloat(b []byte, bitSize int) (float64, bool) {
	f, err := strconv.ParseFloat(unsafeString(b), bitSize)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return f, true // ±Inf or 0, as Go and Java both round
		}
		return 0, false
	}
	return f, true
}

// parseBool parses true or false.
func parseBool(b []byte) (bool, bool) {
	switch string(b) {
	case "true", "TRUE", "True":
		return true, true
	case "false", "FALSE", "False":
		return false, true
	}
	return false, false
}

var pow10u64 = [20]uint64{
	1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
}

// u128 is an unsigned 128-bit magnitude.
type u128 struct{ hi, lo uint64 }

// mulAdd returns x*m + a, and false on overflow.
func (x u128) mulAdd(m, a uint64) (u128, bool) {
	h1, l := bits.Mul64(x.lo, m)
	h2, hh := bits.Mul64(x.hi, m)
	if h2 != 0 {
		return u128{}, false
	}
	hi, c := bits.Add64(h1, hh, 0)
	if c != 0 {
		return u128{}, false
	}
	lo, c := bits.Add64(l, a, 0)
	hi, c2 := bits.Add64(hi, 0, c)
	if c2 != 0 {
		return u128{}, false
	}
	return u128{hi, lo}, true
}

func (x u128) less(y u128) bool { return x.hi < y.hi || x.hi == y.hi && x.lo < y.lo }

// pow10u128 holds 10^0 .. 10^38.
var pow10u128 = func() (p [39]u128) {
	p[0] = u128{0, 1}
	for i := 1; i < len(p); i++ {
		p[i], _ = p[i-1].mulAdd(10, 0)
	}
	return p
}()

// decimalParser parses decimal text exactly into a decimal128 of a given
// precision and scale, rounding half away from zero when the text has more
// fractional digits than the scale (as Flink's BigDecimal conversion does).
// digits is scratch kept across calls.
type decimalParser struct {
	digits []byte
}

func (p *decimalParser) parse(b []byte, precision, scale int32) (decimal128.Num, error) {
	i := 0
	neg := false
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	p.digits = p.digits[:0]
	exp := 0 // value = digits * 10^exp
	sawDigit := false
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		sawDigit = true
		if len(p.digits) > 0 || b[i] != '0' {
			p.digits = append(p.digits, b[i]-'0')
		}
	}
	if i < len(b) && b[i] == '.' {
		i++
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			sawDigit = true
			if len(p.digits) > 0 || b[i] != '0' {
				p.digits = append(p.digits, b[i]-'0')
			}
			exp--
		}
	}
	if !sawDigit {
		return decimal128.Num{}, errBadDecimal
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		e, ok, inRange := parseInt(b[i:])
		if !ok {
			return decimal128.Num{}, errBadDecimal
		}
		if !inRange || e > 1<<20 || e < -1<<20 {
			if len(p.digits) == 0 {
				return decimal128.Num{}, nil
			}
			if e < 0 {
				return decimal128.Num{}, nil // rounds to zero
			}
			return decimal128.Num{}, errRange(b, &arrow.Decimal128Type{Precision: precision, Scale: scale})
		}
		exp += int(e)
		i = len(b)
	}
	if i != len(b) {
		return decimal128.Num{}, errBadDecimal
	}
	// The column's integer is digits * 10^(exp+scale).
	shift := exp + int(scale)
	d := p.digits
	roundUp := false
	if shift < 0 {
		drop := -shift
		if drop > len(d) {
			d = d[:0]
		} else {
			roundUp = d[len(d)-drop] >= 5
			d = d[:len(d)-drop]
		}
		shift = 0
	}
	if len(d) > 0 && len(d)+shift > int(precision) {
		return decimal128.Num{}, errRange(b, &arrow.Decimal128Type{Precision: precision, Scale: scale})
	}
	// Below 10^38 by the precision check, so nothing overflows.
	var v u128
	for _, c := range d {
		v, _ = v.mulAdd(10, uint64(c))
	}
	for len(d) > 0 && shift > 0 {
		k := min(shift, 19)
		v, _ = v.mulAdd(pow10u64[k], 0)
		shift -= k
	}
	if roundUp {
		v, _ = v.mulAdd(1, 1)
	}
	if !v.less(pow10u128[precision]) {
		return decimal128.Num{}, errRange(b, &arrow.Decimal128Type{Precision: precision, Scale: scale})
	}
	n := decimal128.New(int64(v.hi), v.lo)
	if neg {
		n = n.Negate()
	}
	return n, nil
}

// digits2 parses two ASCII digits.
func digits2(b []byte) (int, bool) {
	d0, d1 := b[0]-'0', b[1]-'0'
	if d0 > 9 || d1 > 9 {
		return 0, false
	}
	return int(d0)*10 + int(d1), true
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian
// date (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y int64, m, d int) {
	z += 719468
	era := z
	if era < 0 {
		era -= 146096
	}
	era /= 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// parseDateDays parses yyyy-MM-dd at the start of b, returning the days
// since the epoch.
func parseDateDays(b []byte) (int64, bool) {
	if len(b) < 10 || b[4] != '-' || b[7] != '-' {
		return 0, false
	}
	y1, ok1 := digits2(b[0:])
	y2, ok2 := digits2(b[2:])
	m, ok3 := digits2(b[5:])
	d, ok4 := digits2(b[8:])
	if !(ok1 && ok2 && ok3 && ok4) || m < 1 || m > 12 {
		return 0, false
	}
	y := y1*100 + y2
	if d < 1 || d > daysIn(y, m) {
		return 0, false
	}
	return daysFromCivil(y, m, d), true
}

// parseDate parses exactly yyyy-MM-dd.
func parseDate(b []byte) (int32, error) {
	if len(b) != 10 {
		return 0, errBadDate
	}
	days, ok := parseDateDays(b)
	if !ok {
		return 0, errBadDate
	}
	return int32(days), nil
}

// parseClock parses HH:mm[:ss[.fffffffff]] at the start of b, returning
// nanoseconds since midnight and the bytes consumed.
func parseClock(b []byte) (nanos int64, n int, ok bool) {
	if len(b) < 5 || b[2] != ':' {
		return 0, 0, false
	}
	h, ok1 := digits2(b)
	mi, ok2 := digits2(b[3:])
	if !ok1 || !ok2 || h > 23 || mi > 59 {
		return 0, 0, false
	}
	secs := int64(h*3600 + mi*60)
	n = 5
	if n < len(b) && b[n] == ':' {
		if len(b) < n+3 {
			return 0, 0, false
		}
		s, ok := digits2(b[n+1:])
		if !ok || s > 59 {
			return 0, 0, false
		}
		secs += int64(s)
		n += 3
		if n < len(b) && b[n] == '.' {
			n++
			start := n
			frac := int64(0)
			for ; n < len(b) && b[n] >= '0' && b[n] <= '9'; n++ {
				if n-start < 9 {
					frac = frac*10 + int64(b[n]-'0')
				}
			}
			digits := n - start
			if digits == 0 {
				return 0, 0, false
			}
			for d := digits; d < 9; d++ {
				frac *= 10
			}
			return secs*1e9 + frac, n, true
		}
	}
	return secs * 1e9, n, true
}

// parseTimeOfDay parses exactly HH:mm[:ss[.fffffffff]].
func parseTimeOfDay(b []byte) (int64, error) {
	nanos, n, ok := parseClock(b)
	if !ok || n != len(b) {
		return 0, errBadTime
	}
	return nanos, nil
}

// parseTimestamp parses an RFC 3339, ISO-8601 or SQL timestamp: a date, 'T'
// or a space, a time of day and an optional zone (Z or ±HH[:mm]). A
// timestamp without zone is taken as UTC.
func parseTimestamp(b []byte) (secs int64, nanos int64, err error) {
	days, ok := parseDateDays(b)
	if !ok || len(b) < 16 || (b[10] != 'T' && b[10] != ' ' && b[10] != 't') {
		return 0, 0, errBadTS
	}
	clock, n, ok := parseClock(b[11:])
	if !ok {
		return 0, 0, errBadTS
	}
	rest := b[11+n:]
	offset := int64(0)
	if len(rest) > 0 {
		switch rest[0] {
		case 'Z', 'z':
			rest = rest[1:]
		case '+', '-':
			sign := int64(1)
			if rest[0] == '-' {
				sign = -1
			}
			rest = rest[1:]
			if len(rest) < 2 {
				return 0, 0, errBadTS
			}
			oh, ok := digits2(rest)
			if !ok || oh > 23 {
				return 0, 0, errBadTS
			}
			rest = rest[2:]
			om := 0
			if len(rest) > 0 {
				if rest[0] == ':' {
					rest = rest[1:]
				}
				if len(rest) < 2 {
					return 0, 0, errBadTS
				}
				if om, ok = digits2(rest); !ok || om > 59 {
					return 0, 0, errBadTS
				}
				rest = rest[2:]
			}
			offset = sign * int64(oh*3600+om*60)
		}
	}
	if len(rest) != 0 {
		return 0, 0, errBadTS
	}
	return days*86400 + clock/1e9 - offset, clock % 1e9, nil
}

// unitPerSecond is how many of a time unit make a second.
func unitPerSecond(u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Second:
		return 1
	case arrow.Millisecond:
		return 1e3
	case arrow.Microsecond:
		return 1e6
	}
	return 1e9
}

// toUnit converts seconds and nanoseconds to a count of unit, false on
// overflow.
func toUnit(secs, nanos int64, u arrow.TimeUnit) (int64, bool) {
	per := unitPerSecond(u)
	if secs > math.MaxInt64/per || secs < math.MinInt64/per {
		return 0, false
	}
	v := secs * per
	f := nanos / (1e9 / per)
	if v > 0 && f > math.MaxInt64-v {
		return 0, false
	}
	return v + f, true
}

// fromUnit splits a count of unit into seconds and nanoseconds (floored).
func fromUnit(v int64, u arrow.TimeUnit) (secs, nanos int64) {
	per := unitPerSecond(u)
	secs, rem := v/per, v%per
	if rem < 0 {
		secs--
		rem += per
	}
	return secs, rem * (1e9 / per)
}
