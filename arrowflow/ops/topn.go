package ops

import (
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
)

// TopN keeps the N rows with the largest values of an int64 column and
// emits them, largest first, when its inputs end. Ties are broken by the
// smallest value of an optional second int64 column, so the result does
// not depend on the order rows arrive in. It holds at most N rows (plus
// one batch while merging) and has no event-time semantics: it is meant
// for bounded jobs such as the demo; per-window top-N belongs to window/.
// Its state is not keyed: run it with parallelism 1 (rows reach it
// through a Rebalance edge).
type TopN struct {
	// By names the int64 column to rank by, descending.
	By string
	// TieBreak optionally names an int64 column ranked ascending among
	// equal By values.
	TieBreak string
	// N is the number of rows kept.
	N int
}

// Factory returns the operator factory.
func (c TopN) Factory() arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &topN{cfg: c} }
}

type topN struct {
	arrowflow.BaseOperator
	cfg  TopN
	info *arrowflow.TaskInfo
	top  arrow.RecordBatch // the best rows so far, sorted, at most N
}

func (o *topN) Open(info *arrowflow.TaskInfo) error {
	if o.cfg.N < 1 {
		return fmt.Errorf("top-n: N must be at least 1, got %d", o.cfg.N)
	}
	o.info = info
	return nil
}

func (o *topN) column(rec arrow.RecordBatch, name string) (*array.Int64, error) {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		return nil, fmt.Errorf("top-n: column %q not found (or ambiguous) in %s", name, rec.Schema())
	}
	col, ok := rec.Column(idx[0]).(*array.Int64)
	if !ok {
		return nil, fmt.Errorf("top-n: column %q is %s, want int64", name, rec.Column(idx[0]).DataType())
	}
	return col, nil
}

func (o *topN) ProcessBatch(_ int, b arrowflow.Batch, _ arrowflow.Emitter) error {
	rec, err := b.Materialize(o.info.Allocator)
	b.Release()
	if err != nil {
		return err
	}
	defer rec.Release()
	return o.merge(rec)
}

// merge replaces the kept rows with the best N of them and rec.
func (o *topN) merge(rec arrow.RecordBatch) error {
	mem := o.info.Allocator
	merged := rec
	if o.top != nil {
		if !o.top.Schema().Equal(rec.Schema()) {
			return fmt.Errorf("top-n: schema changed from %s to %s", o.top.Schema(), rec.Schema())
		}
		cols := make([]arrow.Array, rec.NumCols())
		for i := range cols {
			c, err := array.Concatenate([]arrow.Array{o.top.Column(i), rec.Column(i)}, mem)
			if err != nil {
				for _, c := range cols[:i] {
					c.Release()
				}
				return fmt.Errorf("top-n: %w", err)
			}
			cols[i] = c
		}
		merged = array.NewRecordBatch(rec.Schema(), cols, o.top.NumRows()+rec.NumRows())
		for _, c := range cols {
			c.Release()
		}
		defer merged.Release()
	}
	by, err := o.column(merged, o.cfg.By)
	if err != nil {
		return err
	}
	var tie *array.Int64
	if o.cfg.TieBreak != "" {
		if tie, err = o.column(merged, o.cfg.TieBreak); err != nil {
			return err
		}
	}
	idx := make([]int32, 0, merged.NumRows())
	for i := 0; i < int(merged.NumRows()); i++ {
		if by.IsValid(i) {
			idx = append(idx, int32(i))
		}
	}
	sort.SliceStable(idx, func(x, y int) bool {
		a, b := int(idx[x]), int(idx[y])
		if by.Value(a) != by.Value(b) {
			return by.Value(a) > by.Value(b)
		}
		return tie != nil && tie.Value(a) < tie.Value(b)
	})
	if len(idx) > o.cfg.N {
		idx = idx[:o.cfg.N]
	}
	next, err := kernels.TakeRecord(mem, merged, idx)
	if err != nil {
		return fmt.Errorf("top-n: %w", err)
	}
	if o.top != nil {
		o.top.Release()
	}
	o.top = next
	return nil
}

const topTable = "top"

func (o *topN) SnapshotState(_ uint64, w state.SnapshotWriter) error {
	if o.top == nil {
		return nil
	}
	return w.Write(topTable, o.top)
}

func (o *topN) RestoreState(r state.SnapshotReader) error {
	return r.Read(topTable, o.merge)
}

func (o *topN) Finish(out arrowflow.Emitter) error {
	if o.top == nil {
		return nil
	}
	top := o.top
	o.top = nil
	return out.Emit(arrowflow.NewBatch(top))
}

func (o *topN) Close() error {
	if o.top != nil {
		o.top.Release()
		o.top = nil
	}
	return nil
}
