package changelog

import (
	"fmt"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/kernels"
)

// aggOutRow is one row of a flush's output as one aggregate sees it: the
// group, and whether the row carries the group's last emitted result (-U,
// -D) or its current one (+I, +U).
type aggOutRow struct {
	gid uint32
	old bool
}

// aggAcc is one aggregate's retractable state for every group: Go slices
// indexed by group id, plus the result last emitted for each group, so that
// a flush can tell whether the result changed and emit the old row.
type aggAcc interface {
	// grow makes room for group ids below groups (new groups empty).
	grow(groups int)
	// update adds (retract false) or removes the selected rows' arguments
	// to or from their groups. sel is never nil; gids[k] is the group of
	// row sel[k].
	update(args []arrow.Array, sel []int32, gids []uint32, retract bool) error
	// settle finishes a batch (MIN/MAX look for a new extreme in groups
	// whose extreme was retracted).
	settle()
	// changed reports whether group g's current result differs from its
	// last emitted one.
	changed(g uint32) bool
	// commit records group g's current result as emitted.
	commit(g uint32)
	// clear forgets group g: its state and its emitted result.
	clear(g uint32)
	// build returns the result column of the given output rows.
	build(mem memory.Allocator, rows []aggOutRow) arrow.Array
	// slots are the snapshot columns of the per-group state, named after
	// the aggregate's output column; the last is the emitted result, the
	// others the partial state a local phase emits (none for the
	// aggregates without a two-phase form).
	slots(name string) []aggSlot
	// merge adds partial states (columns as slots but the last, one row
	// per partial group) into groups gids.
	merge(cols []arrow.Array, sel []int32, gids []uint32) error
	sizeBytes() int64
}

// aggValueUser is implemented by the aggregates that read a multiset of
// values per group (COUNT DISTINCT; MIN/MAX over a retracting input, for
// which usesValues is true): the aggregates over one column share an
// aggValueSet, which takes their rows instead of update.
type aggValueUser interface {
	usesValues() bool
	// bindValues gives the aggregate its value set's pairs.
	bindValues(p *aggPairs)
	// updateValues follows a batch of rows into the value set: pids[k] is
	// the pair of row sel[k] of vals in group gids[k] (kernels.NoGroup for
	// a retraction of a value the group lacks), trans[k] +1 when the pair
	// came alive, -1 when it died, else 0.
	updateValues(vals arrow.Array, sel []int32, gids []uint32, pids []uint32, trans []int8, retract bool)
	// remapValues follows a compaction of the pairs (remap[old] = new id
	// or -1; live pairs remain).
	remapValues(remap []int32, live int)
}

// newAggAcc returns the accumulator of f over arguments of types args,
// with the result type kernels gives (res).
func newAggAcc(f kernels.AggFunc, args []arrow.DataType, res arrow.DataType, retracting bool) (aggAcc, error) {
	switch f {
	case kernels.AggCountStar:
		return newAggCount(true), nil
	case kernels.AggCount:
		return newAggCount(false), nil
	case kernels.AggCountDistinct:
		return newAggDistinct(args[0])
	case kernels.AggMin, kernels.AggMax:
		return newAggMinMax(args[0], f == kernels.AggMax, retracting)
	case kernels.AggSum, kernels.AggAvg:
		avg := f == kernels.AggAvg
		switch args[0].ID() {
		case arrow.INT8:
			return newAggNum[int8](avg, false), nil
		case arrow.INT16:
			return newAggNum[int16](avg, false), nil
		case arrow.INT32:
			return newAggNum[int32](avg, false), nil
		case arrow.INT64:
			return newAggNum[int64](avg, false), nil
		case arrow.UINT8:
			return newAggNum[uint8](avg, false), nil
		case arrow.UINT16:
			return newAggNum[uint16](avg, false), nil
		case arrow.UINT32:
			return newAggNum[uint32](avg, false), nil
		case arrow.UINT64:
			return newAggNum[uint64](avg, false), nil
		case arrow.FLOAT32:
			return newAggNum[float32](avg, true), nil
		case arrow.FLOAT64:
			return newAggNum[float64](avg, true), nil
		case arrow.DECIMAL128:
			return newAggDecimal(args[0].(*arrow.Decimal128Type), res.(*arrow.Decimal128Type), avg), nil
		}
	}
	return nil, fmt.Errorf("%s over %v is not supported over a changelog", f, args)
}

// aggGrow extends s with zero values to length n.
func aggGrow[T any](s []T, n int) []T {
	if n <= len(s) {
		return s
	}
	return append(s, make([]T, n-len(s))...)
}

// aggResult keeps the last emitted result of every group, of Go type R,
// and compares it with the current one (cur).
type aggResult[R comparable] struct {
	codec aggCodec[R]
	cur   func(g uint32) (R, bool)
	em    []R
	emOK  []bool
	vals  []R    // scratch of build
	valid []bool // scratch of build
}

