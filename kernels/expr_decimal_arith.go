package kernels

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// DECIMAL arithmetic. Result types follow Flink's LogicalTypeMerging
// (Calcite's rules, then adjustDecimal's cap at precision 38):
//
//	+, -  s = max(s1, s2), p = max(p1-s1, p2-s2) + s + 1
//	*     s = s1 + s2,     p = p1 + p2
//	/     s = max(6, s1+p2+1), p = p1 - s1 + s2 + s
//	MOD   s = max(s1, s2), p = min(p1-s1, p2-s2) + s
//
// Values follow DecimalDataUtils: the exact result (a quotient first
// rounded to 38 significant digits), rounded HALF_UP to the result scale,
// NULL when it needs more digits than the result precision. Division
// and MOD by zero fail the evaluation, as BigDecimal's ArithmeticException
// fails a Flink job.

// decArithType is the result type of a op b over DECIMAL(p1, s1) and
// DECIMAL(p2, s2).
func decArithType(op arithOp, a, b *arrow.Decimal128Type) *arrow.Decimal128Type {
	p1, s1, p2, s2 := a.Precision, a.Scale, b.Precision, b.Scale
	switch op {
	case opAdd, opSub:
		s := max(s1, s2)
		return adjustDecimal(max(p1-s1, p2-s2)+s+1, s)
	case opMul:
		return adjustDecimal(p1+p2, s1+s2)
	case opDiv:
		s := max(minAdjustedScale, s1+p2+1)
		return adjustDecimal(p1-s1+s2+s, s)
	}
	s := max(s1, s2)
	return adjustDecimal(min(p1-s1, p2-s2)+s, s)
}

// decArithNode evaluates a binary DECIMAL operator.
type decArithNode struct {
	nodeBase
	op     arithOp
	a, b   node
	sa, sb int32
	res    *arrow.Decimal128Type
	// exact: the result is a plain 128-bit +, - or * of the operands at
	// their scales, which cannot overflow (the type was not capped).
	exact bool
	big   decBig
	s     scratch
}

func compileDecArith(call *CallExpr, op arithOp, a, b node, da, db *arrow.Decimal128Type) (node, error) {
	res := decArithType(op, da, db)
	var err error
	if a, err = coerce(call, a, da); err != nil {
		return nil, err
	}
	if b, err = coerce(call, b, db); err != nil {
		return nil, err
	}
	n := &decArithNode{nodeBase: nodeBase{src: call, dt: res}, op: op, a: a, b: b, sa: da.Scale, sb: db.Scale, res: res}
	switch op {
	case opMul:
		n.exact = res.Scale == da.Scale+db.Scale && da.Precision+db.Precision <= maxDecimalPrecision
	case opAdd, opSub:
		n.exact = da.Scale == db.Scale && res.Scale == da.Scale && max(da.Precision, db.Precision) < maxDecimalPrecision
	}
	return n, nil
}

func (n *decArithNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	a, err := n.a.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	b, err := n.b.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	unionNulls(&n.s, out, a, b, sel, ctx.n)
	data := decVec(out, n.dt, ctx.n)
	if n.exact {
		switch n.op {
		case opMul:
			if sel == nil {
				for r := range int32(ctx.n) {
					decPut(data, r, decAt(a, r).Mul(decAt(b, r)))
				}
				break
			}
			for _, r := range sel {
				decPut(data, r, decAt(a, r).Mul(decAt(b, r)))
			}
		case opAdd:
			forSel(sel, ctx.n, func(r int32) { decPut(data, r, decAt(a, r).Add(decAt(b, r))) })
		case opSub:
			forSel(sel, ctx.n, func(r int32) { decPut(data, r, decAt(a, r).Sub(decAt(b, r))) })
		}
		return out, nil
	}
	p, s := n.res.Precision, n.res.Scale
	var bad int32 = -1
	forSel(sel, ctx.n, func(r int32) {
		if out.isNull(r) {
			return
		}
		x, y := decAt(a, r), decAt(b, r)
		var z decimal128.Num
		ok := true
		switch n.op {
		case opMul:
			z, ok = decMul(x, n.sa, y, n.sb, s, p)
		case opAdd:
			z, ok = decAdd(x, n.sa, y, n.sb, false, s, p)
		case opSub:
			z, ok = decAdd(x, n.sa, y, n.sb, true, s, p)
		case opDiv, opMod:
			if y == (decimal128.Num{}) {
				if bad < 0 {
					bad = r
				}
				return
			}
			if n.op == opDiv {
				z, ok = n.big.decDiv(x, n.sa, y, n.sb, s, p)
			} else {
				z, ok = n.big.decMod(x, n.sa, y, n.sb, s, p)
			}
		}
		if !ok {
			setNull(&n.s, out, sel, ctx.n, r)
			return
		}
		decPut(data, r, z)
	})
	if bad >= 0 {
		return nil, rowErr(n.src, bad, "division by zero")
	}
	return out, nil
}

// decNegNode is -a over DECIMAL: exact (the range of DECIMAL(p, s) is
// symmetric).
type decNegNode struct {
	nodeBase
	a node
	s scratch
}

func (n *decNegNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	a, err := n.a.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	out.nulls = nil
	if a.nulls != nil {
		copySel(out.setNulls(&n.s.nulls, ctx.n), a.nulls, sel, ctx.n)
	}
	data := decVec(out, n.dt, ctx.n)
	forSel(sel, ctx.n, func(r int32) { decPut(data, r, decAt(a, r).Negate()) })
	return out, nil
}
