package kernels

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// Filter is a compiled boolean predicate that narrows a selection vector:
// it keeps the rows for which the predicate is TRUE (FALSE and NULL drop
// the row, as in SQL's WHERE). It never copies row data. Like Program, a
// Filter reuses scratch memory and serves one goroutine at a time.
type Filter struct {
	prog *Program
}

// CompileFilter compiles pred, which must be boolean, against schema.
func CompileFilter(pred Expr, schema *arrow.Schema) (*Filter, error) {
	p, err := Compile(pred, schema)
	if err != nil {
		return nil, err
	}
	if p.Type().ID() != arrow.BOOL && p.Type().ID() != arrow.NULL {
		return nil, &ExprError{Expr: pred.String(), Row: -1, Err: fmt.Errorf("a filter must be boolean, this expression has type %s", typeName(p.Type()))}
	}
	return &Filter{prog: p}, nil
}

// String renders the predicate.
func (f *Filter) String() string { return f.prog.String() }

// Select evaluates the predicate for the rows of rec in sel (every row
// when sel is nil) and appends the rows where it is TRUE to dst[:0],
// returning the new selection (increasing row indices). dst may be sel
// itself: the selection is narrowed in place.
func (f *Filter) Select(rec arrow.RecordBatch, sel []int32, dst []int32) ([]int32, error) {
	v, err := f.prog.run(rec, sel)
	if err != nil {
		return nil, err
	}
	n := f.prog.ctx.n
	rows := n
	if sel != nil {
		rows = len(sel)
	}
	if dst == nil || cap(dst) < rows { // never nil: a nil selection means "every row"
		dst = make([]int32, 0, max(rows, 64))
	}
	if v.kind != kindBool { // an untyped NULL predicate
		return dst[:0], nil
	}
	// Branch-free: every row is written, and the write position advances
	// only past kept rows, so no branch mispredicts at 50% selectivity.
	out := dst[:rows]
	k := 0
	b := v.b
	switch {
	case sel == nil && v.nulls == nil:
		for r, ok := range b[:n] {
			out[k] = int32(r)
			k += int(b2u8(ok))
		}
	case sel == nil:
		nulls := v.nulls[:n]
		for r, ok := range b[:n] {
			out[k] = int32(r)
			k += int(b2u8(ok) &^ b2u8(nulls[r]))
		}
	case v.nulls == nil:
		for _, r := range sel {
			out[k] = r
			k += int(b2u8(b[r]))
		}
	default:
		for _, r := range sel {
			out[k] = r
			k += int(b2u8(b[r]) &^ b2u8(v.nulls[r]))
		}
	}
	dst = out[:k]
	return dst, nil
}

// b2u8 converts a bool to 0 or 1 without a branch (the compiler emits a
// SETcc for this pattern).
func b2u8(b bool) uint8 {
	var x uint8
	if b {
		x = 1
	}
	return x
}
