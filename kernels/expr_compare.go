package kernels

import (
	"bytes"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
)

// Comparisons: eq, ne, lt, le, gt, ge (NULL when either side is NULL),
// between, in and not_in. Floats compare as IEEE 754 does (as Java and
// Flink do): NaN is neither equal to nor ordered with anything, itself
// included. Strings and binaries compare bytewise (UTF-8 order is code
// point order). FALSE < TRUE.

func init() {
	for _, op := range []string{"eq", "ne", "lt", "le", "gt", "ge"} {
		registerFunc(op, compileCompare)
	}
	registerFunc("between", compileBetween)
	registerFunc("in", compileIn)
	registerFunc("not_in", compileIn)
}

type cmpOp uint8

const (
	cmpEq cmpOp = iota
	cmpNe
	cmpLt
	cmpLe
	cmpGt
	cmpGe
)

var cmpOps = map[string]cmpOp{"eq": cmpEq, "ne": cmpNe, "lt": cmpLt, "le": cmpLe, "gt": cmpGt, "ge": cmpGe}

type compareNode struct {
	nodeBase
	op   cmpOp
	a, b node
	s    scratch
}

func compileCompare(c *compiler, call *CallExpr, args []node) (node, error) {
	if len(args) != 2 {
		return nil, compileErr(call, "%s takes 2 arguments, got %d", call.Func, len(args))
	}
	return newCompare(call, cmpOps[call.Func], args[0], args[1])
}

// newCompare builds a comparison of two compiled operands, converting
// them to their common type.
func newCompare(src Expr, op cmpOp, a, b node) (node, error) {
	if n, ok, err := newDecCompare(src, op, a, b); ok {
		return n, err
	}
	t, ok := comparableCommon(a.dtype(), b.dtype())
	if !ok {
		return nil, compileErr(src, "cannot compare %s with %s", typeName(a.dtype()), typeName(b.dtype()))
	}
	if t.ID() == arrow.NULL {
		t = arrow.FixedWidthTypes.Boolean
	}
	var err error
	if a, err = coerce(src, a, t); err != nil {
		return nil, err
	}
	if b, err = coerce(src, b, t); err != nil {
		return nil, err
	}
	return &compareNode{nodeBase: nodeBase{src: src, dt: arrow.FixedWidthTypes.Boolean}, op: op, a: a, b: b}, nil
}

func (n *compareNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
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
	switch a.kind {
	case kindInt64:
		compareOrdered(n.op, a.i64, b.i64, out.b, sel, ctx.n)
	case kindInt32:
		compareOrdered(n.op, a.i32, b.i32, out.b, sel, ctx.n)
	case kindFloat64:
		compareOrdered(n.op, a.f64, b.f64, out.b, sel, ctx.n)
	case kindBool:
		forSel(sel, ctx.n, func(r int32) { out.b[r] = cmpResult(n.op, b2i(a.b[r])-b2i(b.b[r])) })
	case kindBytes:
		forSel(sel, ctx.n, func(r int32) {
			out.b[r] = cmpResult(n.op, int64(bytes.Compare(a.data[a.so[r]:a.eo[r]], b.data[b.so[r]:b.eo[r]])))
		})
	}
	return out, nil
}

// cmpResult turns a three-way comparison into op's answer.
func cmpResult(op cmpOp, c int64) bool {
	switch op {
	case cmpEq:
		return c == 0
	case cmpNe:
		return c != 0
	case cmpLt:
		return c < 0
	case cmpLe:
		return c <= 0
	case cmpGt:
		return c > 0
	}
	return c >= 0
}

type ordered interface{ int32 | int64 | float64 }

// compareOrdered is the numeric comparison kernel: the operator is chosen
// once, each loop is a plain compare-and-store over the selected rows.
func compareOrdered[T ordered](op cmpOp, a, b []T, out []bool, sel []int32, n int) {
	if sel == nil {
		a, b, out = a[:n], b[:n], out[:n]
		switch op {
		case cmpEq:
			for i := range out {
				out[i] = a[i] == b[i]
			}
		case cmpNe:
			for i := range out {
				out[i] = a[i] != b[i]
			}
		case cmpLt:
			for i := range out {
				out[i] = a[i] < b[i]
			}
		case cmpLe:
			for i := range out {
				out[i] = a[i] <= b[i]
			}
		case cmpGt:
			for i := range out {
				out[i] = a[i] > b[i]
			}
		case cmpGe:
			for i := range out {
				out[i] = a[i] >= b[i]
			}
		}
		return
	}
	switch op {
	case cmpEq:
		for _, r := range sel {
			out[r] = a[r] == b[r]
		}
	case cmpNe:
		for _, r := range sel {
			out[r] = a[r] != b[r]
		}
	case cmpLt:
		for _, r := range sel {
			out[r] = a[r] < b[r]
		}
	case cmpLe:
		for _, r := range sel {
			out[r] = a[r] <= b[r]
		}
	case cmpGt:
		for _, r := range sel {
			out[r] = a[r] > b[r]
		}
	case cmpGe:
		for _, r := range sel {
			out[r] = a[r] >= b[r]
		}
	}
}

