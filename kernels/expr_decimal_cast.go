package kernels

import (
	"math"
	"math/bits"
	"strconv"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// CAST to and from DECIMAL, as Flink's DecimalDataUtils casts: to
// DECIMAL(p, s) the exact value rounded HALF_UP to s digits, NULL when it
// needs more than p digits (not an error, under CAST as under TRY_CAST);
// from DECIMAL to an integer type truncated toward zero (RoundingMode.DOWN)
// and, unlike Flink's wrapping long cast, an error (NULL under TRY_CAST)
// when out of range, as weir's other numeric casts; to DOUBLE as
// DecimalDataUtils.doubleValue; to a string as BigDecimal.toPlainString.
// Strings and doubles are read as BigDecimal reads them (a double through
// its shortest decimal form, as BigDecimal.valueOf(double)); text that is
// not a number, NaN and infinities fail the cast (NULL under TRY_CAST).

// decimalCastFunc picks the kernel for a cast from or to DECIMAL, or nil.
func decimalCastFunc(from, to arrow.DataType) castFn {
	if dt, ok := decType(to); ok {
		switch {
		case isDecimal(from):
			return castDecDec(from.(*arrow.Decimal128Type), dt)
		case isIntegerType(from):
			return castIntDec(from, dt)
		case from.ID() == arrow.BOOL:
			return castBoolDec(dt)
		case isFloatType(from):
			return castTextDec(dt, false)
		case isStringType(from):
			return castTextDec(dt, true)
		}
		return nil
	}
	dt, ok := decType(from)
	if !ok {
		return nil
	}
	switch {
	case isIntegerType(to):
		return castDecInt(dt, to)
	case isFloatType(to):
		return castDecFloat(dt, to)
	case to.ID() == arrow.BOOL:
		return castDecBool
	case isStringType(to):
		return castDecString(dt)
	}
	return nil
}

func castDecDec(from, to *arrow.Decimal128Type) castFn {
	return func(c *castNode, in, out *vec, sel []int32, n int) error {
		data := decVec(out, c.dt, n)
		forSel(sel, n, func(r int32) {
			if out.isNull(r) {
				return
			}
			y, ok := decRescale(decAt(in, r), from.Scale, to.Scale, to.Precision)
			if !ok {
				setNull(&c.s, out, sel, n, r)
				return
			}
			decPut(data, r, y)
		})
		return nil
	}
}

func castIntDec(fromInt arrow.DataType, to *arrow.Decimal128Type) castFn {
	from, _ := exactDecimal(fromInt)
	return func(c *castNode, in, out *vec, sel []int32, n int) error {
		data := decVec(out, c.dt, n)
		if from.Precision+to.Scale <= to.Precision {
			// Every value of the integer type fits: x * 10^s, exact.
			m := signed(false, pow10u128[to.Scale])
			if in.kind == kindInt64 && sel == nil {
				for r, x := range in.i64[:n] {
					decPut(data, int32(r), decimal128.FromI64(x).Mul(m))
				}
				return nil
			}
			forSel(sel, n, func(r int32) { decPut(data, r, decimal128.FromI64(readInt(in, r)).Mul(m)) })
			return nil
		}
		forSel(sel, n, func(r int32) {
			if out.isNull(r) {
				return
			}
			y, ok := decRescale(decimal128.FromI64(readInt(in, r)), 0, to.Scale, to.Precision)
			if !ok {
				setNull(&c.s, out, sel, n, r)
				return
			}
			decPut(data, r, y)
		})
		return nil
	}
}

func castBoolDec(to *arrow.Decimal128Type) castFn {
	return func(c *castNode, in, out *vec, sel []int32, n int) error {
		data := decVec(out, c.dt, n)
		forSel(sel, n, func(r int32) {
			if out.isNull(r) {
				return
			}
			y, ok := decRescale(decimal128.FromI64(b2i(in.b[r])), 0, to.Scale, to.Precision)
			if !ok {
				setNull(&c.s, out, sel, n, r)
				return
			}
			decPut(data, r, y)
		})
		return nil
	}
}

// castTextDec reads strings (text) or doubles (through their shortest
// decimal form) as DECIMAL.
func castTextDec(to *arrow.Decimal128Type, text bool) castFn {
	return func(c *castNode, in, out *vec, sel []int32, n int) error {
		data := decVec(out, c.dt, n)
		var buf []byte
		var err error
		forSel(sel, n, func(r int32) {
			if err != nil || out.isNull(r) {
				return
			}
			var src []byte
			if text {
				src = in.bytesAt(r)
			} else {
				f := in.f64[r]
				if math.IsNaN(f) || math.IsInf(f, 0) {
					if !c.tryNull(out, r) {
						err = badCast(r, "%v cannot be converted to %s", f, to)
					}
					return
				}
				buf = strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
				src = buf
			}
			y, valid, fits := parseDecimalText(src, to.Scale, to.Precision)
			switch {
			case !valid:
				if !c.tryNull(out, r) {
					err = badCast(r, "cannot cast %q to %s", src, to)
				}
			case !fits:
				setNull(&c.s, out, sel, n, r)
			default:
				decPut(data, r, y)
			}
		})
		return err
	}
}

// parseDecimalText reads [+-]digits[.digits][e[+-]digits] (spaces around
// it allowed, as Flink trims) at scale s, HALF_UP; valid is false for
// text that is not such a number, fits false when the value needs more
// than p digits.
func parseDecimalText(b []byte, s, p int32) (x decimal128.Num, valid, fits bool) {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg, b = b[0] == '-', b[1:]
	}
	// The significant digits (leading zeros dropped) and the power of ten
	// of the last one.
	var digits [80]byte
	nd, exp, seen, point := 0, 0, false, false
	overflowDigits := 0 // integral digits beyond the buffer
	i := 0
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			seen = true
			if point {
				exp--
			}
			if nd == 0 && c == '0' {
				continue
			}
			if nd < len(digits) {
				digits[nd] = c
				nd++
			} else if !point {
				overflowDigits++
			} else {
				exp++ // dropped fractional digit: too fine to matter
			}
			continue
		case c == '.' && !point:
			point = true
			continue
		}
		break
	}
	if !seen {
		return x, false, false
	}
	exp += overflowDigits
	if i < len(b) {
		if b[i] != 'e' && b[i] != 'E' {
			return x, false, false
		}
		e, err := strconv.Atoi(string(b[i+1:]))
		if err != nil || e > 1000 || e < -1000 {
			if err == nil && e < -1000 {
				return decimal128.Num{}, true, true // rounds to zero
			}
			return x, false, false
		}
		exp += e
	}
	// value = digits × 10^exp; at scale s the unscaled value is
	// digits × 10^(exp+s).
	shift := exp + int(s)
	keep := nd + shift // digits left after rounding away the fraction
	if keep > int(p) {
		return x, true, false
	}
	var m u128
	roundUp := false
	if shift >= 0 {
		for _, c := range digits[:nd] {
			m = m.mulAdd10(uint64(c - '0'))
		}
		for range shift {
			m = m.mulAdd10(0)
		}
	} else {
		if keep >= 0 {
			for _, c := range digits[:keep] {
				m = m.mulAdd10(uint64(c - '0'))
			}
			roundUp = keep < nd && digits[keep] >= '5'
		}
	}
	if roundUp {
		m = m.add1()
	}
	if !m.less(pow10u128[p]) {
		return x, true, false
	}
	return signed(neg && !m.isZero(), m), true, true
}

