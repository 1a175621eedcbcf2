package format

import (
	"math"
	"math/bits"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Scalar formatters shared by the text encoders. Each appends to dst; the
// parsers in text.go read everything they write.

// timestampStyle is how a text encoder writes timestamps.
type timestampStyle uint8

const (
	// styleRFC3339 writes 2006-01-02T15:04:05.999Z (weir's JSON default).
	styleRFC3339 timestampStyle = iota
	// styleSQL writes 2006-01-02 15:04:05.999 (Flink's "SQL" standard).
	styleSQL
	// styleISO writes 2006-01-02T15:04:05.999, with a Z only for
	// timestamps with a time zone (Flink's "ISO-8601" standard).
	styleISO
)

func append2(dst []byte, v int) []byte {
	return append(dst, byte('0'+v/10), byte('0'+v%10))
}

// appendDate writes yyyy-MM-dd; false when the year is outside 0000-9999.
func appendDate(dst []byte, days int64) ([]byte, bool) {
	y, m, d := civilFromDays(days)
	if y < 0 || y > 9999 {
		return dst, false
	}
	dst = append2(dst, int(y/100))
	dst = append2(dst, int(y%100))
	dst = append(dst, '-')
	dst = append2(dst, m)
	dst = append(dst, '-')
	return append2(dst, d), true
}

// appendClock writes HH:mm:ss and a fraction without trailing zeros.
func appendClock(dst []byte, nanos int64) []byte {
	secs := nanos / 1e9
	dst = append2(dst, int(secs/3600))
	dst = append(dst, ':')
	dst = append2(dst, int(secs/60%60))
	dst = append(dst, ':')
	dst = append2(dst, int(secs%60))
	frac := nanos % 1e9
	if frac == 0 {
		return dst
	}
	var buf [9]byte
	for i := 8; i >= 0; i-- {
		buf[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := 9
	for buf[n-1] == '0' {
		n--
	}
	dst = append(dst, '.')
	return append(dst, buf[:n]...)
}

// appendTimestamp writes v (a count of unit since the epoch) in style;
// false when the year is outside 0000-9999, which the text formats cannot
// write (the encoders then write the integer).
func appendTimestamp(dst []byte, v int64, unit arrow.TimeUnit, zoned bool, style timestampStyle) ([]byte, bool) {
	secs, nanos := fromUnit(v, unit)
	days, sod := secs/86400, secs%86400
	if sod < 0 {
		days--
		sod += 86400
	}
	dst, ok := appendDate(dst, days)
	if !ok {
		return dst, false
	}
	if style == styleSQL {
		dst = append(dst, ' ')
	} else {
		dst = append(dst, 'T')
	}
	dst = appendClock(dst, sod*1e9+nanos)
	if style == styleRFC3339 || style == styleISO && zoned {
		dst = append(dst, 'Z')
	}
	return dst, true
}

// appendDecimal writes n with scale as a plain decimal number.
func appendDecimal(dst []byte, n decimal128.Num, scale int32) []byte {
	if n.Sign() < 0 {
		dst = append(dst, '-')
		n = n.Negate()
	}
	// Digits of the magnitude, least significant chunk of 19 first.
	var buf [40]byte
	i := len(buf)
	hi, lo := uint64(n.HighBits()), n.LowBits()
	for hi != 0 || lo >= 1e19 {
		var r uint64
		qhi := hi / 1e19
		rhi := hi % 1e19
		lo, r = bits.Div64(rhi, lo, 1e19)
		hi = qhi
		for range 19 {
			i--
			buf[i] = byte('0' + r%10)
			r /= 10
		}
	}
	for {
		i--
		buf[i] = byte('0' + lo%10)
		lo /= 10
		if lo == 0 {
			break
		}
	}
	digits := buf[i:]
	switch {
	case scale <= 0:
		dst = append(dst, digits...)
		if len(digits) > 1 || digits[0] != '0' {
			for range -scale {
				dst = append(dst, '0')
			}
		}
	case len(digits) > int(scale):
		dst = append(dst, digits[:len(digits)-int(scale)]...)
		dst = append(dst, '.')
		dst = append(dst, digits[len(digits)-int(scale):]...)
	default:
		dst = append(dst, '0', '.')
		for range int(scale) - len(digits) {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	}
	return dst
}

// appendFloat writes f in the shortest form that parses back to f; NaN and
// infinities as NaN, Infinity and -Infinity.
func appendFloat(dst []byte, f float64, bitSize int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bitSize)
}
