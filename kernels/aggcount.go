package kernels

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// countAcc is count(*) (star) or count(x): one int64 counter per group.
// Invariant: len(counts) is the number of groups.
type countAcc struct {
	star    bool
	argType arrow.DataType // nil for count(*)
	counts  []int64
	valid   validRows
}

var aggInt64 = arrow.PrimitiveTypes.Int64

func (a *countAcc) ResultType() arrow.DataType { return aggInt64 }

func (a *countAcc) StateFields() []arrow.Field {
	return []arrow.Field{{Name: "count", Type: aggInt64}}
}

func (a *countAcc) Grow(groups int) { a.counts = growZero(a.counts, groups) }

func (a *countAcc) Update(args []arrow.Array, sel []int32, gids []uint32) error {
	if a.star {
		if err := checkArgs("count(*)", nil, args, sel, gids); err != nil {
			return err
		}
		countRows(a.counts, gids)
		return nil
	}
	if err := checkArgs("count", []arrow.DataType{a.argType}, args, sel, gids); err != nil {
		return err
	}
	_, gids = a.valid.filter(args[0], sel, gids)
	countRows(a.counts, gids)
	return nil
}

// countRows adds one to the counter of every group id: the whole of
// count(*), and of count(x) once null rows are filtered out.
func countRows(counts []int64, gids []uint32) {
	for _, g := range gids {
		counts[g]++
	}
}

func (a *countAcc) Merge(state []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs("count: merge", []arrow.DataType{aggInt64}, state, sel, gids); err != nil {
		return err
	}
	sel, gids = a.valid.filter(state[0], sel, gids)
	addInt64s(a.counts, arrow.GetValues[int64](state[0].Data(), 1), sel, gids)
	return nil
}

// addInt64s adds vals[row] to acc[group] for every selected row, without
// overflow checks: counts of rows cannot overflow.
func addInt64s(acc []int64, vals []int64, sel []int32, gids []uint32) {
	if sel == nil {
		vals = vals[:len(gids)]
		for k, g := range gids {
			acc[g] += vals[k]
		}
		return
	}
	for k, g := range gids {
		acc[g] += vals[sel[k]]
	}
}

func (a *countAcc) ExportState(mem memory.Allocator) []arrow.Array {
	return []arrow.Array{a.Finish(mem)}
}

func (a *countAcc) Finish(mem memory.Allocator) arrow.Array {
	return newFixedArray(mem, aggInt64, a.counts, nil)
}

func (a *countAcc) Reset() { a.counts = a.counts[:0] }

func (a *countAcc) SizeBytes() int64 { return int64(cap(a.counts))*8 + a.valid.sizeBytes() }