func (a u128) mulAdd10(d uint64) u128 {
	h, lo := bits.Mul64(a.lo, 10)
	lo, c := bits.Add64(lo, d, 0)
	return u128{hi: a.hi*10 + h + c, lo: lo}
}

func (a u128) add1() u128 {
	lo, c := bits.Add64(a.lo, 1, 0)
	return u128{hi: a.hi + c, lo: lo}
}

func castDecInt(from *arrow.Decimal128Type, to arrow.DataType) castFn {
	lo, hi := intRange(to)
	return func(c *castNode, in, out *vec, sel []int32, n int) error {
		if out.kind == kindInt32 {
			out.i32 = grow(out.i32, n)
		} else {
			out.i64 = grow(out.i64, n)
		}
		var err error
		forSel(sel, n, func(r int32) {
			if err != nil || out.isNull(r) {
				return
			}
			x := decAt(in, r)
			neg, m := magnitude(x)
			w := m.wide()
			if from.Scale > 0 {
				w = w.divPow10(int(from.Scale), false)
			}
			// |x| / 10^s < 10^38: one 128-bit word pair; an int64 needs
			// the high word clear and the low word within 2^63 (- 1).
			u := w[0]
			ok := w[1] == 0 && (u <= math.MaxInt64 || neg && u == 1<<63)
			var v int64
			if ok {
				v = int64(u)
				if neg {
					v = -v
				}
				ok = v >= lo && v <= hi
			}
			if !ok {
				if !c.tryNull(out, r) {
					err = badCast(r, "value %s out of range for %s", Decimal{x, from.Scale}, to)
				}
				return
			}
			if out.kind == kindInt32 {
				out.i32[r] = int32(v)
			} else {
				out.i64[r] = v
			}
		})
		return err
	}
}

func castDecFloat(from *arrow.Decimal128Type, to arrow.DataType) castFn {
	return func(c *castNode, in, out *vec, sel []int32, n int) error {
		out.f64 = grow(out.f64, n)
		var buf []byte
		forSel(sel, n, func(r int32) {
			var f float64
			f, buf = decToFloat(decAt(in, r), from, buf)
			if to.ID() == arrow.FLOAT32 {
				f = float64(float32(f))
			}
			out.f64[r] = f
		})
		return nil
	}
}

func castDecBool(c *castNode, in, out *vec, sel []int32, n int) error {
	out.b = grow(out.b, n)
	forSel(sel, n, func(r int32) { out.b[r] = decAt(in, r) != (decimal128.Num{}) })
	return nil
}

func castDecString(from *arrow.Decimal128Type) castFn {
	return func(c *castNode, in, out *vec, sel []int32, n int) error {
		out.so, out.eo = grow(out.so, n), grow(out.eo, n)
		data := out.data[:0]
		forSel(sel, n, func(r int32) {
			out.so[r] = int32(len(data))
			if !out.isNull(r) {
				data = appendDecimal(data, decAt(in, r), from.Scale)
			}
			out.eo[r] = int32(len(data))
		})
		out.data = data
		return nil
	}
}

// unsafeString views b as a string for a call that does not keep it.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
