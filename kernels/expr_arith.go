package kernels

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
)

// Arithmetic: add, sub, mul, div, mod over numbers, neg, and timestamp /
// duration arithmetic (timestamp ± duration, timestamp - timestamp,
// duration ± duration).
//
// Overflow is defined: an integer result that does not fit its type fails
// the evaluation with an error naming the expression and the row, as do
// integer division and modulo by zero. Flink (Java) would wrap around
// silently; DuckDB and PostgreSQL fail, and so does weir, because a wrapped
// sum in a streaming result is wrong forever. Floats follow IEEE 754.

func init() {
	for _, op := range []string{"add", "sub", "mul", "div", "mod"} {
		registerFunc(op, compileArith)
	}
	registerFunc("neg", compileNeg)
}

type arithOp uint8

const (
	opAdd arithOp = iota
	opSub
	opMul
	opDiv
	opMod
)

var arithOps = map[string]arithOp{"add": opAdd, "sub": opSub, "mul": opMul, "div": opDiv, "mod": opMod}

// arithNode evaluates a binary arithmetic operator over two vectors of its
// own result kind.
type arithNode struct {
	nodeBase
	op   arithOp
	a, b node
	s    scratch
}

func compileArith(c *compiler, call *CallExpr, args []node) (node, error) {
	if len(args) != 2 {
		return nil, compileErr(call, "%s takes 2 arguments, got %d", call.Func, len(args))
	}
	op := arithOps[call.Func]
	a, b := args[0], args[1]
	ta, tb := a.dtype(), b.dtype()
	if isNullLit(a) && isNullLit(b) {
		ta, tb = arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int64
	}
	if isNullLit(a) {
		ta = tb
	}
	if isNullLit(b) {
		tb = ta
	}
	if da, db, float, ok := decimalOperands(a, b); ok && !float {
		return compileDecArith(call, op, a, b, da, db)
	}
	var res, ca, cb arrow.DataType
	if t, ok := numericCommon(ta, tb); ok {
		res, ca, cb = t, t, t
	} else if t, ok := temporalArith(op, ta, tb); ok {
		res = t
		// Both operands move to the result's unit.
		ca, cb = withUnit(ta, t), withUnit(tb, t)
	} else {
		return nil, compileErr(call, "cannot apply %s to %s and %s", call.Func, typeName(ta), typeName(tb))
	}
	if op == opMod && res.ID() != arrow.INT32 && res.ID() != arrow.INT64 && res.ID() != arrow.FLOAT64 {
		return nil, compileErr(call, "cannot apply mod to %s and %s", typeName(ta), typeName(tb))
	}
	var err error
	if a, err = coerce(call, a, ca); err != nil {
		return nil, err
	}
	if b, err = coerce(call, b, cb); err != nil {
		return nil, err
	}
	return &arithNode{nodeBase: nodeBase{src: call, dt: res}, op: op, a: a, b: b}, nil
}

// temporalArith types timestamp and duration arithmetic; the result has
// the finer unit of the two operands.
func temporalArith(op arithOp, a, b arrow.DataType) (arrow.DataType, bool) {
	ua, oka := temporalUnit(a)
	ub, okb := temporalUnit(b)
	if !oka || !okb {
		return nil, false
	}
	u := finerUnit(ua, ub)
	ts := func(dt arrow.DataType) bool { return dt.ID() == arrow.TIMESTAMP }
	dur := func(dt arrow.DataType) bool { return dt.ID() == arrow.DURATION }
	switch {
	case ts(a) && dur(b) && (op == opAdd || op == opSub):
		return &arrow.TimestampType{Unit: u, TimeZone: a.(*arrow.TimestampType).TimeZone}, true
	case dur(a) && ts(b) && op == opAdd:
		return &arrow.TimestampType{Unit: u, TimeZone: b.(*arrow.TimestampType).TimeZone}, true
	case ts(a) && ts(b) && op == opSub:
		return &arrow.DurationType{Unit: u}, true
	case dur(a) && dur(b) && (op == opAdd || op == opSub):
		return &arrow.DurationType{Unit: u}, true
	}
	return nil, false
}

