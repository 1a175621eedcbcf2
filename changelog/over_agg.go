package changelog

import (
	"bytes"
	"cmp"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state/rowstore"
)

// overAccum is one aggregate of an OVER aggregation, for every partition
// (slices indexed by partition id). Rows enter a partition's frame in
// time order (add) and leave it oldest first (remove); the frame's rows
// live in the operator's frame store, read in place (rowstore.Locate).
// emit records the current result of a partition for one output row, and
// finish turns the recorded results into the output column.
type overAccum interface {
	grow(parts int)
	add(g uint32, chunk arrow.RecordBatch, row int, id rowstore.RowID) error
	remove(g uint32, chunk arrow.RecordBatch, row int, id rowstore.RowID) error
	emit(g uint32, cur rowstore.RowID)
	finish(mem memory.Allocator, frame *rowstore.Store) (arrow.Array, error)
	sizeBytes() int64
}

// overCounter is a COUNT(*) or COUNT(x): the number of frame rows (with x
// not null).
type overCounter struct {
	arg int // frame column of x, -1 for COUNT(*)
	cnt []int64
	res []int64
}

func (a *overCounter) grow(n int) { a.cnt = growZeroSlice(a.cnt, n) }

func (a *overCounter) add(g uint32, chunk arrow.RecordBatch, row int, _ rowstore.RowID) error {
	if a.arg < 0 || chunk.Column(a.arg).IsValid(row) {
		a.cnt[g]++
	}
	return nil
}

func (a *overCounter) remove(g uint32, chunk arrow.RecordBatch, row int, _ rowstore.RowID) error {
	if a.arg < 0 || chunk.Column(a.arg).IsValid(row) {
		a.cnt[g]--
	}
	return nil
}

func (a *overCounter) emit(g uint32, _ rowstore.RowID) { a.res = append(a.res, a.cnt[g]) }

func (a *overCounter) finish(mem memory.Allocator, _ *rowstore.Store) (arrow.Array, error) {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues(a.res, nil)
	a.res = a.res[:0]
	return b.NewArray(), nil
}

func (a *overCounter) sizeBytes() int64 { return int64(cap(a.cnt)+cap(a.res)) * 8 }

// overIntSum is SUM over integers: an int64, null over no non-null value;
// leaving the int64 range is an error (as kernels' SUM).
type overIntSum struct {
	arg  int
	name string
	read func(arr arrow.Array, i int) (int64, bool)
	sum  []int64
	cnt  []int64
	res  []int64
	ok   []bool
}

func (a *overIntSum) grow(n int) {
	a.sum = growZeroSlice(a.sum, n)
	a.cnt = growZeroSlice(a.cnt, n)
}

func (a *overIntSum) step(g uint32, chunk arrow.RecordBatch, row int, sign int64) error {
	col := chunk.Column(a.arg)
	if col.IsNull(row) {
		return nil
	}
	v, ok := a.read(col, row)
	s := a.sum[g]
	var r int64
	if ok {
		if sign > 0 {
			r = s + v
			ok = (v >= 0) == (r >= s)
		} else {
			r = s - v
			ok = (v >= 0) == (r <= s)
		}
	}
	if !ok {
		return fmt.Errorf("%s: the sum leaves the int64 range", a.name)
	}
	a.sum[g], a.cnt[g] = r, a.cnt[g]+sign
	return nil
}

func (a *overIntSum) add(g uint32, chunk arrow.RecordBatch, row int, _ rowstore.RowID) error {
	return a.step(g, chunk, row, 1)
}

func (a *overIntSum) remove(g uint32, chunk arrow.RecordBatch, row int, _ rowstore.RowID) error {
	return a.step(g, chunk, row, -1)
}

func (a *overIntSum) emit(g uint32, _ rowstore.RowID) {
	a.res, a.ok = append(a.res, a.sum[g]), append(a.ok, a.cnt[g] > 0)
}

func (a *overIntSum) finish(mem memory.Allocator, _ *rowstore.Store) (arrow.Array, error) {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues(a.res, a.ok)
	a.res, a.ok = a.res[:0], a.ok[:0]
	return b.NewArray(), nil
}

func (a *overIntSum) sizeBytes() int64 {
	return int64(cap(a.sum)+cap(a.cnt)+cap(a.res))*8 + int64(cap(a.ok))
}

// overFloatSum is SUM over floats (a float64) or AVG over integers and
// floats (the float64 sum divided by the count), null over no non-null
// value. A sliding frame adds and subtracts the finite values, as Flink's
// retractable accumulators do, and counts the NaNs and infinities apart
// (a NaN subtracted would stay in the sum).
type overFloatSum struct {
	arg  int
	avg  bool
	read func(arr arrow.Array, i int) float64
	sum  []float64
	cnt  []int64
	odd  [][3]int32 // by partition: NaNs, +Inf, -Inf in the frame
	res  []float64
	ok   []bool
}

