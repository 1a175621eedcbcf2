package changelog

import (
	"fmt"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state/rowstore"
)

// overDecSum is SUM or AVG over DECIMAL(p, s). Each partition's frame sum
// is a 192-bit two's complement integer (w), exact however the frame
// slides; its result is NULL while the sum needs more than 38 digits (an
// unbounded frame stays NULL once it did, as kernels' SUM does). The
// results are computed by kernels' accumulator of the same function,
// merging each output row's (sum, count, overflow) as a partial state,
// so that the result type, the division and its rounding are exactly
// those of the window aggregates.
type overDecSum struct {
	arg       int
	fn        kernels.AggFunc
	argType   arrow.DataType
	unbounded bool
	w         [][3]uint64 // by partition
	cnt       []int64
	ovf       []bool // by partition, unbounded frames only: the sum overflowed once

	resSum []decimal128.Num
	resCnt []int64
	resOvf []bool
}

func (a *overDecSum) grow(n int) {
	a.w = growZeroSlice(a.w, n)
	a.cnt = growZeroSlice(a.cnt, n)
	a.ovf = growZeroSlice(a.ovf, n)
}

func (a *overDecSum) step(g uint32, chunk arrow.RecordBatch, row int, sub bool) {
	col := chunk.Column(a.arg)
	if col.IsNull(row) {
		return
	}
	v := col.(*array.Decimal128).Value(row)
	lo, hi, ext := v.LowBits(), uint64(v.HighBits()), uint64(0)
	if v.HighBits() < 0 {
		ext = ^uint64(0)
	}
	w := &a.w[g]
	var c uint64
	if sub {
		w[0], c = bits.Sub64(w[0], lo, 0)
		w[1], c = bits.Sub64(w[1], hi, c)
		w[2], _ = bits.Sub64(w[2], ext, c)
		a.cnt[g]--
	} else {
		w[0], c = bits.Add64(w[0], lo, 0)
		w[1], c = bits.Add64(w[1], hi, c)
		w[2], _ = bits.Add64(w[2], ext, c)
		a.cnt[g]++
	}
	if a.unbounded && !overDecFits(*w) {
		a.ovf[g] = true
	}
}

// overDecFits reports whether a 192-bit sum is a DECIMAL(38, _) value.
func overDecFits(w [3]uint64) bool {
	if w[2] != -(w[1] >> 63) {
		return false // beyond 128 bits
	}
	return decimal128.New(int64(w[1]), w[0]).FitsInPrecision(38)
}

func (a *overDecSum) add(g uint32, chunk arrow.RecordBatch, row int, _ rowstore.RowID) error {
	a.step(g, chunk, row, false)
	return nil
}

func (a *overDecSum) remove(g uint32, chunk arrow.RecordBatch, row int, _ rowstore.RowID) error {
	a.step(g, chunk, row, true)
	return nil
}

func (a *overDecSum) emit(g uint32, _ rowstore.RowID) {
	w := a.w[g]
	a.resSum = append(a.resSum, decimal128.New(int64(w[1]), w[0]))
	a.resCnt = append(a.resCnt, a.cnt[g])
	a.resOvf = append(a.resOvf, a.ovf[g] || !overDecFits(w))
}

func (a *overDecSum) finish(mem memory.Allocator, _ *rowstore.Store) (arrow.Array, error) {
	defer func() { a.resSum, a.resCnt, a.resOvf = a.resSum[:0], a.resCnt[:0], a.resOvf[:0] }()
	acc, err := kernels.NewAccumulator(a.fn, []arrow.DataType{a.argType})
	if err != nil {
		return nil, err
	}
	fields := acc.StateFields()
	if len(fields) != 3 {
		return nil, fmt.Errorf("BUG: %s over %s has %d state fields, want sum, count, overflow", a.fn, a.argType, len(fields))
	}
	sb := array.NewDecimal128Builder(mem, fields[0].Type.(*arrow.Decimal128Type))
	defer sb.Release()
	sb.AppendValues(a.resSum, nil)
	cb := array.NewInt64Builder(mem)
	defer cb.Release()
	cb.AppendValues(a.resCnt, nil)
	ob := array.NewBooleanBuilder(mem)
	defer ob.Release()
	ob.AppendValues(a.resOvf, nil)
	st := []arrow.Array{sb.NewArray(), cb.NewArray(), ob.NewArray()}
	defer func() {
		for _, c := range st {
			c.Release()
		}
	}()
	n := len(a.resCnt)
	gids := make([]uint32, n)
	for i := range gids {
		gids[i] = uint32(i)
	}
	acc.Grow(n)
	if err := acc.Merge(st, nil, gids); err != nil {
		return nil, err
	}
	return acc.Finish(mem), nil
}

func (a *overDecSum) sizeBytes() int64 {
	return int64(cap(a.w))*24 + int64(cap(a.cnt))*8 + int64(cap(a.ovf)) +
		int64(cap(a.resSum))*16 + int64(cap(a.resCnt))*8 + int64(cap(a.resOvf))
}
