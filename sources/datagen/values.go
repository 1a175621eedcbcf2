package datagen

import (
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// integer is every Go type behind a supported integer-like Arrow type
// (arrow.Timestamp and arrow.Date32 included).
type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// intGen generates integers, timestamps and dates. Arithmetic is done on
// uint64 in two's complement and truncated to T, so one code path serves
// signed and unsigned types.
type intGen[T integer] struct {
	dt    arrow.DataType
	seq   bool
	min   uint64 // Min, two's complement
	span  uint64 // Max - Min + 1; 0 means all 2^64 values (truncated to T)
	key   uint64
	nulls nullGen
}

func (g *intGen[T]) at(r int64) T {
	switch {
	case g.seq:
		return T(g.min + uint64(r))
	case g.span == 0:
		return T(hashRow(g.key, r))
	}
	return T(g.min + below(hashRow(g.key, r), g.span))
}

func (g *intGen[T]) fill(dst []T, first, step int64) {
	r := first
	switch {
	case g.seq:
		for i := range dst {
			dst[i] = T(g.min + uint64(r))
			r += step
		}
	case g.span == 0:
		for i := range dst {
			dst[i] = T(hashRow(g.key, r))
			r += step
		}
	default:
		for i := range dst {
			dst[i] = T(g.min + below(hashRow(g.key, r), g.span))
			r += step
		}
	}
}

func (g *intGen[T]) value(r int64) any {
	if g.nulls.isNull(r) {
		return nil
	}
	return g.at(r)
}

func (g *intGen[T]) newColumn(mem memory.Allocator) column {
	return newSliceColumn(mem, g.dt, g.fill, g.nulls)
}

// floatGen generates float32 and float64 values.
type floatGen[T ~float32 | ~float64] struct {
	dt  arrow.DataType
	seq bool
	min float64
	// Random without Decimals: min + u*width, u in [0, 1); values that
	// round up to max are replaced by top, the largest T below max.
	width    float64
	max, top T
	// Random with Decimals: (kmin + below(h, kspan)) / scale.
	decimals bool
	kmin     int64
	kspan    uint64
	scale    float64
	key      uint64
	nulls    nullGen
}

func (g *floatGen[T]) at(r int64) T {
	switch {
	case g.seq:
		return T(g.min + float64(r))
	case g.width == 0 && !g.decimals:
		return T(g.min)
	}
	h := hashRow(g.key, r)
	var v T
	if g.decimals {
		v = T(float64(g.kmin+int64(below(h, g.kspan))) / g.scale)
	} else {
		v = T(g.min + unitFloat(h)*g.width)
	}
	if v >= g.max {
		v = g.top
	}
	return v
}

func (g *floatGen[T]) fill(dst []T, first, step int64) {
	r := first
	switch {
	case g.seq:
		for i := range dst {
			dst[i] = T(g.min + float64(r))
			r += step
		}
	case g.width == 0 && !g.decimals:
		for i := range dst {
			dst[i] = T(g.min)
		}
	case g.decimals:
		for i := range dst {
			v := T(float64(g.kmin+int64(below(hashRow(g.key, r), g.kspan))) / g.scale)
			if v >= g.max {
				v = g.top
			}
			dst[i] = v
			r += step
		}
	default:
		for i := range dst {
			v := T(g.min + unitFloat(hashRow(g.key, r))*g.width)
			if v >= g.max {
				v = g.top
			}
			dst[i] = v
			r += step
		}
	}
}

func (g *floatGen[T]) value(r int64) any {
	if g.nulls.isNull(r) {
		return nil
	}
	return g.at(r)
}

func (g *floatGen[T]) newColumn(mem memory.Allocator) column {
	return newSliceColumn(mem, g.dt, g.fill, g.nulls)
}

// boolGen generates booleans, true with probability 1/2.
type boolGen struct {
	key   uint64
	nulls nullGen
}

func (g *boolGen) fill(dst []bool, first, step int64) {
	r := first
	for i := range dst {
		dst[i] = hashRow(g.key, r)>>63 == 1
		r += step
	}
}

func (g *boolGen) value(r int64) any {
	if g.nulls.isNull(r) {
		return nil
	}
	return hashRow(g.key, r)>>63 == 1
}

func (g *boolGen) newColumn(mem memory.Allocator) column {
	return newSliceColumn(mem, arrow.FixedWidthTypes.Boolean, g.fill, g.nulls)
}

// alphabet holds the 32 characters of random strings: 5 bits each, 12 per
// 64-bit hash.
const alphabet = "abcdefghijklmnopqrstuvwxyz012345"

// maxDecimalLen is the longest decimal form of an int64.
const maxDecimalLen = 20

// stringGen generates strings: from Values, decimal sequences, or random
// characters.
type stringGen struct {
	seq    bool
	min    int64
	length int
	values [][]byte
	key    uint64
	nulls  nullGen
}

// randomString fills b with characters drawn from the bits of h (and of
// further hashes of h past 12 characters).
func randomString(b []byte, h uint64) {
	bits := h
	for j := range b {
		if j > 0 && j%12 == 0 {
			bits = mix(h + uint64(j/12)*golden)
		}
		b[j] = alphabet[bits&31]
		bits >>= 5
	}
}

// pick returns the index in values of row r's value.
func (g *stringGen) pick(r int64) int {
	n := int64(len(g.values))
	if g.seq {
		return int(((g.min+r)%n + n) % n)
	}
	return int(below(hashRow(g.key, r), uint64(n)))
}

// fill sets dst[i] to row first+i*step's value, which may point into arena
// or into g.values; it returns the arena for reuse.
func (g *stringGen) fill(dst [][]byte, arena []byte, first, step int64) []byte {
	r := first
	switch {
	case len(g.values) > 0:
		for i := range dst {
			dst[i] = g.values[g.pick(r)]
			r += step
		}
	case g.seq:
		// With enough capacity reserved, appends never move the arena, so
		// earlier slices of it stay valid.
		arena = resize(arena, len(dst)*maxDecimalLen)[:0]
		for i := range dst {
			start := len(arena)
			arena = strconv.AppendInt(arena, g.min+r, 10)
			dst[i] = arena[start:len(arena):len(arena)]
			r += step
		}
	default:
		l := g.length
		arena = resize(arena, len(dst)*l)
		for i := range dst {
			s := arena[i*l : (i+1)*l : (i+1)*l]
			randomString(s, hashRow(g.key, r))
			dst[i] = s
			r += step
		}
	}
	return arena
}

func (g *stringGen) value(r int64) any {
	switch {
	case g.nulls.isNull(r):
		return nil
	case len(g.values) > 0:
		return string(g.values[g.pick(r)])
	case g.seq:
		return strconv.FormatInt(g.min+r, 10)
	}
	b := make([]byte, g.length)
	randomString(b, hashRow(g.key, r))
	return string(b)
}

func (g *stringGen) newColumn(mem memory.Allocator) column {
	return &stringColumn{bld: array.NewStringBuilder(mem), gen: g}
}

// eventTimeGen generates the event-time column:
// floor((Start + r*Interval - jitter(r)) / unit), jitter(r) in [0, MaxOutOfOrderness].
type eventTimeGen struct {
	dt       *arrow.TimestampType
	start    int64  // ns since the epoch
	interval int64  // ns
	jitter   uint64 // MaxOutOfOrderness+1 in ns; 0 = no jitter
	mult     int64  // ns per unit of dt
	key      uint64
}

func (g *eventTimeGen) at(r int64) arrow.Timestamp {
	ns := g.start + r*g.interval
	if g.jitter != 0 {
		ns -= int64(below(hashRow(g.key, r), g.jitter))
	}
	return arrow.Timestamp(floorDiv(ns, g.mult))
}

func (g *eventTimeGen) fill(dst []arrow.Timestamp, first, step int64) {
	r := first
	if g.mult == 1 && g.jitter == 0 {
		for i := range dst {
			dst[i] = arrow.Timestamp(g.start + r*g.interval)
			r += step
		}
		return
	}
	for i := range dst {
		dst[i] = g.at(r)
		r += step
	}
}

func (g *eventTimeGen) value(r int64) any { return g.at(r) }

func (g *eventTimeGen) newColumn(mem memory.Allocator) column {
	return newSliceColumn(mem, g.dt, g.fill, nullGen{})
}

// floorDiv is a/b rounded towards minus infinity, for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// nextBelow returns the largest T smaller than x.
func nextBelow[T ~float32 | ~float64](x T) T {
	switch v := any(x).(type) {
	case float32:
		return T(math.Nextafter32(v, float32(math.Inf(-1))))
	case float64:
		return T(math.Nextafter(v, math.Inf(-1)))
	}
	panic("BUG: datagen: nextBelow of a non-float")
}
