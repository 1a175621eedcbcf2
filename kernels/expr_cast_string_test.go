package kernels

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/internal/testutil"
)

// ---- references ----

// castRefIntString parses Flink's integer syntax with a regular expression
// and big integers, and checks the range of the target type [lo, hi].
var castRefIntSyntax = regexp.MustCompile(`^[+-]?([0-9]*)(\.[0-9]*)?$`)

func castRefParseInt(s string, lo, hi int64) (any, error) {
	s = castRefTrim(s)
	m := castRefIntSyntax.FindStringSubmatch(s)
	if m == nil || !strings.ContainsAny(s, "0123456789") {
		return nil, errors.New("syntax")
	}
	v := new(big.Int)
	if m[1] != "" {
		v.SetString(m[1], 10)
	}
	if strings.HasPrefix(s, "-") {
		v.Neg(v)
	}
	if v.Cmp(big.NewInt(lo)) < 0 || v.Cmp(big.NewInt(hi)) > 0 {
		return nil, errors.New("range")
	}
	return v.Int64(), nil
}

// castRefTrim is Java's String.trim.
func castRefTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

func castRefParseFloat(s string, bits int) (any, error) {
	f, err := strconv.ParseFloat(castRefTrim(s), bits)
	var ne *strconv.NumError
	if err != nil && !(errors.As(err, &ne) && ne.Err == strconv.ErrRange) {
		return nil, err
	}
	return f, nil
}

func castRefParseBool(s string) (any, error) {
	switch strings.ToLower(castRefTrim(s)) {
	case "t", "true", "y", "yes", "1":
		return true, nil
	case "f", "false", "n", "no", "0":
		return false, nil
	}
	return nil, errors.New("syntax")
}

var castRefTimeSyntax = regexp.MustCompile(`^([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})(?:[ T]([0-9]{1,2}):([0-9]{1,2})(?::([0-9]{1,2})(?:\.([0-9]{1,9}))?)?)?(Z?)$`)

// castRefParseTime parses s as a wall-clock time in loc (UTC with a final
// Z) and returns its ticks of unit, or days for unit -1 (date32) and
// milliseconds of the day's midnight for -2 (date64).
func castRefParseTime(s string, unit arrow.TimeUnit, loc *time.Location) (any, error) {
	m := castRefTimeSyntax.FindStringSubmatch(castRefTrim(s))
	if m == nil {
		return nil, errors.New("syntax")
	}
	n := make([]int, 7)
	for i := 1; i <= 6; i++ {
		if m[i] != "" {
			n[i], _ = strconv.Atoi(m[i])
		}
	}
	frac := 0
	if m[7] != "" {
		frac, _ = strconv.Atoi((m[7] + "00000000")[:9])
	}
	if m[8] == "Z" {
		loc = time.UTC
	}
	t := time.Date(n[1], time.Month(n[2]), n[3], n[4], n[5], n[6], frac, loc)
	// Go normalizes out-of-range fields: compare them with the text.
	if check := time.Date(n[1], time.Month(n[2]), n[3], 0, 0, 0, 0, time.UTC); check.Month() != time.Month(n[2]) || check.Day() != n[3] || n[4] > 23 || n[5] > 59 || n[6] > 59 {
		return nil, errors.New("field out of range")
	}
	switch unit {
	case -1:
		return time.Date(n[1], time.Month(n[2]), n[3], 0, 0, 0, 0, time.UTC).Unix() / 86400, nil
	case -2:
		return time.Date(n[1], time.Month(n[2]), n[3], 0, 0, 0, 0, time.UTC).UnixMilli(), nil
	}
	// seconds * ticks per second + the fraction truncated to the unit,
	// which must fit in int64
	v := new(big.Int).Mul(big.NewInt(t.Unix()), big.NewInt(int64(time.Second/timeRefUnitTicks[unit])))
	v.Add(v, big.NewInt(int64(t.Nanosecond())/int64(timeRefUnitTicks[unit])))
	if !v.IsInt64() {
		return nil, errors.New("out of range")
	}
	return v.Int64(), nil
}