// withUnit is dt (a timestamp or duration) in the unit of res.
func withUnit(dt, res arrow.DataType) arrow.DataType {
	u, _ := temporalUnit(res)
	if t, ok := dt.(*arrow.TimestampType); ok {
		return &arrow.TimestampType{Unit: u, TimeZone: t.TimeZone}
	}
	return &arrow.DurationType{Unit: u}
}

// unionNulls sets out's null flags to a's or b's for the selected rows.
func unionNulls(s *scratch, out, a, b *vec, sel []int32, n int) {
	out.nulls = nil
	switch {
	case a.nulls == nil && b.nulls == nil:
	case b.nulls == nil:
		nulls := out.setNulls(&s.nulls, n)
		copySel(nulls, a.nulls, sel, n)
	case a.nulls == nil:
		nulls := out.setNulls(&s.nulls, n)
		copySel(nulls, b.nulls, sel, n)
	default:
		nulls := out.setNulls(&s.nulls, n)
		if sel == nil {
			an, bn := a.nulls[:n], b.nulls[:n]
			for i := range nulls {
				nulls[i] = an[i] || bn[i]
			}
		} else {
			for _, r := range sel {
				nulls[r] = a.nulls[r] || b.nulls[r]
			}
		}
	}
}

func copySel[T any](dst, src []T, sel []int32, n int) {
	if sel == nil {
		copy(dst[:n], src[:n])
		return
	}
	for _, r := range sel {
		dst[r] = src[r]
	}
}

func (n *arithNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	a, err := n.a.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	b, err := n.b.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	out.typ, out.kind = n.dt, a.kind
	unionNulls(&n.s, out, a, b, sel, ctx.n)
	bad := int32(-1)
	switch a.kind {
	case kindInt64:
		out.i64 = grow(out.i64, ctx.n)
		bad = arithInt64(n.op, a.i64, b.i64, out.i64, out.nulls, sel, ctx.n)
	case kindInt32:
		out.i32 = grow(out.i32, ctx.n)
		bad = arithInt32(n.op, a.i32, b.i32, out.i32, out.nulls, sel, ctx.n)
	case kindFloat64:
		out.f64 = grow(out.f64, ctx.n)
		arithFloat(n.op, a.f64, b.f64, out.f64, sel, ctx.n)
	}
	if bad >= 0 {
		x, y := readInt(a, bad), readInt(b, bad)
		if (n.op == opDiv || n.op == opMod) && y == 0 {
			return nil, rowErr(n.src, bad, "division by zero (%d %s 0)", x, opSymbol[n.op])
		}
		return nil, rowErr(n.src, bad, "integer overflow: %d %s %d does not fit in %s", x, opSymbol[n.op], y, n.dt)
	}
	return out, nil
}

var opSymbol = [...]string{opAdd: "+", opSub: "-", opMul: "*", opDiv: "/", opMod: "%"}

