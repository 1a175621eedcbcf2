package format

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A column accumulates the values of one Arrow array while records are
// decoded. Columns are plain Go slices that keep their capacity from batch
// to batch, so decoding allocates nothing per record in steady state; the
// rows are copied into buffers from the batch's allocator by finish.
//
// Unlike Arrow's builders, a column can be truncated: a record that fails
// halfway leaves partial values in some columns, and the batch builder
// cuts every column back to the number of accepted rows (a struct cuts its
// children to the same length, a list its child to its end offset), so a
// rejected record leaves no trace.
type column interface {
	dataType() arrow.DataType
	// len is the number of values (rows of this array, not of the batch).
	len() int
	// appendNull appends a null value.
	appendNull()
	// appendEmpty appends the value a slot gets under a null parent: null
	// when the field is nullable, else the type's zero value.
	appendEmpty()
	// truncate cuts the column back to n values; n <= len().
	truncate(n int)
	// finish copies the values into buffers from mem, returns them as
	// array data (the caller owns the reference) and empties the column.
	finish(mem memory.Allocator) arrow.ArrayData
}

// newColumn returns an empty column for values of field's type.
func newColumn(field arrow.Field, tooBig *bool) (column, error) {
	dt, nullable := field.Type, field.Nullable
	switch dt.ID() {
	case arrow.BOOL:
		return &boolColumn{nullable: nullable}, nil
	case arrow.INT8:
		return newFixed[int8](dt, nullable), nil
	case arrow.INT16:
		return newFixed[int16](dt, nullable), nil
	case arrow.INT32, arrow.DATE32, arrow.TIME32:
		return newFixed[int32](dt, nullable), nil
	case arrow.INT64, arrow.TIMESTAMP, arrow.TIME64, arrow.DATE64, arrow.DURATION:
		return newFixed[int64](dt, nullable), nil
	case arrow.UINT8:
		return newFixed[uint8](dt, nullable), nil
	case arrow.UINT16:
		return newFixed[uint16](dt, nullable), nil
	case arrow.UINT32:
		return newFixed[uint32](dt, nullable), nil
	case arrow.UINT64:
		return newFixed[uint64](dt, nullable), nil
	case arrow.FLOAT32:
		return newFixed[float32](dt, nullable), nil
	case arrow.FLOAT64:
		return newFixed[float64](dt, nullable), nil
	case arrow.DECIMAL128:
		return newFixed[decimal128.Num](dt, nullable), nil
	case arrow.STRING, arrow.BINARY:
		return &varColumn[int32]{dtype: dt, nullable: nullable, offsets: []int32{0}, max: math.MaxInt32, tooBig: tooBig}, nil
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return &varColumn[int64]{dtype: dt, nullable: nullable, offsets: []int64{0}, max: math.MaxInt64, tooBig: tooBig}, nil
	case arrow.FIXED_SIZE_BINARY:
		return &fixedBinaryColumn{dtype: dt, nullable: nullable, width: dt.(*arrow.FixedSizeBinaryType).ByteWidth}, nil
	case arrow.STRUCT:
		st := dt.(*arrow.StructType)
		c := &structColumn{dtype: dt, nullable: nullable}
		for _, f := range st.Fields() {
			child, err := newColumn(f, tooBig)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name, err)
			}
			c.children = append(c.children, child)
		}
		return c, nil
	case arrow.LIST, arrow.MAP:
		// A map is laid out as a list of non-null key/value structs.
		var elem arrow.Field
		if mt, ok := dt.(*arrow.MapType); ok {
			elem = arrow.Field{Name: "entries", Type: mt.Elem(), Nullable: false}
			if mt.KeyType().ID() != arrow.STRING && mt.KeyType().ID() != arrow.LARGE_STRING {
				return nil, fmt.Errorf("map keys of type %s are not supported (only strings)", mt.KeyType())
			}
		} else {
			elem = dt.(*arrow.ListType).ElemField()
		}
		child, err := newColumn(elem, tooBig)
		if err != nil {
			return nil, err
		}
		return &listColumn{dtype: dt, nullable: nullable, offsets: []int32{0}, child: child, tooBig: tooBig}, nil
	}
	return nil, fmt.Errorf("type %s is not supported", dt)
}