// castRefTry turns a reference into TRY_CAST's: NULL instead of an error.
func castRefTry(f func([]any) (any, error)) func([]any) (any, error) {
	return func(row []any) (any, error) {
		v, err := f(row)
		if err != nil {
			return nil, nil
		}
		return v, nil
	}
}

// castRef1 applies f to column col's value, NULL to NULL.
func castRef1(col int, f func(v any) (any, error)) func([]any) (any, error) {
	return func(row []any) (any, error) {
		if row[col] == nil {
			return nil, nil
		}
		return f(row[col])
	}
}

// ---- random inputs ----

func castRandSpace(rng *rand.Rand) string {
	return []string{"", "", "", " ", "  ", "\t", "\n "}[rng.IntN(7)]
}

func castRandIntString(rng *rand.Rand) any {
	var s string
	switch rng.IntN(10) {
	case 0:
		s = strconv.FormatInt(rng.Int64(), 10)
	case 1:
		s = strconv.FormatInt(-rng.Int64(), 10)
	case 2:
		s = []string{"9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
			"2147483647", "2147483648", "-2147483649", "127", "128", "-128", "-129", "255", "256", "65535", "65536",
			"+", "-", ".", "-.", "+.5", "1.", ".5", "1e3", "0x10", "1_000", "12a", "", " ", "1 2", "--1", "١٢"}[rng.IntN(31)]
	case 3:
		s = strconv.FormatInt(rng.Int64N(1000)-500, 10) + "." + strconv.Itoa(rng.IntN(1000))
	default:
		s = strconv.FormatInt(rng.Int64N(400)-200, 10)
	}
	if rng.IntN(4) == 0 && len(s) > 0 && s[0] != '-' && s[0] != '+' {
		s = "+" + s
	}
	return castRandSpace(rng) + s + castRandSpace(rng)
}

func castRandFloatString(rng *rand.Rand) any {
	var s string
	switch rng.IntN(6) {
	case 0:
		s = strconv.FormatFloat(math.Float64frombits(rng.Uint64()), 'g', -1, 64)
	case 1:
		s = []string{"NaN", "nan", "Inf", "-Infinity", "+inf", "1e400", "-1e400", "1e-400", "0x1p-2", "1.5e3", ".5", "5.",
			"1,5", "abc", "", "1e", "--1", "1.0d", "1f", "3.4028236e38"}[rng.IntN(20)]
	default:
		s = strconv.FormatFloat((rng.Float64()-0.5)*math.Pow(10, float64(rng.IntN(20)-10)), 'g', -1, 64)
	}
	return castRandSpace(rng) + s + castRandSpace(rng)
}

func castRandBoolString(rng *rand.Rand) any {
	return castRandSpace(rng) + []string{"true", "TRUE", "True", "t", "T", "yes", "YES", "y", "1", "false", "False", "f", "no", "N", "0",
		"tru", "yess", "2", "", "on", "off", "truee"}[rng.IntN(22)] + castRandSpace(rng)
}

