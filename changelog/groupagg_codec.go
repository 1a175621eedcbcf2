package changelog

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// aggCodec moves values of Go type T in and out of Arrow arrays of type
// dt: the group aggregate keeps its state in Go slices indexed by group id
// and exchanges it with arrays at batch, flush and snapshot boundaries.
// The type switch happens once, when the operator compiles.
type aggCodec[T comparable] struct {
	dt arrow.DataType
	// reader returns a function reading row i of arr (of type dt; the
	// caller checks validity). Strings still point into arr's buffers:
	// own them before keeping them.
	reader func(arr arrow.Array) func(i int) T
	// own copies a value read by reader out of the array's memory (nil:
	// values are plain data).
	own func(T) T
	// build returns an array of vals, null where valid is false.
	build func(mem memory.Allocator, vals []T, valid []bool) arrow.Array
	// eq is equality of results (NaN equals NaN, so that a NaN result
	// that did not change emits nothing).
	eq func(a, b T) bool
}

// aggFixed is a fixed-width Go type that is also comparable.
type aggFixed interface {
	arrow.FixedWidthType
	comparable
}

func aggEqual[T comparable](a, b T) bool { return a == b }

func aggFloatEqual[F float32 | float64](a, b F) bool { return a == b || (a != a && b != b) }

// aggFixedCodec is the codec of a fixed-width type whose values are Go T.
func aggFixedCodec[T aggFixed](dt arrow.DataType, eq func(a, b T) bool) aggCodec[T] {
	return aggCodec[T]{
		dt: dt,
		reader: func(arr arrow.Array) func(int) T {
			vals := arrow.GetValues[T](arr.Data(), 1)
			return func(i int) T { return vals[i] }
		},
		build: func(mem memory.Allocator, vals []T, valid []bool) arrow.Array {
			return aggFixedArray(mem, dt, vals, valid)
		},
		eq: eq,
	}
}

// aggFixedArray builds an array of type dt over a copy of vals, null where
// valid (nil: all valid) is false.
func aggFixedArray[T arrow.FixedWidthType](mem memory.Allocator, dt arrow.DataType, vals []T, valid []bool) arrow.Array {
	n := len(vals)
	data := memory.NewResizableBuffer(mem)
	data.Resize(len(arrow.GetBytes(vals)))
	copy(data.Bytes(), arrow.GetBytes(vals))
	var bm *memory.Buffer
	nulls := 0
	if valid != nil {
		for _, ok := range valid {
			if !ok {
				nulls++
			}
		}
	}
	if nulls > 0 {
		bm = aggBitmap(mem, valid)
	}
	d := array.NewData(dt, n, []*memory.Buffer{bm, data}, nil, nulls, 0)
	arr := array.MakeFromData(d)
	d.Release()
	data.Release()
	if bm != nil {
		bm.Release()
	}
	return arr
}

// aggBitmap is a validity bitmap of valid.
func aggBitmap(mem memory.Allocator, valid []bool) *memory.Buffer {
	bm := memory.NewResizableBuffer(mem)
	bm.Resize((len(valid) + 7) / 8)
	b := bm.Bytes()
	clear(b)
	for i, ok := range valid {
		if ok {
			b[i>>3] |= 1 << (i & 7)
		}
	}
	return bm
}

// aggBoolCodec is the codec of booleans.
func aggBoolCodec() aggCodec[bool] {
	return aggCodec[bool]{
		dt: arrow.FixedWidthTypes.Boolean,
		reader: func(arr arrow.Array) func(int) bool {
			return arr.(*array.Boolean).Value
		},
		build: func(mem memory.Allocator, vals []bool, valid []bool) arrow.Array {
			b := array.NewBooleanBuilder(mem)
			defer b.Release()
			b.AppendValues(vals, valid)
			return b.NewArray()
		},
		eq: aggEqual[bool],
	}
}

