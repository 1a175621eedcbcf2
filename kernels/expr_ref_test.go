package kernels

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// This file is the oracle for the expression evaluator: a plain
// row-at-a-time interpreter over Go values, written from the documented
// semantics and sharing no code with the vectorized kernels.

// rt is a reference type: a kind letter and, for temporal kinds, a unit.
//
//	n NULL (untyped)  b bool  i int32  l int64  f float64  s string  y binary
//	t timestamp  d date32  u duration
type rt struct {
	k    byte
	unit arrow.TimeUnit
}

// refFn evaluates an expression for one row. Values are nil, bool, int64
// (every integer and temporal kind, in ticks of its unit), float64 or
// string (also binaries).
type refFn func(row int) (any, error)

var errRef = errors.New("reference error")

func refTypeOf(dt arrow.DataType) rt {
	switch dt.ID() {
	case arrow.NULL:
		return rt{k: 'n'}
	case arrow.BOOL:
		return rt{k: 'b'}
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.UINT8, arrow.UINT16:
		return rt{k: 'i'}
	case arrow.INT64, arrow.UINT32, arrow.UINT64:
		return rt{k: 'l'}
	case arrow.FLOAT32, arrow.FLOAT64:
		return rt{k: 'f'}
	case arrow.STRING, arrow.LARGE_STRING:
		return rt{k: 's'}
	case arrow.BINARY, arrow.LARGE_BINARY:
		return rt{k: 'y'}
	case arrow.TIMESTAMP:
		return rt{k: 't', unit: dt.(*arrow.TimestampType).Unit}
	case arrow.DURATION:
		return rt{k: 'u', unit: dt.(*arrow.DurationType).Unit}
	case arrow.DATE32:
		return rt{k: 'd'}
	}
	panic("reference: no type for " + dt.String())
}

// refValue reads row i of a column as a reference value.
func refValue(a arrow.Array, i int) any {
	if a.IsNull(i) || a.DataType().ID() == arrow.NULL {
		return nil
	}
	switch c := a.(type) {
	case *array.Boolean:
		return c.Value(i)
	case *array.Int8:
		return int64(c.Value(i))
	case *array.Int16:
		return int64(c.Value(i))
	case *array.Int32:
		return int64(c.Value(i))
	case *array.Int64:
		return c.Value(i)
	case *array.Uint8:
		return int64(c.Value(i))
	case *array.Uint16:
		return int64(c.Value(i))
	case *array.Uint32:
		return int64(c.Value(i))
	case *array.Float32:
		return float64(c.Value(i))
	case *array.Float64:
		return c.Value(i)
	case *array.String:
		return c.Value(i)
	case *array.LargeString:
		return c.Value(i)
	case *array.Binary:
		return string(c.Value(i))
	case *array.Timestamp:
		return int64(c.Value(i))
	case *array.Duration:
		return int64(c.Value(i))
	case *array.Date32:
		return int64(c.Value(i))
	}
	panic("reference: cannot read " + a.DataType().String())
}

type refCompiler struct {
	rec arrow.RecordBatch
	// extra holds reference implementations of functions defined in
	// other test files (string and time functions), keyed by name.
	extra map[string]func(args []any) (any, error)
}

func (c *refCompiler) compile(e Expr) (rt, refFn) {
	switch e := e.(type) {
	case *ColumnExpr:
		idx := c.rec.Schema().FieldIndices(e.Name)[0]
		col := c.rec.Column(idx)
		return refTypeOf(col.DataType()), func(row int) (any, error) { return refValue(col, row), nil }
	case *LiteralExpr:
		t := refTypeOf(e.Type)
		var v any
		switch x := e.Value.(type) {
		case nil:
		case bool, float64, string:
			v = x
		case int32:
			v = int64(x)
		case int64:
			v = x
		case []byte:
			v = string(x)
		case arrow.Timestamp:
			v = int64(x)
		case arrow.Date32:
			v = int64(x)
		default:
			panic(fmt.Sprintf("reference: literal %T", x))
		}
		return t, func(int) (any, error) { return v, nil }
	case *CastExpr:
		t, f := c.compile(e.Arg)
		return refCast(t, f, e.To, e.Try)
	case *CaseExpr:
		var conds, vals []refFn
		var types []rt
		for _, w := range e.Whens {
			_, cf := c.compile(w.Cond)
			vt, vf := c.compile(w.Then)
			conds, vals, types = append(conds, cf), append(vals, vf), append(types, vt)
		}
		var elseF refFn
		if e.Else != nil {
			et, ef := c.compile(e.Else)
			elseF, types = ef, append(types, et)
		}
		res := types[0]
		for _, t := range types[1:] {
			res = refCommon(res, t)
		}
		return res, func(row int) (any, error) {
			for i, cf := range conds {
				cv, err := cf(row)
				if err != nil {
					return nil, err
				}
				if cv == true {
					return refConvert(types[i], res, vals[i], row)
				}
			}
			if elseF == nil {
				return nil, nil
			}
			return refConvert(types[len(types)-1], res, elseF, row)
		}
	case *CallExpr:
		return c.call(e)
	}
	panic(fmt.Sprintf("reference: node %T", e))
}

