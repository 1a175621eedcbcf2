package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// randomArray builds an array of n values of type dt with about nullRate
// nulls, then slices off the first `offset` values so that kernels see a
// non-zero array offset.
func randomArray(t testing.TB, mem memory.Allocator, rng *rand.Rand, dt arrow.DataType, n, offset int, nullRate float64) arrow.Array {
	t.Helper()
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	for i := 0; i < n+offset; i++ {
		if rng.Float64() < nullRate {
			b.AppendNull()
			continue
		}
		small := rng.IntN(50) - 25 // few distinct values, so equal keys repeat
		switch bb := b.(type) {
		case *array.Int8Builder:
			bb.Append(int8(small))
		case *array.Int16Builder:
			bb.Append(int16(small))
		case *array.Int32Builder:
			bb.Append(int32(small))
		case *array.Int64Builder:
			bb.Append(int64(small) << 40)
		case *array.Uint8Builder:
			bb.Append(uint8(small + 25))
		case *array.Uint16Builder:
			bb.Append(uint16(small + 25))
		case *array.Uint32Builder:
			bb.Append(uint32(small + 25))
		case *array.Uint64Builder:
			bb.Append(uint64(small+25) << 50)
		case *array.Float32Builder:
			bb.Append(float32(small) / 4)
		case *array.Float64Builder:
			vals := []float64{0, math.Copysign(0, -1), math.NaN(), 1.5, float64(small)}
			bb.Append(vals[rng.IntN(len(vals))])
		case *array.BooleanBuilder:
			bb.Append(small%2 == 0)
		case *array.StringBuilder:
			bb.Append(fmt.Sprintf("s%d", small))
		case *array.LargeStringBuilder:
			bb.Append(fmt.Sprintf("large-%d", small))
		case *array.BinaryBuilder:
			bb.Append([]byte{byte(small), 0, byte(small)})
		case *array.TimestampBuilder:
			bb.Append(arrow.Timestamp(int64(small) * 1000))
		case *array.Date32Builder:
			bb.Append(arrow.Date32(small))
		case *array.FixedSizeBinaryBuilder:
			bb.Append([]byte{byte(small), 1, 2, 3})
		case *array.Decimal128Builder:
			bb.Append(decimal128.FromI64(int64(small)))
		default:
			t.Fatalf("no generator for %s", dt)
		}
	}
	full := b.NewArray()
	defer full.Release()
	return array.NewSlice(full, int64(offset), int64(offset+n))
}

var testTypes = []arrow.DataType{
	arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
	arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
	arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64, arrow.FixedWidthTypes.Boolean,
	arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.Binary,
	&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, arrow.FixedWidthTypes.Date32,
	&arrow.FixedSizeBinaryType{ByteWidth: 4}, &arrow.Decimal128Type{Precision: 10, Scale: 2},
}

// refHash is the row-at-a-time reference: the hash of one value, built
// only from the exported single-value functions and arrow's accessors.
func refHash(arr arrow.Array, i int) uint64 {
	if arr.IsNull(i) {
		return HashNull()
	}
	switch a := arr.(type) {
	case *array.Int8:
		return HashUint64(uint64(int64(a.Value(i))))
	case *array.Int16:
		return HashUint64(uint64(int64(a.Value(i))))
	case *array.Int32:
		return HashUint64(uint64(int64(a.Value(i))))
	case *array.Int64:
		return HashUint64(uint64(a.Value(i)))
	case *array.Uint8:
		return HashUint64(uint64(a.Value(i)))
	case *array.Uint16:
		return HashUint64(uint64(a.Value(i)))
	case *array.Uint32:
		return HashUint64(uint64(a.Value(i)))
	case *array.Uint64:
		return HashUint64(a.Value(i))
	case *array.Float32:
		return HashFloat64(float64(a.Value(i)))
	case *array.Float64:
		return HashFloat64(a.Value(i))
	case *array.Boolean:
		if a.Value(i) {
			return HashUint64(1)
		}
		return HashUint64(0)
	case *array.String:
		return HashBytes([]byte(a.Value(i)))
	case *array.LargeString:
		return HashBytes([]byte(a.Value(i)))
	case *array.Binary:
		return HashBytes(a.Value(i))
	case *array.Timestamp:
		return HashUint64(uint64(a.Value(i)))
	case *array.Date32:
		return HashUint64(uint64(int64(a.Value(i))))
	case *array.FixedSizeBinary:
		return HashBytes(a.Value(i))
	case *array.Decimal128:
		v := a.Value(i)
		b := make([]byte, 16)
		lo, hi := v.LowBits(), uint64(v.HighBits())
		for k := 0; k < 8; k++ {
			b[k] = byte(lo >> (8 * k))
			b[8+k] = byte(hi >> (8 * k))
		}
		return HashBytes(b)
	}
	panic("no reference hash for " + arr.DataType().String())
}

func randomSel(rng *rand.Rand, n int) []int32 {
	var sel []int32
	for i := 0; i < n; i++ {
		if rng.IntN(3) > 0 {
			sel = append(sel, int32(i))
		}
	}
	if sel == nil {
		sel = []int32{}
	}
	return sel
}