// validity is a column's validity bitmap. It stays inactive (nil) while
// every value is valid, so the common all-valid column pays one predictable
// branch per value; the first null materializes it.
type validity struct {
	bits  []byte // covers every value once active; bits past len are stale
	spare []byte // bits' storage kept across batches
}

func (v *validity) active() bool { return v.bits != nil }

// set records whether value i, the next one appended, is valid. Values are
// appended in order, so i>>3 is at most len(bits).
func (v *validity) set(i int, ok bool) {
	b := i >> 3
	if b == len(v.bits) {
		v.bits = append(v.bits, 0)
	}
	if ok {
		v.bits[b] |= 1 << (i & 7)
	} else {
		v.bits[b] &^= 1 << (i & 7)
	}
}

// setNull marks value i null, materializing the bitmap with the i values
// before it valid.
func (v *validity) setNull(i int) {
	if v.bits == nil {
		v.bits = v.spare[:0]
		for range i >> 3 {
			v.bits = append(v.bits, 0xff)
		}
		if i&7 != 0 {
			v.bits = append(v.bits, byte(1)<<(i&7)-1)
		}
		if v.bits == nil {
			v.bits = make([]byte, 0, 64)
		}
	}
	v.set(i, false)
}

func (v *validity) truncate(n int) {
	if v.bits != nil {
		v.bits = v.bits[:(n+7)>>3]
	}
}

// finish returns the bitmap of n values as a buffer, nil when there is no
// null, and the null count; it resets the validity.
func (v *validity) finish(mem memory.Allocator, n int) (*memory.Buffer, int) {
	if v.bits == nil {
		return nil, 0
	}
	bits := v.bits[:(n+7)>>3]
	if n&7 != 0 {
		bits[len(bits)-1] &= byte(1)<<(n&7) - 1
	}
	v.spare, v.bits = bits[:0], nil
	nulls := n - bitutil.CountSetBits(bits, 0, n)
	if nulls == 0 {
		return nil, 0
	}
	return copyBuffer(mem, bits), nulls
}

// copyBuffer returns a buffer from mem holding a copy of b.
func copyBuffer(mem memory.Allocator, b []byte) *memory.Buffer {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(len(b))
	copy(buf.Bytes(), b)
	return buf
}

// asBytes views a slice of fixed-width values as its bytes.
func asBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

type fixedWidth interface {
	int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64 | decimal128.Num
}

// fixedColumn holds fixed-width values: integers, floats, decimals and the
// temporal types stored as integers.
type fixedColumn[T fixedWidth] struct {
	dtype    arrow.DataType
	nullable bool
	data     []T
	valid    validity
}

func newFixed[T fixedWidth](dt arrow.DataType, nullable bool) *fixedColumn[T] {
	return &fixedColumn[T]{dtype: dt, nullable: nullable}
}

func (c *fixedColumn[T]) dataType() arrow.DataType { return c.dtype }
func (c *fixedColumn[T]) len() int                 { return len(c.data) }

func (c *fixedColumn[T]) append(v T) {
	if c.valid.active() {
		c.valid.set(len(c.data), true)
	}
	c.data = append(c.data, v)
}

func (c *fixedColumn[T]) appendNull() {
	c.valid.setNull(len(c.data))
	var zero T
	c.data = append(c.data, zero)
}

func (c *fixedColumn[T]) appendEmpty() {
	if c.nullable {
		c.appendNull()
		return
	}
	var zero T
	c.append(zero)
}

func (c *fixedColumn[T]) truncate(n int) {
	c.data = c.data[:n]
	c.valid.truncate(n)
}

func (c *fixedColumn[T]) finish(mem memory.Allocator) arrow.ArrayData {
	n := len(c.data)
	vb, nulls := c.valid.finish(mem, n)
	db := copyBuffer(mem, asBytes(c.data))
	c.data = c.data[:0]
	d := array.NewData(c.dtype, n, []*memory.Buffer{vb, db}, nil, nulls, 0)
	release(vb, db)
	return d
}

func release(bufs ...*memory.Buffer) {
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
}

// boolColumn holds booleans one byte each and packs them in finish.
type boolColumn struct {
	nullable bool
	data     []bool
	valid    validity
}

func (c *boolColumn) dataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }
func (c *boolColumn) len() int                 { return len(c.data) }

func (c *boolColumn) append(v bool) {
	if c.valid.active() {
		c.valid.set(len(c.data), true)
	}
	c.data = append(c.data, v)
}

