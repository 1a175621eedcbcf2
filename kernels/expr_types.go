package kernels

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// Implicit conversions. Expressions follow SQL's numeric promotion: int32
// (and narrower) op int32 stays int32, anything with a 64-bit integer is
// int64, anything with a float is float64. Temporal values of different
// units meet at the finer unit; a date compared with a timestamp becomes
// a timestamp. Nothing else converts implicitly: strings never turn into
// numbers without a CAST.

// numericCommon is the type two numeric evaluator types promote to.
func numericCommon(a, b arrow.DataType) (arrow.DataType, bool) {
	if isDecimal(a) && isFloatType(b) || isFloatType(a) && isDecimal(b) {
		return arrow.PrimitiveTypes.Float64, true // DECIMAL with DOUBLE is DOUBLE, as in Flink
	}
	ka, oka := numKind(a)
	kb, okb := numKind(b)
	if !oka || !okb {
		return nil, false
	}
	switch {
	case ka == kindFloat64 || kb == kindFloat64:
		return arrow.PrimitiveTypes.Float64, true
	case ka == kindInt64 || kb == kindInt64:
		return arrow.PrimitiveTypes.Int64, true
	}
	return arrow.PrimitiveTypes.Int32, true
}

// numKind is the kind of a numeric evaluator type (int32, int64, float64).
func numKind(dt arrow.DataType) (physKind, bool) {
	switch evalType(dt).ID() {
	case arrow.INT32:
		return kindInt32, true
	case arrow.INT64:
		return kindInt64, true
	case arrow.FLOAT64:
		return kindFloat64, true
	}
	return 0, false
}

// finerTimestamp is the timestamp type with the finer unit of a and b
// (a's time zone).
func finerUnit(a, b arrow.TimeUnit) arrow.TimeUnit { return max(a, b) }

func temporalUnit(dt arrow.DataType) (arrow.TimeUnit, bool) {
	switch t := dt.(type) {
	case *arrow.TimestampType:
		return t.Unit, true
	case *arrow.DurationType:
		return t.Unit, true
	case *arrow.Date32Type:
		return arrow.Second, true
	case *arrow.Date64Type:
		return arrow.Millisecond, true
	}
	return 0, false
}

// comparableCommon is the type both sides of a comparison convert to, or
// false when the types cannot be compared.
func comparableCommon(a, b arrow.DataType) (arrow.DataType, bool) {
	if a.ID() == arrow.NULL {
		return b, true
	}
	if b.ID() == arrow.NULL {
		return a, true
	}
	if t, ok := numericCommon(a, b); ok {
		return t, true
	}
	if isDecimal(a) || isDecimal(b) {
		return decimalCommon(evalType(a), evalType(b))
	}
	a, b = evalType(a), evalType(b)
	switch {
	case a.ID() == arrow.STRING && b.ID() == arrow.STRING,
		a.ID() == arrow.BINARY && b.ID() == arrow.BINARY,
		a.ID() == arrow.BOOL && b.ID() == arrow.BOOL,
		a.ID() == arrow.DATE32 && b.ID() == arrow.DATE32:
		return a, true
	case a.ID() == arrow.DURATION && b.ID() == arrow.DURATION:
		ua, _ := temporalUnit(a)
		ub, _ := temporalUnit(b)
		return &arrow.DurationType{Unit: finerUnit(ua, ub)}, true
	case isPointInTime(a) && isPointInTime(b):
		ua, _ := temporalUnit(a)
		ub, _ := temporalUnit(b)
		tz := ""
		if t, ok := a.(*arrow.TimestampType); ok {
			tz = t.TimeZone
		} else if t, ok := b.(*arrow.TimestampType); ok {
			tz = t.TimeZone
		}
		return &arrow.TimestampType{Unit: finerUnit(ua, ub), TimeZone: tz}, true
	}
	return nil, false
}

func isPointInTime(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.TIMESTAMP, arrow.DATE32, arrow.DATE64:
		return true
	}
	return false
}

// coerce converts n to type to (an evaluator type), inserting an implicit
// cast or typing an untyped NULL. src is the expression that needs it.
func coerce(src Expr, n node, to arrow.DataType) (node, error) {
	if isNullLit(n) {
		if _, lit := n.(*litNode); lit {
			return typedNull(n.source(), to), nil
		}
		// Still evaluate it: its sub-expressions may fail.
		return &nullCastNode{nodeBase: nodeBase{src: n.source(), dt: to}, arg: n}, nil
	}
	if arrow.TypeEqual(n.dtype(), to) {
		return n, nil
	}
	return compileCast(&CastExpr{Arg: n.source(), To: to}, n, to, false)
}

// typeName renders a type for error messages.
func typeName(dt arrow.DataType) string {
	if dt.ID() == arrow.NULL {
		return "NULL"
	}
	return dt.String()
}

// nullCastNode gives an untyped NULL expression a type: it evaluates the
// expression (for its errors) and yields NULL in every row.
type nullCastNode struct {
	nodeBase
	arg  node
	more []node // further expressions evaluated for their errors only
	s    scratch
}

func (n *nullCastNode) eval(ctx *evalCtx, sel []int32) (*vec, error) {
	if _, err := n.arg.eval(ctx, sel); err != nil {
		return nil, err
	}
	for _, m := range n.more {
		if _, err := m.eval(ctx, sel); err != nil {
			return nil, err
		}
	}
	out := &n.s.out
	out.typ, out.kind = n.dt, mustKind(n.dt)
	nulls := out.setNulls(&n.s.nulls, ctx.n)
	for i := range nulls {
		nulls[i] = true
	}
	out.growValues(ctx.n)
	if out.kind == kindBytes {
		clear(out.so)
		clear(out.eo)
	}
	return out, nil
}

// nullResult is the node for a call that is NULL whatever its inputs (an
// argument is an untyped NULL): a NULL of type dt that still evaluates the
// arguments that are not literals, so their errors are not lost.
func nullResult(src Expr, dt arrow.DataType, args []node) node {
	var live []node
	for _, a := range args {
		if _, lit := a.(*litNode); !lit {
			live = append(live, a)
		}
	}
	if len(live) == 0 {
		return typedNull(src, dt)
	}
	return &nullCastNode{nodeBase: nodeBase{src: src, dt: dt}, arg: live[0], more: live[1:]}
}
