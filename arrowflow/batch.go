package arrowflow

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/kernels"
)

// Batch is the unit of data: an Arrow record batch and an optional
// selection vector.
//
// Sel, when not nil, lists the row indices of Record still alive, strictly
// increasing; a filter narrows a batch by shortening Sel instead of copying
// columns. A nil Sel means every row is alive; an empty non-nil Sel means
// none is. Columns are materialised (copied without the dead rows) only at
// boundaries that need it: sinks, state, serialisation.
//
// A Batch holds one reference to Record. Whoever receives a Batch owns that
// reference, and owns Sel too (it may rewrite it in place): it must Release
// the batch or pass it on, exactly once.
//
// Kinds, when not nil, makes the batch part of a changelog: it holds the
// RowKind of every physical row of Record (indexed like Record, not like
// Sel), and is immutable once the batch is emitted, so that shared
// batches and exchanges pass it on without copying. A nil Kinds means
// every row is an insert: append-only streams pay nothing.
type Batch struct {
	Record arrow.RecordBatch
	Sel    []int32
	Kinds  []RowKind
}

// NewBatch wraps rec, taking over the caller's reference, with every row
// selected.
func NewBatch(rec arrow.RecordBatch) Batch { return Batch{Record: rec} }

// IsZero reports whether b holds no record (a source's "nothing right now").
func (b Batch) IsZero() bool { return b.Record == nil }

// NumRows is the number of selected rows.
func (b Batch) NumRows() int {
	if b.Sel != nil {
		return len(b.Sel)
	}
	if b.Record == nil {
		return 0
	}
	return int(b.Record.NumRows())
}

// Row returns the physical row index of the k-th selected row.
func (b Batch) Row(k int) int {
	if b.Sel != nil {
		return int(b.Sel[k])
	}
	return k
}

// Schema is the schema of the batch's record.
func (b Batch) Schema() *arrow.Schema { return b.Record.Schema() }

// Release gives up the batch's reference to its record.
func (b Batch) Release() {
	if b.Record != nil {
		b.Record.Release()
	}
}

// Share returns a second Batch over the same record: it takes a new
// reference and copies the selection vector, so that the two owners can
// release and narrow independently.
func (b Batch) Share() Batch {
	b.Record.Retain()
	b.Sel = slices.Clone(b.Sel) // keeps nil nil and empty empty
	return b
}

// Materialize returns a record batch holding exactly the selected rows. With
// no selection vector it returns the batch's record with a new reference;
// otherwise it gathers the selected rows into new arrays allocated from
// mem. The batch itself is not released.
func (b Batch) Materialize(mem memory.Allocator) (arrow.RecordBatch, error) {
	if b.Sel == nil {
		b.Record.Retain()
		return b.Record, nil
	}
	rec, err := kernels.TakeRecord(mem, b.Record, b.Sel)
	if err != nil {
		return nil, fmt.Errorf("materialize batch: %w", err)
	}
	return rec, nil
}

// Validate checks the selection vector's invariant (strictly increasing, in
// range). It is meant for tests and debugging, not hot paths.
func (b Batch) Validate() error {
	if b.Record == nil {
		if b.Sel != nil {
			return fmt.Errorf("batch without record has a selection vector")
		}
		return nil
	}
	n := int32(b.Record.NumRows())
	for k, i := range b.Sel {
		if i < 0 || i >= n {
			return fmt.Errorf("selection[%d] = %d out of range [0, %d)", k, i, n)
		}
		if k > 0 && b.Sel[k-1] >= i {
			return fmt.Errorf("selection not strictly increasing at %d: %d then %d", k, b.Sel[k-1], i)
		}
	}
	return nil
}