// arithInt64 computes out = a op b for the selected rows and returns the
// first non-null row whose result overflows (or divides by zero), or -1.
// Add, sub and mul run branch-free, accumulating an overflow flag; only
// when it is raised does a second pass look for the culprit, so garbage in
// null rows costs nothing unless it happens to overflow.
func arithInt64(op arithOp, a, b, out []int64, nulls []bool, sel []int32, n int) int32 {
	var flag int64
	switch op {
	case opAdd:
		if sel == nil {
			a, b, out = a[:n], b[:n], out[:n]
			for i := range out {
				x, y := a[i], b[i]
				s := x + y
				out[i] = s
				flag |= (x ^ s) & (y ^ s)
			}
		} else {
			for _, r := range sel {
				x, y := a[r], b[r]
				s := x + y
				out[r] = s
				flag |= (x ^ s) & (y ^ s)
			}
		}
		if flag < 0 {
			return findBad(sel, n, nulls, func(r int32) bool { x, y, s := a[r], b[r], a[r]+b[r]; return (x^s)&(y^s) < 0 })
		}
	case opSub:
		if sel == nil {
			a, b, out = a[:n], b[:n], out[:n]
			for i := range out {
				x, y := a[i], b[i]
				s := x - y
				out[i] = s
				flag |= (x ^ y) & (x ^ s)
			}
		} else {
			for _, r := range sel {
				x, y := a[r], b[r]
				s := x - y
				out[r] = s
				flag |= (x ^ y) & (x ^ s)
			}
		}
		if flag < 0 {
			return findBad(sel, n, nulls, func(r int32) bool { x, y, s := a[r], b[r], a[r]-b[r]; return (x^y)&(x^s) < 0 })
		}
	case opMul:
		// Products of two values within int32 range cannot overflow; the
		// flag collects whether any operand left that range.
		var big uint64
		if sel == nil {
			a, b, out = a[:n], b[:n], out[:n]
			for i := range out {
				x, y := a[i], b[i]
				out[i] = x * y
				big |= (uint64(x+1<<31) | uint64(y+1<<31)) >> 32
			}
		} else {
			for _, r := range sel {
				x, y := a[r], b[r]
				out[r] = x * y
				big |= (uint64(x+1<<31) | uint64(y+1<<31)) >> 32
			}
		}
		if big != 0 {
			return findBad(sel, n, nulls, func(r int32) bool { return mulOverflows(a[r], b[r]) })
		}
	case opDiv, opMod:
		bad := int32(-1)
		forSel(sel, n, func(r int32) {
			x, y := a[r], b[r]
			if y == 0 || (op == opDiv && y == -1 && x == math.MinInt64) {
				if bad < 0 && (nulls == nil || !nulls[r]) {
					bad = r
				}
				out[r] = 0
				return
			}
			if op == opDiv {
				out[r] = x / y
			} else {
				out[r] = x % y
			}
		})
		return bad
	}
	return -1
}

func mulOverflows(x, y int64) bool {
	if x == 0 || y == 0 {
		return false
	}
	p := x * y
	return p/y != x || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64)
}

// findBad returns the first selected non-null row for which bad holds, or -1.
func findBad(sel []int32, n int, nulls []bool, bad func(r int32) bool) int32 {
	found := int32(-1)
	forSel(sel, n, func(r int32) {
		if found < 0 && (nulls == nil || !nulls[r]) && bad(r) {
			found = r
		}
	})
	return found
}

// arithInt32 computes in 64 bits and checks that results fit in 32: the
// flag collects the bits lost by truncation, and only when it is raised
// does a second pass look for the culprit among the non-null rows.
func arithInt32(op arithOp, a, b, out []int32, nulls []bool, sel []int32, n int) int32 {
	if op == opDiv || op == opMod {
		bad := int32(-1)
		forSel(sel, n, func(r int32) {
			x, y := int64(a[r]), int64(b[r])
			if y == 0 || (op == opDiv && y == -1 && x == math.MinInt32) {
				if bad < 0 && (nulls == nil || !nulls[r]) {
					bad = r
				}
				out[r] = 0
				return
			}
			if op == opDiv {
				out[r] = int32(x / y)
			} else {
				out[r] = int32(x % y)
			}
		})
		return bad
	}
	calc := func(x, y int64) int64 {
		switch op {
		case opAdd:
			return x + y
		case opSub:
			return x - y
		}
		return x * y
	}
	var flag int64
	switch op {
	case opAdd:
		if sel == nil {
			a, b, out = a[:n], b[:n], out[:n]
			for i := range out {
				s := int64(a[i]) + int64(b[i])
				out[i] = int32(s)
				flag |= s ^ int64(int32(s))
			}
		} else {
			for _, r := range sel {
				s := int64(a[r]) + int64(b[r])
				out[r] = int32(s)
				flag |= s ^ int64(int32(s))
			}
		}
	case opSub:
		if sel == nil {
			a, b, out = a[:n], b[:n], out[:n]
			for i := range out {
				s := int64(a[i]) - int64(b[i])
				out[i] = int32(s)
				flag |= s ^ int64(int32(s))
			}
		} else {
			for _, r := range sel {
				s := int64(a[r]) - int64(b[r])
				out[r] = int32(s)
				flag |= s ^ int64(int32(s))
			}
		}
	case opMul:
		if sel == nil {
			a, b, out = a[:n], b[:n], out[:n]
			for i := range out {
				s := int64(a[i]) * int64(b[i])
				out[i] = int32(s)
				flag |= s ^ int64(int32(s))
			}
		} else {
			for _, r := range sel {
				s := int64(a[r]) * int64(b[r])
				out[r] = int32(s)
				flag |= s ^ int64(int32(s))
			}
		}
	}
	if flag != 0 {
		return findBad(sel, n, nulls, func(r int32) bool {
			s := calc(int64(a[r]), int64(b[r]))
			return int64(int32(s)) != s
		})
	}
	return -1
}