// castRandTimeString renders a random wall-clock time in one of the
// accepted forms, or a near miss.
func castRandTimeString(rng *rand.Rand) any {
	y := 1600 + rng.IntN(800)
	if rng.IntN(2) == 0 {
		y = 1900 + rng.IntN(200)
	}
	mo, d := 1+rng.IntN(12), 1+rng.IntN(31) // day 29-31 is sometimes invalid
	h, mi, sec := rng.IntN(24), rng.IntN(60), rng.IntN(60)
	pad := func(v int) string {
		if rng.IntN(5) == 0 {
			return strconv.Itoa(v)
		}
		return fmt.Sprintf("%02d", v)
	}
	s := fmt.Sprintf("%04d-%s-%s", y, pad(mo), pad(d))
	switch rng.IntN(6) {
	case 0:
	case 1:
		s += " " + pad(h) + ":" + pad(mi)
	default:
		sep := []string{" ", "T"}[rng.IntN(2)]
		s += sep + pad(h) + ":" + pad(mi) + ":" + pad(sec)
		if rng.IntN(2) == 0 {
			s += "." + fmt.Sprintf("%09d", rng.IntN(1e9))[:1+rng.IntN(9)]
		}
	}
	if rng.IntN(4) == 0 {
		s += "Z"
	}
	switch rng.IntN(12) {
	case 0:
		s = s[:len(s)-1] // cut
	case 1:
		s += "x"
	case 2:
		s = strings.Replace(s, "-", "/", 1)
	case 3:
		s = "2021-02-29 10:00:00"
	case 4:
		s = "2020-02-29T24:00"
	case 5:
		s = []string{"", "12020-01-01", "2020-13-01", "2020-00-10", "2020-1-1 1:2:3.1234567890", "2020-01-01 10:60", "2020-01-01T10:00:61", "2020-01-01 10"}[rng.IntN(8)]
	}
	return castRandSpace(rng) + s + castRandSpace(rng)
}

func castRandFloat(rng *rand.Rand) any {
	switch rng.IntN(8) {
	case 0:
		return math.Float64frombits(rng.Uint64())
	case 1:
		return []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1, 0.1, 1e7, 9999999, 0.001, 0.00099999, 1e-3 - 1e-19,
			math.MaxFloat64, math.SmallestNonzeroFloat64, 2.2250738585072014e-308, 1e23, 5e-324, 123456789}[rng.IntN(18)]
	case 2:
		return float64(rng.Int64N(2000) - 1000)
	}
	return (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(24)-12))
}

// ---- float formatting ----

// TestCastFloatToStringJava checks Java's Double.toString output for
// values whose Java rendering is well known.
func TestCastFloatToStringJava(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{1, "1.0"}, {-1, "-1.0"}, {0.1, "0.1"}, {100, "100.0"}, {1e7, "1.0E7"}, {9999999, "9999999.0"},
		{0.001, "0.001"}, {0.0001, "1.0E-4"}, {123456789, "1.23456789E8"}, {math.Copysign(0, -1), "-0.0"}, {0, "0.0"},
		{math.NaN(), "NaN"}, {math.Inf(1), "Infinity"}, {math.Inf(-1), "-Infinity"},
		{math.SmallestNonzeroFloat64, "4.9E-324"}, {math.MaxFloat64, "1.7976931348623157E308"},
		{2.2250738585072014e-308, "2.2250738585072014E-308"}, {1e23, "1.0E23"}, {3.14, "3.14"},
		{1.0 / 3, "0.3333333333333333"}, {2.0 / 3, "0.6666666666666666"}, {12345678.9, "1.23456789E7"},
		{1234567, "1234567.0"}, {0.00123, "0.00123"}, {-1.5e-10, "-1.5E-10"}, {1.5e300, "1.5E300"}, {0.5, "0.5"},
		{100.5, "100.5"}, {1e21, "1.0E21"}, {2e-3, "0.002"},
	} {
		if got := string(appendJavaDouble(nil, tc.f)); got != tc.want {
			t.Errorf("%v: got %s, want %s", tc.f, got, tc.want)
		}
	}
}

