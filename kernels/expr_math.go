package kernels

// Numeric functions, following Flink's (Java's Math and BigDecimal)
// results. x is a number of any type; narrow integers are evaluated as
// int32 and float32 as float64, as everywhere in expressions. NULL in,
// NULL out.
//
//	abs(x) -> type of x
//	    The absolute value. The absolute value of the most negative
//	    integer does not fit its type: the evaluation fails naming the row
//	    (Java, hence Flink, returns the negative number unchanged).
//	    abs(-0.0) is 0.0.
//	sign(x) -> type of x
//	    -1, 0 or 1 (Flink SIGN; Java's Integer.signum and Math.signum):
//	    for floats -1.0, 1.0, the zero itself (0.0 or -0.0), or NaN.
//	floor(x), ceil(x), ceiling(x) -> type of x
//	    FLOOR(x), CEIL(x) of a number (FLOOR(ts TO unit) is floor_time):
//	    the largest integer <= x, the smallest >= x, as a float for a
//	    float (floor(-0.5) is -0.0, as Java's Math.floor); an integer is
//	    returned unchanged.
//	round(x[, d]) -> type of x
//	    Flink ROUND: x rounded to d decimal places (d an integer
//	    expression, 0 when omitted; a negative d rounds to tens, hundreds,
//	    ...), halves away from zero (Java's RoundingMode.HALF_UP). A float
//	    is rounded as Flink does it, on its shortest decimal form
//	    (BigDecimal.valueOf, which prints Double.toString's digits), not on
//	    its binary value: round(2.675, 2) is 2.68 and round(1.005, 2) is
//	    1.01, although the doubles nearest 2.675 and 1.005 lie below them.
//	    The result is the double nearest the rounded decimal; a zero result
//	    is 0.0, never -0.0; NaN and infinities are returned unchanged (Flink
//	    fails on them: BigDecimal has no NaN). An integer is unchanged for
//	    d >= 0; for d < 0 a result that does not fit the type fails the
//	    evaluation naming the row (Flink wraps around).
//	power(x, y) -> float64
//	    x raised to y, Java's Math.pow: as Go's math.Pow, except that a NaN
//	    y gives NaN (also for x = 1) and 1 or -1 raised to an infinity is
//	    NaN (Go: 1).
//	sqrt(x), ln(x), log10(x), log2(x), log(x), log(base, x), exp(x) -> float64
//	    The square root (NaN below 0), the natural and the base-10
//	    logarithms (NaN below 0, -Infinity at 0) and e raised to x.
//	    log10 of 10^n is exactly n for n = 0..22, as Java guarantees.
//	    log(x) is ln(x); log2(x) and log(base, x) are computed as Flink
//	    does, ln(x) / ln(2) and ln(x) / ln(base) (so log2(8) need not be
//	    exactly 3, and a base <= 1 gives what the division gives). ln,
//	    log10 and exp may differ from Java's in the last bit (both
//	    languages allow an error of one ulp); sqrt is exact in both.

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
)

func init() {
	registerFunc("abs", compileMathSameType)
	registerFunc("sign", compileMathSameType)
	registerFunc("floor", compileMathSameType)
	registerFunc("ceil", compileMathSameType)
	registerFunc("ceiling", compileMathSameType)
	registerFunc("round", compileRound)
	registerFunc("power", compilePower)
	for _, name := range []string{"sqrt", "ln", "log10", "log2", "exp"} {
		registerFunc(name, compileMathDouble)
	}
	registerFunc("log", compileLog)
}

// mathNumArg checks that argument i of call is a number (or an untyped
// NULL).
func mathNumArg(call *CallExpr, args []node, i int) error {
	if isNullLit(args[i]) {
		return nil
	}
	if _, ok := numKind(args[i].dtype()); !ok {
		return strArgErr(call, i, "a number", args[i].dtype())
	}
	return nil
}

// ---- abs, sign, floor, ceil: the argument's own type ----

type mathOp uint8

const (
	mathAbs mathOp = iota
	mathSign
	mathFloor
	mathCeil
)

var mathOps = map[string]mathOp{"abs": mathAbs, "sign": mathSign, "floor": mathFloor, "ceil": mathCeil, "ceiling": mathCeil}

