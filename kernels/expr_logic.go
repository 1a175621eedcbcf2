package kernels

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// Logic with SQL's three-valued semantics: and, or, not, is_null,
// is_not_null, is_true, is_false.
//
// AND evaluates its right side only for rows where the left side is not
// FALSE, and OR only where it is not TRUE, so a guard such as
// `x <> 0 AND 10 / x > 1` never divides by zero. (SQL does not promise
// this order; weir does, and CASE guarantees it everywhere.)

func init() {
	registerFunc("and", compileAndOr)
	registerFunc("or", compileAndOr)
	registerFunc("not", compileNot)
	registerFunc("is_null", compileIsNull)
	registerFunc("is_not_null", compileIsNull)
	registerFunc("is_true", compileIsNull)
	registerFunc("is_false", compileIsNull)
}

type logicOp uint8

const (
	logicAnd logicOp = iota
	logicOr
)

func checkBool(call *CallExpr, i int, a node) (node, error) {
	if isNullLit(a) {
		return coerce(call, a, arrow.FixedWidthTypes.Boolean)
	}
	if a.dtype().ID() != arrow.BOOL {
		return nil, compileErr(call, "argument %d (%s) has type %s, want boolean", i+1, a.source(), typeName(a.dtype()))
	}
	return a, nil
}

func compileAndOr(c *compiler, call *CallExpr, args []node) (node, error) {
	if len(args) == 0 {
		return nil, compileErr(call, "%s needs at least one argument", call.Func)
	}
	op := logicAnd
	if call.Func == "or" {
		op = logicOr
	}
	var res node
	for i, a := range args {
		a, err := checkBool(call, i, a)
		if err != nil {
			return nil, err
		}
		if res == nil {
			res = a
		} else {
			res = newLogic(call, op, res, a)
		}
	}
	return res, nil
}

// logicNode is a binary AND or OR with short-circuit evaluation.
type logicNode struct {
	nodeBase
	op      logicOp
	a, b    node
	s       scratch
	bsel    []int32 // rows whose right side is evaluated
	noNulls []bool  // all false
}

func newLogic(src Expr, op logicOp, a, b node) node {
	return &logicNode{nodeBase: nodeBase{src: src, dt: arrow.FixedWidthTypes.Boolean}, op: op, a: a, b: b}
}

func (n *logicNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	a, err := n.a.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	// dec is the value that settles the result on its own: FALSE for AND,
	// TRUE for OR.
	dec := n.op == logicOr
	decU := b2u8(dec)
	out := &n.s.out
	out.typ, out.kind = n.dt, kindBool
	out.b = grow(out.b, ctx.n)
	an := n.nullsOf(a, ctx.n)
	// Rows the left side does not settle go to the right side; the loops
	// are branch-free (see Filter.Select).
	rows := ctx.n
	if sel != nil {
		rows = len(sel)
	}
	n.bsel = grow(n.bsel, rows)
	k := 0
	if sel == nil {
		ab, an := a.b[:ctx.n], an[:ctx.n]
		for r := range ab {
			n.bsel[k] = int32(r)
			k += int(1 ^ (^b2u8(an[r]) & 1 & (b2u8(ab[r]) ^ decU ^ 1)))
		}
	} else {
		for _, r := range sel {
			n.bsel[k] = r
			k += int(1 ^ (^b2u8(an[r]) & 1 & (b2u8(a.b[r]) ^ decU ^ 1)))
		}
	}
	bsel := n.bsel[:k]
	settled := rows - k
	var b *vec
	if k > 0 {
		evalSel := bsel
		if settled == 0 {
			evalSel = sel // the same rows: keep the dense path when sel is nil
		}
		if b, err = n.b.eval(ctx, evalSel); err != nil {
			return nil, err
		}
	}
	if settled > 0 {
		forSel(sel, ctx.n, func(r int32) { out.b[r] = dec })
	}
	if b == nil {
		out.nulls = nil
		if a.nulls != nil {
			nulls := out.setNulls(&n.s.nulls, ctx.n)
			forSel(sel, ctx.n, func(r int32) { nulls[r] = false })
		}
		return out, nil
	}
	if a.nulls == nil && b.nulls == nil {
		// Left is the non-deciding value on every row of bsel: the result
		// is the right side.
		out.nulls = nil
		if settled == 0 {
			copySel(out.b, b.b, sel, ctx.n)
		} else {
			for _, r := range bsel {
				out.b[r] = b.b[r]
			}
		}
		return out, nil
	}
	nulls := out.setNulls(&n.s.nulls, ctx.n)
	if settled > 0 {
		forSel(sel, ctx.n, func(r int32) { nulls[r] = false })
	}
	bn := n.nullsOf(b, ctx.n)
	for _, r := range bsel {
		// bd: the right side settles it; otherwise NULL if either side
		// is NULL, else the non-deciding value.
		bd := ^b2u8(bn[r]) & 1 & (b2u8(b.b[r]) ^ decU ^ 1)
		out.b[r] = bd^decU^1 != 0
		nulls[r] = (bd^1)&(b2u8(an[r])|b2u8(bn[r])) != 0
	}
	return out, nil
}

