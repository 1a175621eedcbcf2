package ops_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
)

// newMem is a checked allocator: the test fails if anything is left.
var newMem = testutil.CheckedAllocator

// emitter collects an operator's output. Its batches are released when
// the test ends (before the allocator is checked, if the emitter was made
// after it).
type emitter struct {
	batches []arrowflow.Batch
	wms     []arrowflow.EventTime
}

func newEmitter(t testing.TB) *emitter {
	e := &emitter{}
	t.Cleanup(e.release)
	return e
}

func (e *emitter) Emit(b arrowflow.Batch) error {
	e.batches = append(e.batches, b)
	return nil
}

func (e *emitter) EmitWatermark(wm arrowflow.EventTime) error {
	e.wms = append(e.wms, wm)
	return nil
}

func (e *emitter) release() {
	for _, b := range e.batches {
		b.Release()
	}
	e.batches = nil
}

// openOp makes and opens one instance of an operator, closed at the end of
// the test.
func openOp(t testing.TB, f arrowflow.OperatorFactory, info *arrowflow.TaskInfo) arrowflow.Operator {
	t.Helper()
	op := f()
	if err := op.Open(info); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := op.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return op
}

func taskInfo(mem memory.Allocator) *arrowflow.TaskInfo {
	return &arrowflow.TaskInfo{
		Job: "test", Name: "op", Subtask: 0, Parallelism: 1,
		MaxParallelism: state.DefaultMaxParallelism,
		KeyGroups:      state.KeyGroupRange{Start: 0, End: state.DefaultMaxParallelism},
		Allocator:      mem,
	}
}

// inRow is one input row; nil pointers are nulls.
type inRow struct {
	id  int64
	key *int64
	val *float64
}

var inSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "key", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "val", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "tag", Type: arrow.BinaryTypes.String},
}, nil)

// randomRows returns n rows numbered from first, keys in [0, keys) (10%
// null), values multiples of 1/8 (15% null).
func randomRows(rng *rand.Rand, first int64, n, keys int) []inRow {
	rows := make([]inRow, n)
	for i := range rows {
		rows[i].id = first + int64(i)
		if rng.Float64() >= 0.1 {
			k := int64(rng.IntN(keys))
			rows[i].key = &k
		}
		if rng.Float64() >= 0.15 {
			v := float64(rng.IntN(8000)-4000) / 8
			rows[i].val = &v
		}
	}
	return rows
}

// buildRecord builds rows as a record. Under each null it puts junk (not
// the zero a builder's AppendNull writes), so that code reading the value
// of a null slot gets caught.
func buildRecord(mem memory.Allocator, rows []inRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, inSchema)
	defer b.Release()
	ids, keys := b.Field(0).(*array.Int64Builder), b.Field(1).(*array.Int64Builder)
	vals, tags := b.Field(2).(*array.Float64Builder), b.Field(3).(*array.StringBuilder)
	for _, r := range rows {
		ids.Append(r.id)
		if r.key != nil {
			keys.Append(*r.key)
		} else {
			keys.AppendValues([]int64{r.id%3 + 1}, []bool{false})
		}
		if r.val != nil {
			vals.Append(*r.val)
		} else {
			vals.AppendValues([]float64{1e6 + float64(r.id)}, []bool{false})
		}
		tags.Append(fmt.Sprintf("t%d", r.id))
	}
	return b.NewRecordBatch()
}

type selMode int

const (
	selNone   selMode = iota // nil: every row
	selRandom                // each row with probability 1/2
	selEmpty                 // no row
	selAll                   // every row, explicitly
)

func (m selMode) String() string { return [...]string{"nil", "random", "empty", "all"}[m] }

func makeSel(rng *rand.Rand, n int, m selMode) []int32 {
	switch m {
	case selRandom:
		sel := []int32{}
		for i := 0; i < n; i++ {
			if rng.IntN(2) == 0 {
				sel = append(sel, int32(i))
			}
		}
		return sel
	case selEmpty:
		return []int32{}
	case selAll:
		sel := make([]int32, n)
		for i := range sel {
			sel[i] = int32(i)
		}
		return sel
	}
	return nil
}

// selected lists the physical rows a selection keeps, row at a time.
func selected(n int, sel []int32) []int {
	if sel == nil {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, len(sel))
	for k, i := range sel {
		out[k] = int(i)
	}
	return out
}