func (c *boolColumn) appendNull() {
	c.valid.setNull(len(c.data))
	c.data = append(c.data, false)
}

func (c *boolColumn) appendEmpty() {
	if c.nullable {
		c.appendNull()
		return
	}
	c.append(false)
}

func (c *boolColumn) truncate(n int) {
	c.data = c.data[:n]
	c.valid.truncate(n)
}

func (c *boolColumn) finish(mem memory.Allocator) arrow.ArrayData {
	n := len(c.data)
	vb, nulls := c.valid.finish(mem, n)
	db := memory.NewResizableBuffer(mem)
	db.Resize(int(bitutil.BytesForBits(int64(n))))
	bits := db.Bytes()
	clear(bits)
	for i, v := range c.data {
		if v {
			bitutil.SetBit(bits, i)
		}
	}
	c.data = c.data[:0]
	d := array.NewData(arrow.FixedWidthTypes.Boolean, n, []*memory.Buffer{vb, db}, nil, nulls, 0)
	release(vb, db)
	return d
}

// varColumn holds variable-width values (strings and binaries, with 32- or
// 64-bit offsets). Decoders write a value's bytes straight into data and
// then call commit, so unescaping and base64 decoding need no scratch.
type varColumn[O int32 | int64] struct {
	dtype    arrow.DataType
	nullable bool
	offsets  []O // len() + 1 entries, offsets[0] == 0
	data     []byte
	valid    validity
	max      int
	tooBig   *bool // set when data outgrows the offsets
}

func (c *varColumn[O]) dataType() arrow.DataType { return c.dtype }
func (c *varColumn[O]) len() int                 { return len(c.offsets) - 1 }

// commit ends the value whose bytes were appended to data since the last
// commit.
func (c *varColumn[O]) commit() {
	if c.valid.active() {
		c.valid.set(len(c.offsets)-1, true)
	}
	if len(c.data) > c.max {
		*c.tooBig = true
	}
	c.offsets = append(c.offsets, O(len(c.data)))
}

func (c *varColumn[O]) appendBytes(b []byte) {
	c.data = append(c.data, b...)
	c.commit()
}

func (c *varColumn[O]) appendString(s string) {
	c.data = append(c.data, s...)
	c.commit()
}

func (c *varColumn[O]) appendNull() {
	c.valid.setNull(len(c.offsets) - 1)
	c.offsets = append(c.offsets, O(len(c.data)))
}

func (c *varColumn[O]) appendEmpty() {
	if c.nullable {
		c.appendNull()
		return
	}
	c.commit()
}

// rollback drops bytes appended since the last commit.
func (c *varColumn[O]) rollback() { c.data = c.data[:c.offsets[len(c.offsets)-1]] }

// pending is the bytes appended since the last commit.
func (c *varColumn[O]) pending() []byte { return c.data[c.offsets[len(c.offsets)-1]:] }

func (c *varColumn[O]) truncate(n int) {
	c.offsets = c.offsets[:n+1]
	c.data = c.data[:c.offsets[n]]
	c.valid.truncate(n)
}

func (c *varColumn[O]) finish(mem memory.Allocator) arrow.ArrayData {
	n := c.len()
	vb, nulls := c.valid.finish(mem, n)
	ob := copyBuffer(mem, asBytes(c.offsets))
	db := copyBuffer(mem, c.data)
	c.offsets, c.data = c.offsets[:1], c.data[:0]
	d := array.NewData(c.dtype, n, []*memory.Buffer{vb, ob, db}, nil, nulls, 0)
	release(vb, ob, db)
	return d
}

// fixedBinaryColumn holds fixed-size binaries.
type fixedBinaryColumn struct {
	dtype    arrow.DataType
	nullable bool
	width    int
	n        int
	data     []byte
	valid    validity
}

func (c *fixedBinaryColumn) dataType() arrow.DataType { return c.dtype }
func (c *fixedBinaryColumn) len() int                 { return c.n }

// appendBytes appends b, which must be width bytes long.
func (c *fixedBinaryColumn) appendBytes(b []byte) {
	if c.valid.active() {
		c.valid.set(c.n, true)
	}
	c.data = append(c.data, b...)
	c.n++
}

