package files

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A converter turns a column of a Parquet file's batch, of the file's
// Arrow type, into the column's declared type. It is compiled once per
// file and column, so the per-batch call does no type dispatch. The
// result is a new reference; the input is not consumed.
//
// What a file's type can be read as (anything else is refused when the
// file is opened, naming the column and both types):
//
//   - the same type; nullability and field metadata of nested fields
//     aside (the declared ones win);
//   - a wider number that holds every value exactly: int8 -> int16 ->
//     int32 -> int64, uint8 -> uint16 -> uint32 -> uint64, unsigned to a
//     wider signed type, integers of up to 16 bits to float32, of up to
//     32 bits to float64, float32 -> float64;
//   - string <-> large_string, binary <-> large_binary, and string or
//     large_string as binary or large_binary (large to small fails if a
//     batch holds 2 GiB or more);
//   - a timestamp of the same or a coarser unit (values out of range of
//     the finer unit fail); time zones are labels of the same instants and
//     may differ, as the SQL layer treats them;
//   - decimal128 of the same scale and a precision at most the declared;
//   - struct as struct: declared fields by name (case-sensitive), each
//     converted, file fields not declared left out; list, large_list,
//     fixed_size_list (same size) and map as the same kind with converted
//     elements.
type converter func(mem memory.Allocator, d arrow.ArrayData) (arrow.ArrayData, error)

// typeError says that a file's column cannot be read as declared.
type typeError struct {
	col      string
	from, to arrow.DataType
}

func (e *typeError) Error() string {
	return fmt.Sprintf("column %s: the file's type %s cannot be read as the declared %s "+
		"(declare the file's type or a wider one that holds every value; docs/files.md lists them)", e.col, e.from, e.to)
}

// compileConverter returns the converter of a column named col from the
// file's type to the declared one.
func compileConverter(col string, from, to arrow.DataType) (converter, error) {
	if arrow.TypeEqual(from, to) {
		return identity, nil
	}
	refuse := &typeError{col: col, from: from, to: to}
	switch t := to.(type) {
	case *arrow.StructType:
		f, ok := from.(*arrow.StructType)
		if !ok {
			return nil, refuse
		}
		return compileStruct(col, f, t, false)
	case *arrow.MapType:
		f, ok := from.(*arrow.MapType)
		if !ok {
			return nil, refuse
		}
		entries, err := compileStruct(col, f.ValueType(), t.ValueType(), true)
		if err != nil {
			return nil, err
		}
		return nestedConverter(to, entries), nil
	case *arrow.ListType:
		f, ok := from.(*arrow.ListType)
		if !ok || f.ID() != arrow.LIST {
			return nil, refuse
		}
		elem, err := compileConverter(col+"[]", f.Elem(), t.Elem())
		if err != nil {
			return nil, err
		}
		return nestedConverter(to, elem), nil
	case *arrow.LargeListType:
		f, ok := from.(*arrow.LargeListType)
		if !ok {
			return nil, refuse
		}
		elem, err := compileConverter(col+"[]", f.Elem(), t.Elem())
		if err != nil {
			return nil, err
		}
		return nestedConverter(to, elem), nil
	case *arrow.FixedSizeListType:
		f, ok := from.(*arrow.FixedSizeListType)
		if !ok || f.Len() != t.Len() {
			return nil, refuse
		}
		elem, err := compileConverter(col+"[]", f.Elem(), t.Elem())
		if err != nil {
			return nil, err
		}
		return nestedConverter(to, elem), nil
	case *arrow.TimestampType:
		f, ok := from.(*arrow.TimestampType)
		if !ok {
			return nil, refuse
		}
		fm, tm := int64(f.Unit.Multiplier()), int64(t.Unit.Multiplier())
		if fm < tm {
			return nil, refuse // a finer unit would lose precision
		}
		if fm == tm {
			return relabel(to), nil
		}
		return scaleTimestamps(col, to, fm/tm), nil
	case *arrow.Decimal128Type:
		f, ok := from.(*arrow.Decimal128Type)
		if !ok || f.Scale != t.Scale || f.Precision > t.Precision {
			return nil, refuse
		}
		return relabel(to), nil
	}
	switch fid, tid := from.ID(), to.ID(); {
	case slices.Contains(numericWidenings[fid], tid):
		return widenNumbers(from, to), nil
	case isOffsetsType(fid) && isOffsetsType(tid) && (isStringType(fid) || !isStringType(tid)):
		// Strings read as strings or bytes; bytes only as bytes (they
		// need not be UTF-8).
		switch {
		case is64(fid) == is64(tid):
			return relabel(to), nil
		case is64(tid):
			return widenOffsets(to), nil
		default:
			return narrowOffsets(col, to), nil
		}
	}
	return nil, refuse
}