func batchRows(b arrowflow.Batch) []int {
	out := make([]int, b.NumRows())
	for k := range out {
		out[k] = b.Row(k)
	}
	return out
}

var batchSizes = []int{1, 7, 1000}

type rowPred struct {
	name string
	row  func(r inRow) bool
	rec  ops.Predicate
}

var preds = []rowPred{
	{"even-key",
		func(r inRow) bool { return r.key != nil && *r.key%2 == 0 },
		func(rec arrow.RecordBatch, i int) bool {
			k := rec.Column(1).(*array.Int64)
			return k.IsValid(i) && k.Value(i)%2 == 0
		}},
	{"all", func(inRow) bool { return true }, func(arrow.RecordBatch, int) bool { return true }},
	{"none", func(inRow) bool { return false }, func(arrow.RecordBatch, int) bool { return false }},
}

func TestFilterMatchesRowOracle(t *testing.T) {
	for _, n := range batchSizes {
		for _, mode := range []selMode{selNone, selRandom, selEmpty, selAll} {
			for _, p := range preds {
				t.Run(fmt.Sprintf("rows=%d/sel=%s/pred=%s", n, mode, p.name), func(t *testing.T) {
					mem := newMem(t)
					out := newEmitter(t)
					rng := rand.New(rand.NewPCG(uint64(n), uint64(mode)))
					rows := randomRows(rng, 0, n, 5)
					sel := makeSel(rng, n, mode)
					rec := buildRecord(mem, rows)
					var want []int
					for _, i := range selected(n, sel) {
						if p.row(rows[i]) {
							want = append(want, i)
						}
					}
					op := openOp(t, ops.Filter(p.rec), taskInfo(mem))
					if err := op.ProcessBatch(0, arrowflow.Batch{Record: rec, Sel: sel}, out); err != nil {
						t.Fatal(err)
					}
					if len(want) == 0 {
						if len(out.batches) != 0 {
							t.Fatalf("emitted %d batches with no row passing", len(out.batches))
						}
						if mem.CurrentAlloc() != 0 {
							t.Fatalf("dropped batch not released: %d bytes held", mem.CurrentAlloc())
						}
						return
					}
					if len(out.batches) != 1 {
						t.Fatalf("emitted %d batches, want 1", len(out.batches))
					}
					b := out.batches[0]
					if err := b.Validate(); err != nil {
						t.Fatal(err)
					}
					if b.Record != rec {
						t.Fatal("the filter replaced the record; it must only narrow the selection")
					}
					if got := batchRows(b); !slices.Equal(got, want) {
						t.Fatalf("rows %v, want %v", got, want)
					}
					switch {
					case sel == nil && len(want) == n && b.Sel != nil:
						t.Fatalf("every row passed but the filter set a selection of %d rows", len(b.Sel))
					case sel != nil && &b.Sel[0] != &sel[0]:
						t.Fatal("the filter did not narrow the incoming selection in place")
					}
				})
			}
		}
	}
}

// Two filters in a row: the second narrows the selection the first made.
func TestChainedFiltersNarrowInPlace(t *testing.T) {
	mem := newMem(t)
	rng := rand.New(rand.NewPCG(1, 2))
	rows := randomRows(rng, 0, 2000, 50)
	notMult3 := ops.Filter(func(rec arrow.RecordBatch, i int) bool {
		k := rec.Column(1).(*array.Int64)
		return k.IsValid(i) && k.Value(i)%3 != 0
	})
	positive := ops.Filter(func(rec arrow.RecordBatch, i int) bool {
		v := rec.Column(2).(*array.Float64)
		return v.IsValid(i) && v.Value(i) > 0
	})
	first, second := newEmitter(t), newEmitter(t)
	op1, op2 := openOp(t, notMult3, taskInfo(mem)), openOp(t, positive, taskInfo(mem))
	if err := op1.ProcessBatch(0, arrowflow.NewBatch(buildRecord(mem, rows)), first); err != nil {
		t.Fatal(err)
	}
	if len(first.batches) != 1 {
		t.Fatalf("first filter emitted %d batches", len(first.batches))
	}
	b := first.batches[0]
	first.batches = nil // handed on to the second filter
	if err := op2.ProcessBatch(0, b, second); err != nil {
		t.Fatal(err)
	}
	var want []int
	for i, r := range rows {
		if r.key != nil && *r.key%3 != 0 && r.val != nil && *r.val > 0 {
			want = append(want, i)
		}
	}
	if len(second.batches) != 1 {
		t.Fatalf("second filter emitted %d batches", len(second.batches))
	}
	if err := second.batches[0].Validate(); err != nil {
		t.Fatal(err)
	}
	if got := batchRows(second.batches[0]); !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	// Stateless operators forward watermarks unchanged.
	if err := op2.ProcessWatermark(42, second); err != nil || !slices.Equal(second.wms, []arrowflow.EventTime{42}) {
		t.Fatalf("watermarks forwarded %v (%v), want [42]", second.wms, err)
	}
}

