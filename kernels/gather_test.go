package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Gather equals Take of each part followed by array.Concatenate, for
// every type Take supports, sliced parts, nulls in some parts only, nil
// (every row) and empty index lists.
func TestGatherMatchesTakeAndConcatenate(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(7, 11))
	for round := 0; round < 20; round++ {
		for _, dt := range testTypes {
			parts := make([]arrow.Array, 1+rng.IntN(4))
			idx := make([][]int32, len(parts))
			var want []arrow.Array
			for k := range parts {
				n := rng.IntN(40)
				nullRate := 0.0
				if rng.IntN(2) == 0 {
					nullRate = 0.3
				}
				parts[k] = randomArray(t, mem, rng, dt, n, rng.IntN(5), nullRate)
				switch rng.IntN(3) {
				case 0: // every row
				case 1:
					idx[k] = []int32{}
				default:
					idx[k] = make([]int32, rng.IntN(2*n+1))
					for i := range idx[k] {
						idx[k][i] = int32(rng.IntN(max(n, 1)))
					}
					if n == 0 {
						idx[k] = idx[k][:0]
					}
				}
				all := idx[k]
				if all == nil {
					all = make([]int32, n)
					for i := range all {
						all[i] = int32(i)
					}
				}
				w, err := Take(mem, parts[k], all)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, w)
			}
			wantArr, err := array.Concatenate(want, mem)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Gather(mem, parts, idx)
			if err != nil {
				t.Fatalf("%s: %v", dt, err)
			}
			if !array.ApproxEqual(got, wantArr, array.WithNaNsEqual(true)) {
				t.Fatalf("%s: gathered %v, want %v", dt, got, wantArr)
			}
			if got.NullN() != wantArr.NullN() {
				t.Fatalf("%s: %d nulls, want %d", dt, got.NullN(), wantArr.NullN())
			}
			for _, a := range append(append(want, parts...), got, wantArr) {
				a.Release()
			}
		}
	}
}

func TestGatherErrors(t *testing.T) {
	mem := memory.NewGoAllocator()
	b := array.NewInt64Builder(mem)
	b.Append(1)
	i64 := b.NewArray()
	s := array.NewStringBuilder(mem)
	s.Append("x")
	str := s.NewArray()
	if _, err := Gather(mem, []arrow.Array{i64, str}, [][]int32{nil, nil}); err == nil {
		t.Fatal("gathered arrays of two types")
	}
	if _, err := Gather(mem, []arrow.Array{i64}, nil); err == nil {
		t.Fatal("gathered with no index lists")
	}
}
