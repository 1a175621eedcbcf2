package nexmark

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Columns are written straight into Arrow buffers allocated from the
// reader's allocator, except string bytes, whose total is unknown until a
// batch is generated: they go to a scratch slice reused across batches
// and are copied once at the end.

// newBuffer allocates a buffer of size bytes from mem. Its contents are
// undefined (allocators need not zero what they hand out): every byte must
// be written.
func newBuffer(mem memory.Allocator, size int) *memory.Buffer {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(size)
	return buf
}

// fixedCol is a column of 64-bit values (int64 and timestamps). Every row
// is written: rows of other event types get 0.
type fixedCol struct {
	buf *memory.Buffer
	v   []int64
}

func (c *fixedCol) alloc(mem memory.Allocator, n int) {
	c.buf = newBuffer(mem, n*8)
	c.v = arrow.Int64Traits.CastFromBytes(c.buf.Bytes())[:n]
}

// finish returns the column's data with the given validity (nil: none)
// and hands over the buffer.
func (c *fixedCol) finish(dt arrow.DataType, n int, valid *memory.Buffer, nulls int) arrow.ArrayData {
	d := array.NewData(dt, n, []*memory.Buffer{valid, c.buf}, nil, nulls, 0)
	c.buf.Release()
	c.buf, c.v = nil, nil
	return d
}

// strCol is a string column. Rows that are not written are empty: before
// a row's bytes are appended, begin sets the start offset of every row up
// to it.
type strCol struct {
	offBuf *memory.Buffer
	offs   []int32
	data   []byte // scratch, reused across batches
	next   int    // rows below next have their start offset set
}

func (c *strCol) alloc(mem memory.Allocator, n int) {
	c.offBuf = newBuffer(mem, (n+1)*4)
	c.offs = arrow.Int32Traits.CastFromBytes(c.offBuf.Bytes())[:n+1]
	c.data = c.data[:0]
	c.next = 0
}

// begin prepares row to receive its bytes, appended to c.data next.
func (c *strCol) begin(row int) {
	o := int32(len(c.data))
	for ; c.next <= row; c.next++ {
		c.offs[c.next] = o
	}
}

// appendRow sets row to s.
func (c *strCol) appendRow(row int, s []byte) {
	c.begin(row)
	c.data = append(c.data, s...)
}

func (c *strCol) finish(mem memory.Allocator, n int, valid *memory.Buffer, nulls int) arrow.ArrayData {
	c.begin(n) // the end offset of the last row, and empty trailing rows
	// String bytes come from the reader's own allocator, never recycled:
	// array.String.Value aliases them, and consumers commonly keep such
	// strings after releasing a batch.
	vals := memory.NewResizableBuffer(unrecycled(mem))
	vals.Resize(len(c.data))
	copy(vals.Bytes(), c.data)
	d := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{valid, c.offBuf, vals}, nil, nulls, 0)
	c.offBuf.Release()
	vals.Release()
	c.offBuf, c.offs = nil, nil
	return d
}

// bitmap is the validity of one event type's struct: bit i is set when
// row i holds that type.
type bitmap struct {
	buf  *memory.Buffer
	bits []byte
	set  int
}

func (b *bitmap) alloc(mem memory.Allocator, n int) {
	b.buf = newBuffer(mem, int(bitutil.BytesForBits(int64(n))))
	b.bits = b.buf.Bytes()
	clear(b.bits)
	b.set = 0
}

func (b *bitmap) mark(row int) {
	bitutil.SetBit(b.bits, row)
	b.set++
}

// release gives up the builder's reference once the arrays hold theirs.
func (b *bitmap) release() {
	b.buf.Release()
	b.buf, b.bits = nil, nil
}

// structData assembles a struct column from its children's data (taking
// them over) with validity valid.
func structData(dt arrow.DataType, n int, valid *bitmap, children []arrow.ArrayData) arrow.ArrayData {
	d := array.NewData(dt, n, []*memory.Buffer{valid.buf}, children, n-valid.set, 0)
	for _, c := range children {
		c.Release()
	}
	return d
}