func TestHashColumnsMatchesRowReference(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(7, 11))
	for _, n := range []int{1, 7, 1024} {
		for _, withSel := range []bool{false, true} {
			for _, nullRate := range []float64{0, 0.2} {
				for ti, dt := range testTypes {
					dt2 := testTypes[(ti+5)%len(testTypes)]
					a := randomArray(t, mem, rng, dt, n, rng.IntN(3), nullRate)
					b := randomArray(t, mem, rng, dt2, n, rng.IntN(3), nullRate)
					var sel []int32
					rows := n
					if withSel {
						sel = randomSel(rng, n)
						rows = len(sel)
					}
					out := make([]uint64, rows)
					if err := HashColumns([]arrow.Array{a, b}, sel, out); err != nil {
						t.Fatalf("%s,%s: %v", dt, dt2, err)
					}
					for k := 0; k < rows; k++ {
						i := k
						if sel != nil {
							i = int(sel[k])
						}
						want := CombineHash(refHash(a, i), refHash(b, i))
						if out[k] != want {
							t.Fatalf("n=%d sel=%v nulls=%v types=(%s,%s) row %d: hash %x, reference %x", n, withSel, nullRate, dt, dt2, i, out[k], want)
						}
					}
					a.Release()
					b.Release()
				}
			}
		}
	}
}

func TestHashEqualValuesEqualHashes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	f := array.NewFloat64Builder(mem)
	f.AppendValues([]float64{0, math.Copysign(0, -1), math.NaN(), -math.NaN()}, nil)
	arr := f.NewArray()
	f.Release()
	defer arr.Release()
	out := make([]uint64, 4)
	if err := HashColumns([]arrow.Array{arr}, nil, out); err != nil {
		t.Fatal(err)
	}
	if out[0] != out[1] {
		t.Error("0 and -0 hash differently")
	}
	if out[2] != out[3] {
		t.Error("NaNs hash differently")
	}
	// Column order matters: (a, b) and (b, a) must not collide by
	// construction.
	i := array.NewInt64Builder(mem)
	i.AppendValues([]int64{1, 2}, nil)
	x := i.NewArray()
	i.AppendValues([]int64{2, 1}, nil)
	y := i.NewArray()
	i.Release()
	defer x.Release()
	defer y.Release()
	h := make([]uint64, 2)
	if err := HashColumns([]arrow.Array{x, y}, nil, h); err != nil {
		t.Fatal(err)
	}
	if h[0] == h[1] {
		t.Error("(1,2) and (2,1) hash equal")
	}
}

func TestHashColumnsErrors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	lb := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int64)
	lb.Append(true)
	list := lb.NewArray()
	lb.Release()
	defer list.Release()
	if err := HashColumns([]arrow.Array{list}, nil, make([]uint64, 1)); err == nil {
		t.Error("hashing a list column succeeded")
	}
	if err := HashColumns(nil, nil, nil); err == nil {
		t.Error("hashing no columns succeeded")
	}
	if err := HashColumns([]arrow.Array{list}, nil, make([]uint64, 2)); err == nil {
		t.Error("output length mismatch accepted")
	}
}

func TestTakeMatchesRowReference(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(3, 5))
	for _, n := range []int{1, 7, 1024} {
		for _, nullRate := range []float64{0, 0.3} {
			for _, dt := range testTypes {
				arr := randomArray(t, mem, rng, dt, n, rng.IntN(5), nullRate)
				// Indices in any order, with repeats.
				idx := make([]int32, rng.IntN(2*n)+1)
				for k := range idx {
					idx[k] = int32(rng.IntN(n))
				}
				out, err := Take(mem, arr, idx)
				if err != nil {
					t.Fatalf("%s: %v", dt, err)
				}
				if out.Len() != len(idx) {
					t.Fatalf("%s: took %d rows, want %d", dt, out.Len(), len(idx))
				}
				for k, i := range idx {
					if arr.IsNull(int(i)) != out.IsNull(k) {
						t.Fatalf("%s: row %d (from %d): null mismatch", dt, k, i)
					}
					if arr.IsValid(int(i)) && arr.ValueStr(int(i)) != out.ValueStr(k) {
						t.Fatalf("%s: row %d (from %d): %s, want %s", dt, k, i, out.ValueStr(k), arr.ValueStr(int(i)))
					}
				}
				out.Release()
				arr.Release()
			}
		}
	}
}

func TestTakeRecordAndUnsupported(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(1, 1))
	a := randomArray(t, mem, rng, arrow.PrimitiveTypes.Int64, 10, 0, 0.1)
	s := randomArray(t, mem, rng, arrow.BinaryTypes.String, 10, 0, 0.1)
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: a.DataType(), Nullable: true}, {Name: "s", Type: s.DataType(), Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{a, s}, 10)
	a.Release()
	s.Release()
	defer rec.Release()
	out, err := TakeRecord(mem, rec, []int32{9, 0, 3})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if out.NumRows() != 3 || !out.Schema().Equal(schema) {
		t.Fatalf("took %d rows with schema %s", out.NumRows(), out.Schema())
	}
	for c := 0; c < 2; c++ {
		for k, i := range []int{9, 0, 3} {
			if rec.Column(c).ValueStr(i) != out.Column(c).ValueStr(k) {
				t.Fatalf("column %d row %d mismatch", c, k)
			}
		}
	}

	lb := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int64)
	lb.Append(true)
	list := lb.NewArray()
	lb.Release()
	defer list.Release()
	if _, err := Take(mem, list, []int32{0}); err == nil {
		t.Fatal("take of a list column succeeded")
	}
}