// colValues reads an int64 column of a batch's selected rows.
func colValues(b arrowflow.Batch, col int) []int64 {
	a := b.Record.Column(col).(*array.Int64)
	out := make([]int64, b.NumRows())
	for k := range out {
		out[k] = a.Value(b.Row(k))
	}
	return out
}

func TestMapOwnership(t *testing.T) {
	mem := newMem(t)
	out := newEmitter(t)
	rng := rand.New(rand.NewPCG(3, 4))
	var calls int
	var wantIDs []int64
	op := openOp(t, ops.Map(func(b arrowflow.Batch, m memory.Allocator) (arrowflow.Batch, error) {
		calls++
		if m != memory.Allocator(mem) {
			return arrowflow.Batch{}, errors.New("MapFunc not given the task's allocator")
		}
		switch calls {
		case 1: // narrow: keep even ids
			b.Sel = nil
			for i := 0; i < int(b.Record.NumRows()); i++ {
				if i%2 == 0 {
					b.Sel = append(b.Sel, int32(i))
				}
			}
			return b, nil
		case 2: // drop
			b.Release()
			return arrowflow.Batch{}, nil
		case 3: // replace with a new record
			defer b.Release()
			ids := b.Record.Column(0).(*array.Int64)
			bld := array.NewInt64Builder(m)
			defer bld.Release()
			for k := 0; k < b.NumRows(); k++ {
				bld.Append(-ids.Value(b.Row(k)))
			}
			arr := bld.NewArray()
			defer arr.Release()
			schema := arrow.NewSchema([]arrow.Field{{Name: "neg", Type: arrow.PrimitiveTypes.Int64}}, nil)
			return arrowflow.NewBatch(array.NewRecordBatch(schema, []arrow.Array{arr}, int64(arr.Len()))), nil
		default: // fail, after releasing what it owns
			b.Release()
			return arrowflow.Batch{}, errBoom
		}
	}), taskInfo(mem))

	rows1 := randomRows(rng, 0, 9, 3)
	for i := 0; i < 9; i += 2 {
		wantIDs = append(wantIDs, rows1[i].id)
	}
	if err := op.ProcessBatch(0, arrowflow.NewBatch(buildRecord(mem, rows1)), out); err != nil {
		t.Fatal(err)
	}
	if err := op.ProcessBatch(0, arrowflow.NewBatch(buildRecord(mem, randomRows(rng, 100, 5, 3))), out); err != nil {
		t.Fatal(err)
	}
	rows3 := randomRows(rng, 200, 6, 3)
	sel3 := []int32{1, 4, 5}
	var wantNeg []int64
	for _, i := range sel3 {
		wantNeg = append(wantNeg, -rows3[i].id)
	}
	if err := op.ProcessBatch(0, arrowflow.Batch{Record: buildRecord(mem, rows3), Sel: sel3}, out); err != nil {
		t.Fatal(err)
	}
	err := op.ProcessBatch(0, arrowflow.NewBatch(buildRecord(mem, randomRows(rng, 300, 4, 3))), out)
	if !errors.Is(err, errBoom) {
		t.Fatalf("error %v, want the MapFunc's", err)
	}
	if len(out.batches) != 2 {
		t.Fatalf("emitted %d batches, want 2 (narrowed and replaced)", len(out.batches))
	}
	if got := colValues(out.batches[0], 0); !slices.Equal(got, wantIDs) {
		t.Fatalf("narrowed batch ids %v, want %v", got, wantIDs)
	}
	if err := out.batches[0].Validate(); err != nil {
		t.Fatal(err)
	}
	if got := colValues(out.batches[1], 0); !slices.Equal(got, wantNeg) {
		t.Fatalf("replaced batch %v, want %v", got, wantNeg)
	}
	out.release()
	if mem.CurrentAlloc() != 0 {
		t.Fatalf("%d bytes still allocated once the output is released", mem.CurrentAlloc())
	}
}

