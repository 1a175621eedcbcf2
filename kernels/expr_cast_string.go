package kernels

// Casts between strings and other types, following Flink's CAST:
//
//	integer -> string   decimal digits.
//	float   -> string   Java's Double.toString, as Flink prints a DOUBLE:
//	                    the shortest digits that read back to the same
//	                    double (JDK 19+), plain notation with at least one
//	                    fraction digit when 1e-3 <= |x| < 1e7 (1.0, 0.001,
//	                    1234567.5), else computerized scientific notation
//	                    (1.0E7, 1.0E-4, -2.5E100); NaN, Infinity,
//	                    -Infinity, -0.0. Go's strconv 'g' would print 1,
//	                    1e+07 and 1e-04. A float32 column is widened to
//	                    float64 before the cast and prints as that double
//	                    (0.1f -> 0.10000000149011612).
//	bool    -> string   TRUE or FALSE (Flink since 1.15).
//	timestamp -> string 'yyyy-MM-dd HH:mm:ss' plus as many fraction digits
//	                    as the unit has (ms 3, us 6, ns 9; none for s), as
//	                    Flink pads to the type's precision; the wall clock in
//	                    the type's time zone (see the time functions).
//	date    -> string   'yyyy-MM-dd' (date32 and date64). Years beyond 9999
//	                    print more digits, years before 0 a '-'.
//	binary  -> string   the bytes, which must be valid UTF-8.
//	string  -> binary   the UTF-8 bytes.
//
// Parsing a string first trims leading and trailing ASCII spaces and
// control characters (Java's String.trim). A value that does not parse,
// or is out of the target's range, fails the cast naming the row; TRY_CAST
// makes it NULL.
//
//	string -> integer   optional sign, decimal digits and an optional
//	                    fraction that is dropped, as Flink does ('12.7' ->
//	                    12, '-0.5' -> 0); at least one digit. No exponent,
//	                    no hex. Range-checked for the target type (int8 ..
//	                    uint64).
//	string -> float     Go's strconv.ParseFloat: decimal or hex
//	                    mantissa, exponent, inf/infinity/nan in any case
//	                    (Java accepts only Infinity and NaN, but also a
//	                    trailing d or f, which Go refuses). Too large a
//	                    value becomes +-Inf, as in Java.
//	string -> bool      case-insensitive true/t/yes/y/1 and false/f/no/n/0
//	                    (Flink's BinaryStringDataUtil.toBoolean).
//	string -> timestamp 'yyyy-M[M]-d[d]' optionally followed by ' ' or 'T'
//	                    and 'H[H]:m[m]', ':s[s]' and '.f' (1 to 9 fraction
//	                    digits, truncated to the unit), and optionally a
//	                    final 'Z'. The year has 4 digits. Fields are range-
//	                    checked (no February 30, no leap second). The text is
//	                    a wall-clock time in the target type's time zone;
//	                    with 'Z' it is UTC.
//	string -> date      the same syntax; the time part, if any, is checked
//	                    and dropped (Flink accepts '2020-01-02 10:00:00' as a
//	                    date too).

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
)

// castStringFunc returns the kernel converting between strings and other
// types (numbers, booleans, timestamps, dates, binaries), or nil.
func castStringFunc(from, to arrow.DataType) castFn {
	toStr, fromStr := isStringType(to), isStringType(from)
	switch {
	case toStr && isIntegerType(from):
		return castIntToString
	case toStr && isFloatType(from):
		return castFloatToString
	case toStr && from.ID() == arrow.BOOL:
		return castBoolToString
	case toStr && from.ID() == arrow.BINARY:
		return castBinaryToString
	case toStr:
		src, ok, err := tmSourceOf(from)
		if !ok || err != nil {
			return nil
		}
		return castTimeToString(src)
	case !fromStr:
		return nil
	case isIntegerType(to):
		return castStringToInt(to)
	case isFloatType(to):
		return castStringToFloat(to)
	case to.ID() == arrow.BOOL:
		return castStringToBool
	case to.ID() == arrow.BINARY || to.ID() == arrow.LARGE_BINARY:
		return castStringToBinary
	}
	dst, ok, err := tmSourceOf(to)
	if !ok || err != nil {
		return nil
	}
	return castStringToTime(dst)
}

// castRow is the row of the i-th selected position.
func castRow(sel []int32, i int) int32 {
	if sel != nil {
		return sel[i]
	}
	return int32(i)
}

