package format

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// rowDecoder decodes one value into exactly one new row of the batch's
// columns, or fails; on failure it may leave partial values behind, which
// the batch builder truncates.
type rowDecoder interface {
	decodeRow(value []byte) error
}

// columns is the set of top-level columns of a batch.
type columns struct {
	schema *arrow.Schema
	cols   []column
	tooBig bool // some column's data outgrew its 32-bit offsets
}

func newColumns(schema *arrow.Schema) (*columns, error) {
	c := &columns{schema: schema}
	for _, f := range schema.Fields() {
		col, err := newColumn(f, &c.tooBig)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
		c.cols = append(c.cols, col)
	}
	return c, nil
}

// batchBuilder is the BatchBuilder of every format: the format supplies a
// rowDecoder bound to the builder's columns.
type batchBuilder struct {
	format string
	mem    memory.Allocator
	cols   *columns
	dec    rowDecoder
	n      int
}

var errBatchTooBig = errors.New("the batch's variable-length data outgrew 32-bit offsets (2 GiB); call NewRecord more often")

func (b *batchBuilder) Append(value []byte) error {
	err := b.dec.decodeRow(value)
	if err == nil && b.cols.tooBig {
		err = &RecordError{Format: b.format, Offset: -1, Err: errBatchTooBig}
		b.cols.tooBig = false
	}
	if err != nil {
		for _, c := range b.cols.cols {
			c.truncate(b.n)
		}
		return err
	}
	b.n++
	return nil
}

func (b *batchBuilder) Len() int { return b.n }

func (b *batchBuilder) NewRecord() arrow.RecordBatch {
	arrs := make([]arrow.Array, len(b.cols.cols))
	for i, c := range b.cols.cols {
		d := c.finish(b.mem)
		arrs[i] = array.MakeFromData(d)
		d.Release()
	}
	rec := array.NewRecordBatch(b.cols.schema, arrs, int64(b.n))
	for _, a := range arrs {
		a.Release()
	}
	b.n = 0
	return rec
}

// Release drops the builder's scratch; the builder holds no allocator
// memory between NewRecord calls.
func (b *batchBuilder) Release() {
	for _, c := range b.cols.cols {
		c.truncate(0)
	}
	b.n = 0
}
