package kernels

import (
	"fmt"
	"slices"

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
	if idx == nil {
		idx = []int32{} // no rows (for gatherData, nil means every row)
	}
	return gatherData(mem, in.DataType(), []arrow.ArrayData{in}, [][]int32{idx})
}

// Gather gathers rows of several arrays of one type into one new array,
// part after part: the rows idx[k] of parts[k] (every row of parts[k]
// when idx[k] is nil). It is Take and Concatenate in one pass, so each
// value is copied once. It supports the types Take supports.
func Gather(mem memory.Allocator, parts []arrow.Array, idx [][]int32) (arrow.Array, error) {
	if len(parts) == 0 || len(parts) != len(idx) {
		return nil, fmt.Errorf("gather: %d arrays and %d index lists; want as many, at least one", len(parts), len(idx))
	}
	dt := parts[0].DataType()
	ins := make([]arrow.ArrayData, len(parts))
	for k, a := range parts {
		if !arrow.TypeEqual(a.DataType(), dt) {
			return nil, fmt.Errorf("gather: array %d has type %s, array 0 %s", k, a.DataType(), dt)
		}
		ins[k] = a.Data()
	}
	data, err := gatherData(mem, dt, ins, idx)
	if err != nil {
		return nil, err
	}
	defer data.Release()
	return array.MakeFromData(data), nil
}

// GatherRecords gathers rows of several record batches of one schema into
// one, column by column as Gather does.
func GatherRecords(mem memory.Allocator, schema *arrow.Schema, recs []arrow.RecordBatch, idx [][]int32) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	parts := make([]arrow.Array, len(recs))
	for i := range cols {
		for k, r := range recs {
			if r.NumCols() != int64(len(cols)) {
				return nil, fmt.Errorf("gather: batch %d has %d columns, the schema %d", k, r.NumCols(), len(cols))
			}
			parts[k] = r.Column(i)
		}
		c, err := Gather(mem, parts, idx)
		if err != nil {
			return nil, fmt.Errorf("gather: column %q: %w", schema.Field(i).Name, err)
		}
		cols[i] = c
	}
	n := int64(0)
	if len(cols) > 0 {
		n = int64(cols[0].Len())
	} else {
		for k, r := range recs {
			if idx[k] == nil {
				n += r.NumRows()
			} else {
				n += int64(len(idx[k]))
			}
		}
	}
	return array.NewRecordBatch(schema, cols, n), nil
}

// gatherData gathers rows idxs[k] of ins[k] (all of them when nil), all
// of type dt, into one array.
func gatherData(mem memory.Allocator, dt arrow.DataType, ins []arrow.ArrayData, idxs [][]int32) (arrow.ArrayData, error) {
	var scratch []int32
	copied := false
	for k := range idxs {
		if idxs[k] != nil {
			continue
		}
		m := ins[k].Len()
		if len(scratch) < m {
			scratch = make([]int32, m)
			for i := range scratch {
				scratch[i] = int32(i)
			}
		}
		if !copied { // the caller's slice stays as it was
			idxs, copied = slices.Clone(idxs), true
		}
		idxs[k] = scratch[:m]
	}
	n := 0
	for _, idx := range idxs {
		n += len(idx)
	}
	if dt.ID() == arrow.NULL {
		return array.NewData(dt, n, []*memory.Buffer{nil}, nil, n, 0), nil
	}
	validity, nulls := gatherValidity(mem, ins, idxs, n)
	switch {
	case dt.ID() == arrow.BOOL:
		bits := memory.NewResizableBuffer(mem)
		bits.Resize(int(bitutil.BytesForBits(int64(n))))
		dst := bits.Bytes()
		clear(dst)
		k := 0
		for p, in := range ins {
			if len(idxs[p]) == 0 {
				continue
			}
			src, off := in.Buffers()[1].Bytes(), in.Offset()
			for _, i := range idxs[p] {
				if bitutil.BitIsSet(src, off+int(i)) {
					bitutil.SetBit(dst, k)
				}
				k++
			}
		}
		return newData(dt, n, []*memory.Buffer{validity, bits}, nulls), nil
	case dt.ID() == arrow.STRING || dt.ID() == arrow.BINARY:
		offs, vals := gatherVarBinary[int32](mem, ins, idxs, n)
		return newData(dt, n, []*memory.Buffer{validity, offs, vals}, nulls), nil
	case dt.ID() == arrow.LARGE_STRING || dt.ID() == arrow.LARGE_BINARY:
		offs, vals := gatherVarBinary[int64](mem, ins, idxs, n)
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
	out := buf.Bytes()
	for p, in := range ins {
		idx := idxs[p]
		if len(idx) == 0 {
			continue
		}
		src := in.Buffers()[1].Bytes()[in.Offset()*width:]
		dst := out[:len(idx)*width]
		out = out[len(idx)*width:]
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

// gatherValidity returns the gathered validity bitmap of n rows and its
// null count, or a nil bitmap when no input has nulls.
func gatherValidity(mem memory.Allocator, ins []arrow.ArrayData, idxs [][]int32, n int) (*memory.Buffer, int) {
	nullable := false
	for _, in := range ins {
		nullable = nullable || (in.NullN() != 0 && in.Buffers()[0] != nil) // NullN is negative when not yet counted
	}
	if !nullable {
		return nil, 0
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	dst := buf.Bytes()
	clear(dst)
	nulls, k := 0, 0
	for p, in := range ins {
		idx := idxs[p]
		if len(idx) == 0 {
			continue
		}
		if in.NullN() == 0 || in.Buffers()[0] == nil {
			bitutil.SetBitsTo(dst, int64(k), int64(len(idx)), true)
			k += len(idx)
			continue
		}
		src, off := in.Buffers()[0].Bytes(), in.Offset()
		for _, i := range idx {
			if bitutil.BitIsSet(src, off+int(i)) {
				bitutil.SetBit(dst, k)
			} else {
				nulls++
			}
			k++
		}
	}
	return buf, nulls
}

// gatherVarBinary gathers the offsets and values of n variable-length
// values.
func gatherVarBinary[O int32 | int64](mem memory.Allocator, ins []arrow.ArrayData, idxs [][]int32, n int) (*memory.Buffer, *memory.Buffer) {
	var total int
	for p, in := range ins {
		if len(idxs[p]) == 0 {
			continue
		}
		offsets := arrow.GetOffsets[O](in, 1)
		for _, i := range idxs[p] {
			total += int(offsets[i+1] - offsets[i])
		}
	}
	offBuf := memory.NewResizableBuffer(mem)
	offBuf.Resize((n + 1) * arrow.GetDataType[O]().(arrow.FixedWidthDataType).BitWidth() / 8)
	outOffs := arrow.GetData[O](offBuf.Bytes())[:n+1]
	valBuf := memory.NewResizableBuffer(mem)
	valBuf.Resize(total)
	outVals := valBuf.Bytes()
	var pos O
	k := 0
	for p, in := range ins {
		if len(idxs[p]) == 0 {
			continue
		}
		offsets, values := arrow.GetOffsets[O](in, 1), bufferBytes(in, 2)
		for _, i := range idxs[p] {
			outOffs[k] = pos
			pos += O(copy(outVals[pos:], values[offsets[i]:offsets[i+1]]))
			k++
		}
	}
	outOffs[n] = pos
	return offBuf, valBuf
}