// numericWidenings lists, per file type, the types that hold each of its
// values exactly.
var numericWidenings = map[arrow.Type][]arrow.Type{
	arrow.INT8:    {arrow.INT16, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64},
	arrow.INT16:   {arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64},
	arrow.INT32:   {arrow.INT64, arrow.FLOAT64},
	arrow.UINT8:   {arrow.UINT16, arrow.UINT32, arrow.UINT64, arrow.INT16, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64},
	arrow.UINT16:  {arrow.UINT32, arrow.UINT64, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64},
	arrow.UINT32:  {arrow.UINT64, arrow.INT64, arrow.FLOAT64},
	arrow.FLOAT32: {arrow.FLOAT64},
}

func isOffsetsType(id arrow.Type) bool {
	return id == arrow.STRING || id == arrow.LARGE_STRING || id == arrow.BINARY || id == arrow.LARGE_BINARY
}

func isStringType(id arrow.Type) bool { return id == arrow.STRING || id == arrow.LARGE_STRING }

func is64(id arrow.Type) bool { return id == arrow.LARGE_STRING || id == arrow.LARGE_BINARY }

// identity returns the column as it is.
func identity(_ memory.Allocator, d arrow.ArrayData) (arrow.ArrayData, error) {
	d.Retain()
	return d, nil
}

// relabel gives the column's buffers the declared type, of the same
// physical layout.
func relabel(to arrow.DataType) converter {
	return func(_ memory.Allocator, d arrow.ArrayData) (arrow.ArrayData, error) {
		return array.NewData(to, d.Len(), d.Buffers(), d.Children(), d.NullN(), d.Offset()), nil
	}
}

// compileStruct converts a struct's fields: by name, or, for a map's
// entries, by position (key, value), whatever the file calls them.
func compileStruct(col string, from, to *arrow.StructType, positional bool) (converter, error) {
	src := make([]int, to.NumFields())
	convs := make([]converter, to.NumFields())
	for i, tf := range to.Fields() {
		j := i
		name := col + "." + tf.Name
		if positional {
			name = col + []string{"{key}", "{value}"}[i]
		} else {
			idx := from.FieldIndices(tf.Name)
			switch len(idx) {
			case 0:
				return nil, fmt.Errorf("column %s: the file has no field %s (it has %s)", col, tf.Name, fieldList(from.Fields()))
			case 1:
				j = idx[0]
			default:
				return nil, fmt.Errorf("column %s: the file has %d fields named %s", col, len(idx), tf.Name)
			}
		}
		c, err := compileConverter(name, from.Field(j).Type, tf.Type)
		if err != nil {
			return nil, err
		}
		src[i], convs[i] = j, c
	}
	return func(mem memory.Allocator, d arrow.ArrayData) (arrow.ArrayData, error) {
		children := make([]arrow.ArrayData, len(convs))
		defer releaseAll(children)
		for i, c := range convs {
			var err error
			if children[i], err = c(mem, d.Children()[src[i]]); err != nil {
				return nil, err
			}
		}
		return array.NewData(to, d.Len(), d.Buffers()[:1], children, d.NullN(), d.Offset()), nil
	}, nil
}

// nestedConverter converts the one child of a list-like column.
func nestedConverter(to arrow.DataType, elem converter) converter {
	return func(mem memory.Allocator, d arrow.ArrayData) (arrow.ArrayData, error) {
		child, err := elem(mem, d.Children()[0])
		if err != nil {
			return nil, err
		}
		defer child.Release()
		return array.NewData(to, d.Len(), d.Buffers(), []arrow.ArrayData{child}, d.NullN(), d.Offset()), nil
	}
}

func releaseAll(ds []arrow.ArrayData) {
	for _, d := range ds {
		if d != nil {
			d.Release()
		}
	}
}

func fieldList(fs []arrow.Field) string {
	s := ""
	for i, f := range fs {
		if i > 0 {
			s += ", "
		}
		s += f.Name
	}
	return s
}

// validity returns d's validity bitmap starting at bit 0 (nil when d has
// no nulls); the caller releases it.
func validity(mem memory.Allocator, d arrow.ArrayData) *memory.Buffer {
	b := d.Buffers()[0]
	if b == nil || d.NullN() == 0 {
		return nil
	}
	if d.Offset() == 0 {
		b.Retain()
		return b
	}
	out := memory.NewResizableBuffer(mem)
	out.Resize(int(bitutil.BytesForBits(int64(d.Len()))))
	bitutil.CopyBitmap(b.Bytes(), d.Offset(), d.Len(), out.Bytes(), 0)
	return out
}

// valid reports whether row i of d (from its offset) is not null.
func valid(d arrow.ArrayData, i int) bool {
	b := d.Buffers()[0]
	return b == nil || bitutil.BitIsSet(b.Bytes(), d.Offset()+i)
}

// fixedOutput assembles a fixed-width column from a values buffer and d's
// validity, and releases the buffer.
func fixedOutput(mem memory.Allocator, to arrow.DataType, d arrow.ArrayData, vals *memory.Buffer) arrow.ArrayData {
	v := validity(mem, d)
	out := array.NewData(to, d.Len(), []*memory.Buffer{v, vals}, nil, d.NullN(), 0)
	if v != nil {
		v.Release()
	}
	vals.Release()
	return out
}

