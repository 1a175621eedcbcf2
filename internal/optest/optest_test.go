package optest

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
)

// countOp is a keyed running count: per key of column "k" the number of
// rows added (Insert, UpdateAfter) minus those removed (UpdateBefore,
// Delete). It folds the changes of an epoch and emits, per changed key,
// -U/+U (or +I, or -D when the count drops to zero) at FlushEpoch and
// Finish. Its state is a snapshot table with a key-group column; restore
// keeps only its own key groups. broken selects a deliberate bug.
type countOp struct {
	broken string
	info   *arrowflow.TaskInfo
	counts map[countKey]*countEntry
	dirty  map[countKey]bool
	held   []arrowflow.Batch // only for broken == "leak"
	wm     arrowflow.EventTime
}

type countKey struct {
	null bool
	s    string
}

type countEntry struct {
	cnt, emitted int64
}

var (
	countInSchema = arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	countOutSchema = arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "cnt", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	countStateSchema = arrow.NewSchema([]arrow.Field{
		{Name: state.KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16},
		{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "cnt", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
)

func (o *countOp) Open(info *arrowflow.TaskInfo) error {
	o.info = info
	o.counts = make(map[countKey]*countEntry)
	o.dirty = make(map[countKey]bool)
	return nil
}

func (o *countOp) ProcessBatch(_ int, b arrowflow.Batch, _ arrowflow.Emitter) error {
	if o.broken == "leak" {
		o.held = append(o.held, b)
		b.Record.Retain()
	}
	defer b.Release()
	keys := b.Record.Column(0).(*array.String)
	if o.broken == "" {
		// The harness routes as the runtime does: every selected row's
		// key group is this subtask's.
		hashes := make([]uint64, b.NumRows())
		if err := kernels.HashColumns([]arrow.Array{keys}, b.Sel, hashes); err != nil {
			return err
		}
		for k, h := range hashes {
			if kg := kernels.KeyGroupOf(h, o.info.MaxParallelism); !o.info.KeyGroups.Contains(kg) {
				return fmt.Errorf("row %d of key group %d sent to subtask %d of key groups %s", b.Row(k), kg, o.info.Subtask, o.info.KeyGroups)
			}
		}
	}
	for k := range b.NumRows() {
		row := b.Row(k)
		if o.broken == "ignoresel" {
			row = k // reads physical rows as if there were no selection
		}
		key := countKey{null: keys.IsNull(row)}
		if !key.null {
			key.s = keys.Value(row)
		}
		e := o.counts[key]
		if e == nil {
			e = &countEntry{}
			o.counts[key] = e
		}
		if b.Kind(k).IsRetraction() {
			e.cnt--
		} else {
			e.cnt++
		}
		o.dirty[key] = true
	}
	return nil
}

func (o *countOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	if o.broken == "backwards" && wm == arrowflow.MaxEventTime {
		if err := out.EmitWatermark(wm); err != nil {
			return err
		}
		return out.EmitWatermark(0)
	}
	return out.EmitWatermark(wm)
}

// FlushEpoch emits the changes of the dirty keys.
func (o *countOp) FlushEpoch(_ uint64, out arrowflow.Emitter) error {
	if len(o.dirty) == 0 {
		return nil
	}
	b := array.NewRecordBuilder(o.info.Allocator, countOutSchema)
	defer b.Release()
	ks, cs := b.Field(0).(*array.StringBuilder), b.Field(1).(*array.Int64Builder)
	var kinds []arrowflow.RowKind
	add := func(key countKey, cnt int64, kind arrowflow.RowKind) {
		if key.null {
			ks.AppendNull()
		} else {
			ks.Append(key.s)
		}
		cs.Append(cnt)
		kinds = append(kinds, kind)
	}
	for key := range o.dirty {
		e := o.counts[key]
		switch {
		case e.cnt == e.emitted:
		case e.emitted == 0:
			add(key, e.cnt, arrowflow.Insert)
		case e.cnt == 0:
			add(key, e.emitted, arrowflow.Delete)
		default:
			before := e.emitted
			if o.broken == "wrongretract" {
				before++
			}
			add(key, before, arrowflow.UpdateBefore)
			add(key, e.cnt, arrowflow.UpdateAfter)
		}
		e.emitted = e.cnt
		if e.cnt == 0 {
			delete(o.counts, key)
		}
	}
	clear(o.dirty)
	if len(kinds) == 0 {
		return nil
	}
	return out.Emit(arrowflow.NewChangeBatch(b.NewRecordBatch(), kinds))
}

func (o *countOp) SnapshotState(_ uint64, w state.SnapshotWriter) error {
	if o.broken == "nosnapshot" || len(o.counts) == 0 {
		return nil
	}
	b := array.NewRecordBuilder(o.info.Allocator, countStateSchema)
	defer b.Release()
	kg, ks, cs := b.Field(0).(*array.Uint16Builder), b.Field(1).(*array.StringBuilder), b.Field(2).(*array.Int64Builder)
	for key, e := range o.counts {
		if key.null {
			ks.AppendNull()
		} else {
			ks.Append(key.s)
		}
		cs.Append(e.emitted)
		kg.Append(0) // filled below from the key column
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	groups, err := KeyGroups(rec, []string{"k"}, o.info.MaxParallelism)
	if err != nil {
		return err
	}
	// Rewrite the key-group column in place of the placeholder.
	kgb := array.NewUint16Builder(o.info.Allocator)
	defer kgb.Release()
	for _, g := range groups {
		kgb.Append(uint16(g))
	}
	kgArr := kgb.NewArray()
	defer kgArr.Release()
	out := array.NewRecordBatch(countStateSchema, []arrow.Array{kgArr, rec.Column(1), rec.Column(2)}, rec.NumRows())
	defer out.Release()
	return w.Write("counts", out)
}

func (o *countOp) RestoreState(r state.SnapshotReader) error {
	return r.Read("counts", func(rec arrow.RecordBatch) error {
		kg := rec.Column(0).(*array.Uint16)
		ks := rec.Column(1).(*array.String)
		cs := rec.Column(2).(*array.Int64)
		for i := range int(rec.NumRows()) {
			if o.broken != "nofilter" && !o.info.KeyGroups.Contains(int(kg.Value(i))) {
				continue
			}
			key := countKey{null: ks.IsNull(i)}
			if !key.null {
				key.s = ks.Value(i)
			}
			o.counts[key] = &countEntry{cnt: cs.Value(i), emitted: cs.Value(i)}
		}
		return nil
	})
}

func (o *countOp) Finish(out arrowflow.Emitter) error { return o.FlushEpoch(0, out) }

func (o *countOp) Close() error {
	if o.broken != "leak" {
		for _, b := range o.held {
			b.Release()
		}
	}
	o.held = nil
	return nil
}

// countInput is a changelog of 400 rows over 4 epochs on 30 keys and
// NULL; deletes only remove rows that are there.
func countInput(seed uint64) []Row {
	rng := rand.New(rand.NewPCG(seed, 7))
	live := map[any]int{}
	var rows []Row
	for i := range 400 {
		var k any = fmt.Sprintf("k%02d", rng.IntN(30))
		if rng.IntN(10) == 0 {
			k = nil
		}
		kind := arrowflow.Insert
		if live[k] > 0 && rng.IntN(3) == 0 {
			kind = []arrowflow.RowKind{arrowflow.Delete, arrowflow.UpdateBefore}[rng.IntN(2)]
			live[k]--
		} else {
			live[k]++
		}
		var v any = rng.Float64()
		if rng.IntN(5) == 0 {
			v = nil
		}
		rows = append(rows, Row{Kind: kind, Values: []any{k, v}, Epoch: i / 100})
	}
	return rows
}

// countReference is the count table after epoch e, row at a time.
func countReference(rows []Row) func(epoch int) [][]any {
	return func(epoch int) [][]any {
		counts := map[any]int64{}
		for _, r := range UpTo(rows, epoch) {
			if r.Kind.IsRetraction() {
				counts[r.Values[0]]--
			} else {
				counts[r.Values[0]]++
			}
		}
		var out [][]any
		for k, c := range counts {
			if c != 0 {
				out = append(out, []any{k, c})
			}
		}
		return out
	}
}

func countCase(broken string) Case {
	rows := countInput(1)
	return Case{
		Name:    "count",
		Factory: func() arrowflow.Operator { return &countOp{broken: broken} },
		Inputs:  []Input{{Schema: countInSchema, KeyBy: []string{"k"}, Rows: rows}},
		Want:    countReference(rows),
		Watermark: func(epoch int) (arrowflow.EventTime, bool) {
			return arrowflow.EventTime(epoch * 1000), epoch != 2
		},
		WantWatermark: func(epoch int) (arrowflow.EventTime, bool) {
			if epoch == 3 {
				return arrowflow.MaxEventTime, true
			}
			return arrowflow.EventTime(epoch * 1000), epoch == 0
		},
	}
}

func TestRunKeyedCount(t *testing.T) {
	Run(t, countCase(""))
}

// With a single epoch every rescale happens after it, before Finish.
func TestRunSingleEpochRescales(t *testing.T) {
	c := countCase("")
	rows := slices.Clone(c.Inputs[0].Rows)
	for i := range rows {
		rows[i].Epoch = 0
	}
	c.Inputs[0].Rows = rows
	c.Want = countReference(rows)
	c.WantWatermark = nil // the only epoch is the last: +inf
	c.Configs = []Config{
		{Parallelism: []int{2, 4, 1}, BatchSize: 7, RandomSel: true},
		{Parallelism: []int{4, 2}, BatchSize: 1000},
	}
	Run(t, c)
	// A trailing epoch without rows still closes.
	c.Epochs = 3
	Run(t, c)
}

// fakeT is a tester that records failures instead of failing the real
// test, so that the harness's own tests can assert it fails.
type fakeT struct {
	testing.TB // the real test, for Helper, Logf, Name and the like
	mu         sync.Mutex
	failed     bool
	msgs       []string
	cleanups   []func()
}

func (f *fakeT) record(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = true
	f.msgs = append(f.msgs, msg)
}

func (f *fakeT) Error(args ...any)                 { f.record(fmt.Sprint(args...)) }
func (f *fakeT) Errorf(format string, args ...any) { f.record(fmt.Sprintf(format, args...)) }
func (f *fakeT) Fail()                             { f.record("Fail") }
func (f *fakeT) FailNow()                          { f.record("FailNow"); runtime.Goexit() }
func (f *fakeT) Fatal(args ...any)                 { f.record(fmt.Sprint(args...)); runtime.Goexit() }
func (f *fakeT) Fatalf(format string, args ...any) {
	f.record(fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (f *fakeT) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}
func (f *fakeT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }

func (f *fakeT) sub(name string, fn func(tester)) bool {
	child := &fakeT{TB: f.TB}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			for _, c := range slices.Backward(child.cleanups) {
				c()
			}
		}()
		fn(child)
	}()
	<-done
	for _, m := range child.msgs {
		f.record(name + ": " + m)
	}
	return !child.failed
}

// runFake runs c through the harness with a fake test and returns the
// failure messages.
func runFake(t *testing.T, c Case) []string {
	f := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runCase(f, c)
	}()
	<-done
	return f.msgs
}

func TestRunCatchesBrokenOperators(t *testing.T) {
	for _, tc := range []struct {
		broken string
		want   string // the failure message contains one of these, |-separated
		// configs the bug must fail in ("" = every configuration)
		onlyIn string
	}{
		{"wrongretract", "retracts a row that is not in the table", ""},
		{"nofilter", "a restore must keep only its own key groups", "par=2to4"},
		{"nosnapshot", "differs", "to"},
		{"ignoresel", "differs|not in the subtask's key groups", "sel=random"},
		{"backwards", "watermarks must not go backwards", ""},
		{"leak", "LEAK", ""},
	} {
		t.Run(tc.broken, func(t *testing.T) {
			c := countCase(tc.broken)
			c.Configs = []Config{
				{Parallelism: []int{1}, BatchSize: 7},
				{Parallelism: []int{2}, BatchSize: 7, RandomSel: true},
				{Parallelism: []int{2, 4}, BatchSize: 7},
				{Parallelism: []int{4, 2}, BatchSize: 1000},
			}
			msgs := runFake(t, c)
			failedIn := map[string]bool{}
			for _, m := range msgs {
				for _, want := range strings.Split(tc.want, "|") {
					if strings.Contains(m, want) {
						failedIn[strings.SplitN(m, ": ", 2)[0]] = true
					}
				}
			}
			for _, cfg := range c.Configs {
				if strings.Contains(cfg.String(), tc.onlyIn) && !failedIn[cfg.String()] {
					t.Errorf("broken=%s: configuration %s did not fail with %q; messages:\n%s", tc.broken, cfg, tc.want, strings.Join(msgs, "\n"))
				}
			}
		})
	}
}

func TestRunAppendOnlyUnkeyed(t *testing.T) {
	var rows []Row
	for i := range 50 {
		rows = append(rows, Row{Values: []any{fmt.Sprint("s", i%7), float64(i) / 3}, Epoch: i / 20})
	}
	want := func(epoch int) [][]any {
		var out [][]any
		for _, r := range rows {
			if r.Epoch <= epoch {
				out = append(out, r.Values)
			}
		}
		return out
	}
	c := Case{
		Name:       "passthrough",
		Factory:    func() arrowflow.Operator { return &passOp{} },
		Inputs:     []Input{{Schema: countInSchema, Rows: rows}},
		Want:       want,
		AppendOnly: true,
	}
	Run(t, c)

	c.Factory = func() arrowflow.Operator { return &passOp{kinds: true} }
	msgs := runFake(t, c)
	if len(msgs) == 0 || !strings.Contains(strings.Join(msgs, "\n"), "append-only") {
		t.Errorf("an operator emitting kinds in an append-only case passed: %q", msgs)
	}
	if len(DefaultConfigs(false)) == 0 {
		t.Fatal("no unkeyed configurations")
	}
}

// passOp materializes its selected rows and emits them, with Insert kinds
// if kinds is set.
type passOp struct {
	arrowflow.BaseOperator
	info  *arrowflow.TaskInfo
	kinds bool
}

func (o *passOp) Open(info *arrowflow.TaskInfo) error { o.info = info; return nil }

func (o *passOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	defer b.Release()
	rec, err := b.Materialize(o.info.Allocator)
	if err != nil {
		return err
	}
	var kinds []arrowflow.RowKind
	if o.kinds {
		kinds = make([]arrowflow.RowKind, rec.NumRows())
	}
	return out.Emit(arrowflow.NewChangeBatch(rec, kinds))
}

func TestMaterialize(t *testing.T) {
	got, err := Materialize([]Change{
		{arrowflow.Insert, []any{"a", int64(1), 0.1}},
		{arrowflow.Insert, []any{"a", int64(1), 0.1}},
		{arrowflow.UpdateBefore, []any{"a", 1, 0.1 + 1e-12}}, // int and a rounding difference still match
		{arrowflow.UpdateAfter, []any{"a", int64(2), nil}},
		{arrowflow.Insert, []any{nil, int64(3), 0.0}},
		{arrowflow.Delete, []any{nil, int64(3), 5.551115123125783e-17}}, // a float sum retracted to ~0
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(got, [][]any{{"a", 1, 0.1}, {"a", 2, nil}}); d != "" {
		t.Fatal(d)
	}
	_, err = Materialize([]Change{
		{arrowflow.Insert, []any{"a", int64(1)}},
		{arrowflow.Delete, []any{"a", int64(2)}},
	})
	if err == nil || !strings.Contains(err.Error(), `-D["a" 2]`) || !strings.Contains(err.Error(), "change 1") {
		t.Fatalf("retracting a missing row: got %v, want an error naming change 1 -D[\"a\" 2]", err)
	}
}

func TestDiff(t *testing.T) {
	if d := Diff([][]any{{1.0}, {1.0}}, [][]any{{1.0}}); !strings.Contains(d, "unexpected (1)") {
		t.Errorf("a duplicate row is not reported: %q", d)
	}
	if d := Diff([][]any{{1.0}}, [][]any{{1.0 + 1e-6}}); !strings.Contains(d, "missing (1)") {
		t.Errorf("floats 1e-6 apart compare equal: %q", d)
	}
	if d := Diff([][]any{{1e12}}, [][]any{{1e12 + 1}}); d != "" {
		t.Errorf("floats within the relative tolerance differ: %s", d)
	}
	if d := Diff([][]any{{"x", nil}}, [][]any{{"x", ""}}); d == "" {
		t.Error("NULL equals the empty string")
	}
	if d := Diff([][]any{{int64(1)}}, [][]any{{1.0}}); d == "" {
		t.Error("int64 1 equals float64 1: types must match")
	}
}

func TestValueAndBuildRecord(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	}, nil)
	rows := [][]any{{1, 2.5, "x", true, "3.10"}, {nil, nil, nil, nil, nil}}
	rec, err := BuildRecord(mem, schema, rows)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	for r, row := range rows {
		got := make([]any, rec.NumCols())
		for c := range got {
			got[c] = Value(rec.Column(c), r)
		}
		if !RowsEqual(got, Normalize(row)) {
			t.Errorf("row %d: got %s, want %s", r, FormatRow(got), FormatRow(row))
		}
	}
	if _, err := BuildRecord(mem, schema, [][]any{{"no", 1.0, "x", true, "1"}}); err == nil || !strings.Contains(err.Error(), `column "i"`) {
		t.Errorf("a string in an int column: got %v, want an error naming the column", err)
	}
}