// compileBetween rewrites a BETWEEN lo AND hi to lo <= a AND a <= hi.
func compileBetween(c *compiler, call *CallExpr, args []node) (node, error) {
	if len(args) != 3 {
		return nil, compileErr(call, "between takes 3 arguments, got %d", len(args))
	}
	lo, err := newCompare(call, cmpGe, args[0], args[1])
	if err != nil {
		return nil, err
	}
	// The tested value is compiled a second time so each comparison owns
	// its operand node (nodes are evaluated once per batch).
	a2, err := c.compile(call.Args[0])
	if err != nil {
		return nil, err
	}
	hi, err := newCompare(call, cmpLe, a2, args[2])
	if err != nil {
		return nil, err
	}
	return newLogic(call, logicAnd, lo, hi), nil
}

// compileIn builds a IN (list) / a NOT IN (list). A list of constants
// becomes a hash-set probe; otherwise the test is an OR of equalities
// (which gives SQL's NULL semantics by construction).
func compileIn(c *compiler, call *CallExpr, args []node) (node, error) {
	if len(args) < 2 {
		return nil, compileErr(call, "%s needs a value and at least one list element", call.Func)
	}
	negate := call.Func == "not_in"
	t := args[0].dtype()
	for _, x := range args[1:] {
		var ok bool
		if t, ok = comparableCommon(t, x.dtype()); !ok {
			return nil, compileErr(call, "cannot compare %s with list element %s of type %s", typeName(args[0].dtype()), x.source(), typeName(x.dtype()))
		}
	}
	if t.ID() == arrow.NULL {
		t = arrow.FixedWidthTypes.Boolean
	}
	allConst := true
	for _, x := range args[1:] {
		if _, ok := constValue(x); !ok {
			allConst = false
		}
	}
	var res node
	if allConst {
		set, err := newInSet(call, args, t)
		if err != nil {
			return nil, err
		}
		res = set
	} else {
		for i, x := range args[1:] {
			a := args[0]
			if i > 0 {
				var err error
				if a, err = c.compile(call.Args[0]); err != nil {
					return nil, err
				}
			}
			eq, err := newCompare(call, cmpEq, a, x)
			if err != nil {
				return nil, err
			}
			if res == nil {
				res = eq
			} else {
				res = newLogic(call, logicOr, res, eq)
			}
		}
	}
	if negate {
		return &notNode{nodeBase: nodeBase{src: call, dt: arrow.FixedWidthTypes.Boolean}, a: res}, nil
	}
	return res, nil
}

// inSetNode probes a set of constants. TRUE if the value is in the set,
// else NULL if the value or an element is NULL, else FALSE.
type inSetNode struct {
	nodeBase
	a       node
	hasNull bool
	ints    map[int64]struct{}
	floats  map[float64]struct{}
	strs    map[string]struct{}
	bools   [2]bool
	s       scratch
}

func newInSet(call *CallExpr, args []node, t arrow.DataType) (node, error) {
	a, err := coerce(call, args[0], t)
	if err != nil {
		return nil, err
	}
	n := &inSetNode{nodeBase: nodeBase{src: call, dt: arrow.FixedWidthTypes.Boolean}, a: a}
	switch mustKind(t) {
	case kindInt32, kindInt64:
		n.ints = map[int64]struct{}{}
	case kindFloat64:
		n.floats = map[float64]struct{}{}
	case kindBytes:
		n.strs = map[string]struct{}{}
	}
	for _, x := range args[1:] {
		x, err := coerce(call, x, t)
		if err != nil {
			return nil, err
		}
		v, _ := constValue(x)
		switch v := v.(type) {
		case nil:
			n.hasNull = true
		case bool:
			n.bools[b2i(v)] = true
		case int32:
			n.ints[int64(v)] = struct{}{}
		case int64:
			n.ints[v] = struct{}{}
		case float64:
			if v == v { // NaN equals nothing
				n.floats[v] = struct{}{}
			}
			if v == 0 {
				n.floats[math.Copysign(0, -1)] = struct{}{}
			}
		case string:
			n.strs[v] = struct{}{}
		case []byte:
			n.strs[string(v)] = struct{}{}
		}
	}
	return n, nil
}

func (n *inSetNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	a, err := n.a.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	out.typ, out.kind, out.nulls = n.dt, kindBool, nil
	out.b = grow(out.b, ctx.n)
	var found func(r int32) bool
	switch a.kind {
	case kindInt32:
		found = func(r int32) bool { _, ok := n.ints[int64(a.i32[r])]; return ok }
	case kindInt64:
		found = func(r int32) bool { _, ok := n.ints[a.i64[r]]; return ok }
	case kindFloat64:
		found = func(r int32) bool { _, ok := n.floats[a.f64[r]]; return ok }
	case kindBytes:
		found = func(r int32) bool { _, ok := n.strs[string(a.data[a.so[r]:a.eo[r]])]; return ok }
	case kindBool:
		found = func(r int32) bool { return n.bools[b2i(a.b[r])] }
	}
	if a.nulls != nil || n.hasNull {
		nulls := out.setNulls(&n.s.nulls, ctx.n)
		forSel(sel, ctx.n, func(r int32) {
			f := !a.isNull(r) && found(r)
			out.b[r] = f
			nulls[r] = !f && (a.isNull(r) || n.hasNull)
		})
		return out, nil
	}
	forSel(sel, ctx.n, func(r int32) { out.b[r] = found(r) })
	return out, nil
}
