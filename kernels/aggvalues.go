package kernels

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// This file holds per-group values that can be replaced: the current
// min/max of a string column, the value of first/last. Unlike keys, which
// are written once, these change as rows arrive, so variable-width values
// need an arena that can reuse and reclaim space.

// varSlots keeps one variable-length byte value per group in an arena:
// group g's value is arena[start[g]:start[g]+size[g]], in a region of
// room[g] bytes it owns. A new value that fits the region overwrites it in
// place; a longer one gets a fresh region at the end of the arena, and the
// old region becomes garbage. When garbage outweighs live bytes the arena
// is compacted into a second buffer kept for the purpose, so steady state
// allocates nothing.
//
// Invariant: len(start) == len(size) == len(room) == number of groups; the
// regions of distinct groups do not overlap.
type varSlots struct {
	arena   []byte
	spare   []byte // the other half of the compaction double buffer
	start   []int
	size    []int32
	room    []int32
	garbage int
}

func (v *varSlots) grow(groups int) {
	v.start = growZero(v.start, groups)
	v.size = growZero(v.size, groups)
	v.room = growZero(v.room, groups)
}

func (v *varSlots) get(g uint32) []byte {
	s := v.start[g]
	return v.arena[s : s+int(v.size[g])]
}

func (v *varSlots) set(g uint32, b []byte) {
	if len(b) <= int(v.room[g]) {
		copy(v.arena[v.start[g]:], b)
		v.size[g] = int32(len(b))
		return
	}
	v.garbage += int(v.room[g])
	if v.garbage > 1<<16 && v.garbage > len(v.arena)/2 {
		v.compact()
	}
	v.start[g] = len(v.arena)
	v.arena = append(v.arena, b...)
	v.size[g] = int32(len(b))
	v.room[g] = int32(len(b))
}

// compact copies every live value into the spare buffer, shrinking each
// region to its value, and swaps the buffers.
func (v *varSlots) compact() {
	out := v.spare[:0]
	for g, s := range v.start {
		n := int(v.size[g])
		out = append(out, v.arena[s:s+n]...)
		v.start[g] = len(out) - n
		v.room[g] = int32(n)
	}
	v.spare, v.arena = v.arena[:0], out
	v.garbage = 0
}

// offsets returns the value of each group laid end to end, as offsets into
// a new arena, for building an Arrow array.
func (v *varSlots) offsets() ([]int, []byte) {
	offs := make([]int, len(v.start)+1)
	var data []byte
	for g := range v.start {
		data = append(data, v.get(uint32(g))...)
		offs[g+1] = len(data)
	}
	return offs, data
}

func (v *varSlots) reset() {
	v.arena, v.start, v.size, v.room, v.garbage = v.arena[:0], v.start[:0], v.size[:0], v.room[:0], 0
}

func (v *varSlots) sizeBytes() int64 {
	return int64(cap(v.arena)+cap(v.spare)) + int64(cap(v.start))*8 + int64(cap(v.size)+cap(v.room))*4
}

// valueColumn keeps one replaceable value of any key-supported type per
// group, nulls included, for first and last.
type valueColumn interface {
	grow(groups int)
	// copyRows sets the value of group gs[j] to col's value at rows[j]
	// (null if that is null).
	copyRows(col arrow.Array, gs []uint32, rows []int32)
	// array returns the values of all groups; valid[g] false forces null.
	array(mem memory.Allocator, valid []bool) arrow.Array
	reset()
	sizeBytes() int64
}

func newValueColumn(dt arrow.DataType) valueColumn {
	switch dt.ID() {
	case arrow.BOOL:
		return &boolValues{}
	case arrow.STRING, arrow.BINARY:
		return &bytesValues[int32]{dt: dt}
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return &bytesValues[int64]{dt: dt}
	}
	fw, ok := dt.(arrow.FixedWidthDataType)
	if !ok || fw.BitWidth()%8 != 0 {
		panic(fmt.Sprintf("BUG: no value column for %s", dt))
	}
	return &fixedValues{dt: dt, width: fw.BitWidth() / 8}
}