// castRefJavaDoubleOK checks the properties of Java's rendering of f:
// it reads back to f, uses scientific notation exactly outside [1e-3,
// 1e7), has at least one fraction digit, and as few significant digits as
// possible (Go's shortest, or two when the shortest has one).
func castRefJavaDoubleOK(f float64, s string) error {
	switch {
	case math.IsNaN(f):
		if s != "NaN" {
			return errors.New("NaN")
		}
		return nil
	case f == 0:
		if s != map[bool]string{true: "-0.0", false: "0.0"}[math.Signbit(f)] {
			return errors.New("zero")
		}
		return nil
	case math.IsInf(f, 0):
		if s != map[bool]string{true: "Infinity", false: "-Infinity"}[f > 0] {
			return errors.New("Inf")
		}
		return nil
	}
	back, err := strconv.ParseFloat(strings.Replace(s, "E", "e", 1), 64)
	if err != nil || back != f || math.Signbit(back) != math.Signbit(f) {
		return fmt.Errorf("reads back as %v", back)
	}
	abs := math.Abs(f)
	sci := strings.Contains(s, "E")
	if sci != (abs != 0 && (abs < 1e-3 || abs >= 1e7)) {
		return errors.New("notation")
	}
	mant, _, _ := strings.Cut(strings.TrimPrefix(s, "-"), "E")
	ip, fp, ok := strings.Cut(mant, ".")
	if !ok || fp == "" || ip == "" || (sci && len(ip) != 1) {
		return errors.New("shape")
	}
	digits := strings.Trim(strings.TrimLeft(ip+fp, "0"), "0")
	if digits == "" {
		digits = "0"
	}
	shortest := strings.TrimRight(strings.Replace(strings.Split(strconv.FormatFloat(abs, 'e', -1, 64), "e")[0], ".", "", 1), "0")
	if len(digits) != len(shortest) && !(len(shortest) == 1 && len(digits) == 2) {
		return fmt.Errorf("%d significant digits, shortest has %d", len(digits), len(shortest))
	}
	return nil
}

// ---- casts over batches ----

