package kernels

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// CASE WHEN, and the functions defined by it: coalesce(a, b, ...),
// if(cond, then, else) and nullif(a, b).
//
// Each arm's value is evaluated only for the rows that reach it, so
// `CASE WHEN x = 0 THEN 0 ELSE 10 / x END` never divides by zero.

func init() {
	registerFunc("coalesce", compileCoalesce)
	registerFunc("if", compileIf)
	registerFunc("nullif", compileNullIf)
}

// caseNode evaluates a searched CASE by narrowing the selection: the rows
// a condition holds for take that arm's value; the rest move on.
type caseNode struct {
	nodeBase
	conds, thens []node
	els          node // nil: NULL
	s            scratch
	remaining    [2][]int32
	matched      []int32
}

func (c *compiler) compileCase(e *CaseExpr) (node, error) {
	if len(e.Whens) == 0 {
		return nil, compileErr(e, "CASE needs at least one WHEN")
	}
	n := &caseNode{nodeBase: nodeBase{src: e}}
	var vals []node
	for i, w := range e.Whens {
		cond, err := c.compile(w.Cond)
		if err != nil {
			return nil, err
		}
		if isNullLit(cond) {
			if cond, err = coerce(e, cond, arrow.FixedWidthTypes.Boolean); err != nil {
				return nil, err
			}
		}
		if cond.dtype().ID() != arrow.BOOL {
			return nil, compileErr(e, "WHEN condition %d (%s) has type %s, want boolean", i+1, w.Cond, typeName(cond.dtype()))
		}
		then, err := c.compile(w.Then)
		if err != nil {
			return nil, err
		}
		n.conds = append(n.conds, cond)
		vals = append(vals, then)
	}
	if e.Else != nil {
		els, err := c.compile(e.Else)
		if err != nil {
			return nil, err
		}
		vals = append(vals, els)
	}
	if err := n.setValues(e, vals, e.Else != nil); err != nil {
		return nil, err
	}
	return n, nil
}

// setValues types the arms' values to their common type.
func (n *caseNode) setValues(src Expr, vals []node, hasElse bool) error {
	var t arrow.DataType = arrow.Null
	for _, v := range vals {
		var ok bool
		prev := t
		if t, ok = comparableCommon(t, v.dtype()); !ok {
			return compileErr(src, "the values of its branches have incompatible types %s and %s", typeName(prev), typeName(v.dtype()))
		}
	}
	n.dt = t // arrow.Null when every branch is an untyped NULL
	for i, v := range vals {
		v, err := coerce(src, v, t)
		if err != nil {
			return err
		}
		vals[i] = v
	}
	n.thens = vals[:len(n.conds)]
	if hasElse {
		n.els = vals[len(n.conds)]
	}
	return nil
}

func (n *caseNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	out := &n.s.out
	out.typ, out.kind = n.dt, mustKind(n.dt)
	nulls := out.setNulls(&n.s.nulls, ctx.n)
	out.growValues(ctx.n)
	out.data = out.data[:0]
	rem := n.remaining[0][:0]
	if sel == nil {
		for r := 0; r < ctx.n; r++ {
			rem = append(rem, int32(r))
		}
	} else {
		rem = append(rem, sel...)
	}
	n.remaining[0] = rem
	for i, cond := range n.conds {
		if len(rem) == 0 {
			break
		}
		cv, err := cond.eval(ctx, rem)
		if err != nil {
			return nil, err
		}
		next := n.remaining[(i+1)%2][:0]
		n.matched = n.matched[:0]
		for _, r := range rem {
			if !cv.isNull(r) && cv.b[r] {
				n.matched = append(n.matched, r)
			} else {
				next = append(next, r)
			}
		}
		n.remaining[(i+1)%2] = next
		if len(n.matched) > 0 {
			tv, err := n.thens[i].eval(ctx, n.matched)
			if err != nil {
				return nil, err
			}
			n.take(out, nulls, tv, n.matched)
		}
		rem = next
	}
	if len(rem) > 0 {
		if n.els == nil {
			for _, r := range rem {
				nulls[r] = true
			}
		} else {
			ev, err := n.els.eval(ctx, rem)
			if err != nil {
				return nil, err
			}
			n.take(out, nulls, ev, rem)
		}
	}
	return out, nil
}

// take copies v's values at rows into out.
func (n *caseNode) take(out *vec, nulls []bool, v *vec, rows []int32) {
	for _, r := range rows {
		nulls[r] = v.isNull(r)
	}
	switch out.kind {
	case kindBool:
		for _, r := range rows {
			out.b[r] = v.b[r]
		}
	case kindInt32:
		for _, r := range rows {
			out.i32[r] = v.i32[r]
		}
	case kindInt64:
		for _, r := range rows {
			out.i64[r] = v.i64[r]
		}
	case kindFloat64:
		for _, r := range rows {
			out.f64[r] = v.f64[r]
		}
	case kindBytes:
		for _, r := range rows {
			out.so[r] = int32(len(out.data))
			out.data = append(out.data, v.data[v.so[r]:v.eo[r]]...)
			out.eo[r] = int32(len(out.data))
		}
	}
}

// compileCoalesce is CASE WHEN a IS NOT NULL THEN a WHEN b IS NOT NULL ... END.
func compileCoalesce(c *compiler, call *CallExpr, args []node) (node, error) {
	if len(args) == 0 {
		return nil, compileErr(call, "coalesce needs at least one argument")
	}
	n := &caseNode{nodeBase: nodeBase{src: call}}
	vals := make([]node, 0, len(args))
	for i, a := range args {
		// The condition needs its own copy of the argument's node.
		probe, err := c.compile(call.Args[i])
		if err != nil {
			return nil, err
		}
		n.conds = append(n.conds, &nullTestNode{nodeBase: nodeBase{src: call, dt: arrow.FixedWidthTypes.Boolean}, fn: "is_not_null", a: probe})
		vals = append(vals, a)
	}
	if err := n.setValues(call, vals, false); err != nil {
		return nil, err
	}
	return n, nil
}

// compileIf is if(cond, a, b) = CASE WHEN cond THEN a ELSE b END.
func compileIf(c *compiler, call *CallExpr, args []node) (node, error) {
	if len(args) != 3 {
		return nil, compileErr(call, "if takes 3 arguments, got %d", len(args))
	}
	cond, err := checkBool(call, 0, args[0])
	if err != nil {
		return nil, err
	}
	n := &caseNode{nodeBase: nodeBase{src: call}, conds: []node{cond}}
	if err := n.setValues(call, []node{args[1], args[2]}, true); err != nil {
		return nil, err
	}
	return n, nil
}

// compileNullIf is nullif(a, b) = CASE WHEN a = b THEN NULL ELSE a END.
func compileNullIf(c *compiler, call *CallExpr, args []node) (node, error) {
	if len(args) != 2 {
		return nil, compileErr(call, "nullif takes 2 arguments, got %d", len(args))
	}
	a2, err := c.compile(call.Args[0])
	if err != nil {
		return nil, err
	}
	eq, err := newCompare(call, cmpEq, a2, args[1])
	if err != nil {
		return nil, err
	}
	n := &caseNode{nodeBase: nodeBase{src: call}, conds: []node{eq}}
	if err := n.setValues(call, []node{typedNull(call, args[0].dtype()), args[0]}, true); err != nil {
		return nil, err
	}
	return n, nil
}
