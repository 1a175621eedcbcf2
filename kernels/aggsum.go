package kernels

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var aggFloat64 = arrow.PrimitiveTypes.Float64

func newSumAcc(dt arrow.DataType) Accumulator {
	switch dt.ID() {
	case arrow.INT8:
		return &sumIntAcc[int8]{argType: dt}
	case arrow.INT16:
		return &sumIntAcc[int16]{argType: dt}
	case arrow.INT32:
		return &sumIntAcc[int32]{argType: dt}
	case arrow.INT64:
		return &sumIntAcc[int64]{argType: dt}
	case arrow.UINT8:
		return &sumIntAcc[uint8]{argType: dt}
	case arrow.UINT16:
		return &sumIntAcc[uint16]{argType: dt}
	case arrow.UINT32:
		return &sumIntAcc[uint32]{argType: dt}
	case arrow.UINT64:
		return &sumIntAcc[uint64]{argType: dt, wide: math.MinInt64}
	case arrow.FLOAT32:
		return &sumFloatAcc[float32]{argType: dt}
	case arrow.FLOAT64:
		return &sumFloatAcc[float64]{argType: dt}
	case arrow.DECIMAL128:
		return newSumDecimalAcc(dt.(*arrow.Decimal128Type))
	}
	return nil
}

// sumIntAcc is sum(x) over integers into int64 sums. seen[g] records
// whether group g had a non-null x (else its sum is null).
// Invariant: len(sums) == len(seen) == number of groups.
type sumIntAcc[T integer] struct {
	argType arrow.DataType
	// wide is math.MinInt64 when T is uint64, whose values above MaxInt64
	// overflow an int64 sum on their own; 0 otherwise.
	wide  int64
	sums  []int64
	seen  []bool
	valid validRows
}

func (a *sumIntAcc[T]) ResultType() arrow.DataType { return aggInt64 }

func (a *sumIntAcc[T]) StateFields() []arrow.Field {
	return []arrow.Field{{Name: "sum", Type: aggInt64, Nullable: true}}
}

func (a *sumIntAcc[T]) Grow(groups int) {
	a.sums = growZero(a.sums, groups)
	a.seen = growZero(a.seen, groups)
}

func (a *sumIntAcc[T]) Update(args []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs("sum", []arrow.DataType{a.argType}, args, sel, gids); err != nil {
		return err
	}
	sel, gids = a.valid.filter(args[0], sel, gids)
	vals := arrow.GetValues[T](args[0].Data(), 1)
	if sumInts(a.sums, a.seen, vals, sel, gids, a.wide) < 0 {
		return sumOverflow(a.sums, vals, sel, gids, a.wide)
	}
	return nil
}

func (a *sumIntAcc[T]) Merge(state []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs("sum: merge", []arrow.DataType{aggInt64}, state, sel, gids); err != nil {
		return err
	}
	sel, gids = a.valid.filter(state[0], sel, gids)
	vals := arrow.GetValues[int64](state[0].Data(), 1)
	if sumInts(a.sums, a.seen, vals, sel, gids, 0) < 0 {
		return sumOverflow(a.sums, vals, sel, gids, 0)
	}
	return nil
}

// sumInts adds the selected values to their groups' sums with wrapping
// arithmetic and returns a word whose sign bit is set if any addition
// overflowed: for r = s + v, overflow happened exactly when s and v have
// the same sign and r the other one, i.e. (s^r)&(v^r) < 0. OR-ing that into
// one word keeps the loop free of branches; the caller checks once.
func sumInts[T integer](sums []int64, seen []bool, vals []T, sel []int32, gids []uint32, wide int64) int64 {
	var ovf int64
	if sel == nil {
		vals = vals[:len(gids)]
		for k, g := range gids {
			v := int64(vals[k])
			s := sums[g]
			r := s + v
			ovf |= (s^r)&(v^r) | v&wide
			sums[g] = r
			seen[g] = true
		}
		return ovf
	}
	for k, g := range gids {
		v := int64(vals[sel[k]])
		s := sums[g]
		r := s + v
		ovf |= (s^r)&(v^r) | v&wide
		sums[g] = r
		seen[g] = true
	}
	return ovf
}