// castToBytes runs appendRow for every selected non-NULL row, appending
// the converted value to out's byte buffer. appendRow never fails.
func castToBytes(in, out *vec, sel []int32, n int, appendRow func(dst []byte, in *vec, r int32) []byte) error {
	out.data = out.data[:0]
	out.so, out.eo = grow(out.so, n), grow(out.eo, n)
	data, so, eo := out.data, out.so, out.eo
	cnt := rowCount(sel, n)
	for i := 0; i < cnt; i++ {
		r := castRow(sel, i)
		pos := len(data)
		if !out.isNull(r) {
			data = appendRow(data, in, r)
		}
		so[r], eo[r] = int32(pos), int32(len(data))
	}
	out.data = data
	if len(data) > math.MaxInt32 {
		return badCast(castRow(sel, cnt-1), "string results of one batch exceed 2 GiB")
	}
	return nil
}

func castIntToString(c *castNode, in, out *vec, sel []int32, n int) error {
	return castToBytes(in, out, sel, n, func(dst []byte, in *vec, r int32) []byte {
		return strconv.AppendInt(dst, readInt(in, r), 10)
	})
}

func castFloatToString(c *castNode, in, out *vec, sel []int32, n int) error {
	return castToBytes(in, out, sel, n, func(dst []byte, in *vec, r int32) []byte {
		return appendJavaDouble(dst, in.f64[r])
	})
}

func castBoolToString(c *castNode, in, out *vec, sel []int32, n int) error {
	return castToBytes(in, out, sel, n, func(dst []byte, in *vec, r int32) []byte {
		if in.b[r] {
			return append(dst, "TRUE"...)
		}
		return append(dst, "FALSE"...)
	})
}

func castTimeToString(src tmSource) castFn {
	frac := 0
	if ts, ok := src.typ.(*arrow.TimestampType); ok {
		frac = map[arrow.TimeUnit]int{arrow.Second: 0, arrow.Millisecond: 3, arrow.Microsecond: 6, arrow.Nanosecond: 9}[ts.Unit]
	}
	isDate := src.isDate()
	return func(c *castNode, in, out *vec, sel []int32, n int) error {
		var t tmFields
		return castToBytes(in, out, sel, n, func(dst []byte, in *vec, r int32) []byte {
			src.fields(&t, readInt(in, r), true)
			if isDate {
				return tmAppendDate(dst, t.year, t.month, t.day)
			}
			return tmAppendTimestamp(dst, &t, frac)
		})
	}
}

// castBinaryToString views the input bytes (out.data is never written by
// this kernel), after checking they are UTF-8.
func castBinaryToString(c *castNode, in, out *vec, sel []int32, n int) error {
	out.data = in.data
	out.so, out.eo = grow(out.so, n), grow(out.eo, n)
	cnt := rowCount(sel, n)
	for i := 0; i < cnt; i++ {
		r := castRow(sel, i)
		out.so[r], out.eo[r] = 0, 0
		if out.isNull(r) {
			continue
		}
		b := in.data[in.so[r]:in.eo[r]]
		if !utf8.Valid(b) {
			if c.tryNull(out, r) {
				continue
			}
			return badCast(r, "binary value %q is not valid UTF-8", b)
		}
		out.so[r], out.eo[r] = in.so[r], in.eo[r]
	}
	return nil
}

// castStringToBinary views the input bytes.
func castStringToBinary(c *castNode, in, out *vec, sel []int32, n int) error {
	out.data = in.data
	out.so, out.eo = grow(out.so, n), grow(out.eo, n)
	cnt := rowCount(sel, n)
	for i := 0; i < cnt; i++ {
		r := castRow(sel, i)
		if out.isNull(r) {
			out.so[r], out.eo[r] = 0, 0
			continue
		}
		out.so[r], out.eo[r] = in.so[r], in.eo[r]
	}
	return nil
}

// castTrim drops leading and trailing bytes <= ' ', as Java's String.trim.
func castTrim(b []byte) []byte {
	for len(b) > 0 && b[0] <= ' ' {
		b = b[1:]
	}
	for len(b) > 0 && b[len(b)-1] <= ' ' {
		b = b[:len(b)-1]
	}
	return b
}

// bytesString views b as a string without copying, for parsers that do
// not keep their argument (strconv copies the text it puts in errors).
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// castParseInt parses Flink's integer syntax: [+-]digits[.digits], with
// at least one digit; the fraction is dropped. overflow reports a value
// beyond int64.
func castParseInt(b []byte) (v int64, ok, overflow bool) {
	i, neg := 0, false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg, i = b[0] == '-', 1
	}
	digits := 0
	var acc int64 // accumulated negatively, so that MinInt64 fits
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := int64(b[i] - '0')
		if acc < math.MinInt64/10 || (acc == math.MinInt64/10 && d > 8) {
			overflow = true
		}
		acc = acc*10 - d
		digits++
	}
	if i < len(b) && b[i] == '.' {
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			digits++
		}
	}
	if i != len(b) || digits == 0 {
		return 0, false, false
	}
	if overflow {
		return 0, true, true
	}
	if !neg {
		if acc == math.MinInt64 {
			return 0, true, true
		}
		acc = -acc
	}
	return acc, true, false
}

