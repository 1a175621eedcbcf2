package sql

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
)

// projection is a compiled SELECT list: kernels compute the expressions;
// bare references to columns of types kernels do not evaluate (ROW,
// ARRAY, MAP) pass through as they are.
type projection struct {
	schema *arrow.Schema
	raw    []int               // per output: the input column passed through, or -1
	hasRaw bool                // some output is passed through
	kidx   []int               // per output computed by kernels: its index in proj's output
	proj   *kernels.Projection // the kernels part (nil when every output is raw)
	// refs, when not nil, is per output the input column it references:
	// every output is a bare column reference, so a batch's columns are
	// passed through with its selection, nothing copied.
	refs []int
}

func compileProjection(exprs []kernels.Expr, names []string, in *arrow.Schema) (*projection, error) {
	p := &projection{raw: make([]int, len(exprs)), kidx: make([]int, len(exprs))}
	var kexprs []kernels.Expr
	var knames []string
	for i, e := range exprs {
		p.raw[i], p.kidx[i] = -1, -1
		if c, ok := e.(*kernels.ColumnExpr); ok {
			if idx := in.FieldIndices(c.Name); len(idx) == 1 && !kernelsType(in.Field(idx[0]).Type) {
				p.raw[i], p.hasRaw = idx[0], true
				continue
			}
		}
		p.kidx[i] = len(kexprs)
		kexprs, knames = append(kexprs, e), append(knames, names[i])
	}
	if len(kexprs) > 0 {
		proj, err := kernels.CompileProjection(kexprs, knames, in)
		if err != nil {
			return nil, err
		}
		p.proj = proj
	}
	fields := make([]arrow.Field, len(exprs))
	for i := range exprs {
		if p.raw[i] >= 0 {
			f := in.Field(p.raw[i])
			f.Name = names[i]
			fields[i] = f
		} else {
			fields[i] = p.proj.Schema().Field(p.kidx[i])
		}
	}
	p.schema = arrow.NewSchema(fields, nil)
	p.refs = make([]int, len(exprs))
	for i, e := range exprs {
		c, ok := e.(*kernels.ColumnExpr)
		if !ok {
			p.refs = nil
			break
		}
		idx := in.FieldIndices(c.Name)
		if len(idx) != 1 || !arrow.TypeEqual(in.Field(idx[0]).Type, fields[i].Type) {
			p.refs = nil
			break
		}
		p.refs[i] = idx[0]
	}
	return p, nil
}

// passThrough returns b's referenced columns as a batch with b's
// selection (b keeps its own references), when every output is a bare
// column reference.
func (p *projection) passThrough(b arrowflow.Batch) (arrowflow.Batch, bool) {
	if p.refs == nil {
		return arrowflow.Batch{}, false
	}
	cols := make([]arrow.Array, len(p.refs))
	for i, c := range p.refs {
		cols[i] = b.Record.Column(c)
	}
	return arrowflow.Batch{Record: array.NewRecordBatch(p.schema, cols, b.Record.NumRows()), Sel: b.Sel, Kinds: b.Kinds}, true
}

// kernelsType reports whether kernels evaluate columns of type t.
func kernelsType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.STRUCT, arrow.LIST, arrow.LARGE_LIST, arrow.MAP, arrow.FIXED_SIZE_LIST, arrow.DICTIONARY, arrow.DECIMAL128, arrow.DECIMAL256:
		return false
	}
	return true
}

// run projects b's live rows.
func (p *projection) run(mem memory.Allocator, b arrowflow.Batch) (arrow.RecordBatch, error) {
	rec, sel := b.Record, b.Sel
	if p.hasRaw && sel != nil {
		// Pass-through columns need the selected rows only.
		m, err := b.Materialize(mem)
		if err != nil {
			return nil, err
		}
		defer m.Release()
		rec, sel = m, nil
	}
	var kout arrow.RecordBatch
	if p.proj != nil {
		var err error
		if kout, err = p.proj.Project(mem, rec, sel); err != nil {
			return nil, err
		}
		defer kout.Release()
	}
	n := rec.NumRows()
	if sel != nil {
		n = int64(len(sel))
	}
	cols := make([]arrow.Array, len(p.raw))
	for i := range p.raw {
		if p.raw[i] >= 0 {
			cols[i] = rec.Column(p.raw[i])
		} else {
			cols[i] = kout.Column(p.kidx[i])
		}
	}
	return array.NewRecordBatch(p.schema, cols, n), nil
}

// projectOp runs a projection; it compiles again if the input schema
// changes.
type projectOp struct {
	arrowflow.BaseOperator
	exprs  []kernels.Expr
	names  []string
	mem    memory.Allocator
	schema *arrow.Schema
	p      *projection
}

func projectFactory(exprs []kernels.Expr, names []string) arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &projectOp{exprs: exprs, names: names} }
}

func (o *projectOp) Open(info *arrowflow.TaskInfo) error {
	o.mem = info.Allocator
	return nil
}

func (o *projectOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	defer b.Release()
	if b.NumRows() == 0 {
		return nil
	}
	if s := b.Schema(); s != o.schema && (o.schema == nil || !s.Equal(o.schema)) {
		p, err := compileProjection(o.exprs, o.names, s)
		if err != nil {
			return fmt.Errorf("select: %w", err)
		}
		o.schema, o.p = s, p
	}
	if pb, ok := o.p.passThrough(b); ok {
		return out.Emit(pb)
	}
	rec, err := o.p.run(o.mem, b)
	if err != nil {
		return fmt.Errorf("select: %w", err)
	}
	return out.Emit(arrowflow.Batch{Record: rec, Kinds: arrowflow.GatherKinds(nil, b)})
}