// refCommon is the common type of two comparable / CASE-combinable types.
func refCommon(a, b rt) rt {
	switch {
	case a.k == 'n':
		return b
	case b.k == 'n':
		return a
	case isRefNum(a) && isRefNum(b):
		switch {
		case a.k == 'f' || b.k == 'f':
			return rt{k: 'f'}
		case a.k == 'l' || b.k == 'l':
			return rt{k: 'l'}
		}
		return rt{k: 'i'}
	case a.k == 'd' && b.k == 'd':
		return a
	case (a.k == 't' || a.k == 'd') && (b.k == 't' || b.k == 'd'):
		ua, ub := a.unit, b.unit
		if a.k == 'd' {
			ua = arrow.Second
		}
		if b.k == 'd' {
			ub = arrow.Second
		}
		return rt{k: 't', unit: max(ua, ub)}
	case a.k == 'u' && b.k == 'u':
		return rt{k: 'u', unit: max(a.unit, b.unit)}
	}
	return a
}

func isRefNum(t rt) bool { return t.k == 'i' || t.k == 'l' || t.k == 'f' }

// refConvert evaluates f (of type from) and converts the value to type to
// (an implicit conversion: numeric widening or a finer temporal unit).
func refConvert(from, to rt, f refFn, row int) (any, error) {
	v, err := f(row)
	if err != nil || v == nil {
		return nil, err
	}
	switch {
	case to.k == 'f' && from.k != 'f':
		return float64(v.(int64)), nil
	case to.k == 't' && from.k == 'd':
		return scaleTicks(v.(int64)*86400, arrow.Second, to.unit)
	case (to.k == 't' || to.k == 'u') && from.unit != to.unit:
		return scaleTicks(v.(int64), from.unit, to.unit)
	}
	return v, nil
}

func scaleTicks(x int64, from, to arrow.TimeUnit) (any, error) {
	m := new(big.Int).Mul(big.NewInt(x), big.NewInt(unitNanosRef(from)/unitNanosRef(to)))
	if !m.IsInt64() {
		return nil, errRef
	}
	return m.Int64(), nil
}

func unitNanosRef(u arrow.TimeUnit) int64 {
	return map[arrow.TimeUnit]int64{arrow.Second: 1e9, arrow.Millisecond: 1e6, arrow.Microsecond: 1e3, arrow.Nanosecond: 1}[u]
}

func (c *refCompiler) call(e *CallExpr) (rt, refFn) {
	types := make([]rt, len(e.Args))
	fns := make([]refFn, len(e.Args))
	for i, a := range e.Args {
		types[i], fns[i] = c.compile(a)
	}
	boolT := rt{k: 'b'}
	switch e.Func {
	case "add", "sub", "mul", "div", "mod":
		return refArith(e.Func, types[0], types[1], fns[0], fns[1])
	case "neg":
		t := types[0]
		return t, func(row int) (any, error) {
			v, err := fns[0](row)
			if err != nil || v == nil {
				return nil, err
			}
			if f, ok := v.(float64); ok {
				return -f, nil
			}
			return refIntResult(t, new(big.Int).Neg(big.NewInt(v.(int64))))
		}
	case "eq", "ne", "lt", "le", "gt", "ge":
		return boolT, refCompare(e.Func, types[0], types[1], fns[0], fns[1])
	case "between":
		ge := refCompare("ge", types[0], types[1], fns[0], fns[1])
		le := refCompare("le", types[0], types[2], fns[0], fns[2])
		return boolT, refAnd(ge, le)
	case "in", "not_in":
		f := func(row int) (any, error) {
			a, err := fns[0](row)
			if err != nil {
				return nil, err
			}
			sawNull := a == nil
			for i := 1; i < len(fns); i++ {
				eq := refCompare("eq", types[0], types[i], func(int) (any, error) { return a, nil }, fns[i])
				v, err := eq(row)
				if err != nil {
					return nil, err
				}
				if v == true {
					return true, nil
				}
				if v == nil {
					sawNull = true
				}
			}
			if sawNull {
				return nil, nil
			}
			return false, nil
		}
		if e.Func == "not_in" {
			return boolT, refNot(f)
		}
		return boolT, f
	case "and", "or":
		f := fns[0]
		for _, g := range fns[1:] {
			if e.Func == "and" {
				f = refAnd(f, g)
			} else {
				f = refOr(f, g)
			}
		}
		return boolT, f
	case "not":
		return boolT, refNot(fns[0])
	case "is_null", "is_not_null", "is_true", "is_false":
		return boolT, func(row int) (any, error) {
			v, err := fns[0](row)
			if err != nil {
				return nil, err
			}
			switch e.Func {
			case "is_null":
				return v == nil, nil
			case "is_not_null":
				return v != nil, nil
			case "is_true":
				return v == true, nil
			}
			return v == false, nil
		}
	case "coalesce":
		res := types[0]
		for _, t := range types[1:] {
			res = refCommon(res, t)
		}
		return res, func(row int) (any, error) {
			for i, f := range fns {
				v, err := f(row)
				if err != nil {
					return nil, err
				}
				if v != nil {
					return refConvert(types[i], res, func(int) (any, error) { return v, nil }, row)
				}
			}
			return nil, nil
		}
	case "if":
		res := refCommon(types[1], types[2])
		return res, func(row int) (any, error) {
			cv, err := fns[0](row)
			if err != nil {
				return nil, err
			}
			if cv == true {
				return refConvert(types[1], res, fns[1], row)
			}
			return refConvert(types[2], res, fns[2], row)
		}
	case "nullif":
		eq := refCompare("eq", types[0], types[1], fns[0], fns[1])
		return types[0], func(row int) (any, error) {
			v, err := eq(row)
			if err != nil {
				return nil, err
			}
			if v == true {
				return nil, nil
			}
			return fns[0](row)
		}
	}
	if f, ok := c.extra[e.Func]; ok {
		t, known := extraRefType(e.Func, types)
		if !known {
			t = rt{k: '?'}
		}
		return t, func(row int) (any, error) {
			args := make([]any, len(fns))
			for i, g := range fns {
				v, err := g(row)
				if err != nil {
					return nil, err
				}
				args[i] = v
			}
			return f(args)
		}
	}
	panic("reference: no function " + e.Func)
}

