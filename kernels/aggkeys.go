package kernels

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// This file holds the columnar key storage of hash aggregation: one
// keyStore per key column of a general GroupTable (and of the (group,
// value) pairs of count(distinct)), holding one key per group in group-id
// order.

// keyStore keeps the keys of one key column, one per group, and compares
// input rows with them. It is bound to the current batch's input column
// once per batch, so its loops are specialised by type, not dispatched per
// row.
//
// Row arguments: rows[k] is the input row of batch position k; ks lists
// batch positions.
type keyStore interface {
	// bind points the store at the input column of the current batch.
	bind(col arrow.Array)
	// unbind drops the reference to the input column.
	unbind()
	// appendRows appends the keys of rows[k], k in ks, as the next groups.
	appendRows(rows []int32, ks []int32)
	// compare sets neq[j] when the key of rows[ks[j]] differs from the key
	// of group gids[ks[j]]; it never clears neq.
	compare(rows []int32, ks []int32, gids []uint32, neq []bool)
	// permuteTail reorders the groups from `from` on: the group at
	// from+j becomes the one that was at from+order[j].
	permuteTail(from int, order []int32)
	// array returns the keys of the first n groups as an Arrow array.
	array(mem memory.Allocator, n int) arrow.Array
	reset()
	sizeBytes() int64
}

func newKeyStore(dt arrow.DataType) keyStore {
	switch dt.ID() {
	case arrow.INT8:
		return &intStore[int8]{dt: dt}
	case arrow.INT16:
		return &intStore[int16]{dt: dt}
	case arrow.INT32, arrow.DATE32, arrow.TIME32:
		return &intStore[int32]{dt: dt}
	case arrow.INT64, arrow.DATE64, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		return &intStore[int64]{dt: dt}
	case arrow.UINT8:
		return &intStore[uint8]{dt: dt}
	case arrow.UINT16:
		return &intStore[uint16]{dt: dt}
	case arrow.UINT32:
		return &intStore[uint32]{dt: dt}
	case arrow.UINT64:
		return &intStore[uint64]{dt: dt}
	case arrow.FLOAT32:
		return &floatStore[float32]{dt: dt}
	case arrow.FLOAT64:
		return &floatStore[float64]{dt: dt}
	case arrow.BOOL:
		return &boolStore{}
	case arrow.STRING, arrow.BINARY:
		return &bytesStore[int32]{dt: dt}
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return &bytesStore[int64]{dt: dt}
	case arrow.FIXED_SIZE_BINARY, arrow.DECIMAL128, arrow.DECIMAL256:
		return &fixedBytesStore{dt: dt, width: dt.(arrow.FixedWidthDataType).BitWidth() / 8}
	}
	panic(fmt.Sprintf("BUG: no key store for %s", dt))
}

// keyValidity is the null bitmap of a bound input column: nil when the column
// has no nulls, so the no-null loops skip the test entirely.
type keyValidity struct {
	bm  []byte
	off int
}

func (v *keyValidity) bindKeyValidity(col arrow.Array) {
	v.bm, v.off = nil, 0
	if col.NullN() > 0 {
		data := col.Data()
		v.bm, v.off = data.Buffers()[0].Bytes(), data.Offset()
	}
}

func (v *keyValidity) isNull(i int32) bool {
	j := v.off + int(i)
	return v.bm != nil && v.bm[j>>3]&(1<<(j&7)) == 0
}

// permuteSlice reorders s[from:] so that s[from+j] = old s[from+order[j]].
func permuteSlice[T any](s []T, from int, order []int32) {
	tail := append([]T(nil), s[from:]...)
	for j, o := range order {
		s[from+j] = tail[o]
	}
}

// intStore keeps integer and temporal keys as their Go values.
type intStore[T integer] struct {
	dt arrow.DataType
	keyValidity
	in    []T
	vals  []T
	valid []bool
}

func (s *intStore[T]) bind(col arrow.Array) {
	s.bindKeyValidity(col)
	s.in = arrow.GetValues[T](col.Data(), 1)
}

func (s *intStore[T]) unbind() { s.in, s.bm = nil, nil }

func (s *intStore[T]) appendRows(rows []int32, ks []int32) {
	for _, k := range ks {
		i := rows[k]
		if s.isNull(i) {
			s.vals = append(s.vals, 0)
			s.valid = append(s.valid, false)
			continue
		}
		s.vals = append(s.vals, s.in[i])
		s.valid = append(s.valid, true)
	}
}

func (s *intStore[T]) compare(rows []int32, ks []int32, gids []uint32, neq []bool) {
	in, vals, valid := s.in, s.vals, s.valid
	if s.bm == nil {
		for j, k := range ks {
			g := gids[k]
			if !valid[g] || in[rows[k]] != vals[g] {
				neq[j] = true
			}
		}
		return
	}
	for j, k := range ks {
		i, g := rows[k], gids[k]
		if null := s.isNull(i); null == valid[g] || (!null && in[i] != vals[g]) {
			neq[j] = true
		}
	}
}