var errBoom = errors.New("boom")

func TestMapRecordsMaterialisesSelectedRows(t *testing.T) {
	for _, mode := range []selMode{selNone, selRandom, selAll} {
		t.Run("sel="+mode.String(), func(t *testing.T) {
			mem := newMem(t)
			out := newEmitter(t)
			rng := rand.New(rand.NewPCG(5, uint64(mode)))
			const n = 300
			rows := randomRows(rng, 1000, n, 7)
			sel := makeSel(rng, n, mode)
			in := buildRecord(mem, rows)
			var want []inRow
			for _, i := range selected(n, sel) {
				want = append(want, rows[i])
			}
			var seen arrow.RecordBatch
			op := openOp(t, ops.MapRecords(func(rec arrow.RecordBatch, m memory.Allocator) (arrow.RecordBatch, error) {
				seen = rec
				if int(rec.NumRows()) != len(want) {
					return nil, fmt.Errorf("record of %d rows, want %d", rec.NumRows(), len(want))
				}
				ids, keys := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
				vals, tags := rec.Column(2).(*array.Float64), rec.Column(3).(*array.String)
				for k, r := range want {
					ok := ids.Value(k) == r.id && tags.Value(k) == fmt.Sprintf("t%d", r.id) &&
						keys.IsValid(k) == (r.key != nil) && (r.key == nil || keys.Value(k) == *r.key) &&
						vals.IsValid(k) == (r.val != nil) && (r.val == nil || vals.Value(k) == *r.val)
					if !ok {
						return nil, fmt.Errorf("materialised row %d does not match input row %d", k, r.id)
					}
				}
				// Output: id + 1 of every row with a key.
				bld := array.NewInt64Builder(m)
				defer bld.Release()
				for k := 0; k < int(rec.NumRows()); k++ {
					if keys.IsValid(k) {
						bld.Append(ids.Value(k) + 1)
					}
				}
				arr := bld.NewArray()
				defer arr.Release()
				schema := arrow.NewSchema([]arrow.Field{{Name: "next", Type: arrow.PrimitiveTypes.Int64}}, nil)
				return array.NewRecordBatch(schema, []arrow.Array{arr}, int64(arr.Len())), nil
			}), taskInfo(mem))
			if err := op.ProcessBatch(0, arrowflow.Batch{Record: in, Sel: sel}, out); err != nil {
				t.Fatal(err)
			}
			if (sel == nil) != (seen == in) {
				t.Fatalf("selection %v: the function saw the input record: %v", mode, seen == in)
			}
			var wantNext []int64
			for _, r := range want {
				if r.key != nil {
					wantNext = append(wantNext, r.id+1)
				}
			}
			if len(out.batches) != 1 || out.batches[0].Sel != nil {
				t.Fatalf("emitted %d batches (want 1 without a selection)", len(out.batches))
			}
			if got := colValues(out.batches[0], 0); !slices.Equal(got, wantNext) {
				t.Fatalf("output %v, want %v", got, wantNext)
			}
		})
	}
}

func TestMapRecordsNoOutputAndErrors(t *testing.T) {
	mem := newMem(t)
	out := newEmitter(t)
	rng := rand.New(rand.NewPCG(6, 7))
	var passThrough bool
	op := openOp(t, ops.MapRecords(func(rec arrow.RecordBatch, _ memory.Allocator) (arrow.RecordBatch, error) {
		switch {
		case passThrough:
			rec.Retain()
			return rec, nil
		case rec.NumRows() == 1:
			return nil, errBoom
		}
		return nil, nil
	}), taskInfo(mem))
	for _, sel := range [][]int32{nil, {0, 2, 4}} {
		if err := op.ProcessBatch(0, arrowflow.Batch{Record: buildRecord(mem, randomRows(rng, 0, 5, 2)), Sel: sel}, out); err != nil {
			t.Fatal(err)
		}
	}
	if len(out.batches) != 0 {
		t.Fatalf("nil records produced %d batches", len(out.batches))
	}
	err := op.ProcessBatch(0, arrowflow.Batch{Record: buildRecord(mem, randomRows(rng, 0, 5, 2)), Sel: []int32{1}}, out)
	if !errors.Is(err, errBoom) {
		t.Fatalf("error %v, want the RecordFunc's", err)
	}
	if mem.CurrentAlloc() != 0 {
		t.Fatalf("%d bytes held after batches without output", mem.CurrentAlloc())
	}
	passThrough = true
	in := buildRecord(mem, randomRows(rng, 0, 4, 2))
	if err := op.ProcessBatch(0, arrowflow.NewBatch(in), out); err != nil {
		t.Fatal(err)
	}
	if len(out.batches) != 1 || out.batches[0].Record != in {
		t.Fatal("a RecordFunc returning its (retained) input did not pass the record on")
	}
}