func (a *overFloatSum) grow(n int) {
	a.sum = growZeroSlice(a.sum, n)
	a.cnt = growZeroSlice(a.cnt, n)
	a.odd = growZeroSlice(a.odd, n)
}

func (a *overFloatSum) step(g uint32, chunk arrow.RecordBatch, row int, sign int64) {
	col := chunk.Column(a.arg)
	if col.IsNull(row) {
		return
	}
	v := a.read(col, row)
	a.cnt[g] += sign
	switch {
	case v != v:
		a.odd[g][0] += int32(sign)
	case math.IsInf(v, 1):
		a.odd[g][1] += int32(sign)
	case math.IsInf(v, -1):
		a.odd[g][2] += int32(sign)
	default:
		a.sum[g] += float64(sign) * v
	}
	if a.cnt[g] == 0 {
		a.sum[g] = 0 // no rounding residue survives an empty frame
	}
}

func (a *overFloatSum) add(g uint32, chunk arrow.RecordBatch, row int, _ rowstore.RowID) error {
	a.step(g, chunk, row, 1)
	return nil
}

func (a *overFloatSum) remove(g uint32, chunk arrow.RecordBatch, row int, _ rowstore.RowID) error {
	a.step(g, chunk, row, -1)
	return nil
}

func (a *overFloatSum) emit(g uint32, _ rowstore.RowID) {
	v := a.sum[g]
	switch odd := a.odd[g]; {
	case odd[0] > 0 || odd[1] > 0 && odd[2] > 0:
		v = math.NaN()
	case odd[1] > 0:
		v = math.Inf(1)
	case odd[2] > 0:
		v = math.Inf(-1)
	}
	if a.avg && a.cnt[g] > 0 {
		v /= float64(a.cnt[g])
	}
	a.res, a.ok = append(a.res, v), append(a.ok, a.cnt[g] > 0)
}

func (a *overFloatSum) finish(mem memory.Allocator, _ *rowstore.Store) (arrow.Array, error) {
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	b.AppendValues(a.res, a.ok)
	a.res, a.ok = a.res[:0], a.ok[:0]
	return b.NewArray(), nil
}

func (a *overFloatSum) sizeBytes() int64 {
	return int64(cap(a.sum)+cap(a.cnt)+cap(a.res))*8 + int64(cap(a.ok)) + int64(cap(a.odd))*12
}

// overMinMax is MIN or MAX. For a sliding frame each partition keeps a
// monotonic deque of frame rows (the candidates: every row with no better
// or equal value after it), so the front is the result and a row leaving
// the frame is either the front or no candidate. For an unbounded frame
// only the best row is kept. Results are row ids of the frame store,
// gathered into the output column (so the result has x's type exactly);
// an empty deque means every frame row has a null x, the current row's
// included, whose id then stands for the null.
type overMinMax struct {
	arg       int
	max       bool
	unbounded bool
	cmp       overCmp
	refs      *overRefs
	dq        [][]rowstore.RowID // by partition; dq[g][head[g]:] are the candidates
	head      []int32
	res       []rowstore.RowID
}

// overCmp compares row i of a with row j of b (arrays of one type): -1, 0
// or +1, floats with NaN above every number.
type overCmp func(a arrow.Array, i int, b arrow.Array, j int) int

func (a *overMinMax) grow(n int) {
	for len(a.dq) < n {
		a.dq = append(a.dq, nil)
		a.head = append(a.head, 0)
	}
}

// worse reports whether the candidate row id is no better than the new
// row (so that it can never be the result again while the new row is in
// the frame).
func (a *overMinMax) worse(id rowstore.RowID, chunk arrow.RecordBatch, row int) bool {
	c, r := a.refs.frame.Locate(id)
	d := a.cmp(c.Column(a.arg), r, chunk.Column(a.arg), row)
	if a.max {
		return d <= 0
	}
	return d >= 0
}

func (a *overMinMax) add(g uint32, chunk arrow.RecordBatch, row int, id rowstore.RowID) error {
	if chunk.Column(a.arg).IsNull(row) {
		return nil
	}
	q, h := a.dq[g], int(a.head[g])
	if a.unbounded && len(q) > h && !a.worse(q[len(q)-1], chunk, row) {
		return nil // the best so far stays
	}
	for len(q) > h && a.worse(q[len(q)-1], chunk, row) {
		a.refs.drop(q[len(q)-1])
		q = q[:len(q)-1]
	}
	a.refs.hold(id)
	a.dq[g] = append(q, id)
	return nil
}