type number interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// widen converts every value of type F to T; numericWidenings makes sure
// it is exact.
func widen[F, T number](to arrow.DataType) converter {
	return func(mem memory.Allocator, d arrow.ArrayData) (arrow.ArrayData, error) {
		vals := memory.NewResizableBuffer(mem)
		var zero T
		vals.Resize(d.Len() * int(unsafe.Sizeof(zero)))
		if d.Len() > 0 {
			dst := arrow.GetData[T](vals.Bytes())
			for i, v := range arrow.GetValues[F](d, 1) {
				dst[i] = T(v)
			}
		}
		return fixedOutput(mem, to, d, vals), nil
	}
}

// widenNumbers dispatches widen on the two types.
func widenNumbers(from, to arrow.DataType) converter {
	switch from.ID() {
	case arrow.INT8:
		return widenFrom[int8](to)
	case arrow.INT16:
		return widenFrom[int16](to)
	case arrow.INT32:
		return widenFrom[int32](to)
	case arrow.UINT8:
		return widenFrom[uint8](to)
	case arrow.UINT16:
		return widenFrom[uint16](to)
	case arrow.UINT32:
		return widenFrom[uint32](to)
	case arrow.FLOAT32:
		return widenFrom[float32](to)
	}
	panic(fmt.Sprintf("BUG: files source: no widening from %s", from))
}

func widenFrom[F number](to arrow.DataType) converter {
	switch to.ID() {
	case arrow.INT16:
		return widen[F, int16](to)
	case arrow.INT32:
		return widen[F, int32](to)
	case arrow.INT64:
		return widen[F, int64](to)
	case arrow.UINT16:
		return widen[F, uint16](to)
	case arrow.UINT32:
		return widen[F, uint32](to)
	case arrow.UINT64:
		return widen[F, uint64](to)
	case arrow.FLOAT32:
		return widen[F, float32](to)
	case arrow.FLOAT64:
		return widen[F, float64](to)
	}
	panic(fmt.Sprintf("BUG: files source: no widening to %s", to))
}

// scaleTimestamps multiplies timestamps by factor (a coarser unit to a
// finer one), failing on a value the finer unit cannot hold.
func scaleTimestamps(col string, to arrow.DataType, factor int64) converter {
	hi, lo := math.MaxInt64/factor, math.MinInt64/factor
	return func(mem memory.Allocator, d arrow.ArrayData) (arrow.ArrayData, error) {
		vals := memory.NewResizableBuffer(mem)
		vals.Resize(d.Len() * 8)
		if d.Len() > 0 {
			dst := arrow.GetData[arrow.Timestamp](vals.Bytes())
			for i, v := range arrow.GetValues[arrow.Timestamp](d, 1) {
				x := int64(v)
				if x > hi || x < lo {
					if valid(d, i) {
						vals.Release()
						return nil, fmt.Errorf("column %s: timestamp %d (row %d of the batch) is out of the range of %s", col, x, i, to)
					}
					x = 0
				}
				dst[i] = arrow.Timestamp(x * factor)
			}
		}
		return fixedOutput(mem, to, d, vals), nil
	}
}

// widenOffsets turns 32-bit offsets into 64-bit ones, sharing the data.
func widenOffsets(to arrow.DataType) converter {
	return func(mem memory.Allocator, d arrow.ArrayData) (arrow.ArrayData, error) {
		offs := memory.NewResizableBuffer(mem)
		offs.Resize((d.Len() + 1) * 8)
		dst := arrow.GetData[int64](offs.Bytes())
		if d.Len() == 0 {
			dst[0] = 0
		} else {
			for i, o := range arrow.GetOffsets[int32](d, 1) {
				dst[i] = int64(o)
			}
		}
		return offsetsOutput(mem, to, d, offs), nil
	}
}

// narrowOffsets turns 64-bit offsets into 32-bit ones, failing when they
// do not fit.
func narrowOffsets(col string, to arrow.DataType) converter {
	return func(mem memory.Allocator, d arrow.ArrayData) (arrow.ArrayData, error) {
		offs := memory.NewResizableBuffer(mem)
		offs.Resize((d.Len() + 1) * 4)
		dst := arrow.GetData[int32](offs.Bytes())
		if d.Len() == 0 {
			dst[0] = 0
		} else {
			for i, o := range arrow.GetOffsets[int64](d, 1) {
				if o > math.MaxInt32 {
					offs.Release()
					return nil, fmt.Errorf("column %s: the batch holds more than 2 GiB of data, too much for %s", col, to)
				}
				dst[i] = int32(o)
			}
		}
		return offsetsOutput(mem, to, d, offs), nil
	}
}

func offsetsOutput(mem memory.Allocator, to arrow.DataType, d arrow.ArrayData, offs *memory.Buffer) arrow.ArrayData {
	v := validity(mem, d)
	out := array.NewData(to, d.Len(), []*memory.Buffer{v, offs, d.Buffers()[2]}, nil, d.NullN(), 0)
	if v != nil {
		v.Release()
	}
	offs.Release()
	return out
}
