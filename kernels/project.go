package kernels

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Projection computes a list of named expressions over a batch and
// materialises the selected rows as a new, dense record batch (no
// selection vector). A bare column reference keeps the column's own type
// and field metadata and, when every row is selected, shares the column's
// memory instead of copying it. Like Program, a Projection reuses scratch
// memory and serves one goroutine at a time.
type Projection struct {
	schema *arrow.Schema
	in     *arrow.Schema
	progs  []*Program // nil where the output is a bare input column
	cols   []int      // input column index of bare columns
}

// CompileProjection compiles exprs against schema; names[i] names output
// column i (when names is nil, the expressions' String forms are used).
func CompileProjection(exprs []Expr, names []string, schema *arrow.Schema) (*Projection, error) {
	if names != nil && len(names) != len(exprs) {
		return nil, fmt.Errorf("projection: %d expressions but %d names", len(exprs), len(names))
	}
	p := &Projection{in: schema, progs: make([]*Program, len(exprs)), cols: make([]int, len(exprs))}
	fields := make([]arrow.Field, len(exprs))
	for i, e := range exprs {
		var name string
		if names != nil {
			name = names[i]
		} else {
			name = e.String()
		}
		if c, ok := e.(*ColumnExpr); ok {
			idx := schema.FieldIndices(c.Name)
			if len(idx) == 1 {
				f := schema.Field(idx[0])
				f.Name = name
				fields[i], p.cols[i] = f, idx[0]
				continue
			}
		}
		prog, err := Compile(e, schema)
		if err != nil {
			return nil, err
		}
		dt := prog.Type()
		if dt.ID() == arrow.NULL {
			return nil, &ExprError{Expr: e.String(), Row: -1, Err: fmt.Errorf("an untyped NULL cannot be projected; CAST it to a type")}
		}
		p.progs[i], p.cols[i] = prog, -1
		fields[i] = arrow.Field{Name: name, Type: dt, Nullable: true}
	}
	p.schema = arrow.NewSchema(fields, nil)
	return p, nil
}

// Schema is the schema of the batches Project returns.
func (p *Projection) Schema() *arrow.Schema { return p.schema }

// Project evaluates the projection for the rows of rec in sel (every row
// when sel is nil) and returns a new record batch with one row per
// selected row, allocated from mem. The caller releases it.
func (p *Projection) Project(mem memory.Allocator, rec arrow.RecordBatch, sel []int32) (arrow.RecordBatch, error) {
	if rec.NumCols() != int64(p.in.NumFields()) {
		return nil, fmt.Errorf("projection: batch has %d columns, compiled for %d", rec.NumCols(), p.in.NumFields())
	}
	out := make([]arrow.Array, len(p.progs))
	release := func() {
		for _, a := range out {
			if a != nil {
				a.Release()
			}
		}
	}
	rows := int(rec.NumRows())
	if sel != nil {
		rows = len(sel)
	}
	for i, prog := range p.progs {
		var err error
		if prog == nil {
			col := rec.Column(p.cols[i])
			if want := p.schema.Field(i).Type; !arrow.TypeEqual(col.DataType(), want) {
				release()
				return nil, fmt.Errorf("projection: column %q has type %s in this batch, compiled for %s", p.in.Field(p.cols[i]).Name, col.DataType(), want)
			}
			if sel == nil {
				col.Retain()
				out[i] = col
				continue
			}
			out[i], err = Take(mem, col, sel)
		} else {
			out[i], err = prog.Eval(mem, rec, sel)
		}
		if err != nil {
			release()
			return nil, err
		}
	}
	res := array.NewRecordBatch(p.schema, out, int64(rows))
	release()
	return res, nil
}