// mathSameTypeNode is abs, sign, floor or ceil of a number.
type mathSameTypeNode struct {
	nodeBase
	op  mathOp
	arg node
	s   scratch
}

func compileMathSameType(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArity(call, args, 1, 1); err != nil {
		return nil, err
	}
	if err := mathNumArg(call, args, 0); err != nil {
		return nil, err
	}
	if isNullLit(args[0]) {
		return nullResult(call, arrow.PrimitiveTypes.Float64, args), nil
	}
	op := mathOps[call.Func]
	dt := evalType(args[0].dtype())
	if (op == mathFloor || op == mathCeil) && dt.ID() != arrow.FLOAT64 {
		// An integer is its own floor and ceiling.
		return &passNode{nodeBase: nodeBase{src: call, dt: dt}, arg: args[0]}, nil
	}
	return &mathSameTypeNode{nodeBase: nodeBase{src: call, dt: dt}, op: op, arg: args[0]}, nil
}

func (n *mathSameTypeNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	in, err := n.arg.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	out.typ, out.kind = n.dt, in.kind
	nulls := strNulls(&n.s, out, sel, ctx.n, in)
	switch in.kind {
	case kindFloat64:
		out.f64 = grow(out.f64, ctx.n)
		var f func(float64) float64
		switch n.op {
		case mathAbs:
			f = math.Abs
		case mathSign:
			f = javaSignum
		case mathFloor:
			f = math.Floor
		default:
			f = math.Ceil
		}
		mapFloat(out.f64, in.f64, sel, ctx.n, f)
	case kindInt64:
		out.i64 = grow(out.i64, ctx.n)
		if bad := intAbsSign(n.op, out.i64, in.i64, math.MinInt64, nulls, sel, ctx.n); bad >= 0 {
			return nil, rowErr(n.src, bad, "integer overflow: abs(%d) does not fit in %s", in.i64[bad], n.dt)
		}
	case kindInt32:
		out.i32 = grow(out.i32, ctx.n)
		if bad := intAbsSign(n.op, out.i32, in.i32, math.MinInt32, nulls, sel, ctx.n); bad >= 0 {
			return nil, rowErr(n.src, bad, "integer overflow: abs(%d) does not fit in %s", in.i32[bad], n.dt)
		}
	}
	return out, nil
}

// javaSignum is Java's Math.signum: the zero or NaN itself, else ±1.
func javaSignum(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return x
}

// intAbsSign computes abs or sign of the selected rows and returns the
// first non-NULL row whose absolute value overflows (minVal, the type's
// most negative value), or -1.
func intAbsSign[T int32 | int64](op mathOp, out, in []T, minVal T, nulls []bool, sel []int32, n int) int32 {
	overflow := false
	do := func(r int32) {
		x := in[r]
		if op == mathSign {
			out[r] = T(b2i(x > 0) - b2i(x < 0))
			return
		}
		if x < 0 {
			x = -x
		}
		out[r] = x
		overflow = overflow || in[r] == minVal
	}
	if sel == nil {
		for r := range n {
			do(int32(r))
		}
	} else {
		for _, r := range sel {
			do(r)
		}
	}
	if !overflow {
		return -1
	}
	return findBad(sel, n, nulls, func(r int32) bool { return in[r] == minVal })
}

// mapFloat sets out[r] = f(in[r]) for the selected rows.
func mapFloat(out, in []float64, sel []int32, n int, f func(float64) float64) {
	if sel == nil {
		for i, x := range in[:n] {
			out[i] = f(x)
		}
		return
	}
	for _, r := range sel {
		out[r] = f(in[r])
	}
}

// passNode evaluates to its argument's values under its own source
// expression (floor and ceil of an integer).
type passNode struct {
	nodeBase
	arg node
}

func (n *passNode) eval(ctx *evalCtx, sel []int32) (*vec, error) { return n.arg.eval(ctx, sel) }

// ---- sqrt, ln, log10, exp, power: doubles ----

// mathDoubleNode applies a float64 function to one or two arguments
// converted to float64.
type mathDoubleNode struct {
	nodeBase
	a, b node // b nil for one-argument functions
	f1   func(float64) float64
	f2   func(x, y float64) float64
	s    scratch
}

var mathDoubleFuncs = map[string]func(float64) float64{
	"sqrt": math.Sqrt, "ln": math.Log, "log10": javaLog10, "log2": flinkLog2, "exp": math.Exp,
}

