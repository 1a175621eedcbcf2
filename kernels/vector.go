package kernels

import (
	"fmt"
	"math"
	"math/bits"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// physKind is how a vector's values are laid out in memory. Every Arrow
// type an expression accepts maps onto one of these; the logical type
// (timestamp unit, date, duration, ...) travels beside it in vec.typ.
type physKind uint8

const (
	kindBool    physKind = iota // vec.b
	kindInt32                   // vec.i32: int8/16/32, uint8/16, date32, time32
	kindInt64                   // vec.i64: int64, uint32, uint64 (checked), timestamps, durations, date64, time64
	kindFloat64                 // vec.f64: float32, float64
	kindBytes                   // vec.data with vec.so/vec.eo: string and binary (also large)
)

// vec is the evaluator's column: full batch length, valid only at the rows
// of the selection it was evaluated for (positions outside the selection
// hold garbage, including in nulls). A vector either views an input
// column (zero copy where the layout allows) or is a node's scratch space,
// reused from batch to batch.
type vec struct {
	typ  arrow.DataType
	kind physKind

	// nulls marks null rows (true = null); nil when no selected row is null.
	nulls []bool

	b   []bool
	i32 []int32
	i64 []int64
	f64 []float64

	// Bytes values: row r is data[so[r]:eo[r]]. Viewing an Arrow string
	// column, so and eo are its offsets shifted by one, without a copy.
	data   []byte
	so, eo []int32
}

// kindOf maps an Arrow type to its physical kind, or reports that
// expressions do not support it.
func kindOf(dt arrow.DataType) (physKind, bool) {
	switch dt.ID() {
	case arrow.BOOL:
		return kindBool, true
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.UINT8, arrow.UINT16, arrow.DATE32, arrow.TIME32:
		return kindInt32, true
	case arrow.INT64, arrow.UINT32, arrow.UINT64, arrow.TIMESTAMP, arrow.DURATION, arrow.DATE64, arrow.TIME64:
		return kindInt64, true
	case arrow.FLOAT32, arrow.FLOAT64:
		return kindFloat64, true
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return kindBytes, true
	}
	return 0, false
}

// evalType is the type a value of dt has inside the evaluator: narrow
// integers widen to int32 or int64, float32 to float64, large strings and
// binaries to their 32-bit-offset forms. Projections of a bare column keep
// the column's own type.
func evalType(dt arrow.DataType) arrow.DataType {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.UINT8, arrow.UINT16:
		return arrow.PrimitiveTypes.Int32
	case arrow.UINT32, arrow.UINT64:
		return arrow.PrimitiveTypes.Int64
	case arrow.FLOAT32:
		return arrow.PrimitiveTypes.Float64
	case arrow.LARGE_STRING:
		return arrow.BinaryTypes.String
	case arrow.LARGE_BINARY:
		return arrow.BinaryTypes.Binary
	}
	return dt
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

// setNulls makes v.nulls a length-n scratch slice (reusing buf) and returns it.
func (v *vec) setNulls(buf *[]bool, n int) []bool {
	*buf = grow(*buf, n)
	v.nulls = *buf
	return v.nulls
}

// growValues makes v's value slices of its kind n long (scratch: contents
// unspecified; bytes vectors get start and end offsets, not data).
func (v *vec) growValues(n int) {
	switch v.kind {
	case kindBool:
		v.b = grow(v.b, n)
	case kindInt32:
		v.i32 = grow(v.i32, n)
	case kindInt64:
		v.i64 = grow(v.i64, n)
	case kindFloat64:
		v.f64 = grow(v.f64, n)
	case kindBytes:
		v.so, v.eo = grow(v.so, n), grow(v.eo, n)
	}
}

// bytesAt returns the value of a bytes vector at row r.
func (v *vec) bytesAt(r int32) []byte { return v.data[v.so[r]:v.eo[r]] }

// isNull reports whether row r is null.
func (v *vec) isNull(r int32) bool { return v.nulls != nil && v.nulls[r] }

// forSel calls fn for every selected row (every row below n when sel is nil).
// It is for cold paths; hot kernels loop themselves.
func forSel(sel []int32, n int, fn func(r int32)) {
	if sel == nil {
		for r := 0; r < n; r++ {
			fn(int32(r))
		}
		return
	}
	for _, r := range sel {
		fn(r)
	}
}

// scratch is a node's reusable output storage.
type scratch struct {
	out   vec
	nulls []bool
}

// loadColumn makes a vector of col for the selected rows: a view where the
// layout allows (int32, int64, float64, 32-bit-offset strings), otherwise
// a widened copy into s. Null flags are decoded from the validity bitmap
// for the selected rows only.
func loadColumn(col arrow.Array, sel []int32, s *scratch) (*vec, error) {
	n := col.Len()
	v := &s.out
	v.typ = evalType(col.DataType())
	kind, ok := kindOf(col.DataType())
	if !ok {
		return nil, fmt.Errorf("unsupported column type %s", col.DataType())
	}
	v.kind = kind
	v.nulls = nil
	if col.NullN() > 0 {
		nulls := v.setNulls(&s.nulls, n)
		bitsToBools(col.NullBitmapBytes(), col.Data().Offset(), sel, nulls, true)
	}
	data := col.Data()
	switch c := col.(type) {
	case *array.Boolean:
		v.b = grow(v.b, n)
		bitsToBools(data.Buffers()[1].Bytes(), data.Offset(), sel, v.b, false)
	case *array.Int32:
		v.i32 = c.Int32Values()
	case *array.Date32:
		v.i32 = arrow.Int32Traits.CastFromBytes(data.Buffers()[1].Bytes())[data.Offset() : data.Offset()+n]
	case *array.Time32:
		v.i32 = arrow.Int32Traits.CastFromBytes(data.Buffers()[1].Bytes())[data.Offset() : data.Offset()+n]
	case *array.Int8:
		widen(&v.i32, c.Int8Values(), sel, n)
	case *array.Int16:
		widen(&v.i32, c.Int16Values(), sel, n)
	case *array.Uint8:
		widen(&v.i32, c.Uint8Values(), sel, n)
	case *array.Uint16:
		widen(&v.i32, c.Uint16Values(), sel, n)
	case *array.Int64:
		v.i64 = c.Int64Values()
	case *array.Timestamp, *array.Duration, *array.Date64, *array.Time64:
		v.i64 = arrow.Int64Traits.CastFromBytes(data.Buffers()[1].Bytes())[data.Offset() : data.Offset()+n]
	case *array.Uint32:
		widen(&v.i64, c.Uint32Values(), sel, n)
	case *array.Uint64:
		vals := c.Uint64Values()
		v.i64 = grow(v.i64, n)
		out := v.i64
		var bad int32 = -1
		forSel(sel, n, func(r int32) {
			if vals[r] > math.MaxInt64 && !v.isNull(r) && bad < 0 {
				bad = r
			}
			out[r] = int64(vals[r])
		})
		if bad >= 0 {
			return nil, fmt.Errorf("row %d: uint64 value %d does not fit in int64", bad, vals[bad])
		}
	case *array.Float64:
		v.f64 = c.Float64Values()
	case *array.Float32:
		widen(&v.f64, c.Float32Values(), sel, n)
	case *array.String:
		offs := c.ValueOffsets()
		v.so, v.eo = offs[:n], offs[1:n+1]
		v.data = bufferBytes(data, 2)
	case *array.Binary:
		offs := c.ValueOffsets()
		v.so, v.eo = offs[:n], offs[1:n+1]
		v.data = bufferBytes(data, 2)
	case *array.LargeString:
		return loadLarge(v, c.ValueOffsets(), bufferBytes(data, 2), sel, n)
	case *array.LargeBinary:
		return loadLarge(v, c.ValueOffsets(), bufferBytes(data, 2), sel, n)
	default:
		return nil, fmt.Errorf("unsupported column type %s", col.DataType())
	}
	return v, nil
}

// bitTable[b] holds the 8 bits of byte b as bools, least significant
// first; notBitTable the negations (validity bits to null flags).
var bitTable, notBitTable = func() (t, nt [256][8]bool) {
	for b := range 256 {
		for j := range 8 {
			t[b][j] = b&(1<<j) != 0
			nt[b][j] = !t[b][j]
		}
	}
	return
}()

// bitsToBools decodes the bits of an Arrow bitmap starting at bit offset
// off into out (negated when not is set), for the selected rows; with
// sel nil, for all len(out) rows, a byte (8 rows) at a time when the
// offset is byte-aligned.
func bitsToBools(bits []byte, off int, sel []int32, out []bool, not bool) {
	if sel != nil {
		for _, r := range sel {
			i := off + int(r)
			out[r] = (bits[i>>3]&(1<<(i&7)) != 0) != not
		}
		return
	}
	n := len(out)
	r := 0
	if off&7 == 0 {
		table := &bitTable
		if not {
			table = &notBitTable
		}
		src := bits[off>>3:]
		for ; r+8 <= n; r += 8 {
			*(*[8]bool)(out[r : r+8]) = table[src[r>>3]]
		}
	}
	for ; r < n; r++ {
		i := off + r
		out[r] = (bits[i>>3]&(1<<(i&7)) != 0) != not
	}
}

// boolsToBits packs the selected flags of src (negated when not is set)
// densely into the bitmap dst and returns how many packed bits are clear.
func boolsToBits(dst []byte, src []bool, sel []int32, n int, not bool) int {
	clear(dst)
	flip := b2u8(not)
	zeros := 0
	if sel == nil {
		src = src[:n]
		k := 0
		for ; k+8 <= n; k += 8 {
			var x uint8
			for j := range 8 {
				x |= (b2u8(src[k+j]) ^ flip) << j
			}
			dst[k>>3] = x
			zeros += 8 - bits.OnesCount8(x)
		}
		for ; k < n; k++ {
			bit := b2u8(src[k]) ^ flip
			dst[k>>3] |= bit << (k & 7)
			zeros += int(1 - bit)
		}
		return zeros
	}
	for k, r := range sel {
		bit := b2u8(src[r]) ^ flip
		dst[k>>3] |= bit << (k & 7)
		zeros += int(1 - bit)
	}
	return zeros
}

func widen[D int32 | int64 | float64, S int8 | int16 | int32 | uint8 | uint16 | uint32 | float32](dst *[]D, src []S, sel []int32, n int) {
	*dst = grow(*dst, n)
	out := *dst
	if sel == nil {
		for i, x := range src[:n] {
			out[i] = D(x)
		}
		return
	}
	for _, r := range sel {
		out[r] = D(src[r])
	}
}

// loadLarge views a large string or binary column through 32-bit offsets
// relative to the first selected value; values beyond 2 GiB are refused.
func loadLarge(v *vec, offs []int64, data []byte, sel []int32, n int) (*vec, error) {
	if n == 0 {
		v.so, v.eo = v.so[:0], v.eo[:0]
		return v, nil
	}
	base, end := offs[0], offs[n]
	if end-base > math.MaxInt32 {
		return nil, fmt.Errorf("large string column holds %d bytes in one batch; at most 2 GiB are supported", end-base)
	}
	v.data = data[base:end]
	v.so, v.eo = grow(v.so, n), grow(v.eo, n)
	forSel(sel, n, func(r int32) {
		v.so[r], v.eo[r] = int32(offs[r]-base), int32(offs[r+1]-base)
	})
	return v, nil
}

// toArray materialises the selected rows of v as a dense Arrow array of
// type dt (v.typ, or a narrower storage type for a bare column) allocated
// from mem.
func (v *vec) toArray(mem memory.Allocator, sel []int32, n int) arrow.Array {
	rows := n
	if sel != nil {
		rows = len(sel)
	}
	var validity *memory.Buffer
	nullCount := 0
	if v.nulls != nil {
		validity = memory.NewResizableBuffer(mem)
		validity.Resize(int(bitutil.BytesForBits(int64(rows))))
		nullCount = boolsToBits(validity.Bytes(), v.nulls, sel, n, true)
		if nullCount == 0 {
			validity.Release()
			validity = nil
		}
	}
	var bufs []*memory.Buffer
	switch v.kind {
	case kindBool:
		vals := memory.NewResizableBuffer(mem)
		vals.Resize(int(bitutil.BytesForBits(int64(rows))))
		boolsToBits(vals.Bytes(), v.b, sel, n, false)
		bufs = []*memory.Buffer{validity, vals}
	case kindInt32:
		bufs = []*memory.Buffer{validity, gatherFixed(mem, v.i32, sel, n)}
	case kindInt64:
		bufs = []*memory.Buffer{validity, gatherFixed(mem, v.i64, sel, n)}
	case kindFloat64:
		bufs = []*memory.Buffer{validity, gatherFixed(mem, v.f64, sel, n)}
	case kindBytes:
		total := 0
		forSel(sel, n, func(r int32) { total += int(v.eo[r] - v.so[r]) })
		offBuf := memory.NewResizableBuffer(mem)
		offBuf.Resize((rows + 1) * 4)
		offs := arrow.Int32Traits.CastFromBytes(offBuf.Bytes())
		valBuf := memory.NewResizableBuffer(mem)
		valBuf.Resize(total)
		vals := valBuf.Bytes()
		pos, k := 0, 0
		offs[0] = 0
		forSel(sel, n, func(r int32) {
			pos += copy(vals[pos:], v.data[v.so[r]:v.eo[r]])
			k++
			offs[k] = int32(pos)
		})
		bufs = []*memory.Buffer{validity, offBuf, valBuf}
	}
	data := array.NewData(v.typ, rows, bufs, nil, nullCount, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	defer data.Release()
	return array.MakeFromData(data)
}

func gatherFixed[T int32 | int64 | float64](mem memory.Allocator, src []T, sel []int32, n int) *memory.Buffer {
	rows := n
	if sel != nil {
		rows = len(sel)
	}
	var zero T
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(rows * int(unsafe.Sizeof(zero)))
	dst := arrow.GetData[T](buf.Bytes())
	if sel == nil {
		copy(dst, src[:n])
	} else {
		for k, r := range sel {
			dst[k] = src[r]
		}
	}
	return buf
}