// nullsOf returns v's null flags, or a reused all-false slice when v has
// none, so that loops need no variant without nulls.
func (n *logicNode) nullsOf(v *vec, rows int) []bool {
	if v.nulls != nil {
		return v.nulls
	}
	if len(n.noNulls) < rows {
		n.noNulls = make([]bool, rows)
	}
	return n.noNulls
}

type notNode struct {
	nodeBase
	a node
	s scratch
}

func compileNot(c *compiler, call *CallExpr, args []node) (node, error) {
	if len(args) != 1 {
		return nil, compileErr(call, "not takes 1 argument, got %d", len(args))
	}
	a, err := checkBool(call, 0, args[0])
	if err != nil {
		return nil, err
	}
	return &notNode{nodeBase: nodeBase{src: call, dt: arrow.FixedWidthTypes.Boolean}, a: a}, nil
}

func (n *notNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	a, err := n.a.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	out.typ, out.kind, out.nulls = n.dt, kindBool, a.nulls
	out.b = grow(out.b, ctx.n)
	if sel == nil {
		ab, ob := a.b[:ctx.n], out.b[:ctx.n]
		for i := range ob {
			ob[i] = !ab[i]
		}
	} else {
		for _, r := range sel {
			out.b[r] = !a.b[r]
		}
	}
	return out, nil
}

// nullTestNode answers IS [NOT] NULL and IS [NOT] TRUE/FALSE; never NULL.
type nullTestNode struct {
	nodeBase
	fn string
	a  node
	s  scratch
}

func compileIsNull(c *compiler, call *CallExpr, args []node) (node, error) {
	if len(args) != 1 {
		return nil, compileErr(call, "%s takes 1 argument, got %d", call.Func, len(args))
	}
	a := args[0]
	if call.Func == "is_true" || call.Func == "is_false" {
		var err error
		if a, err = checkBool(call, 0, a); err != nil {
			return nil, err
		}
	}
	return &nullTestNode{nodeBase: nodeBase{src: call, dt: arrow.FixedWidthTypes.Boolean}, fn: call.Func, a: a}, nil
}

func (n *nullTestNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	a, err := n.a.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	out.typ, out.kind, out.nulls = n.dt, kindBool, nil
	out.b = grow(out.b, ctx.n)
	switch n.fn {
	case "is_null":
		forSel(sel, ctx.n, func(r int32) { out.b[r] = a.isNull(r) })
	case "is_not_null":
		forSel(sel, ctx.n, func(r int32) { out.b[r] = !a.isNull(r) })
	case "is_true":
		forSel(sel, ctx.n, func(r int32) { out.b[r] = !a.isNull(r) && a.b[r] })
	case "is_false":
		forSel(sel, ctx.n, func(r int32) { out.b[r] = !a.isNull(r) && !a.b[r] })
	}
	return out, nil
}