func refAnd(a, b refFn) refFn {
	return func(row int) (any, error) {
		x, err := a(row)
		if err != nil || x == false {
			return x, err
		}
		y, err := b(row)
		if err != nil {
			return nil, err
		}
		if y == false {
			return false, nil
		}
		if x == nil || y == nil {
			return nil, nil
		}
		return true, nil
	}
}

func refOr(a, b refFn) refFn {
	return func(row int) (any, error) {
		x, err := a(row)
		if err != nil || x == true {
			return x, err
		}
		y, err := b(row)
		if err != nil {
			return nil, err
		}
		if y == true {
			return true, nil
		}
		if x == nil || y == nil {
			return nil, nil
		}
		return false, nil
	}
}

func refNot(a refFn) refFn {
	return func(row int) (any, error) {
		x, err := a(row)
		if err != nil || x == nil {
			return nil, err
		}
		return !x.(bool), nil
	}
}

func refIntResult(t rt, v *big.Int) (any, error) {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if t.k == 'i' {
		lo, hi = math.MinInt32, math.MaxInt32
	}
	if !v.IsInt64() || v.Int64() < lo || v.Int64() > hi {
		return nil, errRef
	}
	return v.Int64(), nil
}

func refArith(op string, ta, tb rt, fa, fb refFn) (rt, refFn) {
	if ta.k == 'n' {
		ta = tb
	}
	if tb.k == 'n' {
		tb = ta
	}
	var res, ca, cb rt
	switch {
	case ta.k == 'n' && tb.k == 'n':
		return rt{k: 'l'}, func(int) (any, error) { return nil, nil }
	case isRefNum(ta) && isRefNum(tb):
		res = refCommon(ta, tb)
		ca, cb = res, res
	default: // temporal
		u := max(ta.unit, tb.unit)
		switch {
		case ta.k == 't' && tb.k == 't':
			res = rt{k: 'u', unit: u}
		case ta.k == 't' || tb.k == 't':
			res = rt{k: 't', unit: u}
		default:
			res = rt{k: 'u', unit: u}
		}
		ca, cb = rt{k: ta.k, unit: u}, rt{k: tb.k, unit: u}
	}
	return res, func(row int) (any, error) {
		x, err := refConvert(ta, ca, fa, row)
		if err != nil {
			return nil, err
		}
		y, err := refConvert(tb, cb, fb, row)
		if err != nil {
			return nil, err
		}
		if x == nil || y == nil {
			return nil, nil
		}
		if res.k == 'f' {
			a, b := x.(float64), y.(float64)
			switch op {
			case "add":
				return a + b, nil
			case "sub":
				return a - b, nil
			case "mul":
				return a * b, nil
			case "div":
				return a / b, nil
			}
			return math.Mod(a, b), nil
		}
		a, b := big.NewInt(x.(int64)), big.NewInt(y.(int64))
		r := new(big.Int)
		switch op {
		case "add":
			r.Add(a, b)
		case "sub":
			r.Sub(a, b)
		case "mul":
			r.Mul(a, b)
		case "div":
			if b.Sign() == 0 {
				return nil, errRef
			}
			r.Quo(a, b)
		case "mod":
			if b.Sign() == 0 {
				return nil, errRef
			}
			r.Rem(a, b)
		}
		return refIntResult(res, r)
	}
}