func (r *aggResult[R]) growResult(n int) {
	r.em, r.emOK = aggGrow(r.em, n), aggGrow(r.emOK, n)
}

func (r *aggResult[R]) changed(g uint32) bool {
	v, ok := r.cur(g)
	if ok != r.emOK[g] {
		return true
	}
	return ok && !r.codec.eq(v, r.em[g])
}

func (r *aggResult[R]) commit(g uint32) { r.em[g], r.emOK[g] = r.cur(g) }

func (r *aggResult[R]) clearResult(g uint32) {
	var z R
	r.em[g], r.emOK[g] = z, false
}

func (r *aggResult[R]) build(mem memory.Allocator, rows []aggOutRow) arrow.Array {
	vals, valid := r.vals[:0], r.valid[:0]
	for _, row := range rows {
		if row.old {
			vals, valid = append(vals, r.em[row.gid]), append(valid, r.emOK[row.gid])
			continue
		}
		v, ok := r.cur(row.gid)
		vals, valid = append(vals, v), append(valid, ok)
	}
	r.vals, r.valid = vals, valid
	return r.codec.build(mem, vals, valid)
}

func (r *aggResult[R]) resultSlot(name string) aggSlot {
	return aggSliceSlot[R]{name: name + ".emitted", codec: r.codec, vals: &r.em, valid: &r.emOK}
}

func (r *aggResult[R]) resultBytes() int64 {
	var z R
	return int64(cap(r.em))*int64(aggSizeof(z)) + int64(cap(r.emOK))
}

// aggSizeof approximates the bytes of a value in a slice.
func aggSizeof(v any) int {
	switch v.(type) {
	case int8, uint8, bool:
		return 1
	case int16, uint16:
		return 2
	case int32, uint32, float32:
		return 4
	case decimal128.Num:
		return 16
	case decimal256.Num:
		return 32
	case string:
		return 16
	}
	return 8
}

// aggValid narrows a selection to the rows where a column is not null,
// into scratch it reuses.
type aggValid struct {
	sel  []int32
	gids []uint32
}

func (f *aggValid) filter(col arrow.Array, sel []int32, gids []uint32) ([]int32, []uint32) {
	if col.NullN() == 0 {
		return sel, gids
	}
	outSel, outGids := f.sel[:0], f.gids[:0]
	for k, i := range sel {
		if col.IsValid(int(i)) {
			outSel, outGids = append(outSel, i), append(outGids, gids[k])
		}
	}
	f.sel, f.gids = outSel, outGids
	return outSel, outGids
}

// aggCount is COUNT(*) (star) or COUNT(x).
type aggCount struct {
	aggResult[int64]
	star  bool
	n     []int64
	valid aggValid
}

func newAggCount(star bool) *aggCount {
	a := &aggCount{star: star}
	a.codec = aggInt64Codec
	a.cur = func(g uint32) (int64, bool) { return a.n[g], true }
	return a
}

func (a *aggCount) grow(n int) { a.n = aggGrow(a.n, n); a.growResult(n) }

func (a *aggCount) update(args []arrow.Array, sel []int32, gids []uint32, retract bool) error {
	if !a.star {
		_, gids = a.valid.filter(args[0], sel, gids)
	}
	d := int64(1)
	if retract {
		d = -1
	}
	n := a.n
	for _, g := range gids {
		n[g] += d
	}
	return nil
}

func (a *aggCount) settle() {}

func (a *aggCount) merge(cols []arrow.Array, sel []int32, gids []uint32) error {
	c := arrow.GetValues[int64](cols[0].Data(), 1)
	for k, g := range gids {
		a.n[g] += c[sel[k]]
	}
	return nil
}

func (a *aggCount) clear(g uint32) { a.n[g] = 0; a.clearResult(g) }

func (a *aggCount) slots(name string) []aggSlot {
	return []aggSlot{aggSliceSlot[int64]{name: name + ".count", codec: aggInt64Codec, vals: &a.n}, a.resultSlot(name)}
}

func (a *aggCount) sizeBytes() int64 { return int64(cap(a.n))*8 + a.resultBytes() }

// aggNumber is the argument type of SUM and AVG over integers and floats.
type aggNumber interface {
	int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64
}

// aggNum is SUM or AVG over integers (SUM into an int64 whose overflow is
// an error) or floats (float64). nn counts the non-null values of each
// group: a group without any has a NULL result.
type aggNum[T aggNumber] struct {
	avg, float bool
	// delta marks the local phase of a two-phase aggregate, whose counts
	// are deltas: a count of 0 does not mean a sum of 0 there.
	delta    bool
	aggRes64 aggResult[int64]
	aggResF  aggResult[float64]
	isum     []int64
	fsum     []float64
	nn       []int64
	valid    aggValid
}

