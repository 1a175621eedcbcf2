package format

import (
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
)

// Typed views of Arrow arrays for the encoders: slices over the arrays'
// buffers, with the array's offset applied, so the per-row work is an
// index and no interface call.

// nullMask tells which rows of an array are null.
type nullMask struct {
	bits []byte // nil when the array has no null
	off  int
}

func maskOf(arr arrow.Array) nullMask {
	if arr.NullN() == 0 {
		return nullMask{}
	}
	return nullMask{bits: arr.NullBitmapBytes(), off: arr.Data().Offset()}
}

func (m nullMask) isNull(i int) bool {
	if m.bits == nil {
		return false
	}
	j := m.off + i
	return m.bits[j>>3]&(1<<(j&7)) == 0
}

// fixedValues returns the values of a fixed-width array.
func fixedValues[T fixedWidth](arr arrow.Array) []T {
	d := arr.Data()
	buf := d.Buffers()[1]
	if buf == nil || d.Len() == 0 {
		return nil
	}
	var zero T
	all := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(buf.Bytes()))), buf.Len()/int(unsafe.Sizeof(zero)))
	return all[d.Offset() : d.Offset()+d.Len()]
}

// offsetsOf returns the len+1 offsets of a list or variable-width array.
func offsetsOf[O int32 | int64](arr arrow.Array) []O {
	d := arr.Data()
	buf := d.Buffers()[1]
	if buf == nil || buf.Len() == 0 {
		return make([]O, d.Len()+1)
	}
	var zero O
	all := unsafe.Slice((*O)(unsafe.Pointer(unsafe.SliceData(buf.Bytes()))), buf.Len()/int(unsafe.Sizeof(zero)))
	return all[d.Offset() : d.Offset()+d.Len()+1]
}

// varValues is a string or binary array's values.
type varValues[O int32 | int64] struct {
	offsets []O
	data    []byte
}

func varOf[O int32 | int64](arr arrow.Array) varValues[O] {
	v := varValues[O]{offsets: offsetsOf[O](arr)}
	if b := arr.Data().Buffers()[2]; b != nil {
		v.data = b.Bytes()
	}
	return v
}

func (v varValues[O]) at(i int) []byte { return v.data[v.offsets[i]:v.offsets[i+1]] }

// fixedBinaryValues returns a fixed-size binary array's bytes; value i is
// b[i*width:(i+1)*width].
func fixedBinaryValues(arr arrow.Array) []byte {
	d := arr.Data()
	w := d.DataType().(*arrow.FixedSizeBinaryType).ByteWidth
	buf := d.Buffers()[1]
	if buf == nil {
		return nil
	}
	return buf.Bytes()[d.Offset()*w : (d.Offset()+d.Len())*w]
}

// checkSchema fails unless rec has the columns (by type) of schema.
func checkSchema(format string, schema *arrow.Schema, rec arrow.RecordBatch) error {
	got := rec.Schema()
	if got.NumFields() != schema.NumFields() {
		return fmt.Errorf("%s: record has %d columns, the encoder's schema %d", format, got.NumFields(), schema.NumFields())
	}
	for i, f := range schema.Fields() {
		if !arrow.TypeEqual(f.Type, got.Field(i).Type) {
			return fmt.Errorf("%s: column %s is %s, the encoder's schema says %s", format, f.Name, got.Field(i).Type, f.Type)
		}
	}
	return nil
}
