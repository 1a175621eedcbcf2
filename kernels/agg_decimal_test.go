package kernels

import (
	"math/big"
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// SUM and AVG over DECIMAL against math/big, through Update and through
// ExportState/Merge (two partial accumulators merged into a third), with
// values near 38 digits so that running sums overflow to NULL.
func TestDecimalSumAvgMatchesBig(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(5))
	compared, overflowed := 0, 0
	for iter := 0; iter < 60; iter++ {
		p, s := randDecType(rng)
		big38 := iter%4 == 0 // positive values of 38 digits: running sums overflow
		if big38 {
			p = 38
		}
		dt := &arrow.Decimal128Type{Precision: int32(p), Scale: int32(s)}
		const rows, groups = 300, 7
		vals := make([]*big.Int, rows)
		gids := make([]uint32, rows)
		for r := range vals {
			if rng.Intn(8) > 0 {
				vals[r] = randDecimal(rng, p, s)
				if big38 {
					vals[r].Abs(vals[r])
				}
			}
			gids[r] = uint32(rng.Intn(groups))
		}
		col := decArray(mem, p, s, vals)
		// The reference: exact sums per group; NULL once a running sum (in
		// row order) leaves 38 digits.
		limit := bigPow10(38)
		sums := make([]*big.Int, groups)
		counts := make([]int64, groups)
		ovf := make([]bool, groups)
		for g := range sums {
			sums[g] = new(big.Int)
		}
		for r, v := range vals {
			if v == nil {
				continue
			}
			g := gids[r]
			sums[g].Add(sums[g], v)
			counts[g]++
			if new(big.Int).Abs(sums[g]).Cmp(limit) >= 0 {
				ovf[g] = true
			}
		}
		for _, f := range []AggFunc{AggSum, AggAvg} {
			direct, err := NewAccumulator(f, []arrow.DataType{dt})
			if err != nil {
				t.Fatal(err)
			}
			direct.Grow(groups)
			if err := direct.Update([]arrow.Array{col}, nil, gids); err != nil {
				t.Fatal(err)
			}
			// Two partials over the halves, merged.
			half := rows / 2
			merged, _ := NewAccumulator(f, []arrow.DataType{dt})
			merged.Grow(groups)
			for _, part := range [][2]int{{0, half}, {half, rows}} {
				acc, _ := NewAccumulator(f, []arrow.DataType{dt})
				acc.Grow(groups)
				sel := make([]int32, 0, part[1]-part[0])
				for r := part[0]; r < part[1]; r++ {
					sel = append(sel, int32(r))
				}
				if err := acc.Update([]arrow.Array{col}, sel, gids[part[0]:part[1]]); err != nil {
					t.Fatal(err)
				}
				state := acc.ExportState(mem)
				ident := make([]uint32, groups)
				for g := range ident {
					ident[g] = uint32(g)
				}
				if err := merged.Merge(state, nil, ident); err != nil {
					t.Fatal(err)
				}
				for _, a := range state {
					a.Release()
				}
			}
			for name, acc := range map[string]Accumulator{"update": direct, "merge": merged} {
				res := acc.Finish(mem)
				d := res.(*array.Decimal128)
				rt := d.DataType().(*arrow.Decimal128Type)
				wantType := &arrow.Decimal128Type{Precision: 38, Scale: int32(s)}
				if f == AggAvg {
					wantType.Scale = int32(max(s, 6))
				}
				if !arrow.TypeEqual(rt, wantType) {
					t.Fatalf("%s over %s: type %s, want %s", f, dt, rt, wantType)
				}
				for g := 0; g < groups; g++ {
					var want *big.Int
					fits := new(big.Int).Abs(sums[g]).Cmp(limit) < 0
					if counts[g] > 0 && (!ovf[g] || name == "merge" && fits) {
						want = sums[g]
						if f == AggAvg {
							want = refFit(refRound38to(ratOf(sums[g], s), counts[g], int(rt.Scale)), 38)
						}
					}
					// Merged, the running sums are others (per partial, then
					// the partials' sum): where one of them overflows the
					// result is NULL; where it is not NULL it is exact.
					if name == "merge" && d.IsNull(g) {
						continue
					}
					var got *big.Int
					if d.IsValid(g) {
						got = d.Value(g).BigInt()
					}
					if got != nil {
						compared++
					} else if counts[g] > 0 {
						overflowed++
					}
					if (got == nil) != (want == nil) || got != nil && got.Cmp(want) != 0 {
						t.Fatalf("%s %s over %s, group %d: %s, want %s", name, f, dt, g, fmtUnscaled(got, int(rt.Scale)), fmtUnscaled(want, int(rt.Scale)))
					}
				}
				res.Release()
			}
		}
		col.Release()
	}
	if compared < 1000 || overflowed == 0 {
		t.Fatalf("%d results compared, %d overflowed: the inputs do not exercise the accumulators", compared, overflowed)
	}
}

// refRound38to is sum / count as Flink's DECIMAL division computes it, at
// scale s.
func refRound38to(sum *big.Rat, count int64, s int) *big.Int {
	return refRound(refRound38(new(big.Rat).Quo(sum, big.NewRat(count, 1))), s)
}