// totals is the oracle's per-key result.
type totals struct {
	count int64
	sum   float64
}

// countOracle folds rows into per-key totals, row at a time.
type countOracle map[int64]*totals

func (o countOracle) add(r inRow) bool {
	if r.key == nil {
		return false
	}
	t := o[*r.key]
	if t == nil {
		t = &totals{}
		o[*r.key] = t
	}
	t.count++
	if r.val != nil {
		t.sum += *r.val
	}
	return true
}

// readTotals checks an output batch of CountByKey and returns its rows.
func readTotals(t *testing.T, cfg ops.CountByKey, b arrowflow.Batch) map[int64]totals {
	t.Helper()
	if !b.Schema().Equal(cfg.Schema()) {
		t.Fatalf("output schema %s, want %s", b.Schema(), cfg.Schema())
	}
	if b.Sel != nil {
		t.Fatalf("output has a selection vector")
	}
	keys := b.Record.Column(0).(*array.Int64)
	counts := b.Record.Column(1).(*array.Int64)
	sums := b.Record.Column(2).(*array.Float64)
	out := make(map[int64]totals)
	for i := 0; i < keys.Len(); i++ {
		if keys.IsNull(i) || counts.IsNull(i) || sums.IsNull(i) {
			t.Fatalf("output row %d has a null", i)
		}
		if _, dup := out[keys.Value(i)]; dup {
			t.Fatalf("key %d twice in one output batch", keys.Value(i))
		}
		out[keys.Value(i)] = totals{counts.Value(i), sums.Value(i)}
	}
	return out
}

func sameTotals(t *testing.T, what string, got map[int64]totals, want map[int64]totals) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d keys, want %d", what, len(got), len(want))
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Fatalf("%s: key %d has %+v (present: %v), want %+v", what, k, g, ok, w)
		}
	}
}

func (o countOracle) only(keep func(int64) bool) map[int64]totals {
	out := make(map[int64]totals)
	for k, t := range o {
		if keep == nil || keep(k) {
			out[k] = *t
		}
	}
	return out
}

var countCfg = ops.CountByKey{Key: "key", Value: "val"}

// feed sends batches of random rows (sizes cycling through 1, 7 and 300,
// random selections) to op and folds the selected rows into o; after each
// batch it calls check with the number of rows the batch carried and the
// keys it updated.
func feed(t *testing.T, mem memory.Allocator, op arrowflow.Operator, out arrowflow.Emitter, o countOracle, seed uint64, batches int,
	check func(n int, updated []int64)) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 99))
	sizes := []int{1, 7, 300}
	next := int64(0)
	for i := 0; i < batches; i++ {
		n := sizes[i%len(sizes)]
		rows := randomRows(rng, next, n, 40)
		next += int64(n)
		sel := makeSel(rng, n, []selMode{selNone, selRandom, selEmpty}[rng.IntN(3)])
		var updated []int64
		for _, j := range selected(n, sel) {
			if o.add(rows[j]) {
				updated = append(updated, *rows[j].key)
			}
		}
		if err := op.ProcessBatch(0, arrowflow.Batch{Record: buildRecord(mem, rows), Sel: sel}, out); err != nil {
			t.Fatal(err)
		}
		if check != nil {
			check(len(selected(n, sel)), updated)
		}
	}
}