func castStringToInt(to arrow.DataType) castFn {
	lo, hi := intRange(to)
	return func(c *castNode, in, out *vec, sel []int32, n int) error {
		narrow := out.kind == kindInt32
		if narrow {
			out.i32 = grow(out.i32, n)
		} else {
			out.i64 = grow(out.i64, n)
		}
		cnt := rowCount(sel, n)
		for i := 0; i < cnt; i++ {
			r := castRow(sel, i)
			if out.isNull(r) {
				continue
			}
			b := castTrim(in.data[in.so[r]:in.eo[r]])
			v, ok, overflow := castParseInt(b)
			if !ok || overflow || v < lo || v > hi {
				if c.tryNull(out, r) {
					continue
				}
				if ok {
					return badCast(r, "value %s out of range for %s", b, to)
				}
				return badCast(r, "cannot parse %q as %s", b, to)
			}
			if narrow {
				out.i32[r] = int32(v)
			} else {
				out.i64[r] = v
			}
		}
		return nil
	}
}

func castStringToFloat(to arrow.DataType) castFn {
	bits := 64
	if to.ID() == arrow.FLOAT32 {
		bits = 32
	}
	return func(c *castNode, in, out *vec, sel []int32, n int) error {
		out.f64 = grow(out.f64, n)
		cnt := rowCount(sel, n)
		for i := 0; i < cnt; i++ {
			r := castRow(sel, i)
			if out.isNull(r) {
				continue
			}
			b := castTrim(in.data[in.so[r]:in.eo[r]])
			f, err := strconv.ParseFloat(bytesString(b), bits)
			if err != nil && !castRangeErr(err) {
				if c.tryNull(out, r) {
					continue
				}
				return badCast(r, "cannot parse %q as %s", b, to)
			}
			out.f64[r] = f
		}
		return nil
	}
}

func castRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func castStringToBool(c *castNode, in, out *vec, sel []int32, n int) error {
	out.b = grow(out.b, n)
	cnt := rowCount(sel, n)
	for i := 0; i < cnt; i++ {
		r := castRow(sel, i)
		if out.isNull(r) {
			continue
		}
		b := castTrim(in.data[in.so[r]:in.eo[r]])
		v, ok := castParseBool(b)
		if !ok {
			if c.tryNull(out, r) {
				continue
			}
			return badCast(r, "cannot parse %q as bool", b)
		}
		out.b[r] = v
	}
	return nil
}

func castParseBool(b []byte) (v, ok bool) {
	if len(b) > 5 {
		return false, false
	}
	var low [5]byte
	for i, c := range b {
		low[i] = asciiLower[c]
	}
	switch string(low[:len(b)]) {
	case "t", "true", "y", "yes", "1":
		return true, true
	case "f", "false", "n", "no", "0":
		return false, true
	}
	return false, false
}

// tmParseDateTime parses yyyy-M[M]-d[d][( |T)H[H]:m[m][:s[s][.f{1,9}]]][Z]
// into the local day, second of day and nanoseconds; hasZ reports a final
// Z (UTC).
func tmParseDateTime(b []byte) (days, sod, nanos int64, hasZ, ok bool) {
	i := 0
	num := func(minD, maxD int) (int64, bool) {
		j, v := i, int64(0)
		for j < len(b) && j-i < maxD && b[j] >= '0' && b[j] <= '9' {
			v = v*10 + int64(b[j]-'0')
			j++
		}
		if j-i < minD {
			return 0, false
		}
		i = j
		return v, true
	}
	lit := func(c byte) bool {
		if i < len(b) && b[i] == c {
			i++
			return true
		}
		return false
	}
	y, ok1 := num(4, 4)
	ok2 := lit('-')
	mo, ok3 := num(1, 2)
	ok4 := lit('-')
	d, ok5 := num(1, 2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5) || mo < 1 || mo > 12 || d < 1 {
		return 0, 0, 0, false, false
	}
	days = tmDays(y, int(mo), int(d))
	if d > tmDays(y, int(mo)+1, 1)-tmDays(y, int(mo), 1) {
		return 0, 0, 0, false, false
	}
	if i < len(b) && (b[i] == ' ' || b[i] == 'T') {
		i++
		h, okh := num(1, 2)
		okc := lit(':')
		m, okm := num(1, 2)
		if !(okh && okc && okm) || h > 23 || m > 59 {
			return 0, 0, 0, false, false
		}
		var s int64
		if lit(':') {
			var oks bool
			if s, oks = num(1, 2); !oks || s > 59 {
				return 0, 0, 0, false, false
			}
			if lit('.') {
				start := i
				f, okf := num(1, 9)
				if !okf {
					return 0, 0, 0, false, false
				}
				nanos = f * tmPow10(9-(i-start))
			}
		}
		sod = h*3600 + m*60 + s
	}
	hasZ = lit('Z')
	return days, sod, nanos, hasZ, i == len(b)
}

