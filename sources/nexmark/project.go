package nexmark

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
)

// Persons returns the person rows of rec, a batch of EventSchema, as a
// new batch of PersonSchema allocated from mem (a batch of 0 rows when
// there is none). rec is not released.
func Persons(mem memory.Allocator, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	return Project(mem, arrowflow.NewBatch(rec), PersonEvent)
}

// Auctions returns the auction rows of rec, a batch of EventSchema, as a
// new batch of AuctionSchema allocated from mem. rec is not released.
func Auctions(mem memory.Allocator, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	return Project(mem, arrowflow.NewBatch(rec), AuctionEvent)
}

// Bids returns the bid rows of rec, a batch of EventSchema, as a new
// batch of BidSchema allocated from mem. rec is not released.
func Bids(mem memory.Allocator, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	return Project(mem, arrowflow.NewBatch(rec), BidEvent)
}

// Project returns the selected rows of b (a batch of EventSchema, with or
// without a selection vector) whose event_type is t, flattened: the
// columns of t's struct, in PersonSchema, AuctionSchema or BidSchema. b is
// not released.
//
// It is vectorized: one pass over event_type collects the row indices,
// then each field of the struct is gathered at once (kernels.Take). When
// the rows form one contiguous run, such as a batch holding nothing else,
// the fields are sliced instead of copied: the result then shares b's
// buffers (it holds its own references to them).
func Project(mem memory.Allocator, b arrowflow.Batch, t EventType) (arrow.RecordBatch, error) {
	var out *arrow.Schema
	var col int
	switch t {
	case PersonEvent:
		out, col = personSchema, colPerson
	case AuctionEvent:
		out, col = auctionSchema, colAuction
	case BidEvent:
		out, col = bidSchema, colBid
	default:
		return nil, fmt.Errorf("nexmark: project: unknown event type %d", int32(t))
	}
	rec := b.Record
	types, st, err := eventColumns(rec, col)
	if err != nil {
		return nil, err
	}
	idx := rowsOfType(types.Int32Values(), b.Sel, int32(t))
	cols := make([]arrow.Array, st.NumField())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	contiguous := len(idx) > 0 && int(idx[len(idx)-1]-idx[0]) == len(idx)-1
	for j := range cols {
		child := st.Field(j)
		if len(idx) == 0 {
			cols[j] = array.MakeArrayOfNull(mem, out.Field(j).Type, 0)
			continue
		}
		if contiguous {
			cols[j] = array.NewSlice(child, int64(idx[0]), int64(idx[0])+int64(len(idx)))
			continue
		}
		if cols[j], err = takeValid(mem, child, idx); err != nil {
			return nil, fmt.Errorf("nexmark: project %s.%s: %w", t, out.Field(j).Name, err)
		}
	}
	return array.NewRecordBatch(out, cols, int64(len(idx))), nil
}

// eventColumns returns rec's event_type column and the struct column at
// index col of EventSchema, checking that rec has the event schema's
// columns of these names and types.
func eventColumns(rec arrow.RecordBatch, col int) (*array.Int32, *array.Struct, error) {
	if rec == nil {
		return nil, nil, fmt.Errorf("nexmark: project: no record")
	}
	get := func(k int) (arrow.Array, error) {
		want := eventSchema.Field(k)
		idx := rec.Schema().FieldIndices(want.Name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("nexmark: project: the batch has no (single) column %q: is it a batch of EventSchema? schema: %s", want.Name, rec.Schema())
		}
		c := rec.Column(idx[0])
		if !arrow.TypeEqual(c.DataType(), want.Type) {
			return nil, fmt.Errorf("nexmark: project: column %q has type %s, want %s", want.Name, c.DataType(), want.Type)
		}
		return c, nil
	}
	types, err := get(colEventType)
	if err != nil {
		return nil, nil, err
	}
	st, err := get(col)
	if err != nil {
		return nil, nil, err
	}
	return types.(*array.Int32), st.(*array.Struct), nil
}

// rowsOfType returns the rows (all, or those of sel) whose type is t.
func rowsOfType(types []int32, sel []int32, t int32) []int32 {
	if sel != nil {
		idx := make([]int32, 0, len(sel))
		for _, i := range sel {
			if types[i] == t {
				idx = append(idx, i)
			}
		}
		return idx
	}
	idx := make([]int32, 0, len(types))
	for i, v := range types {
		if v == t {
			idx = append(idx, int32(i))
		}
	}
	return idx
}

// takeValid gathers the rows idx of a struct's child, rows that are all
// valid: the child's validity (the struct's, shared) is left out, so the
// result has none.
func takeValid(mem memory.Allocator, child arrow.Array, idx []int32) (arrow.Array, error) {
	d := child.Data()
	bufs := append([]*memory.Buffer{nil}, d.Buffers()[1:]...)
	view := array.NewData(d.DataType(), d.Len(), bufs, d.Children(), 0, d.Offset())
	defer view.Release()
	arr := array.MakeFromData(view)
	defer arr.Release()
	return kernels.Take(mem, arr, idx)
}