func TestCountByKeyMatchesOracle(t *testing.T) {
	mem := newMem(t)
	out := newEmitter(t)
	op := openOp(t, countCfg.Factory(), taskInfo(mem))
	o := countOracle{}
	feed(t, mem, op, out, o, 1, 60, func(int, []int64) {
		if len(out.batches) != 0 {
			t.Fatalf("emitted before its inputs ended, without EmitEvery")
		}
	})
	if err := op.Finish(out); err != nil {
		t.Fatal(err)
	}
	if len(out.batches) != 1 {
		t.Fatalf("Finish emitted %d batches, want 1", len(out.batches))
	}
	sameTotals(t, "final totals", readTotals(t, countCfg, out.batches[0]), o.only(nil))
	if err := op.ProcessWatermark(7, out); err != nil || !slices.Equal(out.wms, []arrowflow.EventTime{7}) {
		t.Fatalf("watermarks forwarded %v (%v), want [7]", out.wms, err)
	}
}

func TestCountByKeyEmitEveryEmitsLatestTotalsOfUpdatedKeys(t *testing.T) {
	for _, every := range []int{1, 25, 400} {
		t.Run(fmt.Sprintf("every=%d", every), func(t *testing.T) {
			mem := newMem(t)
			out := newEmitter(t)
			cfg := countCfg
			cfg.EmitEvery = every
			op := openOp(t, cfg.Factory(), taskInfo(mem))
			o := countOracle{}
			pending := 0
			dirty := map[int64]bool{}
			emissions := 0
			feed(t, mem, op, out, o, uint64(every), 45, func(n int, updated []int64) {
				for _, k := range updated {
					dirty[k] = true
				}
				pending += n
				var want map[int64]totals
				if pending >= every {
					pending = 0
					if len(dirty) > 0 {
						want = o.only(func(k int64) bool { return dirty[k] })
					}
					clear(dirty)
				}
				switch {
				case want == nil && len(out.batches) != 0:
					t.Fatalf("emitted %d rows with %d rows pending", out.batches[0].NumRows(), pending)
				case want != nil && len(out.batches) != 1:
					t.Fatalf("emitted %d batches when %d keys were due", len(out.batches), len(want))
				case want != nil:
					sameTotals(t, "emission", readTotals(t, cfg, out.batches[0]), want)
					emissions++
				}
				out.release()
			})
			if emissions < 2 {
				t.Fatalf("only %d emissions; the test needs several", emissions)
			}
			if err := op.Finish(out); err != nil {
				t.Fatal(err)
			}
			if len(out.batches) != 1 {
				t.Fatalf("Finish emitted %d batches, want 1", len(out.batches))
			}
			sameTotals(t, "final totals", readTotals(t, cfg, out.batches[0]), o.only(nil))
		})
	}
}

func TestCountByKeyRejectsWrongColumns(t *testing.T) {
	cases := []struct {
		name   string
		fields []arrow.Field
		want   string
	}{
		{"int32 key", []arrow.Field{{Name: "key", Type: arrow.PrimitiveTypes.Int32}, {Name: "val", Type: arrow.PrimitiveTypes.Float64}},
			`key column "key" is int32, want int64`},
		{"string key", []arrow.Field{{Name: "key", Type: arrow.BinaryTypes.String}, {Name: "val", Type: arrow.PrimitiveTypes.Float64}},
			`key column "key" is utf8, want int64`},
		{"int64 value", []arrow.Field{{Name: "key", Type: arrow.PrimitiveTypes.Int64}, {Name: "val", Type: arrow.PrimitiveTypes.Int64}},
			`value column "val" is int64, want float64`},
		{"float32 value", []arrow.Field{{Name: "val", Type: arrow.PrimitiveTypes.Float32}, {Name: "key", Type: arrow.PrimitiveTypes.Int64}},
			`value column "val" is float32, want float64`},
		{"missing key", []arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "val", Type: arrow.PrimitiveTypes.Float64}},
			`columns "key" and "val" must each appear once`},
		{"duplicate value", []arrow.Field{{Name: "key", Type: arrow.PrimitiveTypes.Int64}, {Name: "val", Type: arrow.PrimitiveTypes.Float64}, {Name: "val", Type: arrow.PrimitiveTypes.Float64}},
			`columns "key" and "val" must each appear once`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := newMem(t)
			out := newEmitter(t)
			op := openOp(t, countCfg.Factory(), taskInfo(mem))
			bld := array.NewRecordBuilder(mem, arrow.NewSchema(c.fields, nil))
			for i := range c.fields {
				for r := 0; r < 3; r++ {
					bld.Field(i).AppendEmptyValue()
				}
			}
			rec := bld.NewRecordBatch()
			bld.Release()
			err := op.ProcessBatch(0, arrowflow.NewBatch(rec), out)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
			if len(out.batches) != 0 || mem.CurrentAlloc() != 0 {
				t.Fatalf("rejected batch: %d emitted, %d bytes held", len(out.batches), mem.CurrentAlloc())
			}
		})
	}
}

