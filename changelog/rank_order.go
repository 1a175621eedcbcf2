package changelog

import (
	"bytes"
	"encoding/binary"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

// Rank compares rows by a normalized key: the ORDER BY columns of a row
// encoded once, when the row arrives, into bytes whose bytes.Compare order
// is the rank order (the classic sort-key encoding, as DuckDB's sort
// does). Comparing two rows then costs one bytes.Compare wherever they are
// stored, and rows tied on every ORDER BY column are exactly the rows with
// equal keys.
//
// Each column is a marker byte (NULL or value; NULLs rank last unless
// NullsFirst, in either direction, as window.TopN ranks them), then for a
// value: 8 bytes big endian of an order-preserving uint64 for numbers,
// temporal types and booleans (16 for decimals) (floats: -0 is +0, every NaN the same and
// below every number), or for strings and binaries the bytes with each 0x00
// escaped as 0x00 0xFF and a 0x00 0x00 terminator, so that no key is a
// prefix of another. DESC inverts the value bytes, not the marker.

// rankKeyCol encodes one ORDER BY column.
type rankKeyCol struct {
	col       int
	nullByte  byte // the marker of a NULL
	valueByte byte // the marker of a value
	inv       byte // 0xFF for DESC, else 0
	// size adds the encoded length of each row rows[k] to lens[k].
	size func(arr arrow.Array, rows []int32, lens []int)
	// write writes the encoding of each row rows[k] at dst[cur[k]:] and
	// advances cur[k] past it.
	write func(arr arrow.Array, rows []int32, dst []byte, cur []int, k *rankKeyCol)
}

// rankKeyColFor dispatches on the column type, once, when the operator is
// compiled; ok is false for a type that cannot be ranked.
func rankKeyColFor(dt arrow.DataType, col int, desc, nullsFirst bool) (rankKeyCol, bool) {
	k := rankKeyCol{col: col, nullByte: 1, valueByte: 0}
	if nullsFirst {
		k.nullByte, k.valueByte = 0, 1
	}
	if desc {
		k.inv = 0xFF
	}
	k.size = rankSizeFixed
	switch dt.ID() {
	case arrow.INT8:
		k.write = rankWriteSigned[int8]
	case arrow.INT16:
		k.write = rankWriteSigned[int16]
	case arrow.INT32, arrow.DATE32, arrow.TIME32:
		k.write = rankWriteSigned[int32]
	case arrow.INT64, arrow.DATE64, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		k.write = rankWriteSigned[int64]
	case arrow.UINT8:
		k.write = rankWriteUnsigned[uint8]
	case arrow.UINT16:
		k.write = rankWriteUnsigned[uint16]
	case arrow.UINT32:
		k.write = rankWriteUnsigned[uint32]
	case arrow.UINT64:
		k.write = rankWriteUnsigned[uint64]
	case arrow.FLOAT32:
		k.write = rankWriteFloat[float32]
	case arrow.FLOAT64:
		k.write = rankWriteFloat[float64]
	case arrow.BOOL:
		k.write = rankWriteBool
	case arrow.DECIMAL128:
		// Values of one column share a scale: compare the integers.
		k.size, k.write = rankSizeDecimal, rankWriteDecimal
	case arrow.STRING, arrow.BINARY:
		k.size, k.write = rankSizeBytes[int32], rankWriteBytes[int32]
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		k.size, k.write = rankSizeBytes[int64], rankWriteBytes[int64]
	default:
		return rankKeyCol{}, false
	}
	return k, true
}

// rankEncodeKeys encodes the ORDER BY columns of the rows rows of rec:
// the key of the k-th row is dst[off[k]:off[k+1]]. dst, off and cur are
// reused scratch.
func rankEncodeKeys(cols []rankKeyCol, rec arrow.RecordBatch, rows []int32, dst []byte, off, cur []int) ([]byte, []int, []int) {
	n := len(rows)
	off = rankGrow(off, n+1)
	clear(off)
	for i := range cols {
		cols[i].size(rec.Column(cols[i].col), rows, off[1:])
	}
	for k := 1; k <= n; k++ {
		off[k] += off[k-1]
	}
	dst = rankGrow(dst, off[n])
	cur = append(rankGrow(cur, n)[:0], off[:n]...)
	for i := range cols {
		c := &cols[i]
		c.write(rec.Column(c.col), rows, dst, cur, c)
	}
	return dst, off, cur
}

func rankSizeFixed(arr arrow.Array, rows []int32, lens []int) {
	if arr.NullN() == 0 {
		for k := range rows {
			lens[k] += 9
		}
		return
	}
	for k, r := range rows {
		if arr.IsNull(int(r)) {
			lens[k]++
		} else {
			lens[k] += 9
		}
	}
}

// rankPut writes the marker and the 8 value bytes of u.
func rankPut(dst []byte, c int, u uint64, k *rankKeyCol) int {
	dst[c] = k.valueByte
	binary.BigEndian.PutUint64(dst[c+1:c+9], u^(uint64(k.inv)*0x0101010101010101))
	return c + 9
}

func rankWriteSigned[T int8 | int16 | int32 | int64](arr arrow.Array, rows []int32, dst []byte, cur []int, k *rankKeyCol) {
	v := arrow.GetValues[T](arr.Data(), 1)
	nulls := arr.NullN() > 0
	for i, r := range rows {
		if nulls && arr.IsNull(int(r)) {
			dst[cur[i]] = k.nullByte
			cur[i]++
			continue
		}
		cur[i] = rankPut(dst, cur[i], uint64(int64(v[r]))^(1<<63), k)
	}
}

func rankWriteUnsigned[T uint8 | uint16 | uint32 | uint64](arr arrow.Array, rows []int32, dst []byte, cur []int, k *rankKeyCol) {
	v := arrow.GetValues[T](arr.Data(), 1)
	nulls := arr.NullN() > 0
	for i, r := range rows {
		if nulls && arr.IsNull(int(r)) {
			dst[cur[i]] = k.nullByte
			cur[i]++
			continue
		}
		cur[i] = rankPut(dst, cur[i], uint64(v[r]), k)
	}
}

// rankFloatBits maps f to a uint64 of the same order: NaN lowest, -0 as +0.
func rankFloatBits(f float64) uint64 {
	if f != f {
		return 0
	}
	if f == 0 {
		f = 0
	}
	b := math.Float64bits(f)
	if b>>63 == 1 {
		return ^b
	}
	return b | 1<<63
}

func rankWriteFloat[T float32 | float64](arr arrow.Array, rows []int32, dst []byte, cur []int, k *rankKeyCol) {
	v := arrow.GetValues[T](arr.Data(), 1)
	nulls := arr.NullN() > 0
	for i, r := range rows {
		if nulls && arr.IsNull(int(r)) {
			dst[cur[i]] = k.nullByte
			cur[i]++
			continue
		}
		cur[i] = rankPut(dst, cur[i], rankFloatBits(float64(v[r])), k)
	}
}

func rankWriteBool(arr arrow.Array, rows []int32, dst []byte, cur []int, k *rankKeyCol) {
	d := arr.Data()
	bits, off := d.Buffers()[1].Bytes(), d.Offset()
	nulls := arr.NullN() > 0
	for i, r := range rows {
		if nulls && arr.IsNull(int(r)) {
			dst[cur[i]] = k.nullByte
			cur[i]++
			continue
		}
		var u uint64
		if bitutil.BitIsSet(bits, off+int(r)) {
			u = 1
		}
		cur[i] = rankPut(dst, cur[i], u, k)
	}
}

func rankSizeDecimal(arr arrow.Array, rows []int32, lens []int) {
	nulls := arr.NullN() > 0
	for k, r := range rows {
		if nulls && arr.IsNull(int(r)) {
			lens[k]++
		} else {
			lens[k] += 17
		}
	}
}

// rankWriteDecimal writes a decimal128 (two's complement, little endian
// low then high word) as its high word with the sign flipped, then its
// low word, big endian.
func rankWriteDecimal(arr arrow.Array, rows []int32, dst []byte, cur []int, k *rankKeyCol) {
	d := arr.Data()
	vals := d.Buffers()[1].Bytes()[d.Offset()*16:]
	nulls := arr.NullN() > 0
	inv := uint64(k.inv) * 0x0101010101010101
	for i, r := range rows {
		c := cur[i]
		if nulls && arr.IsNull(int(r)) {
			dst[c] = k.nullByte
			cur[i] = c + 1
			continue
		}
		v := vals[int(r)*16:][:16]
		dst[c] = k.valueByte
		binary.BigEndian.PutUint64(dst[c+1:c+9], (binary.LittleEndian.Uint64(v[8:])^(1<<63))^inv)
		binary.BigEndian.PutUint64(dst[c+9:c+17], binary.LittleEndian.Uint64(v[:8])^inv)
		cur[i] = c + 17
	}
}

func rankBuffer(d arrow.ArrayData, i int) []byte {
	if b := d.Buffers()[i]; b != nil {
		return b.Bytes()
	}
	return nil
}

func rankSizeBytes[O int32 | int64](arr arrow.Array, rows []int32, lens []int) {
	off, data := arrow.GetOffsets[O](arr.Data(), 1), rankBuffer(arr.Data(), 2)
	nulls := arr.NullN() > 0
	for k, r := range rows {
		if nulls && arr.IsNull(int(r)) {
			lens[k]++
			continue
		}
		v := data[off[r]:off[r+1]]
		lens[k] += 1 + len(v) + bytes.Count(v, []byte{0}) + 2
	}
}

func rankWriteBytes[O int32 | int64](arr arrow.Array, rows []int32, dst []byte, cur []int, k *rankKeyCol) {
	off, data := arrow.GetOffsets[O](arr.Data(), 1), rankBuffer(arr.Data(), 2)
	nulls := arr.NullN() > 0
	inv := k.inv
	for i, r := range rows {
		c := cur[i]
		if nulls && arr.IsNull(int(r)) {
			dst[c] = k.nullByte
			cur[i] = c + 1
			continue
		}
		dst[c] = k.valueByte
		c++
		v := data[off[r]:off[r+1]]
		if bytes.IndexByte(v, 0) < 0 && inv == 0 {
			c += copy(dst[c:], v)
		} else {
			for _, x := range v {
				dst[c] = x ^ inv
				c++
				if x == 0 {
					dst[c] = 0xFF ^ inv
					c++
				}
			}
		}
		dst[c], dst[c+1] = inv, inv
		cur[i] = c + 2
	}
}

// rankEqFunc reports whether row i of a equals row j of b, two arrays of
// one type: NULL equals NULL, values compare by their bytes. It matches a
// retraction with the row it retracts, an exact copy.
type rankEqFunc func(a arrow.Array, i int, b arrow.Array, j int) bool

// rankEqFor returns the equality of a column type the row store holds.
func rankEqFor(dt arrow.DataType) (rankEqFunc, bool) {
	switch dt.ID() {
	case arrow.NULL:
		return func(arrow.Array, int, arrow.Array, int) bool { return true }, true
	case arrow.BOOL:
		return rankEqBool, true
	case arrow.STRING, arrow.BINARY:
		return rankEqBytes[int32], true
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return rankEqBytes[int64], true
	}
	fw, ok := dt.(arrow.FixedWidthDataType)
	if !ok || fw.BitWidth()%8 != 0 || dt.ID() == arrow.DICTIONARY || dt.ID() == arrow.EXTENSION {
		return nil, false
	}
	w := fw.BitWidth() / 8
	return func(a arrow.Array, i int, b arrow.Array, j int) bool {
		if eq, done := rankEqNulls(a, i, b, j); done {
			return eq
		}
		ad, bd := a.Data(), b.Data()
		av := ad.Buffers()[1].Bytes()[(ad.Offset()+i)*w:][:w]
		bv := bd.Buffers()[1].Bytes()[(bd.Offset()+j)*w:][:w]
		return bytes.Equal(av, bv)
	}, true
}

// rankEqNulls decides equality when a value is NULL (done true).
func rankEqNulls(a arrow.Array, i int, b arrow.Array, j int) (eq, done bool) {
	an, bn := a.IsNull(i), b.IsNull(j)
	if an || bn {
		return an && bn, true
	}
	return false, false
}

func rankEqBool(a arrow.Array, i int, b arrow.Array, j int) bool {
	if eq, done := rankEqNulls(a, i, b, j); done {
		return eq
	}
	ad, bd := a.Data(), b.Data()
	return bitutil.BitIsSet(ad.Buffers()[1].Bytes(), ad.Offset()+i) == bitutil.BitIsSet(bd.Buffers()[1].Bytes(), bd.Offset()+j)
}

func rankEqBytes[O int32 | int64](a arrow.Array, i int, b arrow.Array, j int) bool {
	if eq, done := rankEqNulls(a, i, b, j); done {
		return eq
	}
	ao, bo := arrow.GetOffsets[O](a.Data(), 1), arrow.GetOffsets[O](b.Data(), 1)
	return bytes.Equal(rankBuffer(a.Data(), 2)[ao[i]:ao[i+1]], rankBuffer(b.Data(), 2)[bo[j]:bo[j+1]])
}

// rankGrow returns s resized to n elements, reusing its array when large
// enough; the contents are not preserved.
func rankGrow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, max(n, 2*cap(s)))
	}
	return s[:n]
}