func (c *fixedBinaryColumn) appendNull() {
	c.valid.setNull(c.n)
	c.data = append(c.data, make([]byte, c.width)...)
	c.n++
}

func (c *fixedBinaryColumn) appendEmpty() {
	if c.nullable {
		c.appendNull()
		return
	}
	if c.valid.active() {
		c.valid.set(c.n, true)
	}
	c.data = append(c.data, make([]byte, c.width)...)
	c.n++
}

func (c *fixedBinaryColumn) truncate(n int) {
	c.n = n
	c.data = c.data[:n*c.width]
	c.valid.truncate(n)
}

func (c *fixedBinaryColumn) finish(mem memory.Allocator) arrow.ArrayData {
	n := c.n
	vb, nulls := c.valid.finish(mem, n)
	db := copyBuffer(mem, c.data)
	c.n, c.data = 0, c.data[:0]
	d := array.NewData(c.dtype, n, []*memory.Buffer{vb, db}, nil, nulls, 0)
	release(vb, db)
	return d
}

// structColumn holds a struct's validity; its children hold the fields.
// Every child has exactly len() values.
type structColumn struct {
	dtype    arrow.DataType
	nullable bool
	n        int
	children []column
	valid    validity
}

func (c *structColumn) dataType() arrow.DataType { return c.dtype }
func (c *structColumn) len() int                 { return c.n }

// appendValid ends a valid struct value whose fields the decoder has
// appended to the children.
func (c *structColumn) appendValid() {
	if c.valid.active() {
		c.valid.set(c.n, true)
	}
	c.n++
}

func (c *structColumn) appendNull() {
	c.valid.setNull(c.n)
	c.n++
	for _, ch := range c.children {
		ch.appendEmpty()
	}
}

func (c *structColumn) appendEmpty() {
	if c.nullable {
		c.appendNull()
		return
	}
	for _, ch := range c.children {
		ch.appendEmpty()
	}
	c.appendValid()
}

func (c *structColumn) truncate(n int) {
	c.n = n
	c.valid.truncate(n)
	for _, ch := range c.children {
		ch.truncate(n)
	}
}

func (c *structColumn) finish(mem memory.Allocator) arrow.ArrayData {
	n := c.n
	vb, nulls := c.valid.finish(mem, n)
	children := make([]arrow.ArrayData, len(c.children))
	for i, ch := range c.children {
		children[i] = ch.finish(mem)
	}
	c.n = 0
	d := array.NewData(c.dtype, n, []*memory.Buffer{vb}, children, nulls, 0)
	release(vb)
	for _, ch := range children {
		ch.Release()
	}
	return d
}

// listColumn holds list (and map) offsets; child holds the elements.
type listColumn struct {
	dtype    arrow.DataType
	nullable bool
	offsets  []int32 // len() + 1 entries; child has offsets[len()] values
	child    column
	valid    validity
	tooBig   *bool
}

func (c *listColumn) dataType() arrow.DataType { return c.dtype }
func (c *listColumn) len() int                 { return len(c.offsets) - 1 }

// commit ends a valid list whose elements were appended to child since the
// last commit.
func (c *listColumn) commit() {
	if c.valid.active() {
		c.valid.set(len(c.offsets)-1, true)
	}
	end := c.child.len()
	if end > math.MaxInt32 {
		*c.tooBig = true
	}
	c.offsets = append(c.offsets, int32(end))
}

func (c *listColumn) appendNull() {
	c.valid.setNull(len(c.offsets) - 1)
	c.offsets = append(c.offsets, c.offsets[len(c.offsets)-1])
}

func (c *listColumn) appendEmpty() {
	if c.nullable {
		c.appendNull()
		return
	}
	c.commit()
}

func (c *listColumn) truncate(n int) {
	c.offsets = c.offsets[:n+1]
	c.valid.truncate(n)
	c.child.truncate(int(c.offsets[n]))
}

func (c *listColumn) finish(mem memory.Allocator) arrow.ArrayData {
	n := c.len()
	vb, nulls := c.valid.finish(mem, n)
	ob := copyBuffer(mem, asBytes(c.offsets))
	child := c.child.finish(mem)
	c.offsets = c.offsets[:1]
	d := array.NewData(c.dtype, n, []*memory.Buffer{vb, ob}, []arrow.ArrayData{child}, nulls, 0)
	release(vb, ob)
	child.Release()
	return d
}