func (s *intStore[T]) permuteTail(from int, order []int32) {
	permuteSlice(s.vals, from, order)
	permuteSlice(s.valid, from, order)
}

func (s *intStore[T]) array(mem memory.Allocator, n int) arrow.Array {
	return newFixedArray(mem, s.dt, s.vals[:n], s.valid[:n])
}

func (s *intStore[T]) reset() { s.vals, s.valid = s.vals[:0], s.valid[:0] }

func (s *intStore[T]) sizeBytes() int64 {
	var z T
	return int64(cap(s.vals))*int64(goSizeOf(z)) + int64(cap(s.valid))
}

// floatStore keeps float keys as floatKey bits, so -0 and +0, and all
// NaNs, compare equal.
type floatStore[F float32 | float64] struct {
	dt arrow.DataType
	keyValidity
	in    []F
	vals  []uint64
	valid []bool
}

func (s *floatStore[F]) bind(col arrow.Array) {
	s.bindKeyValidity(col)
	s.in = arrow.GetValues[F](col.Data(), 1)
}

func (s *floatStore[F]) unbind() { s.in, s.bm = nil, nil }

func (s *floatStore[F]) appendRows(rows []int32, ks []int32) {
	for _, k := range ks {
		i := rows[k]
		if s.isNull(i) {
			s.vals = append(s.vals, 0)
			s.valid = append(s.valid, false)
			continue
		}
		s.vals = append(s.vals, floatKey(float64(s.in[i])))
		s.valid = append(s.valid, true)
	}
}

func (s *floatStore[F]) compare(rows []int32, ks []int32, gids []uint32, neq []bool) {
	for j, k := range ks {
		i, g := rows[k], gids[k]
		if null := s.isNull(i); null == s.valid[g] || (!null && floatKey(float64(s.in[i])) != s.vals[g]) {
			neq[j] = true
		}
	}
}

func (s *floatStore[F]) permuteTail(from int, order []int32) {
	permuteSlice(s.vals, from, order)
	permuteSlice(s.valid, from, order)
}

func (s *floatStore[F]) array(mem memory.Allocator, n int) arrow.Array {
	out := make([]F, n)
	for g, v := range s.vals[:n] {
		out[g] = F(math.Float64frombits(v))
	}
	return newFixedArray(mem, s.dt, out, s.valid[:n])
}

func (s *floatStore[F]) reset() { s.vals, s.valid = s.vals[:0], s.valid[:0] }

func (s *floatStore[F]) sizeBytes() int64 { return int64(cap(s.vals))*8 + int64(cap(s.valid)) }

// boolStore keeps boolean keys.
type boolStore struct {
	keyValidity
	in    []byte // value bitmap
	inOff int
	vals  []bool
	valid []bool
}

func (s *boolStore) bind(col arrow.Array) {
	s.bindKeyValidity(col)
	data := col.Data()
	s.in, s.inOff = data.Buffers()[1].Bytes(), data.Offset()
}

func (s *boolStore) unbind() { s.in, s.bm = nil, nil }

func (s *boolStore) value(i int32) bool {
	j := s.inOff + int(i)
	return s.in[j>>3]&(1<<(j&7)) != 0
}

func (s *boolStore) appendRows(rows []int32, ks []int32) {
	for _, k := range ks {
		i := rows[k]
		null := s.isNull(i)
		s.vals = append(s.vals, !null && s.value(i))
		s.valid = append(s.valid, !null)
	}
}

func (s *boolStore) compare(rows []int32, ks []int32, gids []uint32, neq []bool) {
	for j, k := range ks {
		i, g := rows[k], gids[k]
		if null := s.isNull(i); null == s.valid[g] || (!null && s.value(i) != s.vals[g]) {
			neq[j] = true
		}
	}
}

func (s *boolStore) permuteTail(from int, order []int32) {
	permuteSlice(s.vals, from, order)
	permuteSlice(s.valid, from, order)
}

func (s *boolStore) array(mem memory.Allocator, n int) arrow.Array {
	return newBoolArray(mem, s.vals[:n], s.valid[:n])
}

func (s *boolStore) reset() { s.vals, s.valid = s.vals[:0], s.valid[:0] }

func (s *boolStore) sizeBytes() int64 { return int64(cap(s.vals)) + int64(cap(s.valid)) }

// bytesStore keeps string and binary keys as fixed-size views, like
// DuckDB's and Arrow's string views: a key of up to viewInline bytes lives
// entirely in its view, so comparing it touches one cache line; a longer
// key keeps its first viewPrefix bytes in the view (most mismatches stop
// there) and the whole key in an arena.
//
// Invariant: len(views) == len(valid) == number of groups; the null group
// has an empty view and valid false.
type bytesStore[O int32 | int64] struct {
	dt arrow.DataType
	keyValidity
	inOffs []O
	inData []byte
	views  []strView
	arena  []byte
	valid  []bool
}

