package kernels

import (
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
)

// castFn converts the selected rows of in into out (whose typ and kind are
// set). A row that cannot be converted goes through c.tryNull: under
// TRY_CAST it becomes NULL (out.nulls is prepared by the caller as a copy
// of in's null flags whenever try is set) and conversion goes on;
// otherwise its badCast error ends the call.
type castFn func(c *castNode, in, out *vec, sel []int32, n int) error

// castNode evaluates CAST and TRY_CAST.
type castNode struct {
	nodeBase
	arg node
	to  arrow.DataType // as requested; dt is its evaluator type
	try bool
	fn  castFn
	s   scratch
}

// castRowError is returned by a castFn for a value it cannot convert (or
// a batch it cannot hold); the node turns it into an error naming the row.
type castRowError struct {
	row int32
	msg string
}

func (e *castRowError) Error() string { return e.msg }

func badCast(row int32, format string, args ...any) error {
	return &castRowError{row: row, msg: fmt.Sprintf(format, args...)}
}

// tryNull handles a row that cannot be converted under TRY_CAST: it makes
// the row NULL and reports true, so the kernel goes on; without TRY it
// reports false and the kernel returns the row's badCast error. (The error
// is built only then: formatting it for every bad row would allocate.)
func (c *castNode) tryNull(out *vec, r int32) bool {
	if c.try {
		out.nulls[r] = true
	}
	return c.try
}