func TestCastToStringMatchesReference(t *testing.T) {
	cols := []strCol{
		{"i8", arrow.PrimitiveTypes.Int8, strIntGen(-128, 127)},
		{"i32", arrow.PrimitiveTypes.Int32, strIntGen(math.MinInt32, math.MaxInt32)},
		{"i64", arrow.PrimitiveTypes.Int64, func(rng *rand.Rand) any { return int64(rng.Uint64()) }},
		{"u64", arrow.PrimitiveTypes.Uint64, func(rng *rand.Rand) any { return rng.Int64N(math.MaxInt64) }},
		{"f", arrow.PrimitiveTypes.Float64, castRandFloat},
		{"b", arrow.FixedWidthTypes.Boolean, func(rng *rand.Rand) any { return rng.IntN(2) == 0 }},
		{"d32", arrow.FixedWidthTypes.Date32, timeRandDays},
		{"d64", arrow.FixedWidthTypes.Date64, func(rng *rand.Rand) any { return timeRandDays(rng).(int64) * 86400000 }},
		{"bin", arrow.BinaryTypes.Binary, func(rng *rand.Rand) any {
			s := strRandString(rng, 6)
			if rng.IntN(10) == 0 {
				s += "\xff" // not UTF-8
			}
			return s
		}},
	}
	nFixed := len(cols)
	for _, c := range timeCols {
		cols = append(cols, strCol{c.name, &arrow.TimestampType{Unit: c.unit, TimeZone: c.zone}, timeRandTicks(c.unit)})
	}
	str, large := arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString
	intStr := func(v any) (any, error) { return strconv.FormatInt(v.(int64), 10), nil }
	dateStr := func(days int64) string { return timeRefDay(days).Format("2006-01-02") }
	cases := []strCase{
		{Cast(Col("i8"), str), castRef1(0, intStr)},
		{Cast(Col("i32"), large), castRef1(1, intStr)},
		{Cast(Col("i64"), str), castRef1(2, intStr)},
		{Cast(Col("u64"), str), castRef1(3, intStr)},
		{Cast(Col("b"), str), castRef1(5, func(v any) (any, error) { return strings.ToUpper(strconv.FormatBool(v.(bool))), nil })},
		{Cast(Col("d32"), str), castRef1(6, func(v any) (any, error) { return dateStr(v.(int64)), nil })},
		{Cast(Col("d64"), str), castRef1(7, func(v any) (any, error) { return dateStr(v.(int64) / 86400000), nil })},
		{Cast(Col("bin"), str), castRef1(8, func(v any) (any, error) {
			if !utf8.ValidString(v.(string)) {
				return nil, errors.New("not UTF-8")
			}
			return v, nil
		})},
		{TryCast(Col("bin"), str), castRefTry(castRef1(8, func(v any) (any, error) {
			if !utf8.ValidString(v.(string)) {
				return nil, errors.New("not UTF-8")
			}
			return v, nil
		}))},
		{Cast(Cast(Col("i32"), str), arrow.BinaryTypes.Binary), castRef1(1, intStr)},
	}
	for i, c := range timeCols {
		col, unit, loc := nFixed+i, c.unit, timeLoc(t, c.zone)
		layout := "2006-01-02 15:04:05" + map[arrow.TimeUnit]string{arrow.Second: "", arrow.Millisecond: ".000", arrow.Microsecond: ".000000", arrow.Nanosecond: ".000000000"}[unit]
		cases = append(cases, strCase{Cast(Col(c.name), str), castRef1(col, func(v any) (any, error) {
			return timeRefTime(v.(int64), unit, loc).Format(layout), nil
		})})
		// and back: the string parses to the same timestamp
		cases = append(cases, strCase{Cast(Cast(Col(c.name), str), &arrow.TimestampType{Unit: c.unit, TimeZone: c.zone}), castRef1(col, func(v any) (any, error) {
			if loc != time.UTC && c.zone != "+05:30" {
				// a wall-clock time in a DST fold maps back to one of two instants
				f := timeRefTime(v.(int64), unit, loc)
				return timeRefTicks(time.Date(f.Year(), f.Month(), f.Day(), f.Hour(), f.Minute(), f.Second(), f.Nanosecond(), loc), unit), nil
			}
			return v, nil
		})})
	}
	strCheck(t, 21, cols, cases)

	// Float formatting has no independent implementation here: every
	// rendered value is checked for the properties of Java's rendering.
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(21, 21))
	rec, vals := strBuildBatch(t, mem, rng, cols[4:5], 20000, 0.1)
	defer rec.Release()
	prog, err := Compile(Cast(Col("f"), str), rec.Schema())
	if err != nil {
		t.Fatal(err)
	}
	got, err := prog.Eval(mem, rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	for i, v := range vals[0] {
		g := strValue(got, i)
		if (v == nil) != (g == nil) {
			t.Fatalf("row %d: NULL mismatch", i)
		}
		if v == nil {
			continue
		}
		if err := castRefJavaDoubleOK(v.(float64), g.(string)); err != nil {
			t.Fatalf("%v rendered as %q: %v", v, g, err)
		}
	}
}