func newAggNum[T aggNumber](avg, float bool) aggAcc {
	a := &aggNum[T]{avg: avg, float: float}
	a.aggRes64.codec, a.aggResF.codec = aggInt64Codec, aggFloat64Codec
	a.aggRes64.cur = func(g uint32) (int64, bool) { return a.isum[g], a.nn[g] > 0 }
	a.aggResF.cur = func(g uint32) (float64, bool) {
		if a.nn[g] == 0 {
			return 0, false
		}
		if !a.avg {
			return a.fsum[g], true
		}
		return a.fsum[g] / float64(a.nn[g]), true
	}
	return a
}

// intSum reports whether the state is an exact int64 sum (SUM over
// integers); AVG and float sums keep a float64.
func (a *aggNum[T]) intSum() bool { return !a.avg && !a.float }

func (a *aggNum[T]) grow(n int) {
	a.nn = aggGrow(a.nn, n)
	if a.intSum() {
		a.isum = aggGrow(a.isum, n)
		a.aggRes64.growResult(n)
	} else {
		a.fsum = aggGrow(a.fsum, n)
		a.aggResF.growResult(n)
	}
}

func (a *aggNum[T]) update(args []arrow.Array, sel []int32, gids []uint32, retract bool) error {
	sel, gids = a.valid.filter(args[0], sel, gids)
	vals := arrow.GetValues[T](args[0].Data(), 1)
	d := int64(1)
	if retract {
		d = -1
	}
	nn := a.nn
	if !a.intSum() {
		sums := a.fsum
		for k, g := range gids {
			v := float64(vals[sel[k]])
			if retract {
				v = -v
			}
			sums[g] += v
			nn[g] += d
			if nn[g] == 0 && !a.delta {
				sums[g] = 0 // no rounding residue in an emptied group
			}
		}
		return nil
	}
	sums := a.isum
	for k, g := range gids {
		v := vals[sel[k]]
		x := int64(v)
		if x < 0 && v > 0 {
			return fmt.Errorf("sum: value %v overflows BIGINT", v)
		}
		s := sums[g]
		var r int64
		if retract {
			r = s - x
			if (s^x)&(s^r) < 0 {
				return fmt.Errorf("sum: retracting %d from %d overflows BIGINT", x, s)
			}
		} else {
			r = s + x
			if (s^r)&(x^r) < 0 {
				return fmt.Errorf("sum: %d + %d overflows BIGINT", s, x)
			}
		}
		sums[g] = r
		nn[g] += d
	}
	return nil
}

func (a *aggNum[T]) settle() {}

func (a *aggNum[T]) setDelta() { a.delta = true }

func (a *aggNum[T]) merge(cols []arrow.Array, sel []int32, gids []uint32) error {
	nn := arrow.GetValues[int64](cols[0].Data(), 1)
	for k, g := range gids {
		a.nn[g] += nn[sel[k]]
	}
	if !a.intSum() {
		sums := arrow.GetValues[float64](cols[1].Data(), 1)
		for k, g := range gids {
			a.fsum[g] += sums[sel[k]]
			if a.nn[g] == 0 {
				a.fsum[g] = 0
			}
		}
		return nil
	}
	sums := arrow.GetValues[int64](cols[1].Data(), 1)
	for k, g := range gids {
		s, x := a.isum[g], sums[sel[k]]
		r := s + x
		if (s^r)&(x^r) < 0 {
			return fmt.Errorf("sum: %d + %d overflows BIGINT", s, x)
		}
		a.isum[g] = r
	}
	return nil
}

func (a *aggNum[T]) changed(g uint32) bool {
	if a.intSum() {
		return a.aggRes64.changed(g)
	}
	return a.aggResF.changed(g)
}

func (a *aggNum[T]) commit(g uint32) {
	if a.intSum() {
		a.aggRes64.commit(g)
	} else {
		a.aggResF.commit(g)
	}
}

func (a *aggNum[T]) clear(g uint32) {
	a.nn[g] = 0
	if a.intSum() {
		a.isum[g] = 0
		a.aggRes64.clearResult(g)
	} else {
		a.fsum[g] = 0
		a.aggResF.clearResult(g)
	}
}

func (a *aggNum[T]) build(mem memory.Allocator, rows []aggOutRow) arrow.Array {
	if a.intSum() {
		return a.aggRes64.build(mem, rows)
	}
	return a.aggResF.build(mem, rows)
}