// andValid returns the per-group flags valid && notNull, into a new slice.
func andValid(valid, notNull []bool) []bool {
	out := make([]bool, len(valid))
	for g, v := range valid {
		out[g] = v && notNull[g]
	}
	return out
}

// fixedValues keeps fixed-width values as raw bytes, width bytes per group:
// the Arrow layout, so building the array is one copy.
type fixedValues struct {
	dt      arrow.DataType
	width   int
	data    []byte
	notNull []bool
}

func (c *fixedValues) grow(groups int) {
	c.data = growZero(c.data, groups*c.width)
	c.notNull = growZero(c.notNull, groups)
}

func (c *fixedValues) copyRows(col arrow.Array, gs []uint32, rows []int32) {
	data := col.Data()
	w := c.width
	src := data.Buffers()[1].Bytes()[data.Offset()*w:]
	hasNulls := col.NullN() > 0
	for j, g := range gs {
		i := int(rows[j])
		copy(c.data[int(g)*w:(int(g)+1)*w], src[i*w:(i+1)*w])
		c.notNull[g] = !hasNulls || col.IsValid(i)
	}
}

func (c *fixedValues) array(mem memory.Allocator, valid []bool) arrow.Array {
	return newFixedBytesArray(mem, c.dt, c.data, andValid(valid, c.notNull))
}

func (c *fixedValues) reset() { c.data, c.notNull = c.data[:0], c.notNull[:0] }

func (c *fixedValues) sizeBytes() int64 { return int64(cap(c.data) + cap(c.notNull)) }

// boolValues keeps booleans one per byte.
type boolValues struct {
	vals    []bool
	notNull []bool
}

func (c *boolValues) grow(groups int) {
	c.vals = growZero(c.vals, groups)
	c.notNull = growZero(c.notNull, groups)
}

func (c *boolValues) copyRows(col arrow.Array, gs []uint32, rows []int32) {
	data := col.Data()
	bm, off := data.Buffers()[1].Bytes(), data.Offset()
	for j, g := range gs {
		i := int(rows[j])
		c.vals[g] = bm[(off+i)>>3]&(1<<((off+i)&7)) != 0
		c.notNull[g] = col.IsValid(i)
	}
}

func (c *boolValues) array(mem memory.Allocator, valid []bool) arrow.Array {
	return newBoolArray(mem, c.vals, andValid(valid, c.notNull))
}

func (c *boolValues) reset() { c.vals, c.notNull = c.vals[:0], c.notNull[:0] }

func (c *boolValues) sizeBytes() int64 { return int64(cap(c.vals) + cap(c.notNull)) }

// bytesValues keeps string and binary values in varSlots.
type bytesValues[O int32 | int64] struct {
	dt      arrow.DataType
	slots   varSlots
	notNull []bool
}

func (c *bytesValues[O]) grow(groups int) {
	c.slots.grow(groups)
	c.notNull = growZero(c.notNull, groups)
}

func (c *bytesValues[O]) copyRows(col arrow.Array, gs []uint32, rows []int32) {
	data := col.Data()
	offs, vals := arrow.GetOffsets[O](data, 1), bufferBytes(data, 2)
	for j, g := range gs {
		i := rows[j]
		c.slots.set(g, vals[offs[i]:offs[i+1]])
		c.notNull[g] = col.IsValid(int(i))
	}
}

func (c *bytesValues[O]) array(mem memory.Allocator, valid []bool) arrow.Array {
	offs, data := c.slots.offsets()
	return newVarBinaryArray[O](mem, c.dt, offs, data, andValid(valid, c.notNull))
}

func (c *bytesValues[O]) reset() {
	c.slots.reset()
	c.notNull = c.notNull[:0]
}

func (c *bytesValues[O]) sizeBytes() int64 { return c.slots.sizeBytes() + int64(cap(c.notNull)) }
