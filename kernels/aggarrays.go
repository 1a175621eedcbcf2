package kernels

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// This file turns the Go slices that hold aggregation state (keys,
// accumulators) into Arrow arrays: the cold path of ExportState, Finish
// and GroupTable.Keys.

func goSizeOf[T any](z T) int { return int(unsafe.Sizeof(z)) }

// bytesOf views a slice of fixed-size values as its bytes.
func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}

// validityBuffer builds an Arrow validity bitmap from per-element flags;
// it returns nil (and 0 nulls) when valid is nil or all true.
func validityBuffer(mem memory.Allocator, valid []bool) (*memory.Buffer, int) {
	nulls := 0
	for _, v := range valid {
		if !v {
			nulls++
		}
	}
	if nulls == 0 {
		return nil, 0
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(len(valid)))))
	bm := buf.Bytes()
	clear(bm)
	for i, v := range valid {
		if v {
			bitutil.SetBit(bm, i)
		}
	}
	return buf, nulls
}

func arrayOfBuffers(dt arrow.DataType, n int, bufs []*memory.Buffer, nulls int) arrow.Array {
	data := newData(dt, n, bufs, nulls)
	defer data.Release()
	return array.MakeFromData(data)
}

// newFixedArray builds an array of the fixed-width type dt, whose values
// have the memory layout of T, from vals; valid (nil: all valid) marks
// nulls.
func newFixedArray[T any](mem memory.Allocator, dt arrow.DataType, vals []T, valid []bool) arrow.Array {
	var z T
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(len(vals) * goSizeOf(z))
	copy(buf.Bytes(), bytesOf(vals))
	bitmap, nulls := validityBuffer(mem, valid)
	return arrayOfBuffers(dt, len(vals), []*memory.Buffer{bitmap, buf}, nulls)
}

// newBoolArray builds a boolean array.
func newBoolArray(mem memory.Allocator, vals []bool, valid []bool) arrow.Array {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(len(vals)))))
	bm := buf.Bytes()
	clear(bm)
	for i, v := range vals {
		if v {
			bitutil.SetBit(bm, i)
		}
	}
	bitmap, nulls := validityBuffer(mem, valid)
	return arrayOfBuffers(arrow.FixedWidthTypes.Boolean, len(vals), []*memory.Buffer{bitmap, buf}, nulls)
}

// newVarBinaryArray builds a string or binary array (offset width O) whose
// element i is arena[offs[i]:offs[i+1]].
func newVarBinaryArray[O int32 | int64](mem memory.Allocator, dt arrow.DataType, offs []int, arena []byte, valid []bool) arrow.Array {
	n := len(offs) - 1
	base := offs[0]
	if var32 := goSizeOf(O(0)) == 4; var32 && offs[n]-base > math.MaxInt32 {
		panic(fmt.Sprintf("kernels: %d bytes of %s values exceed 32-bit offsets", offs[n]-base, dt))
	}
	offBuf := memory.NewResizableBuffer(mem)
	offBuf.Resize((n + 1) * goSizeOf(O(0)))
	out := arrow.GetData[O](offBuf.Bytes())
	for i, o := range offs {
		out[i] = O(o - base)
	}
	dataBuf := memory.NewResizableBuffer(mem)
	dataBuf.Resize(offs[n] - base)
	copy(dataBuf.Bytes(), arena[base:offs[n]])
	bitmap, nulls := validityBuffer(mem, valid)
	return arrayOfBuffers(dt, n, []*memory.Buffer{bitmap, offBuf, dataBuf}, nulls)
}

// newFixedBytesArray builds a fixed-size binary or decimal array from the
// concatenated bytes of its values.
func newFixedBytesArray(mem memory.Allocator, dt arrow.DataType, data []byte, valid []bool) arrow.Array {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(len(data))
	copy(buf.Bytes(), data)
	bitmap, nulls := validityBuffer(mem, valid)
	return arrayOfBuffers(dt, len(valid), []*memory.Buffer{bitmap, buf}, nulls)
}

// newInt64sAsArray builds an array of the integer or temporal type dt from
// int64 values, narrowing them to dt's width.
func newInt64sAsArray(mem memory.Allocator, dt arrow.DataType, vals []int64, valid []bool) arrow.Array {
	switch dt.(arrow.FixedWidthDataType).BitWidth() {
	case 8:
		return newFixedArray(mem, dt, narrowInts[int8](vals), valid)
	case 16:
		return newFixedArray(mem, dt, narrowInts[int16](vals), valid)
	case 32:
		return newFixedArray(mem, dt, narrowInts[int32](vals), valid)
	}
	return newFixedArray(mem, dt, vals, valid)
}

func narrowInts[T integer](vals []int64) []T {
	out := make([]T, len(vals))
	for i, v := range vals {
		out[i] = T(v)
	}
	return out
}