func (a *overMinMax) remove(g uint32, _ arrow.RecordBatch, _ int, id rowstore.RowID) error {
	q, h := a.dq[g], int(a.head[g])
	if len(q) > h && q[h] == id {
		a.refs.drop(id)
		h++
		if h == len(q) {
			q, h = q[:0], 0
		} else if h >= 32 && h*2 >= len(q) {
			n := copy(q, q[h:])
			q, h = q[:n], 0
		}
		a.dq[g], a.head[g] = q, int32(h)
	}
	return nil
}

func (a *overMinMax) emit(g uint32, cur rowstore.RowID) {
	if q, h := a.dq[g], int(a.head[g]); len(q) > h {
		cur = q[h]
	}
	a.res = append(a.res, cur)
}

func (a *overMinMax) finish(_ memory.Allocator, frame *rowstore.Store) (arrow.Array, error) {
	rec, err := frame.Gather(a.res)
	a.res = a.res[:0]
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	col := rec.Column(a.arg)
	col.Retain()
	return col, nil
}

// remap renumbers the candidates after the frame store compacted.
func (a *overMinMax) remap(remap []rowstore.RowID) {
	for g, q := range a.dq {
		h := int(a.head[g])
		n := 0
		for _, id := range q[h:] {
			q[n] = remap[id]
			n++
		}
		a.dq[g], a.head[g] = q[:n], 0
	}
}

func (a *overMinMax) sizeBytes() int64 {
	n := int64(cap(a.dq))*24 + int64(cap(a.head))*4 + int64(cap(a.res))*4
	for _, q := range a.dq {
		n += int64(cap(q)) * 4
	}
	return n
}

// overRefs counts, per frame-store row, the structures holding it (a
// sliding frame, min/max candidates); a row nothing holds is deleted.
type overRefs struct {
	frame *rowstore.Store
	n     []uint8
}

func (r *overRefs) hold(id rowstore.RowID) { r.n[id]++ }

func (r *overRefs) drop(id rowstore.RowID) {
	r.n[id]--
	if r.n[id] == 0 {
		r.frame.Delete(id)
	}
}

func growZeroSlice[T any](s []T, n int) []T {
	if len(s) < n {
		s = append(s, make([]T, n-len(s))...)
	}
	return s
}

// overIntReader reads integers as int64 (false for a uint64 beyond it).
func overIntReader(dt arrow.DataType) func(arrow.Array, int) (int64, bool) {
	switch dt.ID() {
	case arrow.INT8:
		return func(a arrow.Array, i int) (int64, bool) { return int64(a.(*array.Int8).Value(i)), true }
	case arrow.INT16:
		return func(a arrow.Array, i int) (int64, bool) { return int64(a.(*array.Int16).Value(i)), true }
	case arrow.INT32:
		return func(a arrow.Array, i int) (int64, bool) { return int64(a.(*array.Int32).Value(i)), true }
	case arrow.INT64:
		return func(a arrow.Array, i int) (int64, bool) { return a.(*array.Int64).Value(i), true }
	case arrow.UINT8:
		return func(a arrow.Array, i int) (int64, bool) { return int64(a.(*array.Uint8).Value(i)), true }
	case arrow.UINT16:
		return func(a arrow.Array, i int) (int64, bool) { return int64(a.(*array.Uint16).Value(i)), true }
	case arrow.UINT32:
		return func(a arrow.Array, i int) (int64, bool) { return int64(a.(*array.Uint32).Value(i)), true }
	case arrow.UINT64:
		return func(a arrow.Array, i int) (int64, bool) {
			v := a.(*array.Uint64).Value(i)
			return int64(v), v <= math.MaxInt64
		}
	}
	return nil
}

// overFloatReader reads integers and floats as float64.
func overFloatReader(dt arrow.DataType) func(arrow.Array, int) float64 {
	switch dt.ID() {
	case arrow.FLOAT32:
		return func(a arrow.Array, i int) float64 { return float64(a.(*array.Float32).Value(i)) }
	case arrow.FLOAT64:
		return func(a arrow.Array, i int) float64 { return a.(*array.Float64).Value(i) }
	}
	if rd := overIntReader(dt); rd != nil {
		if dt.ID() == arrow.UINT64 {
			return func(a arrow.Array, i int) float64 { return float64(a.(*array.Uint64).Value(i)) }
		}
		return func(a arrow.Array, i int) float64 { v, _ := rd(a, i); return float64(v) }
	}
	return nil
}

type overValuer[T any] interface {
	arrow.Array
	Value(int) T
}

func overOrdered[A overValuer[T], T cmp.Ordered]() overCmp {
	return func(a arrow.Array, i int, b arrow.Array, j int) int {
		return cmp.Compare(a.(A).Value(i), b.(A).Value(j))
	}
}