func castStringToTime(dst tmSource) castFn {
	return func(c *castNode, in, out *vec, sel []int32, n int) error {
		if out.kind == kindInt32 {
			out.i32 = grow(out.i32, n)
		} else {
			out.i64 = grow(out.i64, n)
		}
		cnt := rowCount(sel, n)
		for i := 0; i < cnt; i++ {
			r := castRow(sel, i)
			if out.isNull(r) {
				continue
			}
			b := castTrim(in.data[in.so[r]:in.eo[r]])
			days, sod, nanos, hasZ, ok := tmParseDateTime(b)
			v, inRange := int64(0), true
			if ok {
				switch {
				case dst.days:
					v, inRange = days, days >= math.MinInt32 && days <= math.MaxInt32
				case dst.isDate():
					v = days * secondsPerDay * 1000
				default:
					secs := days*secondsPerDay + sod
					if !hasZ {
						secs = dst.zone.instantOf(secs)
					}
					inRange = secs <= math.MaxInt64/dst.perSec && secs >= math.MinInt64/dst.perSec+1
					v = secs*dst.perSec + nanos/(1e9/dst.perSec)
				}
			}
			if !ok || !inRange {
				if c.tryNull(out, r) {
					continue
				}
				if ok {
					return badCast(r, "value %q out of range for %s", b, dst.typ)
				}
				return badCast(r, "cannot parse %q as %s", b, dst.typ)
			}
			if out.kind == kindInt32 {
				out.i32[r] = int32(v)
			} else {
				out.i64[r] = v
			}
		}
		return nil
	}
}

// appendJavaDouble appends f as Java's Double.toString (JDK 19 and later)
// prints it.
func appendJavaDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// The shortest decimal that rounds back to f, as d.ddde±x.
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	var digs [20]byte
	nd, exp := javaDigits(e, &digs)
	if nd == 1 {
		// Java chooses among the decimals of length 1 and 2 that round
		// to f the one closest to f: the correctly rounded 2-digit one
		// (2^-1074 prints as 4.9E-324, not 5.0E-324).
		e = strconv.AppendFloat(buf[:0], f, 'e', 1, 64)
		if nd, exp = javaDigits(e, &digs); nd == 2 && digs[1] == '0' {
			nd = 1
		}
	}
	if f >= 1e-3 && f < 1e7 {
		point := exp + 1 // digits before the decimal point
		switch {
		case point <= 0:
			dst = append(dst, '0', '.')
			for ; point < 0; point++ {
				dst = append(dst, '0')
			}
			dst = append(dst, digs[:nd]...)
		case point >= nd:
			dst = append(dst, digs[:nd]...)
			for k := nd; k < point; k++ {
				dst = append(dst, '0')
			}
			dst = append(dst, '.', '0')
		default:
			dst = append(dst, digs[:point]...)
			dst = append(dst, '.')
			dst = append(dst, digs[point:nd]...)
		}
		return dst
	}
	dst = append(dst, digs[0], '.')
	if nd > 1 {
		dst = append(dst, digs[1:nd]...)
	} else {
		dst = append(dst, '0')
	}
	dst = append(dst, 'E')
	return strconv.AppendInt(dst, int64(exp), 10)
}

// javaDigits splits strconv's d.ddde±xx form into its digits and decimal
// exponent.
func javaDigits(e []byte, digs *[20]byte) (nd, exp int) {
	k := bytes.IndexByte(e, 'e')
	for _, c := range e[:k] {
		if c != '.' {
			digs[nd] = c
			nd++
		}
	}
	neg := e[k+1] == '-'
	for _, c := range e[k+2:] {
		exp = exp*10 + int(c-'0')
	}
	if neg {
		exp = -exp
	}
	return nd, exp
}