func (n *castNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	in, err := n.arg.eval(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := &n.s.out
	out.typ, out.kind = n.dt, mustKind(n.dt)
	out.nulls = nil
	if in.nulls != nil || n.try {
		nulls := out.setNulls(&n.s.nulls, ctx.n)
		if in.nulls != nil {
			forSel(sel, ctx.n, func(r int32) { nulls[r] = in.nulls[r] })
		} else {
			forSel(sel, ctx.n, func(r int32) { nulls[r] = false })
		}
	}
	// Kernels handle TRY_CAST themselves (castNode.fail nulls the row), so
	// a conversion error here always fails the evaluation.
	if err := n.fn(n, in, out, sel, ctx.n); err != nil {
		var ce *castRowError
		if errors.As(err, &ce) {
			return nil, rowErr(n.src, ce.row, "%s", ce.msg)
		}
		return nil, err
	}
	return out, nil
}

func mustKind(dt arrow.DataType) physKind {
	if dt.ID() == arrow.NULL {
		return kindBool // an untyped NULL: every row null, storage unused
	}
	k, ok := exprKind(dt)
	if !ok {
		panic("BUG: no physical kind for " + dt.String())
	}
	return k
}

// compileCast builds the node converting arg to type to.
func compileCast(src Expr, arg node, to arrow.DataType, try bool) (node, error) {
	if to == nil {
		return nil, compileErr(src, "cast without a target type")
	}
	if _, ok := exprKind(to); !ok {
		return nil, compileErr(src, "cannot cast to %s: type not supported by expressions", to)
	}
	from := arg.dtype()
	if isNullLit(arg) {
		return coerce(src, arg, evalType(to))
	}
	if arrow.TypeEqual(evalType(from), evalType(to)) && !narrowInt(to) && to.ID() != arrow.FLOAT32 {
		return arg, nil
	}
	fn := castFunc(from, to)
	if fn == nil {
		return nil, compileErr(src, "cannot cast %s to %s", from, to)
	}
	cn := &castNode{nodeBase: nodeBase{src: src, dt: evalType(to)}, arg: arg, to: to, try: try, fn: fn}
	if _, isLit := arg.(*litNode); isLit {
		return foldConst(cn)
	}
	return cn, nil
}

// foldConst evaluates a node whose inputs are all constant once, at
// compile time, and returns the result as a literal (so that, for
// example, IN lists and LIKE patterns given as CAST(... AS STRING) stay
// constants).
func foldConst(n node) (node, error) {
	v, err := n.eval(&evalCtx{n: 1}, nil)
	if err != nil {
		// Not folded: the failure belongs to the rows that evaluate it
		// (a CASE arm may never run).
		return n, nil
	}
	lit := &litNode{nodeBase: nodeBase{src: n.source(), dt: n.dtype()}, v: vec{typ: n.dtype(), kind: v.kind}}
	if v.isNull(0) {
		lit.isNull = true
		return lit, nil
	}
	switch v.kind {
	case kindBool:
		lit.b = v.b[0]
	case kindInt32:
		lit.i32, lit.i64 = v.i32[0], int64(v.i32[0])
	case kindInt64:
		lit.i64 = v.i64[0]
	case kindFloat64:
		lit.f64 = v.f64[0]
	case kindBytes:
		lit.by = append([]byte(nil), v.bytesAt(0)...)
	}
	return lit, nil
}

// narrowInt reports whether to is an integer type narrower than its
// evaluator type, whose range a cast must check.
func narrowInt(to arrow.DataType) bool {
	switch to.ID() {
	case arrow.INT8, arrow.INT16, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

// intRange is the range of values of an integer type.
func intRange(dt arrow.DataType) (lo, hi int64) {
	switch dt.ID() {
	case arrow.INT8:
		return math.MinInt8, math.MaxInt8
	case arrow.INT16:
		return math.MinInt16, math.MaxInt16
	case arrow.INT32:
		return math.MinInt32, math.MaxInt32
	case arrow.UINT8:
		return 0, math.MaxUint8
	case arrow.UINT16:
		return 0, math.MaxUint16
	case arrow.UINT32:
		return 0, math.MaxUint32
	case arrow.UINT64:
		return 0, math.MaxInt64
	}
	return math.MinInt64, math.MaxInt64
}

func isIntegerType(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

func isFloatType(dt arrow.DataType) bool {
	return dt.ID() == arrow.FLOAT32 || dt.ID() == arrow.FLOAT64
}

func isNumericType(dt arrow.DataType) bool { return isIntegerType(dt) || isFloatType(dt) }

func isStringType(dt arrow.DataType) bool {
	return dt.ID() == arrow.STRING || dt.ID() == arrow.LARGE_STRING
}

// castFunc picks the conversion kernel for from -> to, or nil.
func castFunc(from, to arrow.DataType) castFn {
	if isDecimal(from) || isDecimal(to) {
		return decimalCastFunc(from, to)
	}
	switch {
	case isIntegerType(from) && isIntegerType(to):
		return castIntInt(to)
	case isIntegerType(from) && isFloatType(to):
		return castIntFloat
	case isFloatType(from) && isIntegerType(to):
		return castFloatInt(to)
	case isFloatType(from) && isFloatType(to):
		return castFloatFloat(to)
	case from.ID() == arrow.BOOL && isIntegerType(to):
		return castBoolInt
	case from.ID() == arrow.BOOL && isFloatType(to):
		return castBoolFloat
	case isNumericType(from) && to.ID() == arrow.BOOL:
		return castNumBool
	case isTemporal(from) && isTemporal(to):
		return castTemporal(from, to)
	}
	// Conversions to and from strings live with the string kernels.
	return castStringFunc(from, to)
}

// readInts returns the values of an integer vector as int64, whatever its
// width (int32 vectors are widened into buf).
func readInt(in *vec, r int32) int64 {
	if in.kind == kindInt32 {
		return int64(in.i32[r])
	}
	return in.i64[r]
}

func castIntInt(to arrow.DataType) castFn {
	lo, hi := intRange(to)
	return func(c *castNode, in, out *vec, sel []int32, n int) error {
		if out.kind == kindInt32 {
			out.i32 = grow(out.i32, n)
		} else {
			out.i64 = grow(out.i64, n)
		}
		var err error
		forSel(sel, n, func(r int32) {
			if err != nil || out.isNull(r) || in.isNull(r) {
				return
			}
			x := readInt(in, r)
			if x < lo || x > hi {
				if !c.tryNull(out, r) {
					err = badCast(r, "value %d out of range for %s", x, to)
				}
				return
			}
			if out.kind == kindInt32 {
				out.i32[r] = int32(x)
			} else {
				out.i64[r] = x
			}
		})
		return err
	}
}

func castIntFloat(c *castNode, in, out *vec, sel []int32, n int) error {
	out.f64 = grow(out.f64, n)
	if in.kind == kindInt32 {
		widen(&out.f64, in.i32, sel, n)
	} else {
		f := out.f64
		if sel == nil {
			for i, x := range in.i64[:n] {
				f[i] = float64(x)
			}
		} else {
			for _, r := range sel {
				f[r] = float64(in.i64[r])
			}
		}
	}
	if c.to.ID() == arrow.FLOAT32 {
		f := out.f64
		forSel(sel, n, func(r int32) { f[r] = float64(float32(f[r])) })
	}
	return nil
}

func castFloatFloat(to arrow.DataType) castFn {
	return func(c *castNode, in, out *vec, sel []int32, n int) error {
		out.f64 = grow(out.f64, n)
		forSel(sel, n, func(r int32) {
			if to.ID() == arrow.FLOAT32 {
				out.f64[r] = float64(float32(in.f64[r]))
			} else {
				out.f64[r] = in.f64[r]
			}
		})
		return nil
	}
}

// castFloatInt truncates toward zero; NaN and values outside the target
// range cannot be converted.
func castFloatInt(to arrow.DataType) castFn {
	lo, hi := intRange(to)
	return func(c *castNode, in, out *vec, sel []int32, n int) error {
		if out.kind == kindInt32 {
			out.i32 = grow(out.i32, n)
		} else {
			out.i64 = grow(out.i64, n)
		}
		var err error
		forSel(sel, n, func(r int32) {
			if err != nil || out.isNull(r) || in.isNull(r) {
				return
			}
			f := math.Trunc(in.f64[r])
			// float64(hi) may round up to 2^63; the comparison with >= keeps
			// 2^63 itself out of int64.
			if f != f || f < float64(lo) || f >= float64(hi)+1 || (hi == math.MaxInt64 && f >= math.MaxInt64) {
				if !c.tryNull(out, r) {
					err = badCast(r, "value %v out of range for %s", in.f64[r], to)
				}
				return
			}
			if out.kind == kindInt32 {
				out.i32[r] = int32(f)
			} else {
				out.i64[r] = int64(f)
			}
		})
		return err
	}
}

func castBoolInt(c *castNode, in, out *vec, sel []int32, n int) error {
	if out.kind == kindInt32 {
		out.i32 = grow(out.i32, n)
		forSel(sel, n, func(r int32) { out.i32[r] = int32(b2i(in.b[r])) })
	} else {
		out.i64 = grow(out.i64, n)
		forSel(sel, n, func(r int32) { out.i64[r] = b2i(in.b[r]) })
	}
	return nil
}

func castBoolFloat(c *castNode, in, out *vec, sel []int32, n int) error {
	out.f64 = grow(out.f64, n)
	forSel(sel, n, func(r int32) { out.f64[r] = float64(b2i(in.b[r])) })
	return nil
}

func castNumBool(c *castNode, in, out *vec, sel []int32, n int) error {
	out.b = grow(out.b, n)
	switch in.kind {
	case kindInt32:
		forSel(sel, n, func(r int32) { out.b[r] = in.i32[r] != 0 })
	case kindInt64:
		forSel(sel, n, func(r int32) { out.b[r] = in.i64[r] != 0 })
	default:
		forSel(sel, n, func(r int32) { out.b[r] = in.f64[r] != 0 })
	}
	return nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// isTemporal reports whether dt is a timestamp, date or duration type.
func isTemporal(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.TIMESTAMP, arrow.DATE32, arrow.DATE64, arrow.DURATION:
		return true
	}
	return false
}

// ticks describes a temporal type as integer ticks of a length in
// nanoseconds: timestamps and date64 count from the epoch, date32 counts
// days.
func tickNanos(dt arrow.DataType) int64 {
	switch t := dt.(type) {
	case *arrow.TimestampType:
		return unitNanos(t.Unit)
	case *arrow.DurationType:
		return unitNanos(t.Unit)
	case *arrow.Date32Type:
		return 86400e9
	case *arrow.Date64Type:
		return 1e6
	}
	panic("BUG: tickNanos of " + dt.String())
}

// castTemporal converts between timestamp units and time zones, dates and
// timestamps, and duration units. Coarsening floors (toward the past, so
// that a timestamp before 1970 lands on the start of its day); refining
// checks for overflow.
func castTemporal(from, to arrow.DataType) castFn {
	isDur := func(dt arrow.DataType) bool { return dt.ID() == arrow.DURATION }
	if isDur(from) != isDur(to) {
		return nil
	}
	fromN, toN := tickNanos(from), tickNanos(to)
	return func(c *castNode, in, out *vec, sel []int32, n int) error {
		if out.kind == kindInt32 {
			out.i32 = grow(out.i32, n)
		} else {
			out.i64 = grow(out.i64, n)
		}
		var err error
		forSel(sel, n, func(r int32) {
			if err != nil || out.isNull(r) || in.isNull(r) {
				return
			}
			x := readInt(in, r)
			var y int64
			if fromN >= toN {
				m := fromN / toN
				y = x * m
				if x != 0 && (y/m != x) {
					if !c.tryNull(out, r) {
						err = badCast(r, "value %d of %s out of range for %s", x, from, to)
					}
					return
				}
			} else {
				d := toN / fromN
				y = x / d
				if x%d != 0 && x < 0 {
					y--
				}
			}
			if out.kind == kindInt32 {
				if y < math.MinInt32 || y > math.MaxInt32 {
					if !c.tryNull(out, r) {
						err = badCast(r, "value %d of %s out of range for %s", x, from, to)
					}
					return
				}
				out.i32[r] = int32(y)
			} else {
				out.i64[r] = y
			}
		})
		return err
	}
}