func overFloat[A overValuer[T], T float32 | float64]() overCmp {
	return func(a arrow.Array, i int, b arrow.Array, j int) int {
		x, y := a.(A).Value(i), b.(A).Value(j)
		switch xn, yn := x != x, y != y; {
		case xn || yn:
			return cmp.Compare(btoi(xn), btoi(yn)) // NaN above every number
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// overCmpFor returns the comparison of MIN and MAX over type dt.
func overCmpFor(dt arrow.DataType) overCmp {
	switch dt.ID() {
	case arrow.INT8:
		return overOrdered[*array.Int8]()
	case arrow.INT16:
		return overOrdered[*array.Int16]()
	case arrow.INT32:
		return overOrdered[*array.Int32]()
	case arrow.INT64:
		return overOrdered[*array.Int64]()
	case arrow.UINT8:
		return overOrdered[*array.Uint8]()
	case arrow.UINT16:
		return overOrdered[*array.Uint16]()
	case arrow.UINT32:
		return overOrdered[*array.Uint32]()
	case arrow.UINT64:
		return overOrdered[*array.Uint64]()
	case arrow.FLOAT32:
		return overFloat[*array.Float32]()
	case arrow.FLOAT64:
		return overFloat[*array.Float64]()
	case arrow.STRING:
		return overOrdered[*array.String]()
	case arrow.LARGE_STRING:
		return overOrdered[*array.LargeString]()
	case arrow.DATE32:
		return overOrdered[*array.Date32]()
	case arrow.DATE64:
		return overOrdered[*array.Date64]()
	case arrow.TIME32:
		return overOrdered[*array.Time32]()
	case arrow.TIME64:
		return overOrdered[*array.Time64]()
	case arrow.TIMESTAMP:
		return overOrdered[*array.Timestamp]()
	case arrow.DURATION:
		return overOrdered[*array.Duration]()
	case arrow.BOOL:
		return func(a arrow.Array, i int, b arrow.Array, j int) int {
			return cmp.Compare(btoi(a.(*array.Boolean).Value(i)), btoi(b.(*array.Boolean).Value(j)))
		}
	case arrow.BINARY:
		return func(a arrow.Array, i int, b arrow.Array, j int) int {
			return bytes.Compare(a.(*array.Binary).Value(i), b.(*array.Binary).Value(j))
		}
	case arrow.LARGE_BINARY:
		return func(a arrow.Array, i int, b arrow.Array, j int) int {
			return bytes.Compare(a.(*array.LargeBinary).Value(i), b.(*array.LargeBinary).Value(j))
		}
	case arrow.DECIMAL128:
		return func(a arrow.Array, i int, b arrow.Array, j int) int {
			return a.(*array.Decimal128).Value(i).Cmp(b.(*array.Decimal128).Value(j))
		}
	}
	return nil
}

// overNewAccum makes the accumulator of agg f over frame column arg of
// type dt (nil for COUNT(*)), or says why it cannot.
func overNewAccum(f kernels.AggFunc, name string, arg int, dt arrow.DataType, unbounded bool, refs *overRefs) (overAccum, error) {
	switch f {
	case kernels.AggCountStar:
		return &overCounter{arg: -1}, nil
	case kernels.AggCount:
		return &overCounter{arg: arg}, nil
	case kernels.AggSum, kernels.AggAvg:
		if dt.ID() == arrow.DECIMAL128 {
			return &overDecSum{arg: arg, fn: f, argType: dt, unbounded: unbounded}, nil
		}
	}
	switch f {
	case kernels.AggSum:
		if rd := overIntReader(dt); rd != nil {
			return &overIntSum{arg: arg, name: name, read: rd}, nil
		}
		if dt.ID() == arrow.FLOAT32 || dt.ID() == arrow.FLOAT64 {
			return &overFloatSum{arg: arg, read: overFloatReader(dt)}, nil
		}
	case kernels.AggAvg:
		if rd := overFloatReader(dt); rd != nil {
			return &overFloatSum{arg: arg, avg: true, read: rd}, nil
		}
	case kernels.AggMin, kernels.AggMax:
		if c := overCmpFor(dt); c != nil {
			return &overMinMax{arg: arg, max: f == kernels.AggMax, unbounded: unbounded, cmp: c, refs: refs}, nil
		}
	case kernels.AggCountStar, kernels.AggCount:
	default:
		return nil, fmt.Errorf("%s is not supported over a window (COUNT, SUM, AVG, MIN and MAX are)", f)
	}
	return nil, fmt.Errorf("%s over a window does not support arguments of type %s yet", f, dt)
}
