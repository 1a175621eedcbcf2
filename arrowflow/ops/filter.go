package ops

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
)

// Predicate reports whether row i of rec passes a filter.
type Predicate func(rec arrow.RecordBatch, i int) bool

// Filter returns an operator that keeps the rows for which pred is true. It
// never copies columns: it narrows the batch's selection vector in place
// (or creates one), and drops batches with no row left.
func Filter(pred Predicate) arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &filterOp{pred: pred} }
}

type filterOp struct {
	arrowflow.BaseOperator
	pred Predicate
}

func (f *filterOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	rec := b.Record
	if b.Sel != nil {
		// Narrow in place: the write index never passes the read index.
		sel := b.Sel[:0]
		for _, i := range b.Sel {
			if f.pred(rec, int(i)) {
				sel = append(sel, i)
			}
		}
		b.Sel = sel
	} else {
		n := int(rec.NumRows())
		sel := make([]int32, 0, n)
		for i := 0; i < n; i++ {
			if f.pred(rec, i) {
				sel = append(sel, int32(i))
			}
		}
		if len(sel) < n {
			b.Sel = sel
		}
	}
	if b.NumRows() == 0 {
		b.Release()
		return nil
	}
	return out.Emit(b)
}
