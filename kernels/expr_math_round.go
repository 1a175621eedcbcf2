package kernels

import (
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
)

// round(x[, d]) (semantics in expr_math.go). Flink rounds a DOUBLE with
// BigDecimal.valueOf(x).movePointRight(d).setScale(0, HALF_UP)
// .movePointLeft(d).doubleValue(): on the decimal digits Double.toString
// prints. Most rows take a float fast path that provably agrees with
// that; the rest round those digits as text.

// roundNode is round(x, d) of an integer or float x.
type roundNode struct {
	nodeBase
	x, d node // d nil when constant (or omitted)

	dVal int64
	buf  []byte // the decimal form of the float being rounded
	s    scratch
}

func compileRound(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArity(call, args, 1, 2); err != nil {
		return nil, err
	}
	if err := mathNumArg(call, args, 0); err != nil {
		return nil, err
	}
	if len(args) == 2 && !isIntArg(args[1]) {
		return nil, strArgErr(call, 1, "an integer", args[1].dtype())
	}
	dt := arrow.DataType(arrow.PrimitiveTypes.Float64)
	if !isNullLit(args[0]) {
		dt = evalType(args[0].dtype())
	}
	if anyNullLit(args) {
		return nullResult(call, dt, args), nil
	}
	n := &roundNode{nodeBase: nodeBase{src: call, dt: dt}, x: args[0], buf: make([]byte, 0, 64)}
	if len(args) == 2 {
		if d, ok, isNull := constInt(args[1]); ok && !isNull {
			n.dVal = d
		} else {
			n.d = args[1]
		}
	}
	if n.d == nil && n.dVal >= 0 && dt.ID() != arrow.FLOAT64 {
		return &passNode{nodeBase: nodeBase{src: call, dt: dt}, arg: args[0]}, nil
	}
	return n, nil
}

func (n *roundNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	x, err := n.x.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	d := x // a stand-in without NULLs when d is constant
	if n.d != nil {
		if d, err = n.d.eval(ctx, sel); err != nil {
			return nil, err
		}
	}
	out := &n.s.out
	out.typ, out.kind = n.dt, x.kind
	nulls := strNulls(&n.s, out, sel, ctx.n, x, d)
	places := func(r int32) int64 {
		if n.d == nil {
			return n.dVal
		}
		return readInt(d, r)
	}
	cnt := rowCount(sel, ctx.n)
	switch x.kind {
	case kindFloat64:
		out.f64 = grow(out.f64, ctx.n)
		for i := 0; i < cnt; i++ {
			r := int32(i)
			if sel != nil {
				r = sel[i]
			}
			if nulls == nil || !nulls[r] {
				out.f64[r] = roundFloat(x.f64[r], places(r), &n.buf)
			}
		}
	case kindInt64, kindInt32:
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		if x.kind == kindInt32 {
			lo, hi = math.MinInt32, math.MaxInt32
			out.i32 = grow(out.i32, ctx.n)
		} else {
			out.i64 = grow(out.i64, ctx.n)
		}
		for i := 0; i < cnt; i++ {
			r := int32(i)
			if sel != nil {
				r = sel[i]
			}
			if nulls != nil && nulls[r] {
				continue
			}
			v := readInt(x, r)
			p := places(r)
			res, ok := roundInt(v, p)
			if !ok || res < lo || res > hi {
				return nil, rowErr(n.src, r, "integer overflow: round(%d, %d) does not fit in %s", v, p, n.dt)
			}
			if x.kind == kindInt32 {
				out.i32[r] = int32(res)
			} else {
				out.i64[r] = res
			}
		}
	}
	return out, nil
}

// roundInt rounds x to a multiple of 10^-d, halves away from zero; false
// when the result does not fit in int64.
func roundInt(x, d int64) (int64, bool) {
	switch {
	case d >= 0:
		return x, true
	case d < -19:
		return 0, true // |x| < 10^19 / 2
	case d == -19:
		// 10^19 exceeds int64: the result is 0 or ±10^19.
		if x >= 5e18 || x <= -5e18 {
			return 0, false
		}
		return 0, true
	}
	p := pow10i[-d]
	q, rem := x/p, x%p
	if rem >= 0 && 2*rem >= p {
		q++
	} else if rem < 0 && -2*rem >= p {
		q--
	}
	if q > math.MaxInt64/p || q < math.MinInt64/p {
		return 0, false
	}
	return q * p, true
}

