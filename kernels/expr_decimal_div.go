package kernels

import (
	"math/big"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Division and remainder of DECIMAL values go through math/big: their
// intermediates (a 38-digit dividend scaled by up to 76 digits) exceed
// the 256-bit helpers, and Flink's semantics round twice. The big.Int
// values are the node's, reused from row to row.

// pow10Big[k] is 10^k, read-only.
var pow10Big = func() []*big.Int {
	t := make([]*big.Int, 200)
	t[0] = big.NewInt(1)
	ten := big.NewInt(10)
	for k := 1; k < len(t); k++ {
		t[k] = new(big.Int).Mul(t[k-1], ten)
	}
	return t
}()

// bigDigits is the number of decimal digits of x > 0.
func bigDigits(x *big.Int) int {
	n := x.BitLen()
	if n == 0 {
		return 1
	}
	d := (n-1)*30103/100000 + 1
	if d < len(pow10Big) && x.Cmp(pow10Big[d]) >= 0 {
		d++
	}
	return d
}

// decBig holds a division's scratch numbers.
// Operands never alias a result (z.q.Mul(&z.q, x) would allocate).
type decBig struct {
	num, den, q, r, t, u big.Int
}

func (z *decBig) setMag(dst *big.Int, m u128) {
	dst.SetUint64(m.hi)
	dst.Lsh(dst, 64)
	z.t.SetUint64(m.lo)
	dst.Or(dst, &z.t)
}

// roundQuo sets q to q/10^k rounded HALF_UP (q >= 0).
func (z *decBig) roundQuo(k int) {
	if k <= 0 {
		return
	}
	z.u.Set(&z.q)
	z.q.QuoRem(&z.u, pow10Big[k], &z.r)
	z.r.Lsh(&z.r, 1)
	if z.r.Cmp(pow10Big[k]) >= 0 {
		z.q.Add(&z.q, pow10Big[0])
	}
}

// decDiv is a/b (scales sa, sb) as Flink's DecimalDataUtils.divide
// computes it: the quotient rounded to 38 significant digits (BigDecimal
// divide with MathContext(38, HALF_UP)), then to scale s (HALF_UP); false
// when the result needs more than p digits. b is not zero.
func (z *decBig) decDiv(a decimal128.Num, sa int32, b decimal128.Num, sb, s, p int32) (decimal128.Num, bool) {
	na, ma := magnitude(a)
	nb, mb := magnitude(b)
	if ma.isZero() {
		return decimal128.Num{}, true
	}
	// Q = (ma / 10^sa) / (mb / 10^sb) = num / den.
	z.setMag(&z.u, ma)
	z.num.Mul(&z.u, pow10Big[sb])
	z.setMag(&z.u, mb)
	z.den.Mul(&z.u, pow10Big[sa])
	// q = floor(Q * 10^k) with at least 39 digits.
	k := max(0, 40+bigDigits(&z.den)-bigDigits(&z.num))
	z.u.Mul(&z.num, pow10Big[k])
	z.q.QuoRem(&z.u, &z.den, &z.r)
	drop := bigDigits(&z.q) - 38
	z.roundQuo(drop) // 38 significant digits, at scale k - drop
	if sc := int32(k - drop); sc > s {
		z.roundQuo(int(sc - s))
	} else if sc < s {
		z.u.Set(&z.q)
		z.q.Mul(&z.u, pow10Big[s-sc])
	}
	if z.q.Cmp(pow10Big[p]) >= 0 {
		return decimal128.Num{}, false
	}
	z.t.Rsh(&z.q, 64)
	m := u128{hi: z.t.Uint64(), lo: z.q.Uint64()}
	return signed(na != nb && !m.isZero(), m), true
}

// decMod is a MOD b (scales sa, sb): the exact remainder with the sign of
// a (Java's BigDecimal.remainder), at scale s (HALF_UP) and precision p.
// b is not zero.
func (z *decBig) decMod(a decimal128.Num, sa int32, b decimal128.Num, sb, s, p int32) (decimal128.Num, bool) {
	na, ma := magnitude(a)
	_, mb := magnitude(b)
	top := max(sa, sb)
	z.setMag(&z.u, ma)
	z.num.Mul(&z.u, pow10Big[top-sa])
	z.setMag(&z.u, mb)
	z.den.Mul(&z.u, pow10Big[top-sb])
	z.q.QuoRem(&z.num, &z.den, &z.r)
	z.q.Set(&z.r)
	// The remainder is below |b| * 10^(top-sb) < 10^76: it fits 256 bits.
	var w u256
	z.t.Set(&z.q)
	for i := range w {
		w[i] = z.t.Uint64()
		z.t.Rsh(&z.t, 64)
	}
	return finish(na, w, top, s, p)
}
