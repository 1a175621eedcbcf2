package kernels

import (
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Fixed-width integer arithmetic for DECIMAL values, without allocation.
// A decimal128 value is a signed 128-bit unscaled integer; the kernels
// work on sign and magnitude, with 256-bit intermediates wide enough for
// the exact product of two 38-digit values (< 10^76 < 2^253) and for a
// 38-digit value rescaled by up to 38 digits.

// u128 is an unsigned 128-bit magnitude.
type u128 struct{ hi, lo uint64 }

// u256 is an unsigned 256-bit magnitude, least significant word first.
type u256 [4]uint64

// pow10u128[k] is 10^k for k <= 38.
var pow10u128 = func() (t [39]u128) {
	t[0] = u128{lo: 1}
	for k := 1; k < len(t); k++ {
		hi, lo := bits.Mul64(t[k-1].lo, 10)
		t[k] = u128{hi: t[k-1].hi*10 + hi, lo: lo}
	}
	return
}()

// pow10u64[k] is 10^k for k <= 19.
var pow10u64 = func() (t [20]uint64) {
	t[0] = 1
	for k := 1; k < len(t); k++ {
		t[k] = t[k-1] * 10
	}
	return
}()

// magnitude splits n into its sign and absolute value.
func magnitude(n decimal128.Num) (neg bool, m u128) {
	if n.HighBits() < 0 {
		n = n.Negate()
		return true, u128{hi: uint64(n.HighBits()), lo: n.LowBits()}
	}
	return false, u128{hi: uint64(n.HighBits()), lo: n.LowBits()}
}

// signed is the decimal128 value -m (neg) or m; m < 2^127.
func signed(neg bool, m u128) decimal128.Num {
	n := decimal128.New(int64(m.hi), m.lo)
	if neg {
		return n.Negate()
	}
	return n
}

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

func (a u128) isZero() bool { return a.hi == 0 && a.lo == 0 }

func (a u128) wide() u256 { return u256{a.lo, a.hi} }

// mul128 is the exact product a*b.
func mul128(a, b u128) u256 {
	var z u256
	h, l := bits.Mul64(a.lo, b.lo)
	z[0], z[1] = l, h
	h, l = bits.Mul64(a.lo, b.hi)
	var c uint64
	z[1], c = bits.Add64(z[1], l, 0)
	z[2], c = bits.Add64(h, 0, c)
	z[3] = c
	h, l = bits.Mul64(a.hi, b.lo)
	z[1], c = bits.Add64(z[1], l, 0)
	z[2], c = bits.Add64(z[2], h, c)
	z[3] += c
	h, l = bits.Mul64(a.hi, b.hi)
	z[2], c = bits.Add64(z[2], l, 0)
	z[3], _ = bits.Add64(z[3], h, c)
	return z
}

// mulWord is x*w and whether it overflowed 256 bits.
func (x u256) mulWord(w uint64) (u256, bool) {
	var z u256
	var carry uint64
	for i := range x {
		h, l := bits.Mul64(x[i], w)
		var c uint64
		z[i], c = bits.Add64(l, carry, 0)
		carry = h + c
	}
	return z, carry != 0
}

// divWord divides x by w in place and returns the remainder.
func (x *u256) divWord(w uint64) uint64 {
	var rem uint64
	for i := 3; i >= 0; i-- {
		x[i], rem = bits.Div64(rem, x[i], w)
	}
	return rem
}

// mulPow10 is x*10^k and whether it overflowed 256 bits.
func (x u256) mulPow10(k int) (u256, bool) {
	for k > 0 {
		step := min(k, 19)
		var of bool
		if x, of = x.mulWord(pow10u64[step]); of {
			return x, true
		}
		k -= step
	}
	return x, false
}

// divPow10 is x/10^k rounded HALF_UP (half away from zero on the
// magnitude, as Java's RoundingMode.HALF_UP): the discarded fraction is
// at least one half exactly when its first digit is 5 or more.
func (x u256) divPow10(k int, round bool) u256 {
	if k == 0 {
		return x
	}
	rest := k - 1
	for rest > 0 {
		step := min(rest, 19)
		x.divWord(pow10u64[step])
		rest -= step
	}
	if d := x.divWord(10); round && d >= 5 {
		x.addWord(1)
	}
	return x
}

func (x *u256) addWord(w uint64) {
	var c uint64
	x[0], c = bits.Add64(x[0], w, 0)
	for i := 1; i < 4 && c != 0; i++ {
		x[i], c = bits.Add64(x[i], 0, c)
	}
}

func (x u256) add(y u256) u256 {
	var c uint64
	for i := range x {
		x[i], c = bits.Add64(x[i], y[i], c)
	}
	return x
}

func (x u256) sub(y u256) u256 {
	var b uint64
	for i := range x {
		x[i], b = bits.Sub64(x[i], y[i], b)
	}
	return x
}

func (x u256) cmp(y u256) int {
	for i := 3; i >= 0; i-- {
		switch {
		case x[i] < y[i]:
			return -1
		case x[i] > y[i]:
			return 1
		}
	}
	return 0
}

// fits reports whether x < 10^p (p <= 38) and returns it as a u128.
func (x u256) fits(p int32) (u128, bool) {
	if x[2] != 0 || x[3] != 0 {
		return u128{}, false
	}
	m := u128{hi: x[1], lo: x[0]}
	return m, m.less(pow10u128[p])
}

// finish rounds the magnitude x at scale from to scale to (HALF_UP) and
// returns the signed value, or false when it needs more than p digits
// (Flink's DecimalData.fromBigDecimal returns null then).
func finish(neg bool, x u256, from, to, p int32) (decimal128.Num, bool) {
	switch {
	case from > to:
		x = x.divPow10(int(from-to), true)
	case from < to:
		var of bool
		if x, of = x.mulPow10(int(to - from)); of {
			return decimal128.Num{}, false
		}
	}
	m, ok := x.fits(p)
	if !ok {
		return decimal128.Num{}, false
	}
	return signed(neg && !m.isZero(), m), true
}

// decRescale is a (scale sa) at scale s and precision p, HALF_UP, or
// false on overflow: Flink's CAST between DECIMAL types.
func decRescale(a decimal128.Num, sa, s, p int32) (decimal128.Num, bool) {
	if sa == s {
		neg, m := magnitude(a)
		if !m.less(pow10u128[p]) {
			return decimal128.Num{}, false
		}
		return signed(neg, m), true
	}
	neg, m := magnitude(a)
	return finish(neg, m.wide(), sa, s, p)
}

// decMul is a*b (scales sa, sb) at scale s and precision p.
func decMul(a decimal128.Num, sa int32, b decimal128.Num, sb, s, p int32) (decimal128.Num, bool) {
	na, ma := magnitude(a)
	nb, mb := magnitude(b)
	return finish(na != nb, mul128(ma, mb), sa+sb, s, p)
}

// decAdd is a+b (or a-b with sub), exact at scale max(sa, sb), then at
// scale s (<= max(sa, sb)) and precision p.
func decAdd(a decimal128.Num, sa int32, b decimal128.Num, sb int32, sub bool, s, p int32) (decimal128.Num, bool) {
	na, ma := magnitude(a)
	nb, mb := magnitude(b)
	if sub {
		nb = !nb
	}
	wa, wb := ma.wide(), mb.wide()
	top := max(sa, sb)
	// Both < 10^38 rescaled by at most 38 digits: below 10^76, no overflow.
	wa, _ = wa.mulPow10(int(top - sa))
	wb, _ = wb.mulPow10(int(top - sb))
	var neg bool
	var sum u256
	switch {
	case na == nb:
		neg, sum = na, wa.add(wb)
	case wa.cmp(wb) >= 0:
		neg, sum = na, wa.sub(wb)
	default:
		neg, sum = nb, wb.sub(wa)
	}
	return finish(neg, sum, top, s, p)
}

// decCmp compares a (scale sa) with b (scale sb) exactly.
func decCmp(a decimal128.Num, sa int32, b decimal128.Num, sb int32) int {
	if sa == sb {
		return a.Cmp(b)
	}
	na, ma := magnitude(a)
	nb, mb := magnitude(b)
	switch {
	case ma.isZero() && mb.isZero():
		return 0
	case na && !nb:
		return -1
	case !na && nb:
		return 1
	}
	wa, wb := ma.wide(), mb.wide()
	top := max(sa, sb)
	wa, _ = wa.mulPow10(int(top - sa))
	wb, _ = wb.mulPow10(int(top - sb))
	c := wa.cmp(wb)
	if na {
		return -c
	}
	return c
}