// sumOverflow runs after sumInts reported an overflow: it undoes the batch
// (wrapping subtraction restores every sum exactly), then adds again with
// a check per row to name the first group that overflows.
func sumOverflow[T integer](sums []int64, vals []T, sel []int32, gids []uint32, wide int64) error {
	for k, g := range gids {
		sums[g] -= int64(vals[selRow(sel, k)])
	}
	for k, g := range gids {
		v := int64(vals[selRow(sel, k)])
		s := sums[g]
		r := s + v
		if (s^r)&(v^r)|v&wide < 0 {
			return fmt.Errorf("sum overflows int64 in group %d", g)
		}
		sums[g] = r
	}
	panic("BUG: sum overflow reported but not found")
}

func (a *sumIntAcc[T]) ExportState(mem memory.Allocator) []arrow.Array {
	return []arrow.Array{a.Finish(mem)}
}

func (a *sumIntAcc[T]) Finish(mem memory.Allocator) arrow.Array {
	return newFixedArray(mem, aggInt64, a.sums, a.seen)
}

func (a *sumIntAcc[T]) Reset() { a.sums, a.seen = a.sums[:0], a.seen[:0] }

func (a *sumIntAcc[T]) SizeBytes() int64 {
	return int64(cap(a.sums))*8 + int64(cap(a.seen)) + a.valid.sizeBytes()
}

// sumFloatAcc is sum(x) over floats into float64 sums.
// Invariant: len(sums) == len(seen) == number of groups.
type sumFloatAcc[F float32 | float64] struct {
	argType arrow.DataType
	sums    []float64
	seen    []bool
	valid   validRows
}

func (a *sumFloatAcc[F]) ResultType() arrow.DataType { return aggFloat64 }

func (a *sumFloatAcc[F]) StateFields() []arrow.Field {
	return []arrow.Field{{Name: "sum", Type: aggFloat64, Nullable: true}}
}

func (a *sumFloatAcc[F]) Grow(groups int) {
	a.sums = growZero(a.sums, groups)
	a.seen = growZero(a.seen, groups)
}

func (a *sumFloatAcc[F]) Update(args []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs("sum", []arrow.DataType{a.argType}, args, sel, gids); err != nil {
		return err
	}
	sel, gids = a.valid.filter(args[0], sel, gids)
	sumFloats(a.sums, a.seen, arrow.GetValues[F](args[0].Data(), 1), sel, gids)
	return nil
}

func (a *sumFloatAcc[F]) Merge(state []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs("sum: merge", []arrow.DataType{aggFloat64}, state, sel, gids); err != nil {
		return err
	}
	sel, gids = a.valid.filter(state[0], sel, gids)
	sumFloats(a.sums, a.seen, arrow.GetValues[float64](state[0].Data(), 1), sel, gids)
	return nil
}

func sumFloats[F float32 | float64](sums []float64, seen []bool, vals []F, sel []int32, gids []uint32) {
	if sel == nil {
		vals = vals[:len(gids)]
		for k, g := range gids {
			sums[g] += float64(vals[k])
			seen[g] = true
		}
		return
	}
	for k, g := range gids {
		sums[g] += float64(vals[sel[k]])
		seen[g] = true
	}
}

func (a *sumFloatAcc[F]) ExportState(mem memory.Allocator) []arrow.Array {
	return []arrow.Array{a.Finish(mem)}
}

func (a *sumFloatAcc[F]) Finish(mem memory.Allocator) arrow.Array {
	return newFixedArray(mem, aggFloat64, a.sums, a.seen)
}

func (a *sumFloatAcc[F]) Reset() { a.sums, a.seen = a.sums[:0], a.seen[:0] }

func (a *sumFloatAcc[F]) SizeBytes() int64 {
	return int64(cap(a.sums))*8 + int64(cap(a.seen)) + a.valid.sizeBytes()
}
