package ops

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
)

// MapFunc transforms a batch. It owns b: it must release it or return it
// (possibly narrowed). The returned batch is owned by the caller; a zero
// Batch means no output.
type MapFunc func(b arrowflow.Batch, mem memory.Allocator) (arrowflow.Batch, error)

// Map returns an operator that applies fn to every batch.
func Map(fn MapFunc) arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return &mapOp{fn: fn} }
}

type mapOp struct {
	arrowflow.BaseOperator
	fn  MapFunc
	mem memory.Allocator
}

func (m *mapOp) Open(info *arrowflow.TaskInfo) error {
	m.mem = info.Allocator
	return nil
}

func (m *mapOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	res, err := m.fn(b, m.mem)
	if err != nil {
		return err
	}
	if res.IsZero() {
		return nil
	}
	return out.Emit(res)
}

// RecordFunc transforms the selected rows of a batch, given as a
// materialised record it must not release; the returned record is owned by
// the caller (nil means no output).
type RecordFunc func(rec arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error)

// MapRecords returns an operator that materialises each batch and applies
// fn to it. It is the easiest way to write a transformation, at the cost
// of a copy when batches carry a selection vector.
func MapRecords(fn RecordFunc) arrowflow.OperatorFactory {
	return Map(func(b arrowflow.Batch, mem memory.Allocator) (arrowflow.Batch, error) {
		rec, err := b.Materialize(mem)
		b.Release()
		if err != nil {
			return arrowflow.Batch{}, err
		}
		defer rec.Release()
		res, err := fn(rec, mem)
		if err != nil {
			if res != nil {
				res.Release()
			}
			return arrowflow.Batch{}, err
		}
		if res == nil {
			return arrowflow.Batch{}, nil
		}
		return arrowflow.NewBatch(res), nil
	})
}
