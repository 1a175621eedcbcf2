package kernels

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/zeebo/xxh3"
)

// The hash is part of weir's persistent format: key groups, and therefore
// which subtask's state holds a key, are derived from it. Changing any
// constant or mixing step below breaks restoring existing snapshots.
const (
	// nullHash is the hash of a null value of any type.
	nullHash uint64 = 0x2545f4914f6cdd1d
	// combineMul mixes the running hash of earlier key columns before the
	// next column's hash is folded in, so (a, b) and (b, a) differ.
	combineMul uint64 = 0x9e3779b97f4a7c15
)

// mix64 is a 64-bit finaliser (MurmurHash3's fmix64): every input bit
// affects every output bit.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// HashUint64 is the hash of one fixed-width value, as HashColumns computes
// it for integer, temporal and boolean columns. It is exported for code
// that must agree with HashColumns on a single value.
func HashUint64(v uint64) uint64 { return mix64(v ^ 0x5851f42d4c957f2d) }

// HashFloat64 is the hash HashColumns computes for a floating-point value:
// -0 hashes like +0 and every NaN like every other NaN.
func HashFloat64(f float64) uint64 {
	switch {
	case f == 0:
		f = 0
	case f != f:
		f = math.NaN()
	}
	return HashUint64(math.Float64bits(f))
}

// HashBytes is the hash HashColumns computes for a string or binary value.
func HashBytes(b []byte) uint64 { return xxh3.Hash(b) }

// HashNull is the hash of a null value of any type.
func HashNull() uint64 { return nullHash }

// CombineHash folds the hash of the next key column into the running hash
// of the earlier columns of the same row.
func CombineHash(running, next uint64) uint64 { return mix64(running*combineMul ^ next) }

// HashColumns computes a 64-bit hash of the key tuple of each selected row.
//
// With sel == nil, out must have one element per row and out[i] is the hash
// of row i; otherwise out must have len(sel) elements and out[k] is the hash
// of row sel[k]. All columns must have the same length. Nulls hash to a
// fixed value, so null keys group together. The hash is stable across
// processes and versions of weir (key groups depend on it); decimals and
// fixed-size binaries are hashed as their little-endian bytes.
//
// Supported types: integers, floats, booleans, strings and binaries (also
// large), fixed-size binaries, dates, times, timestamps, durations and
// decimal128.
func HashColumns(cols []arrow.Array, sel []int32, out []uint64) error {
	if len(cols) == 0 {
		return fmt.Errorf("hash: no key columns")
	}
	for c, col := range cols {
		n := col.Len()
		if sel == nil && len(out) != n {
			return fmt.Errorf("hash: key column %d has %d rows, output has %d", c, n, len(out))
		}
		if sel != nil && len(out) != len(sel) {
			return fmt.Errorf("hash: selection has %d rows, output has %d", len(sel), len(out))
		}
		if err := hashColumn(col, sel, out, c == 0); err != nil {
			return fmt.Errorf("hash: key column %d: %w", c, err)
		}
	}
	return nil
}

func hashColumn(col arrow.Array, sel []int32, out []uint64, first bool) error {
	data := col.Data()
	var valid []byte
	if col.NullN() > 0 {
		valid = data.Buffers()[0].Bytes()
	}
	h := hasher{valid: valid, offset: data.Offset(), sel: sel, out: out, first: first}
	switch dt := col.DataType(); dt.ID() {
	case arrow.INT8:
		hashInts(&h, arrow.GetValues[int8](data, 1))
	case arrow.INT16:
		hashInts(&h, arrow.GetValues[int16](data, 1))
	case arrow.INT32, arrow.DATE32, arrow.TIME32:
		hashInts(&h, arrow.GetValues[int32](data, 1))
	case arrow.INT64, arrow.DATE64, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		hashInts(&h, arrow.GetValues[int64](data, 1))
	case arrow.UINT8:
		hashInts(&h, arrow.GetValues[uint8](data, 1))
	case arrow.UINT16:
		hashInts(&h, arrow.GetValues[uint16](data, 1))
	case arrow.UINT32:
		hashInts(&h, arrow.GetValues[uint32](data, 1))
	case arrow.UINT64:
		hashInts(&h, arrow.GetValues[uint64](data, 1))
	case arrow.FLOAT32:
		hashFloats(&h, arrow.GetValues[float32](data, 1))
	case arrow.FLOAT64:
		hashFloats(&h, arrow.GetValues[float64](data, 1))
	case arrow.BOOL:
		hashBools(&h, data.Buffers()[1].Bytes(), col.Len())
	case arrow.STRING, arrow.BINARY:
		hashVarBinary(&h, arrow.GetOffsets[int32](data, 1), bufferBytes(data, 2))
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		hashVarBinary(&h, arrow.GetOffsets[int64](data, 1), bufferBytes(data, 2))
	case arrow.FIXED_SIZE_BINARY, arrow.DECIMAL128, arrow.DECIMAL256:
		width := dt.(arrow.FixedWidthDataType).BitWidth() / 8
		b := data.Buffers()[1].Bytes()[data.Offset()*width:]
		hashFixedBytes(&h, b, width, col.Len())
	default:
		return fmt.Errorf("cannot hash type %s", dt)
	}
	return nil
}