// strView is one stored key: its length, then either the key itself
// (length <= viewInline) or its first viewPrefix bytes followed by the
// little-endian arena offset of the whole key.
type strView struct {
	n uint32
	b [viewInline]byte
}

const (
	viewInline = 20
	viewPrefix = 12
)

func (s *bytesStore[O]) bind(col arrow.Array) {
	s.bindKeyValidity(col)
	data := col.Data()
	s.inOffs = arrow.GetOffsets[O](data, 1)
	s.inData = bufferBytes(data, 2)
}

func (s *bytesStore[O]) unbind() { s.inOffs, s.inData, s.bm = nil, nil, nil }

func (s *bytesStore[O]) appendRows(rows []int32, ks []int32) {
	for _, k := range ks {
		i := rows[k]
		var v strView
		null := s.isNull(i)
		if !null {
			a := s.inData[s.inOffs[i]:s.inOffs[i+1]]
			v.n = uint32(len(a))
			if len(a) <= viewInline {
				copy(v.b[:], a)
			} else {
				copy(v.b[:viewPrefix], a)
				binary.LittleEndian.PutUint64(v.b[viewPrefix:], uint64(len(s.arena)))
				s.arena = append(s.arena, a...)
			}
		}
		s.views = append(s.views, v)
		s.valid = append(s.valid, !null)
	}
}

// key returns the stored key of view v.
func (s *bytesStore[O]) key(v *strView) []byte {
	if v.n <= viewInline {
		return v.b[:v.n]
	}
	off := binary.LittleEndian.Uint64(v.b[viewPrefix:])
	return s.arena[off : off+uint64(v.n)]
}