func TestCastFromStringMatchesReference(t *testing.T) {
	cols := []strCol{
		{"ints", arrow.BinaryTypes.String, castRandIntString},
		{"floats", arrow.BinaryTypes.LargeString, castRandFloatString},
		{"bools", arrow.BinaryTypes.String, castRandBoolString},
		{"times", arrow.BinaryTypes.String, castRandTimeString},
		{"s", arrow.BinaryTypes.String, strGen(8)},
	}
	var cases []strCase
	both := func(e func(try bool) Expr, ref func([]any) (any, error)) {
		cases = append(cases, strCase{e(false), ref}, strCase{e(true), castRefTry(ref)})
	}
	cast := func(col string, to arrow.DataType) func(bool) Expr {
		return func(try bool) Expr {
			if try {
				return TryCast(Col(col), to)
			}
			return Cast(Col(col), to)
		}
	}
	for _, to := range []arrow.DataType{arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32,
		arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64} {
		lo, hi := intRange(to)
		both(cast("ints", to), castRef1(0, func(v any) (any, error) { return castRefParseInt(v.(string), lo, hi) }))
	}
	both(cast("floats", arrow.PrimitiveTypes.Float64), castRef1(1, func(v any) (any, error) { return castRefParseFloat(v.(string), 64) }))
	both(cast("floats", arrow.PrimitiveTypes.Float32), castRef1(1, func(v any) (any, error) { return castRefParseFloat(v.(string), 32) }))
	both(cast("ints", arrow.PrimitiveTypes.Float64), castRef1(0, func(v any) (any, error) { return castRefParseFloat(v.(string), 64) }))
	both(cast("bools", arrow.FixedWidthTypes.Boolean), castRef1(2, func(v any) (any, error) { return castRefParseBool(v.(string)) }))
	both(cast("s", arrow.FixedWidthTypes.Boolean), castRef1(4, func(v any) (any, error) { return castRefParseBool(v.(string)) }))
	both(cast("times", arrow.FixedWidthTypes.Date32), castRef1(3, func(v any) (any, error) { return castRefParseTime(v.(string), -1, time.UTC) }))
	both(cast("times", arrow.FixedWidthTypes.Date64), castRef1(3, func(v any) (any, error) { return castRefParseTime(v.(string), -2, time.UTC) }))
	for _, c := range timeCols {
		to := &arrow.TimestampType{Unit: c.unit, TimeZone: c.zone}
		unit, loc := c.unit, timeLoc(t, c.zone)
		both(cast("times", to), castRef1(3, func(v any) (any, error) { return castRefParseTime(v.(string), unit, loc) }))
	}
	cases = append(cases, strCase{Cast(Col("s"), arrow.BinaryTypes.Binary), castRef1(4, func(v any) (any, error) { return v, nil })})
	strCheck(t, 22, cols, cases)
}

func TestCastStringCompileErrors(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "dur", Type: &arrow.DurationType{Unit: arrow.Second}},
	}, nil)
	for _, e := range []Expr{
		Cast(Col("s"), &arrow.DurationType{Unit: arrow.Second}),
		Cast(Col("dur"), arrow.BinaryTypes.String),
		Cast(Col("s"), &arrow.TimestampType{Unit: arrow.Second, TimeZone: "Mars/Olympus"}),
	} {
		_, err := Compile(e, schema)
		var ee *ExprError
		if !errors.As(err, &ee) || ee.Row != -1 || !strings.Contains(err.Error(), "cannot cast") {
			t.Errorf("%s: want a compile error, got %v", e, err)
		}
	}
}

func TestCastStringKernelsDoNotAllocate(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(23, 23))
	cols := []strCol{
		{"i", arrow.PrimitiveTypes.Int64, func(rng *rand.Rand) any { return int64(rng.Uint64()) }},
		{"f", arrow.PrimitiveTypes.Float64, castRandFloat},
		{"t", &arrow.TimestampType{Unit: arrow.Microsecond}, timeRandTicks(arrow.Microsecond)},
		{"ints", arrow.BinaryTypes.String, func(rng *rand.Rand) any { return strconv.Itoa(rng.IntN(1000)) }},
		{"bad", arrow.BinaryTypes.String, castRandIntString},
		{"times", arrow.BinaryTypes.String, func(rng *rand.Rand) any {
			return time.Unix(rng.Int64N(4e9), 0).UTC().Format("2006-01-02 15:04:05")
		}},
	}
	rec, _ := strBuildBatch(t, mem, rng, cols, 4096, 0.1)
	defer rec.Release()
	for _, e := range []Expr{
		Cast(Col("i"), arrow.BinaryTypes.String),
		Cast(Col("f"), arrow.BinaryTypes.String),
		Cast(Col("t"), arrow.BinaryTypes.String),
		Cast(Col("ints"), arrow.PrimitiveTypes.Int32),
		Cast(Col("ints"), arrow.PrimitiveTypes.Float64),
		Cast(Col("times"), &arrow.TimestampType{Unit: arrow.Millisecond}),
		TryCast(Col("bad"), arrow.PrimitiveTypes.Int16),
	} {
		strAllocRun(t, rec, nil, e)
	}
}