func bufferBytes(data arrow.ArrayData, i int) []byte {
	if buf := data.Buffers()[i]; buf != nil {
		return buf.Bytes()
	}
	return nil
}

// hasher carries what every typed loop needs; the loops themselves are
// specialised per type and per (nulls, selection) case.
type hasher struct {
	valid  []byte // validity bitmap, nil when the column has no nulls
	offset int    // array offset into valid
	sel    []int32
	out    []uint64
	first  bool
}

func (h *hasher) put(k int, v uint64) {
	if h.first {
		h.out[k] = v
	} else {
		h.out[k] = CombineHash(h.out[k], v)
	}
}

func (h *hasher) isNull(i int) bool {
	return h.valid != nil && !bitutil.BitIsSet(h.valid, h.offset+i)
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

func hashInts[T integer](h *hasher, vals []T) {
	switch {
	case h.sel == nil && h.valid == nil:
		for i, v := range vals {
			h.put(i, HashUint64(uint64(v)))
		}
	case h.sel == nil:
		for i, v := range vals {
			if h.isNull(i) {
				h.put(i, nullHash)
			} else {
				h.put(i, HashUint64(uint64(v)))
			}
		}
	case h.valid == nil:
		for k, i := range h.sel {
			h.put(k, HashUint64(uint64(vals[i])))
		}
	default:
		for k, i := range h.sel {
			if h.isNull(int(i)) {
				h.put(k, nullHash)
			} else {
				h.put(k, HashUint64(uint64(vals[i])))
			}
		}
	}
}

func hashFloats[T float32 | float64](h *hasher, vals []T) {
	if h.sel == nil {
		for i, v := range vals {
			if h.isNull(i) {
				h.put(i, nullHash)
			} else {
				h.put(i, HashFloat64(float64(v)))
			}
		}
		return
	}
	for k, i := range h.sel {
		if h.isNull(int(i)) {
			h.put(k, nullHash)
		} else {
			h.put(k, HashFloat64(float64(vals[i])))
		}
	}
}

func hashBools(h *hasher, bits []byte, n int) {
	val := func(i int) uint64 {
		if bitutil.BitIsSet(bits, h.offset+i) {
			return HashUint64(1)
		}
		return HashUint64(0)
	}
	if h.sel == nil {
		for i := 0; i < n; i++ {
			if h.isNull(i) {
				h.put(i, nullHash)
			} else {
				h.put(i, val(i))
			}
		}
		return
	}
	for k, i := range h.sel {
		if h.isNull(int(i)) {
			h.put(k, nullHash)
		} else {
			h.put(k, val(int(i)))
		}
	}
}

func hashVarBinary[O int32 | int64](h *hasher, offsets []O, values []byte) {
	if h.valid == nil && h.first {
		// The common case of a first key column without nulls: no per-row
		// branches besides the hash itself.
		out := h.out
		if h.sel == nil {
			n := len(offsets) - 1
			out = out[:n]
			for i := range out {
				out[i] = xxh3.Hash(values[offsets[i]:offsets[i+1]])
			}
			return
		}
		for k, i := range h.sel {
			out[k] = xxh3.Hash(values[offsets[i]:offsets[i+1]])
		}
		return
	}
	if h.sel == nil {
		for i := 0; i+1 < len(offsets); i++ {
			if h.isNull(i) {
				h.put(i, nullHash)
			} else {
				h.put(i, xxh3.Hash(values[offsets[i]:offsets[i+1]]))
			}
		}
		return
	}
	for k, i := range h.sel {
		if h.isNull(int(i)) {
			h.put(k, nullHash)
		} else {
			h.put(k, xxh3.Hash(values[offsets[i]:offsets[i+1]]))
		}
	}
}

func hashFixedBytes(h *hasher, b []byte, width, n int) {
	if h.sel == nil {
		for i := 0; i < n; i++ {
			if h.isNull(i) {
				h.put(i, nullHash)
			} else {
				h.put(i, xxh3.Hash(b[i*width:(i+1)*width]))
			}
		}
		return
	}
	for k, i := range h.sel {
		if h.isNull(int(i)) {
			h.put(k, nullHash)
		} else {
			j := int(i)
			h.put(k, xxh3.Hash(b[j*width:(j+1)*width]))
		}
	}
}
