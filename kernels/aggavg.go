package kernels

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func newAvgAcc(dt arrow.DataType) Accumulator {
	switch dt.ID() {
	case arrow.INT8:
		return &avgAcc[int8]{argType: dt}
	case arrow.INT16:
		return &avgAcc[int16]{argType: dt}
	case arrow.INT32:
		return &avgAcc[int32]{argType: dt}
	case arrow.INT64:
		return &avgAcc[int64]{argType: dt}
	case arrow.UINT8:
		return &avgAcc[uint8]{argType: dt}
	case arrow.UINT16:
		return &avgAcc[uint16]{argType: dt}
	case arrow.UINT32:
		return &avgAcc[uint32]{argType: dt}
	case arrow.UINT64:
		return &avgAcc[uint64]{argType: dt}
	case arrow.FLOAT32:
		return &avgAcc[float32]{argType: dt}
	case arrow.FLOAT64:
		return &avgAcc[float64]{argType: dt}
	case arrow.DECIMAL128:
		return newAvgDecimalAcc(dt.(*arrow.Decimal128Type))
	}
	return nil
}

// avgAcc is avg(x): a float64 sum and an int64 count of non-null x per
// group, divided at Finish. Integer inputs are summed as float64, so the
// sum cannot overflow but loses precision beyond 2^53.
// Invariant: len(sums) == len(counts) == number of groups.
type avgAcc[T integer | float32 | float64] struct {
	argType arrow.DataType
	sums    []float64
	counts  []int64
	valid   validRows
}

func (a *avgAcc[T]) ResultType() arrow.DataType { return aggFloat64 }

func (a *avgAcc[T]) StateFields() []arrow.Field {
	return []arrow.Field{{Name: "sum", Type: aggFloat64}, {Name: "count", Type: aggInt64}}
}

func (a *avgAcc[T]) Grow(groups int) {
	a.sums = growZero(a.sums, groups)
	a.counts = growZero(a.counts, groups)
}

func (a *avgAcc[T]) Update(args []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs("avg", []arrow.DataType{a.argType}, args, sel, gids); err != nil {
		return err
	}
	sel, gids = a.valid.filter(args[0], sel, gids)
	vals := arrow.GetValues[T](args[0].Data(), 1)
	sums, counts := a.sums, a.counts
	if sel == nil {
		vals = vals[:len(gids)]
		for k, g := range gids {
			sums[g] += float64(vals[k])
			counts[g]++
		}
		return nil
	}
	for k, g := range gids {
		sums[g] += float64(vals[sel[k]])
		counts[g]++
	}
	return nil
}

func (a *avgAcc[T]) Merge(state []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs("avg: merge", []arrow.DataType{aggFloat64, aggInt64}, state, sel, gids); err != nil {
		return err
	}
	sel, gids = a.valid.filter(state[1], sel, gids)
	addFloat64s(a.sums, arrow.GetValues[float64](state[0].Data(), 1), sel, gids)
	addInt64s(a.counts, arrow.GetValues[int64](state[1].Data(), 1), sel, gids)
	return nil
}

// addFloat64s adds vals[row] to acc[group] for every selected row.
func addFloat64s(acc []float64, vals []float64, sel []int32, gids []uint32) {
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

func (a *avgAcc[T]) ExportState(mem memory.Allocator) []arrow.Array {
	return []arrow.Array{
		newFixedArray(mem, aggFloat64, a.sums, nil),
		newFixedArray(mem, aggInt64, a.counts, nil),
	}
}

func (a *avgAcc[T]) Finish(mem memory.Allocator) arrow.Array {
	avg := make([]float64, len(a.sums))
	valid := make([]bool, len(a.sums))
	for g, s := range a.sums {
		if c := a.counts[g]; c > 0 {
			avg[g], valid[g] = s/float64(c), true
		}
	}
	return newFixedArray(mem, aggFloat64, avg, valid)
}

func (a *avgAcc[T]) Reset() { a.sums, a.counts = a.sums[:0], a.counts[:0] }

func (a *avgAcc[T]) SizeBytes() int64 {
	return int64(cap(a.sums))*8 + int64(cap(a.counts))*8 + a.valid.sizeBytes()
}
