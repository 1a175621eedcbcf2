package kernels

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// Comparisons with a DECIMAL side are exact: an integer operand is
// converted to its DECIMAL type (exactly), and two DECIMALs of different
// scales compare as numbers (Flink's DecimalData.compareTo), with no
// rounding to a common type. With a float on the other side both compare
// as DOUBLE (newCompare's common type).

// decCompareNode compares two DECIMAL vectors.
type decCompareNode struct {
	nodeBase
	op     cmpOp
	a, b   node
	sa, sb int32
	s      scratch
}

// newDecCompare builds a op b when one side is DECIMAL and the other is
// DECIMAL, an integer or an untyped NULL; ok is false otherwise.
func newDecCompare(src Expr, op cmpOp, a, b node) (node, bool, error) {
	da, db, float, ok := decimalOperands(a, b)
	if !ok || float {
		return nil, false, nil
	}
	// Bring the side with the smaller scale to the other's when that
	// takes at most 38 digits: the cast is exact (a constant's at compile
	// time) and the rows compare as plain 128-bit integers.
	if d := db.Scale - da.Scale; d > 0 && da.Precision+d <= maxDecimalPrecision {
		da = newDecimal(da.Precision+d, db.Scale)
	} else if d < 0 && db.Precision-d <= maxDecimalPrecision {
		db = newDecimal(db.Precision-d, da.Scale)
	}
	var err error
	if a, err = coerce(src, a, da); err != nil {
		return nil, true, err
	}
	if b, err = coerce(src, b, db); err != nil {
		return nil, true, err
	}
	return &decCompareNode{nodeBase: nodeBase{src: src, dt: arrow.FixedWidthTypes.Boolean}, op: op, a: a, b: b,
		sa: da.Scale, sb: db.Scale}, true, nil
}

func (n *decCompareNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	a, err := n.a.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	b, err := n.b.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	out.typ, out.kind = n.dt, kindBool
	unionNulls(&n.s, out, a, b, sel, ctx.n)
	out.b = grow(out.b, ctx.n)
	op, sa, sb := n.op, n.sa, n.sb
	if sa == sb {
		if sel == nil {
			res := out.b[:ctx.n]
			for r := range res {
				res[r] = cmpResult(op, int64(decAt(a, int32(r)).Cmp(decAt(b, int32(r)))))
			}
			return out, nil
		}
		for _, r := range sel {
			out.b[r] = cmpResult(op, int64(decAt(a, r).Cmp(decAt(b, r))))
		}
		return out, nil
	}
	forSel(sel, ctx.n, func(r int32) {
		out.b[r] = cmpResult(op, int64(decCmp(decAt(a, r), sa, decAt(b, r), sb)))
	})
	return out, nil
}
