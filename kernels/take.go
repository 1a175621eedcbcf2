package kernels

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Take gathers the rows of arr at the given indices into a new array
// allocated from mem: out[k] = arr[idx[k]]. Indices need not be increasing
// and may repeat; each must be in [0, arr.Len()).
//
// Supported types: every fixed-width type (integers, floats, temporal,
// decimals, fixed-size binary), booleans, strings and binaries (also large),
// and null.
func Take(mem memory.Allocator, arr arrow.Array, idx []int32) (arrow.Array, error) {
	data, err := takeData(mem, arr.Data(), idx)
	if err != nil {
		return nil, err
	}
	defer data.Release()
	return array.MakeFromData(data), nil
}

// TakeRecord gathers the rows of rec at the given indices into a new record
// batch with the same schema.
func TakeRecord(mem memory.Allocator, rec arrow.RecordBatch, idx []int32) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i := range cols {
		c, err := Take(mem, rec.Column(i), idx)
		if err != nil {
			return nil, fmt.Errorf("take: column %q: %w", rec.Schema().Field(i).Name, err)
		}
		cols[i] = c
	}
	return array.NewRecordBatch(rec.Schema(), cols, int64(len(idx))), nil
}

func takeData(mem memory.Allocator, in arrow.ArrayData, idx []int32) (arrow.ArrayData, error) {
	n := len(idx)
	dt := in.DataType()
	if dt.ID() == arrow.NULL {
		return array.NewData(dt, n, []*memory.Buffer{nil}, nil, n, 0), nil
	}
	validity, nulls := takeValidity(mem, in, idx)
	switch {
	case dt.ID() == arrow.BOOL:
		bits := memory.NewResizableBuffer(mem)
		bits.Resize(int(bitutil.BytesForBits(int64(n))))
		src, dst, off := in.Buffers()[1].Bytes(), bits.Bytes(), in.Offset()
		clear(dst)
		for k, i := range idx {
			if bitutil.BitIsSet(src, off+int(i)) {
				bitutil.SetBit(dst, k)
			}
		}
		return newData(dt, n, []*memory.Buffer{validity, bits}, nulls), nil
	case dt.ID() == arrow.STRING || dt.ID() == arrow.BINARY:
		offs, vals := takeVarBinary(mem, arrow.GetOffsets[int32](in, 1), bufferBytes(in, 2), idx)
		return newData(dt, n, []*memory.Buffer{validity, offs, vals}, nulls), nil
	case dt.ID() == arrow.LARGE_STRING || dt.ID() == arrow.LARGE_BINARY:
		offs, vals := takeVarBinary(mem, arrow.GetOffsets[int64](in, 1), bufferBytes(in, 2), idx)
		return newData(dt, n, []*memory.Buffer{validity, offs, vals}, nulls), nil
	}
	fw, ok := dt.(arrow.FixedWidthDataType)
	if !ok || fw.BitWidth()%8 != 0 {
		if validity != nil {
			validity.Release()
		}
		return nil, fmt.Errorf("take: unsupported type %s", dt)
	}
	width := fw.BitWidth() / 8
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(n * width)
	src := in.Buffers()[1].Bytes()[in.Offset()*width:]
	dst := buf.Bytes()
	switch width {
	case 1:
		for k, i := range idx {
			dst[k] = src[i]
		}
	case 2:
		takeFixed(arrow.GetData[uint16](dst), arrow.GetData[uint16](src[:len(src)&^1]), idx)
	case 4:
		takeFixed(arrow.GetData[uint32](dst), arrow.GetData[uint32](src[:len(src)&^3]), idx)
	case 8:
		takeFixed(arrow.GetData[uint64](dst), arrow.GetData[uint64](src[:len(src)&^7]), idx)
	default:
		for k, i := range idx {
			copy(dst[k*width:(k+1)*width], src[int(i)*width:])
		}
	}
	return newData(dt, n, []*memory.Buffer{validity, buf}, nulls), nil
}

func newData(dt arrow.DataType, n int, bufs []*memory.Buffer, nulls int) arrow.ArrayData {
	d := array.NewData(dt, n, bufs, nil, nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release() // NewData retained its own reference
		}
	}
	return d
}

func takeFixed[T uint16 | uint32 | uint64](dst, src []T, idx []int32) {
	dst = dst[:len(idx)]
	for k, i := range idx {
		dst[k] = src[i]
	}
}

// takeValidity returns the gathered validity bitmap and null count, or a nil
// bitmap when the input has no nulls.
func takeValidity(mem memory.Allocator, in arrow.ArrayData, idx []int32) (*memory.Buffer, int) {
	if in.NullN() == 0 || in.Buffers()[0] == nil {
		return nil, 0
	}
	src, off := in.Buffers()[0].Bytes(), in.Offset()
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(len(idx)))))
	dst := buf.Bytes()
	clear(dst)
	nulls := 0
	for k, i := range idx {
		if bitutil.BitIsSet(src, off+int(i)) {
			bitutil.SetBit(dst, k)
		} else {
			nulls++
		}
	}
	return buf, nulls
}

func takeVarBinary[O int32 | int64](mem memory.Allocator, offsets []O, values []byte, idx []int32) (*memory.Buffer, *memory.Buffer) {
	var total int
	for _, i := range idx {
		total += int(offsets[i+1] - offsets[i])
	}
	offBuf := memory.NewResizableBuffer(mem)
	offBuf.Resize((len(idx) + 1) * arrow.GetDataType[O]().(arrow.FixedWidthDataType).BitWidth() / 8)
	outOffs := arrow.GetData[O](offBuf.Bytes())[:len(idx)+1]
	valBuf := memory.NewResizableBuffer(mem)
	valBuf.Resize(total)
	outVals := valBuf.Bytes()
	var pos O
	for k, i := range idx {
		outOffs[k] = pos
		pos += O(copy(outVals[pos:], values[offsets[i]:offsets[i+1]]))
	}
	outOffs[len(idx)] = pos
	return offBuf, valBuf
}