func refCompare(op string, ta, tb rt, fa, fb refFn) refFn {
	t := refCommon(ta, tb)
	return func(row int) (any, error) {
		x, err := refConvert(ta, t, fa, row)
		if err != nil {
			return nil, err
		}
		y, err := refConvert(tb, t, fb, row)
		if err != nil {
			return nil, err
		}
		if x == nil || y == nil {
			return nil, nil
		}
		var c int
		switch a := x.(type) {
		case float64:
			b := y.(float64)
			if a != a || b != b { // NaN: only <> holds
				return op == "ne", nil
			}
			switch {
			case a < b:
				c = -1
			case a > b:
				c = 1
			}
		case int64:
			b := y.(int64)
			switch {
			case a < b:
				c = -1
			case a > b:
				c = 1
			}
		case string:
			c = strings.Compare(a, y.(string))
		case bool:
			c = int(b2i(a) - b2i(y.(bool)))
		}
		switch op {
		case "eq":
			return c == 0, nil
		case "ne":
			return c != 0, nil
		case "lt":
			return c < 0, nil
		case "le":
			return c <= 0, nil
		case "gt":
			return c > 0, nil
		}
		return c >= 0, nil
	}
}

// refCast implements the numeric, boolean and temporal conversions.
func refCast(from rt, f refFn, to arrow.DataType, try bool) (rt, refFn) {
	tt := refTypeOf(to)
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	switch to.ID() {
	case arrow.INT8:
		lo, hi = math.MinInt8, math.MaxInt8
	case arrow.INT16:
		lo, hi = math.MinInt16, math.MaxInt16
	case arrow.INT32:
		lo, hi = math.MinInt32, math.MaxInt32
	case arrow.UINT8:
		lo, hi = 0, math.MaxUint8
	case arrow.UINT16:
		lo, hi = 0, math.MaxUint16
	case arrow.UINT32:
		lo, hi = 0, math.MaxUint32
	case arrow.UINT64:
		lo = 0
	}
	conv := func(v any) (any, error) {
		switch {
		case v == nil:
			return nil, nil
		case tt.k == 'b':
			switch x := v.(type) {
			case int64:
				return x != 0, nil
			case float64:
				return x != 0, nil
			}
			return v, nil
		case tt.k == 'f':
			var r float64
			switch x := v.(type) {
			case int64:
				r = float64(x)
			case float64:
				r = x
			case bool:
				r = float64(b2i(x))
			}
			if to.ID() == arrow.FLOAT32 {
				r = float64(float32(r))
			}
			return r, nil
		case tt.k == 'i' || tt.k == 'l':
			var r *big.Int
			switch x := v.(type) {
			case int64:
				r = big.NewInt(x)
			case bool:
				r = big.NewInt(b2i(x))
			case float64:
				if math.IsNaN(x) || math.IsInf(x, 0) {
					return nil, errRef
				}
				r, _ = new(big.Float).SetFloat64(math.Trunc(x)).Int(nil)
			}
			if !r.IsInt64() || r.Int64() < lo || r.Int64() > hi {
				return nil, errRef
			}
			return r.Int64(), nil
		case tt.k == 't' || tt.k == 'u' || tt.k == 'd':
			x := v.(int64)
			fromN := unitNanosRef(from.unit)
			if from.k == 'd' {
				fromN = 86400e9
			}
			toN := unitNanosRef(tt.unit)
			if tt.k == 'd' {
				toN = 86400e9
			}
			if fromN >= toN {
				r := new(big.Int).Mul(big.NewInt(x), big.NewInt(fromN/toN))
				if !r.IsInt64() || (tt.k == 'd' && (r.Int64() < math.MinInt32 || r.Int64() > math.MaxInt32)) {
					return nil, errRef
				}
				return r.Int64(), nil
			}
			d := toN / fromN
			q := x / d
			if x%d != 0 && x < 0 {
				q--
			}
			if tt.k == 'd' && (q < math.MinInt32 || q > math.MaxInt32) {
				return nil, errRef
			}
			return q, nil
		}
		return v, nil
	}
	return tt, func(row int) (any, error) {
		v, err := f(row)
		if err != nil {
			return nil, err
		}
		r, err := conv(v)
		if err == errRef && try {
			return nil, nil
		}
		return r, err
	}
}
