package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/internal/testutil"
)

func TestPartitionerMatchesRowReference(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(3, 9))
	for _, n := range []int{1, 7, 1024, 65536} {
		for _, par := range []int{1, 3, 128} {
			for _, useSel := range []bool{false, true} {
				keys := []arrow.Array{
					randomArray(t, mem, rng, arrow.PrimitiveTypes.Int64, n, 1, 0.1),
					randomArray(t, mem, rng, arrow.BinaryTypes.String, n, 2, 0.1),
				}
				p, err := NewPartitioner(128, par)
				if err != nil {
					t.Fatal(err)
				}
				sel := exprSel(rng, n, useSel)
				dest, counts, err := p.Assign(keys, sel)
				if err != nil {
					t.Fatal(err)
				}
				outs := make([][]int32, par)
				p.Split(sel, outs)
				want := make([][]int32, par)
				k := 0
				forSel(sel, n, func(r int32) {
					h := CombineHash(refHash(keys[0], int(r)), refHash(keys[1], int(r)))
					kg := int((h >> 32) * 128 >> 32)
					d := kg * par / 128
					if int(dest[k]) != d {
						t.Fatalf("n=%d par=%d row %d: output %d, want %d", n, par, r, dest[k], d)
					}
					want[d] = append(want[d], r)
					k++
				})
				for d := range want {
					if len(want[d]) != counts[d] || fmt.Sprint(want[d]) != fmt.Sprint(outs[d]) {
						t.Fatalf("n=%d par=%d output %d: got %d rows (count %d), want %d", n, par, d, len(outs[d]), counts[d], len(want[d]))
					}
				}
				for _, c := range keys {
					c.Release()
				}
			}
		}
	}
	if _, err := NewPartitioner(4, 5); err == nil {
		t.Fatal("parallelism above max parallelism must fail")
	}
}