func (a *aggNum[T]) slots(name string) []aggSlot {
	s := []aggSlot{aggSliceSlot[int64]{name: name + ".count", codec: aggInt64Codec, vals: &a.nn}}
	if a.intSum() {
		return append(s, aggSliceSlot[int64]{name: name + ".sum", codec: aggInt64Codec, vals: &a.isum}, a.aggRes64.resultSlot(name))
	}
	return append(s, aggSliceSlot[float64]{name: name + ".sum", codec: aggFloat64Codec, vals: &a.fsum}, a.aggResF.resultSlot(name))
}

func (a *aggNum[T]) sizeBytes() int64 {
	return int64(cap(a.nn))*8 + int64(cap(a.isum))*8 + int64(cap(a.fsum))*8 + a.aggRes64.resultBytes() + a.aggResF.resultBytes()
}

// aggDecimal is SUM or AVG over decimal128(p, s). The running sum is exact
// in 256 bits (a retraction can bring a sum that left 38 digits back); a
// result that needs more than 38 digits is NULL, as kernels' is.
type aggDecimal struct {
	aggResult[decimal128.Num]
	avg        bool
	scale      int32 // the argument's scale
	res        *arrow.Decimal128Type
	sum        []decimal256.Num
	nn         []int64
	valid      aggValid
	max256     decimal256.Num
	scaleUp    *big.Int // 10^(res.Scale - scale), for AVG
	num, q, r2 big.Int  // scratch of AVG
}

func newAggDecimal(arg, res *arrow.Decimal128Type, avg bool) *aggDecimal {
	a := &aggDecimal{avg: avg, scale: arg.Scale, res: res, max256: decimal256.GetMaxValue(38)}
	a.scaleUp = new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(res.Scale-arg.Scale)), nil)
	a.codec = aggDec128Codec(res)
	a.cur = a.current
	return a
}

func (a *aggDecimal) current(g uint32) (decimal128.Num, bool) {
	n := a.nn[g]
	if n == 0 {
		return decimal128.Num{}, false
	}
	s := a.sum[g]
	if !a.avg {
		if s.Abs().Cmp(a.max256) > 0 {
			return decimal128.Num{}, false
		}
		w := s.Array()
		return decimal128.New(int64(w[1]), w[0]), true
	}
	// HALF_UP: round(sum * 10^(rs-s) / n), away from zero on ties.
	a.num.Mul(s.BigInt(), a.scaleUp)
	neg := a.num.Sign() < 0
	a.num.Abs(&a.num)
	den := big.NewInt(n)
	a.q.QuoRem(&a.num, den, &a.r2)
	a.r2.Lsh(&a.r2, 1)
	if a.r2.Cmp(den) >= 0 {
		a.q.Add(&a.q, big.NewInt(1))
	}
	if neg {
		a.q.Neg(&a.q)
	}
	if a.q.CmpAbs(decimal128.GetMaxValue(a.res.Precision).BigInt()) > 0 {
		return decimal128.Num{}, false
	}
	return decimal128.FromBigInt(&a.q), true
}

func (a *aggDecimal) grow(n int) {
	a.sum, a.nn = aggGrow(a.sum, n), aggGrow(a.nn, n)
	a.growResult(n)
}

func (a *aggDecimal) update(args []arrow.Array, sel []int32, gids []uint32, retract bool) error {
	sel, gids = a.valid.filter(args[0], sel, gids)
	vals := arrow.GetValues[decimal128.Num](args[0].Data(), 1)
	for k, g := range gids {
		v := decimal256.FromDecimal128(vals[sel[k]])
		if retract {
			a.sum[g] = a.sum[g].Sub(v)
			a.nn[g]--
		} else {
			a.sum[g] = a.sum[g].Add(v)
			a.nn[g]++
		}
	}
	return nil
}

func (a *aggDecimal) settle() {}

func (a *aggDecimal) merge(cols []arrow.Array, sel []int32, gids []uint32) error {
	nn := arrow.GetValues[int64](cols[0].Data(), 1)
	sums := arrow.GetValues[decimal256.Num](cols[1].Data(), 1)
	for k, g := range gids {
		a.nn[g] += nn[sel[k]]
		a.sum[g] = a.sum[g].Add(sums[sel[k]])
	}
	return nil
}

func (a *aggDecimal) clear(g uint32) {
	a.sum[g], a.nn[g] = decimal256.Num{}, 0
	a.clearResult(g)
}

func (a *aggDecimal) slots(name string) []aggSlot {
	return []aggSlot{
		aggSliceSlot[int64]{name: name + ".count", codec: aggInt64Codec, vals: &a.nn},
		aggSliceSlot[decimal256.Num]{name: name + ".sum", codec: aggDec256Codec, vals: &a.sum},
		a.resultSlot(name),
	}
}

func (a *aggDecimal) sizeBytes() int64 {
	return int64(cap(a.sum))*32 + int64(cap(a.nn))*8 + a.resultBytes()
}
