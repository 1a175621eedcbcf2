package format

import (
	"encoding/binary"
	"errors"
	"math"
)

// avroReader reads Avro binary encoding from one value. On error, pos is
// the offset of the value being read.
type avroReader struct {
	buf    []byte
	pos    int
	format string // for errors: avro or avro-confluent
	depth  int    // of recursive records being skipped
}

const avroMaxDepth = 1000

var (
	errAvroEOF      = errors.New("unexpected end of Avro data")
	errAvroVarint   = errors.New("malformed varint")
	errAvroLength   = errors.New("negative length")
	errAvroBool     = errors.New("boolean byte is neither 0 nor 1")
	errAvroTrailing = errors.New("bytes after the end of the record")
	errAvroItems    = errors.New("array or map block has more items than bytes left")
	errAvroDepth    = errors.New("recursive record nested too deep")
)

// long reads a zigzag varint of at most 10 bytes.
func (r *avroReader) long() (int64, error) {
	buf := r.buf
	i := r.pos
	// One-byte values (-64..63) are the most common.
	if i < len(buf) && buf[i] < 0x80 {
		b := uint64(buf[i])
		r.pos = i + 1
		return int64(b>>1) ^ -int64(b&1), nil
	}
	var v uint64
	for shift := uint(0); shift < 70; shift += 7 {
		if i >= len(buf) {
			return 0, errAvroEOF
		}
		b := buf[i]
		i++
		if shift == 63 && b > 1 {
			return 0, errAvroVarint
		}
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			r.pos = i
			return int64(v>>1) ^ -int64(v&1), nil
		}
	}
	return 0, errAvroVarint
}

// int reads a zigzag varint that must fit 32 bits.
func (r *avroReader) int() (int32, error) {
	start := r.pos
	v, err := r.long()
	if err != nil {
		return 0, err
	}
	if v < math.MinInt32 || v > math.MaxInt32 || r.pos-start > 5 {
		r.pos = start
		return 0, errAvroVarint
	}
	return int32(v), nil
}

func (r *avroReader) boolean() (bool, error) {
	if r.pos >= len(r.buf) {
		return false, errAvroEOF
	}
	b := r.buf[r.pos]
	if b > 1 {
		return false, errAvroBool
	}
	r.pos++
	return b == 1, nil
}

func (r *avroReader) float() (float32, error) {
	if len(r.buf)-r.pos < 4 {
		return 0, errAvroEOF
	}
	v := math.Float32frombits(binary.LittleEndian.Uint32(r.buf[r.pos:]))
	r.pos += 4
	return v, nil
}

func (r *avroReader) double() (float64, error) {
	if len(r.buf)-r.pos < 8 {
		return 0, errAvroEOF
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.buf[r.pos:]))
	r.pos += 8
	return v, nil
}

// bytes reads a length-prefixed byte string, returning a sub-slice of the
// value.
func (r *avroReader) bytes() ([]byte, error) {
	start := r.pos
	n, err := r.long()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		r.pos = start
		return nil, errAvroLength
	}
	if n > int64(len(r.buf)-r.pos) {
		r.pos = start
		return nil, errAvroEOF
	}
	b := r.buf[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

func (r *avroReader) fixed(n int) ([]byte, error) {
	if len(r.buf)-r.pos < n {
		return nil, errAvroEOF
	}
	b := r.buf[r.pos : r.pos+n]
	r.pos += n
	return b, nil
}

// blockCount reads the item count of the next array or map block; a
// negative count is followed by the block's byte size, which is skipped.
// minItemSize bounds the count by the bytes left, so a corrupt count
// cannot make the decoder loop for long; items that may take no byte
// (null, empty records) are bounded by maxEmptyItems.
func (r *avroReader) blockCount(minItemSize int) (int64, error) {
	start := r.pos
	n, err := r.long()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		if n == math.MinInt64 {
			r.pos = start
			return 0, errAvroItems
		}
		n = -n
		if _, err := r.long(); err != nil {
			return 0, err
		}
	}
	left := int64(len(r.buf) - r.pos)
	if minItemSize > 0 && n > left/int64(minItemSize) || minItemSize == 0 && n > maxEmptyItems {
		r.pos = start
		return 0, errAvroItems
	}
	return n, nil
}

// maxEmptyItems bounds the items of a block whose items may be empty.
const maxEmptyItems = 1 << 20
