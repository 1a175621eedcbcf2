package ops

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
)

// Where returns an operator that keeps the rows for which pred, a
// kernels expression, is TRUE (FALSE and NULL drop the row, as SQL's
// WHERE does). Like Filter it never copies columns: it narrows the
// batch's selection vector. The predicate is compiled against the schema
// of the first batch, and again whenever the schema changes; a compile
// error (unknown column, wrong types) fails the job naming the operator.
func Where(pred kernels.Expr) arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &whereOp{pred: pred} }
}

type whereOp struct {
	arrowflow.BaseOperator
	pred   kernels.Expr
	schema *arrow.Schema
	filter *kernels.Filter
}

func (w *whereOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	if s := b.Schema(); s != w.schema && (w.schema == nil || !s.Equal(w.schema)) {
		f, err := kernels.CompileFilter(w.pred, s)
		if err != nil {
			b.Release()
			return fmt.Errorf("where: %w", err)
		}
		w.schema, w.filter = s, f
	}
	// The batch owns its selection vector, so it is narrowed in place; a
	// nil one gets a new slice (Select never returns nil).
	sel, err := w.filter.Select(b.Record, b.Sel, b.Sel)
	if err != nil {
		b.Release()
		return fmt.Errorf("where: %w", err)
	}
	if len(sel) == 0 {
		b.Release()
		return nil
	}
	if b.Sel != nil || len(sel) < int(b.Record.NumRows()) {
		b.Sel = sel
	}
	return out.Emit(b)
}

// Project returns an operator that computes exprs (named by names, or by
// their SQL form when names is nil) for every live row and emits dense
// batches of the results, without selection vectors. Bare column
// references keep their type and share memory when no row was filtered.
func Project(exprs []kernels.Expr, names []string) arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &projectOp{exprs: exprs, names: names} }
}

type projectOp struct {
	arrowflow.BaseOperator
	exprs  []kernels.Expr
	names  []string
	info   *arrowflow.TaskInfo
	schema *arrow.Schema
	proj   *kernels.Projection
}

func (p *projectOp) Open(info *arrowflow.TaskInfo) error {
	p.info = info
	return nil
}

func (p *projectOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	defer b.Release()
	if s := b.Schema(); s != p.schema && (p.schema == nil || !s.Equal(p.schema)) {
		proj, err := kernels.CompileProjection(p.exprs, p.names, s)
		if err != nil {
			return fmt.Errorf("project: %w", err)
		}
		p.schema, p.proj = s, proj
	}
	rec, err := p.proj.Project(p.info.Allocator, b.Record, b.Sel)
	if err != nil {
		return fmt.Errorf("project: %w", err)
	}
	return out.Emit(arrowflow.Batch{Record: rec, Kinds: arrowflow.GatherKinds(nil, b)})
}