// roundFloat is Flink's ROUND of a DOUBLE to d decimal places. buf is
// scratch space for the decimal form.
func roundFloat(x float64, d int64, buf *[]byte) float64 {
	if x == 0 {
		return 0
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	if d >= -22 && d <= 22 {
		if r, ok := roundFloatFast(x, int(d)); ok {
			return r
		}
	}
	return roundFloatDecimal(x, d, buf)
}

// roundFloatFast rounds with float arithmetic when that provably gives
// the decimal rounding's result, and reports whether it could.
//
// Let s be the decimal Java prints for x (|s - x| <= ulp(x)/2) and y the
// computed |x| * 10^d, within ulp(y)/2 of |x| * 10^d: then |s| * 10^d is
// within about y * 2^-52 of y. Unless y's fraction lies within y * 2^-50
// of one half, |s| * 10^d and y round to the same integer M. For
// y < 2^52 the floor and the fraction are exact; M and 10^|d| (d <= 22)
// are exact doubles, so M / 10^d (or M * 10^-d) is the double nearest the
// decimal result, as BigDecimal.doubleValue returns.
func roundFloatFast(x float64, d int) (float64, bool) {
	a := math.Abs(x)
	var y float64
	if d >= 0 {
		if a >= 1<<52 {
			return x, true // an integer already
		}
		y = a * pow10f[d]
	} else {
		y = a / pow10f[-d]
	}
	if !(y < 1<<52) {
		return 0, false
	}
	m := math.Floor(y)
	f := y - m
	if math.Abs(f-0.5) <= y*0x1p-50 {
		return 0, false
	}
	if f > 0.5 {
		m++
	}
	if m == 0 {
		return 0, true
	}
	if d >= 0 {
		m /= pow10f[d]
	} else {
		m *= pow10f[-d]
	}
	if x < 0 {
		m = -m
	}
	return m, true
}

// roundFloatDecimal rounds the digits of Java's Double.toString(x) at d
// decimal places, halves away from zero, and reads the result back.
func roundFloatDecimal(x float64, d int64, buf *[]byte) float64 {
	d = max(min(d, 400), -400) // beyond, every double rounds to itself or 0
	text := appendJavaDouble((*buf)[:0], math.Abs(x))
	// digits d1 d2 ... dn with the decimal point after `point` of them
	// (point < 0: -point zeros follow the point first).
	var digits [24]byte
	nd, point, seenPoint, exp := 0, 0, false, 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '.':
			seenPoint = true
		case c == 'E':
			e, _ := strconv.Atoi(bytesString(text[i+1:]))
			exp = e
			i = len(text)
		case c == '0' && nd == 0:
			// a leading zero
			if seenPoint {
				point--
			}
		default:
			digits[nd] = c
			nd++
			if !seenPoint {
				point++
			}
		}
	}
	for nd > 0 && digits[nd-1] == '0' {
		nd--
	}
	point += exp
	keep := int64(point) + d // digits kept
	if keep >= int64(nd) {
		return x
	}
	if keep < 0 {
		return 0
	}
	up := digits[keep] >= '5'
	out := append(text[:0], digits[:keep]...)
	if up {
		// Add one at the last kept digit, carrying.
		k := len(out) - 1
		for ; k >= 0 && out[k] == '9'; k-- {
			out[k] = '0'
		}
		if k >= 0 {
			out[k]++
		} else {
			out = append(out, 0)
			copy(out[1:], out)
			out[0] = '1'
		}
	}
	if len(out) == 0 || allZeros(out) {
		return 0
	}
	out = append(out, 'e')
	out = strconv.AppendInt(out, -d, 10)
	*buf = out
	r, _ := strconv.ParseFloat(bytesString(out), 64) // ±Inf beyond the range, as Java's doubleValue
	if x < 0 {
		r = -r
	}
	return r
}

func allZeros(b []byte) bool {
	for _, c := range b {
		if c != '0' {
			return false
		}
	}
	return true
}