// aggStringCodec is the codec of the string and binary types: values are Go
// strings holding the bytes.
func aggStringCodec(dt arrow.DataType) aggCodec[string] {
	c := aggCodec[string]{dt: dt, eq: aggEqual[string], own: strings.Clone}
	switch dt.ID() {
	case arrow.STRING:
		c.reader = func(arr arrow.Array) func(int) string {
			a := arr.(*array.String)
			return a.Value
		}
	case arrow.LARGE_STRING:
		c.reader = func(arr arrow.Array) func(int) string {
			a := arr.(*array.LargeString)
			return a.Value
		}
	case arrow.BINARY:
		c.reader = func(arr arrow.Array) func(int) string {
			a := arr.(*array.Binary)
			return func(i int) string { return aggUnsafeString(a.Value(i)) }
		}
	case arrow.LARGE_BINARY:
		c.reader = func(arr arrow.Array) func(int) string {
			a := arr.(*array.LargeBinary)
			return func(i int) string { return aggUnsafeString(a.Value(i)) }
		}
	case arrow.FIXED_SIZE_BINARY:
		c.reader = func(arr arrow.Array) func(int) string {
			a := arr.(*array.FixedSizeBinary)
			return func(i int) string { return aggUnsafeString(a.Value(i)) }
		}
	default:
		return aggCodec[string]{}
	}
	c.build = func(mem memory.Allocator, vals []string, valid []bool) arrow.Array {
		b := array.NewBuilder(mem, dt)
		defer b.Release()
		b.Reserve(len(vals))
		for i, v := range vals {
			if valid != nil && !valid[i] {
				b.AppendNull()
				continue
			}
			switch bb := b.(type) {
			case *array.StringBuilder:
				bb.Append(v)
			case *array.LargeStringBuilder:
				bb.Append(v)
			case *array.BinaryBuilder:
				bb.AppendString(v)
			case *array.FixedSizeBinaryBuilder:
				bb.Append([]byte(v))
			default:
				panic(fmt.Sprintf("BUG: group aggregate: no string builder for %s", dt))
			}
		}
		return b.NewArray()
	}
	return c
}

var (
	aggInt64Codec   = aggFixedCodec[int64](arrow.PrimitiveTypes.Int64, aggEqual[int64])
	aggFloat64Codec = aggFixedCodec[float64](arrow.PrimitiveTypes.Float64, aggFloatEqual[float64])
	aggUint32Codec  = aggFixedCodec[uint32](arrow.PrimitiveTypes.Uint32, aggEqual[uint32])
	// decimal256 sums are kept with 76 digits of headroom.
	aggDec256Codec = aggFixedCodec[decimal256.Num](&arrow.Decimal256Type{Precision: 76, Scale: 0}, aggEqual[decimal256.Num])
)

func aggDec128Codec(dt arrow.DataType) aggCodec[decimal128.Num] {
	return aggFixedCodec[decimal128.Num](dt, aggEqual[decimal128.Num])
}

// aggFloatLess orders floats with NaN above every other value, as kernels'
// MIN and MAX do.
func aggFloatLess[F float32 | float64](a, b F) bool {
	if a != a {
		return false
	}
	return b != b || a < b
}

func aggOrderedLess[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | string](a, b T) bool {
	return a < b
}

// aggSlot is one column of a group aggregate's snapshot: a Go slice indexed
// by group id, exported for some groups and loaded back into others.
type aggSlot interface {
	field() arrow.Field
	export(mem memory.Allocator, gids []uint32) arrow.Array
	load(col arrow.Array, sel []int32, gids []uint32) error
}

// aggSliceSlot is an aggSlot over *vals (and *valid, when not nil, for the
// nulls).
type aggSliceSlot[T comparable] struct {
	name  string
	codec aggCodec[T]
	vals  *[]T
	valid *[]bool
}

func (s aggSliceSlot[T]) field() arrow.Field {
	return arrow.Field{Name: s.name, Type: s.codec.dt, Nullable: s.valid != nil}
}

func (s aggSliceSlot[T]) export(mem memory.Allocator, gids []uint32) arrow.Array {
	vals := make([]T, len(gids))
	var valid []bool
	if s.valid != nil {
		valid = make([]bool, len(gids))
	}
	for k, g := range gids {
		vals[k] = (*s.vals)[g]
		if valid != nil {
			valid[k] = (*s.valid)[g]
		}
	}
	return s.codec.build(mem, vals, valid)
}

func (s aggSliceSlot[T]) load(col arrow.Array, sel []int32, gids []uint32) error {
	if !arrow.TypeEqual(col.DataType(), s.codec.dt) {
		return fmt.Errorf("state column %q has type %s, want %s", s.name, col.DataType(), s.codec.dt)
	}
	rd := s.codec.reader(col)
	for k, g := range gids {
		i := int(sel[k])
		if s.valid != nil {
			(*s.valid)[g] = col.IsValid(i)
		}
		if col.IsValid(i) {
			v := rd(i)
			if s.codec.own != nil {
				v = s.codec.own(v)
			}
			(*s.vals)[g] = v
		}
	}
	return nil
}

// aggUnsafeString views b as a string without copying; the codec's own
// copies it before it is kept.
func aggUnsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