func arithFloat(op arithOp, a, b, out []float64, sel []int32, n int) {
	if sel == nil {
		a, b, out = a[:n], b[:n], out[:n]
		switch op {
		case opAdd:
			for i := range out {
				out[i] = a[i] + b[i]
			}
		case opSub:
			for i := range out {
				out[i] = a[i] - b[i]
			}
		case opMul:
			for i := range out {
				out[i] = a[i] * b[i]
			}
		case opDiv:
			for i := range out {
				out[i] = a[i] / b[i]
			}
		case opMod:
			for i := range out {
				out[i] = math.Mod(a[i], b[i])
			}
		}
		return
	}
	switch op {
	case opAdd:
		for _, r := range sel {
			out[r] = a[r] + b[r]
		}
	case opSub:
		for _, r := range sel {
			out[r] = a[r] - b[r]
		}
	case opMul:
		for _, r := range sel {
			out[r] = a[r] * b[r]
		}
	case opDiv:
		for _, r := range sel {
			out[r] = a[r] / b[r]
		}
	case opMod:
		for _, r := range sel {
			out[r] = math.Mod(a[r], b[r])
		}
	}
}

// negNode is unary minus.
type negNode struct {
	nodeBase
	a node
	s scratch
}

func compileNeg(c *compiler, call *CallExpr, args []node) (node, error) {
	if len(args) != 1 {
		return nil, compileErr(call, "neg takes 1 argument, got %d", len(args))
	}
	a := args[0]
	if isNullLit(a) {
		return a, nil
	}
	if isDecimal(a.dtype()) {
		return &decNegNode{nodeBase: nodeBase{src: call, dt: a.dtype()}, a: a}, nil
	}
	if _, ok := numKind(a.dtype()); !ok && a.dtype().ID() != arrow.DURATION {
		return nil, compileErr(call, "cannot negate %s", typeName(a.dtype()))
	}
	return &negNode{nodeBase: nodeBase{src: call, dt: a.dtype()}, a: a}, nil
}

func (n *negNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	a, err := n.a.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	out.typ, out.kind, out.nulls = n.dt, a.kind, nil
	if a.nulls != nil {
		copySel(out.setNulls(&n.s.nulls, ctx.n), a.nulls, sel, ctx.n)
	}
	bad := int32(-1)
	switch a.kind {
	case kindInt64:
		out.i64 = grow(out.i64, ctx.n)
		forSel(sel, ctx.n, func(r int32) {
			out.i64[r] = -a.i64[r]
			if a.i64[r] == math.MinInt64 && bad < 0 && !a.isNull(r) {
				bad = r
			}
		})
	case kindInt32:
		out.i32 = grow(out.i32, ctx.n)
		forSel(sel, ctx.n, func(r int32) {
			out.i32[r] = -a.i32[r]
			if a.i32[r] == math.MinInt32 && bad < 0 && !a.isNull(r) {
				bad = r
			}
		})
	case kindFloat64:
		out.f64 = grow(out.f64, ctx.n)
		forSel(sel, ctx.n, func(r int32) { out.f64[r] = -a.f64[r] })
	}
	if bad >= 0 {
		return nil, rowErr(n.src, bad, "integer overflow: -(%d) does not fit in %s", readInt(a, bad), n.dt)
	}
	return out, nil
}