// keyGroups maps keys to their key groups as the keyed exchange does:
// kernels.HashColumns over the key column, then state.KeyGroupOf.
func keyGroups(t *testing.T, mem memory.Allocator, keys []int64, maxPar int) map[int64]int {
	t.Helper()
	bld := array.NewInt64Builder(mem)
	defer bld.Release()
	bld.AppendValues(keys, nil)
	arr := bld.NewArray()
	defer arr.Release()
	hashes := make([]uint64, len(keys))
	if err := kernels.HashColumns([]arrow.Array{arr}, nil, hashes); err != nil {
		t.Fatal(err)
	}
	out := make(map[int64]int, len(keys))
	for i, k := range keys {
		out[k] = state.KeyGroupOf(hashes[i], maxPar)
	}
	return out
}

func snapshot(t *testing.T, store state.Store, op arrowflow.Operator, subtask int, kg state.KeyGroupRange) state.Handle {
	t.Helper()
	w, err := store.Create(state.SnapshotID{Job: "test", Epoch: 1, Operator: "count", Subtask: subtask}, kg)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.SnapshotState(1, w); err != nil {
		w.Abort()
		t.Fatal(err)
	}
	h, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// finalTotals finishes op and returns what it emitted.
func finalTotals(t *testing.T, op arrowflow.Operator) map[int64]totals {
	t.Helper()
	out := &emitter{}
	defer out.release()
	if err := op.Finish(out); err != nil {
		t.Fatal(err)
	}
	got := make(map[int64]totals)
	for _, b := range out.batches {
		for k, v := range readTotals(t, countCfg, b) {
			got[k] = v
		}
	}
	return got
}

func TestCountByKeySnapshotRestore(t *testing.T) {
	mem := newMem(t)
	const maxPar = state.DefaultMaxParallelism
	store := state.NewMemoryStore()

	// An operator without state writes no snapshot.
	if h := snapshot(t, store, openOp(t, countCfg.Factory(), taskInfo(mem)), 9, state.KeyGroupRange{End: maxPar}); !h.IsZero() {
		t.Fatalf("empty operator wrote snapshot %+v", h)
	}

	src := openOp(t, countCfg.Factory(), taskInfo(mem))
	o := countOracle{}
	feed(t, mem, src, newEmitter(t), o, 11, 30, nil)
	h := snapshot(t, store, src, 0, state.KeyGroupRange{End: maxPar})
	if h.IsZero() {
		t.Fatal("no snapshot written")
	}
	keys := make([]int64, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	kg := keyGroups(t, mem, keys, maxPar)

	restore := func(t *testing.T, r state.KeyGroupRange, handles ...state.Handle) arrowflow.Operator {
		t.Helper()
		info := taskInfo(mem)
		info.KeyGroups = r
		op := openOp(t, countCfg.Factory(), info)
		var readers []state.SnapshotReader
		for _, h := range handles {
			rd, err := store.Open(h, mem)
			if err != nil {
				t.Fatal(err)
			}
			readers = append(readers, rd)
		}
		rd := state.MultiReader(readers...)
		defer rd.Close()
		if err := op.RestoreState(rd); err != nil {
			t.Fatal(err)
		}
		return op
	}

	t.Run("round trip", func(t *testing.T) {
		op := restore(t, state.KeyGroupRange{End: maxPar}, h)
		sameTotals(t, "restored totals", finalTotals(t, op), o.only(nil))
	})

	t.Run("round trip then more input", func(t *testing.T) {
		op := restore(t, state.KeyGroupRange{End: maxPar}, h)
		more := countOracle{}
		for k, v := range o {
			c := *v
			more[k] = &c
		}
		feed(t, mem, op, newEmitter(t), more, 12, 10, nil)
		sameTotals(t, "totals after restore and more input", finalTotals(t, op), more.only(nil))
	})

	t.Run("smaller ranges", func(t *testing.T) {
		union := map[int64]totals{}
		for _, p := range []int{2, 3, 5} {
			for s := 0; s < p; s++ {
				r := state.RangeOf(s, maxPar, p)
				want := o.only(func(k int64) bool { return r.Contains(kg[k]) })
				if len(want) == 0 {
					t.Fatalf("range %s owns none of the %d keys; the test needs some", r, len(o))
				}
				got := finalTotals(t, restore(t, r, h))
				sameTotals(t, fmt.Sprintf("subtask %d of %d, key groups %s", s+1, p, r), got, want)
				if p == 3 {
					for k, v := range got {
						if _, dup := union[k]; dup {
							t.Fatalf("key %d restored by two subtasks", k)
						}
						union[k] = v
					}
				}
			}
		}
		sameTotals(t, "union of the three subtasks", union, o.only(nil))
	})
}

// Rescaling: two old subtasks, each fed the rows whose keys route to it
// (as a keyed edge would), snapshot; three new subtasks each restore the
// snapshots overlapping their range and keep exactly their keys.
func TestCountByKeyRestoreWithAnotherParallelism(t *testing.T) {
	mem := newMem(t)
	const maxPar, oldPar, newPar = 64, 2, 3
	store := state.NewMemoryStore()
	rng := rand.New(rand.NewPCG(21, 22))
	o := countOracle{}
	var handles []state.Handle
	var oldRanges []state.KeyGroupRange
	olds := make([]arrowflow.Operator, oldPar)
	for s := range olds {
		info := taskInfo(mem)
		info.Subtask, info.Parallelism, info.MaxParallelism = s, oldPar, maxPar
		info.KeyGroups = state.RangeOf(s, maxPar, oldPar)
		olds[s] = openOp(t, countCfg.Factory(), info)
		oldRanges = append(oldRanges, info.KeyGroups)
	}
	for b := 0; b < 20; b++ {
		rows := randomRows(rng, int64(b*100), 100, 60)
		rec := buildRecord(mem, rows)
		hashes := make([]uint64, len(rows))
		if err := kernels.HashColumns([]arrow.Array{rec.Column(1)}, nil, hashes); err != nil {
			t.Fatal(err)
		}
		sels := make([][]int32, oldPar)
		for i, h := range hashes {
			s := state.SubtaskOf(state.KeyGroupOf(h, maxPar), maxPar, oldPar)
			sels[s] = append(sels[s], int32(i))
			o.add(rows[i])
		}
		for s, op := range olds {
			if sels[s] == nil {
				continue
			}
			rec.Retain()
			if err := op.ProcessBatch(0, arrowflow.Batch{Record: rec, Sel: sels[s]}, newEmitter(t)); err != nil {
				t.Fatal(err)
			}
		}
		rec.Release()
	}
	for s, op := range olds {
		handles = append(handles, snapshot(t, store, op, s, oldRanges[s]))
	}
	keys := make([]int64, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	kg := keyGroups(t, mem, keys, maxPar)
	union := map[int64]totals{}
	for s := 0; s < newPar; s++ {
		r := state.RangeOf(s, maxPar, newPar)
		info := taskInfo(mem)
		info.Subtask, info.Parallelism, info.MaxParallelism, info.KeyGroups = s, newPar, maxPar, r
		op := openOp(t, countCfg.Factory(), info)
		var readers []state.SnapshotReader
		for i, h := range handles {
			if !h.IsZero() && oldRanges[i].Overlaps(r) {
				rd, err := store.Open(h, mem)
				if err != nil {
					t.Fatal(err)
				}
				readers = append(readers, rd)
			}
		}
		rd := state.MultiReader(readers...)
		if err := op.RestoreState(rd); err != nil {
			t.Fatal(err)
		}
		rd.Close()
		got := finalTotals(t, op)
		sameTotals(t, fmt.Sprintf("new subtask %d, key groups %s", s+1, r), got, o.only(func(k int64) bool { return r.Contains(kg[k]) }))
		for k, v := range got {
			if _, dup := union[k]; dup {
				t.Fatalf("key %d restored by two subtasks", k)
			}
			union[k] = v
		}
	}
	sameTotals(t, "union", union, o.only(nil))
}