// viewEqual reports whether a equals the key of view v.
func (s *bytesStore[O]) viewEqual(a []byte, v *strView) bool {
	n := len(a)
	if uint32(n) != v.n {
		return false
	}
	if n > viewInline {
		off := binary.LittleEndian.Uint64(v.b[viewPrefix:])
		return string(a[:viewPrefix]) == string(v.b[:viewPrefix]) && string(a[viewPrefix:]) == string(s.arena[off+viewPrefix:off+uint64(n)])
	}
	// Overlapping word loads: both sides hold the key at the same
	// positions, so equal words mean equal keys.
	b := v.b[:]
	switch {
	case n > 16:
		return binary.LittleEndian.Uint64(a) == binary.LittleEndian.Uint64(b) &&
			binary.LittleEndian.Uint64(a[8:]) == binary.LittleEndian.Uint64(b[8:]) &&
			binary.LittleEndian.Uint64(a[n-8:]) == binary.LittleEndian.Uint64(b[n-8:])
	case n >= 8:
		return binary.LittleEndian.Uint64(a) == binary.LittleEndian.Uint64(b) &&
			binary.LittleEndian.Uint64(a[n-8:]) == binary.LittleEndian.Uint64(b[n-8:])
	case n >= 4:
		return binary.LittleEndian.Uint32(a) == binary.LittleEndian.Uint32(b) &&
			binary.LittleEndian.Uint32(a[n-4:]) == binary.LittleEndian.Uint32(b[n-4:])
	}
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (s *bytesStore[O]) compare(rows []int32, ks []int32, gids []uint32, neq []bool) {
	inOffs, inData, views, valid := s.inOffs, s.inData, s.views, s.valid
	if s.bm == nil {
		for j, k := range ks {
			i, g := rows[k], gids[k]
			a := inData[inOffs[i]:inOffs[i+1]]
			// The null group has an empty view: only an empty input can
			// be mistaken for it, so only then is its flag worth a load.
			if !s.viewEqual(a, &views[g]) || (len(a) == 0 && !valid[g]) {
				neq[j] = true
			}
		}
		return
	}
	for j, k := range ks {
		i, g := rows[k], gids[k]
		null := s.isNull(i)
		if null == valid[g] {
			neq[j] = true
			continue
		}
		if !null && !s.viewEqual(inData[inOffs[i]:inOffs[i+1]], &views[g]) {
			neq[j] = true
		}
	}
}

func (s *bytesStore[O]) permuteTail(from int, order []int32) {
	permuteSlice(s.views, from, order) // views point into the arena: it stays
	permuteSlice(s.valid, from, order)
}

func (s *bytesStore[O]) array(mem memory.Allocator, n int) arrow.Array {
	offs := make([]int, n+1)
	var data []byte
	for g := range s.views[:n] {
		data = append(data, s.key(&s.views[g])...)
		offs[g+1] = len(data)
	}
	return newVarBinaryArray[O](mem, s.dt, offs, data, s.valid[:n])
}

func (s *bytesStore[O]) reset() {
	s.views, s.arena, s.valid = s.views[:0], s.arena[:0], s.valid[:0]
}

func (s *bytesStore[O]) sizeBytes() int64 {
	return int64(cap(s.views))*int64(goSizeOf(strView{})) + int64(cap(s.arena)) + int64(cap(s.valid))
}

// bytesEqual is bytes.Equal with the short keys of group-by inlined: up to
// 16 bytes it compares two overlapping words, without calling memequal.
func bytesEqual(a, b []byte) bool {
	n := len(a)
	if n != len(b) {
		return false
	}
	switch {
	case n > 16:
		return string(a) == string(b)
	case n >= 8:
		return binary.LittleEndian.Uint64(a) == binary.LittleEndian.Uint64(b) &&
			binary.LittleEndian.Uint64(a[n-8:]) == binary.LittleEndian.Uint64(b[n-8:])
	case n >= 4:
		return binary.LittleEndian.Uint32(a) == binary.LittleEndian.Uint32(b) &&
			binary.LittleEndian.Uint32(a[n-4:]) == binary.LittleEndian.Uint32(b[n-4:])
	}
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fixedBytesStore keeps fixed-size binary and decimal keys as their bytes:
// group g's key is data[g*width:(g+1)*width].
type fixedBytesStore struct {
	dt    arrow.DataType
	width int
	keyValidity
	in    []byte // the bound column's values from its offset on
	data  []byte
	valid []bool
}

func (s *fixedBytesStore) bind(col arrow.Array) {
	s.bindKeyValidity(col)
	data := col.Data()
	s.in = data.Buffers()[1].Bytes()[data.Offset()*s.width:]
}

func (s *fixedBytesStore) unbind() { s.in, s.bm = nil, nil }

func (s *fixedBytesStore) appendRows(rows []int32, ks []int32) {
	w := s.width
	for _, k := range ks {
		i := int(rows[k])
		null := s.isNull(rows[k])
		if null {
			s.data = append(s.data, make([]byte, w)...)
		} else {
			s.data = append(s.data, s.in[i*w:(i+1)*w]...)
		}
		s.valid = append(s.valid, !null)
	}
}

func (s *fixedBytesStore) compare(rows []int32, ks []int32, gids []uint32, neq []bool) {
	w := s.width
	for j, k := range ks {
		i, g := int(rows[k]), int(gids[k])
		null := s.isNull(rows[k])
		if null == s.valid[g] || (!null && !bytesEqual(s.in[i*w:(i+1)*w], s.data[g*w:(g+1)*w])) {
			neq[j] = true
		}
	}
}

func (s *fixedBytesStore) permuteTail(from int, order []int32) {
	w := s.width
	tail := append([]byte(nil), s.data[from*w:]...)
	for j, o := range order {
		copy(s.data[(from+j)*w:], tail[int(o)*w:(int(o)+1)*w])
	}
	permuteSlice(s.valid, from, order)
}

func (s *fixedBytesStore) array(mem memory.Allocator, n int) arrow.Array {
	return newFixedBytesArray(mem, s.dt, s.data[:n*s.width], s.valid[:n])
}

func (s *fixedBytesStore) reset() { s.data, s.valid = s.data[:0], s.valid[:0] }

func (s *fixedBytesStore) sizeBytes() int64 { return int64(cap(s.data)) + int64(cap(s.valid)) }

// gidStore keeps the group-id half of count(distinct)'s (group, value)
// pairs. Its input is a plain slice indexed by batch position, not by row:
// it ignores rows.
type gidStore struct {
	in   []uint32
	vals []uint32
}

func (s *gidStore) bind(arrow.Array) { panic("BUG: gidStore bound to an Arrow column") }

func (s *gidStore) bindGids(gids []uint32) { s.in = gids }

func (s *gidStore) unbind() { s.in = nil }

func (s *gidStore) appendRows(_ []int32, ks []int32) {
	for _, k := range ks {
		s.vals = append(s.vals, s.in[k])
	}
}

func (s *gidStore) compare(_ []int32, ks []int32, gids []uint32, neq []bool) {
	for j, k := range ks {
		if s.in[k] != s.vals[gids[k]] {
			neq[j] = true
		}
	}
}

func (s *gidStore) permuteTail(from int, order []int32) { permuteSlice(s.vals, from, order) }

func (s *gidStore) array(mem memory.Allocator, n int) arrow.Array {
	return newFixedArray(mem, arrow.PrimitiveTypes.Uint32, s.vals[:n], nil)
}

func (s *gidStore) reset() { s.vals = s.vals[:0] }

func (s *gidStore) sizeBytes() int64 { return int64(cap(s.vals)) * 4 }
