package kernels

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// SUM and AVG over DECIMAL(p, s), with Flink's result types: SUM is
// DECIMAL(38, s) (LogicalTypeMerging.findSumAggType), AVG DECIMAL(38,
// max(s, 6)) (findAvgAggType: the sum divided by the count as a
// DECIMAL(20, 0), rounded as DECIMAL division is). The running sum is a
// DECIMAL(38, s); once it needs more than 38 digits the group's result is
// NULL (Flink's DecimalData.fromBigDecimal gives null for the sum; weir
// keeps it NULL instead of restarting the sum from the next value, as
// Flink's null-skipping sum then does).

// decSumType is SUM's result type over dt.
func decSumType(dt *arrow.Decimal128Type) *arrow.Decimal128Type {
	return &arrow.Decimal128Type{Precision: maxDecimalPrecision, Scale: dt.Scale}
}

// decAvgType is AVG's result type over dt.
func decAvgType(dt *arrow.Decimal128Type) *arrow.Decimal128Type {
	return decArithType(opDiv, decSumType(dt), &arrow.Decimal128Type{Precision: 20, Scale: 0})
}

// decSumAdd is s + v, false when it leaves DECIMAL(38, _).
func decSumAdd(s, v decimal128.Num) (decimal128.Num, bool) {
	r := s.Add(v)
	if (s.HighBits()^r.HighBits())&(v.HighBits()^r.HighBits()) < 0 {
		return r, false // the 128-bit sum wrapped
	}
	_, m := magnitude(r)
	return r, m.less(pow10u128[maxDecimalPrecision])
}

// decSums is the per-group state SUM and AVG share: the running sum, the
// number of values and whether the sum overflowed.
// Invariant: len(sums) == len(counts) == len(ovf) == number of groups.
type decSums struct {
	argType arrow.DataType
	sumType *arrow.Decimal128Type
	sums    []decimal128.Num
	counts  []int64
	ovf     []bool
	valid   validRows
}

func (a *decSums) grow(groups int) {
	a.sums = growZero(a.sums, groups)
	a.counts = growZero(a.counts, groups)
	a.ovf = growZero(a.ovf, groups)
}

func (a *decSums) update(what string, args []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs(what, []arrow.DataType{a.argType}, args, sel, gids); err != nil {
		return err
	}
	sel, gids = a.valid.filter(args[0], sel, gids)
	vals := arrow.GetValues[decimal128.Num](args[0].Data(), 1)
	for k, g := range gids {
		s, ok := decSumAdd(a.sums[g], vals[selRow(sel, k)])
		a.sums[g] = s
		a.ovf[g] = a.ovf[g] || !ok
		a.counts[g]++
	}
	return nil
}

func (a *decSums) stateFields() []arrow.Field {
	return []arrow.Field{{Name: "sum", Type: a.sumType}, {Name: "count", Type: aggInt64}, {Name: "overflow", Type: aggBool}}
}

func (a *decSums) merge(what string, state []arrow.Array, sel []int32, gids []uint32) error {
	if err := checkArgs(what, []arrow.DataType{a.sumType, aggInt64, aggBool}, state, sel, gids); err != nil {
		return err
	}
	sums := arrow.GetValues[decimal128.Num](state[0].Data(), 1)
	counts := arrow.GetValues[int64](state[1].Data(), 1)
	ovf := state[2].(*array.Boolean)
	for k, g := range gids {
		i := selRow(sel, k)
		s, ok := decSumAdd(a.sums[g], sums[i])
		a.sums[g] = s
		a.ovf[g] = a.ovf[g] || !ok || ovf.IsValid(i) && ovf.Value(i)
		a.counts[g] += counts[i]
	}
	return nil
}

func (a *decSums) exportState(mem memory.Allocator) []arrow.Array {
	return []arrow.Array{
		newFixedArray(mem, a.sumType, a.sums, nil),
		newFixedArray(mem, aggInt64, a.counts, nil),
		newBoolArray(mem, a.ovf, nil),
	}
}

func (a *decSums) reset() { a.sums, a.counts, a.ovf = a.sums[:0], a.counts[:0], a.ovf[:0] }

func (a *decSums) sizeBytes() int64 {
	return int64(cap(a.sums))*16 + int64(cap(a.counts))*8 + int64(cap(a.ovf)) + a.valid.sizeBytes()
}

// sumDecimalAcc is sum(x) over decimal128.
type sumDecimalAcc struct{ decSums }

func newSumDecimalAcc(dt *arrow.Decimal128Type) *sumDecimalAcc {
	return &sumDecimalAcc{decSums{argType: dt, sumType: decSumType(dt)}}
}

func (a *sumDecimalAcc) ResultType() arrow.DataType { return a.sumType }

func (a *sumDecimalAcc) StateFields() []arrow.Field { return a.stateFields() }

func (a *sumDecimalAcc) Grow(groups int) { a.grow(groups) }

func (a *sumDecimalAcc) Update(args []arrow.Array, sel []int32, gids []uint32) error {
	return a.update("sum", args, sel, gids)
}

func (a *sumDecimalAcc) Merge(state []arrow.Array, sel []int32, gids []uint32) error {
	return a.merge("sum: merge", state, sel, gids)
}

func (a *sumDecimalAcc) ExportState(mem memory.Allocator) []arrow.Array { return a.exportState(mem) }

func (a *sumDecimalAcc) Finish(mem memory.Allocator) arrow.Array {
	valid := make([]bool, len(a.sums))
	for g := range valid {
		valid[g] = a.counts[g] > 0 && !a.ovf[g]
	}
	return newFixedArray(mem, a.sumType, a.sums, valid)
}

func (a *sumDecimalAcc) Reset() { a.reset() }

func (a *sumDecimalAcc) SizeBytes() int64 { return a.sizeBytes() }

// avgDecimalAcc is avg(x) over decimal128.
type avgDecimalAcc struct {
	decSums
	res *arrow.Decimal128Type
}

func newAvgDecimalAcc(dt *arrow.Decimal128Type) *avgDecimalAcc {
	return &avgDecimalAcc{decSums: decSums{argType: dt, sumType: decSumType(dt)}, res: decAvgType(dt)}
}

func (a *avgDecimalAcc) ResultType() arrow.DataType { return a.res }

func (a *avgDecimalAcc) StateFields() []arrow.Field { return a.stateFields() }

func (a *avgDecimalAcc) Grow(groups int) { a.grow(groups) }

func (a *avgDecimalAcc) Update(args []arrow.Array, sel []int32, gids []uint32) error {
	return a.update("avg", args, sel, gids)
}

func (a *avgDecimalAcc) Merge(state []arrow.Array, sel []int32, gids []uint32) error {
	return a.merge("avg: merge", state, sel, gids)
}

func (a *avgDecimalAcc) ExportState(mem memory.Allocator) []arrow.Array { return a.exportState(mem) }

func (a *avgDecimalAcc) Finish(mem memory.Allocator) arrow.Array {
	avg := make([]decimal128.Num, len(a.sums))
	valid := make([]bool, len(a.sums))
	var z decBig
	for g, s := range a.sums {
		if c := a.counts[g]; c > 0 && !a.ovf[g] {
			avg[g], valid[g] = z.decDiv(s, a.sumType.Scale, decimal128.FromI64(c), 0, a.res.Scale, a.res.Precision)
		}
	}
	return newFixedArray(mem, a.res, avg, valid)
}

func (a *avgDecimalAcc) Reset() { a.reset() }

func (a *avgDecimalAcc) SizeBytes() int64 { return a.sizeBytes() }