// flinkLog2 is Flink's LOG2: Math.log(x) / Math.log(2), not an exact
// binary logarithm.
func flinkLog2(x float64) float64 { return math.Log(x) / math.Ln2 }

// flinkLog is Flink's LOG(base, x): Math.log(x) / Math.log(base).
func flinkLog(base, x float64) float64 { return math.Log(x) / math.Log(base) }

func compileMathDouble(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArity(call, args, 1, 1); err != nil {
		return nil, err
	}
	return compileDoubleArgs(call, args, &mathDoubleNode{f1: mathDoubleFuncs[call.Func]})
}

// compileLog is log(x), the natural logarithm, or log(base, x).
func compileLog(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArity(call, args, 1, 2); err != nil {
		return nil, err
	}
	if len(args) == 1 {
		return compileDoubleArgs(call, args, &mathDoubleNode{f1: math.Log})
	}
	return compileDoubleArgs(call, args, &mathDoubleNode{f2: flinkLog})
}

func compilePower(c *compiler, call *CallExpr, args []node) (node, error) {
	if err := strArity(call, args, 2, 2); err != nil {
		return nil, err
	}
	return compileDoubleArgs(call, args, &mathDoubleNode{f2: javaPow})
}

// compileDoubleArgs type-checks and converts the arguments of n's call to
// float64.
func compileDoubleArgs(call *CallExpr, args []node, n *mathDoubleNode) (node, error) {
	f64 := arrow.PrimitiveTypes.Float64
	for i := range args {
		if err := mathNumArg(call, args, i); err != nil {
			return nil, err
		}
	}
	if anyNullLit(args) {
		return nullResult(call, f64, args), nil
	}
	conv := make([]node, len(args))
	for i, a := range args {
		var err error
		if conv[i], err = coerce(call, a, f64); err != nil {
			return nil, err
		}
	}
	n.nodeBase = nodeBase{src: call, dt: f64}
	n.a = conv[0]
	if len(conv) == 2 {
		n.b = conv[1]
	}
	return n, nil
}

func (n *mathDoubleNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	a, err := n.a.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	out.typ, out.kind = n.dt, kindFloat64
	out.f64 = grow(out.f64, ctx.n)
	if n.b == nil {
		strNulls(&n.s, out, sel, ctx.n, a)
		mapFloat(out.f64, a.f64, sel, ctx.n, n.f1)
		return out, nil
	}
	b, err := n.b.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	strNulls(&n.s, out, sel, ctx.n, a, b)
	if sel == nil {
		x, y := a.f64[:ctx.n], b.f64[:ctx.n]
		for i := range out.f64[:ctx.n] {
			out.f64[i] = n.f2(x[i], y[i])
		}
	} else {
		for _, r := range sel {
			out.f64[r] = n.f2(a.f64[r], b.f64[r])
		}
	}
	return out, nil
}

// javaPow is Java's Math.pow, which differs from Go's math.Pow (C99's
// pow) where the exponent is NaN or infinite and the base is ±1.
func javaPow(x, y float64) float64 {
	if math.IsNaN(y) || (math.IsInf(y, 0) && (x == 1 || x == -1)) {
		return math.NaN()
	}
	return math.Pow(x, y)
}

// javaLog10 is the base-10 logarithm, exact at the powers of ten a double
// holds exactly (Java guarantees it; Go's math.Log10(1000) is
// 2.9999999999999996).
func javaLog10(x float64) float64 {
	if x >= 1 && x <= 1e22 {
		// A power of ten of that range is an integer below 2^73; look it
		// up by its exponent estimate.
		if k := int(math.Round(math.Log10(x))); k >= 0 && k <= 22 && pow10f[k] == x {
			return float64(k)
		}
	}
	return math.Log10(x)
}

// pow10f[k] is 10^k, exact for k <= 22.
var pow10f = func() (t [23]float64) {
	t[0] = 1
	for k := 1; k < len(t); k++ {
		t[k] = t[k-1] * 10
	}
	return
}()

// pow10i[k] is 10^k for k <= 18.
var pow10i = func() (t [19]int64) {
	t[0] = 1
	for k := 1; k < len(t); k++ {
		t[k] = t[k-1] * 10
	}
	return
}()
