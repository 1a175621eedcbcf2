package changelog

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/optest"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/window"
)

// aggTestSchema is the input of the tests: two keys, and arguments of
// several types. d is DECIMAL(10, 2).
var aggTestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "ks", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
}, nil)

// aggTRow is a test input row; the reference keeps rows as map keys.
type aggTRow struct {
	k                       int64
	ks                      string
	v                       int64
	f                       float64
	s                       string
	d                       int64 // unscaled, scale 2
	kN, ksN, vN, fN, sN, dN bool  // nulls
}

func (r aggTRow) values() []any {
	vals := []any{r.k, r.ks, r.v, r.f, r.s, decimal128.FromI64(r.d).ToString(2)}
	for i, null := range []bool{r.kN, r.ksN, r.vN, r.fN, r.sN, r.dN} {
		if null {
			vals[i] = nil
		}
	}
	return vals
}

// aggTEvent is one input change.
type aggTEvent struct {
	kind  arrowflow.RowKind
	row   aggTRow
	epoch int
}

// aggGen makes random rows from small domains (so that groups, values and
// minima repeat) with about 10% nulls in every column.
type aggGen struct {
	rng  *rand.Rand
	keys int
}

func (g aggGen) row() aggTRow {
	r := g.rng
	null := func() bool { return r.IntN(10) == 0 }
	row := aggTRow{
		k: int64(r.IntN(g.keys)), ks: []string{"a", "b", "", "héllo"}[r.IntN(4)],
		v: int64(r.IntN(21) - 10), f: float64(r.IntN(41)-20) / 4, s: fmt.Sprintf("s%d", r.IntN(7)),
		d:  int64(r.IntN(2001) - 1000),
		kN: null(), ksN: null(), vN: null(), fN: null(), sN: null(), dN: null(),
	}
	// A NULL has no value: equal rows are equal structs.
	if row.kN {
		row.k = 0
	}
	if row.ksN {
		row.ks = ""
	}
	if row.vN {
		row.v = 0
	}
	if row.fN {
		row.f = 0
	}
	if row.sN {
		row.s = ""
	}
	if row.dN {
		row.d = 0
	}
	return row
}

// events generates n changes over epochs; with retract, updates (-U then
// +U) and deletes (-D) of rows present in the input table.
func (g aggGen) events(n, epochs int, retract bool) []aggTEvent {
	var out []aggTEvent
	var present []aggTRow
	for i := 0; i < n; i++ {
		e := i * epochs / n
		op := g.rng.IntN(100)
		switch {
		case !retract || len(present) == 0 || op < 55:
			row := g.row()
			present = append(present, row)
			out = append(out, aggTEvent{arrowflow.Insert, row, e})
		case op < 80:
			j := g.rng.IntN(len(present))
			row := g.row()
			if g.rng.IntN(2) == 0 {
				row.k, row.ks, row.kN, row.ksN = present[j].k, present[j].ks, present[j].kN, present[j].ksN
			}
			out = append(out, aggTEvent{arrowflow.UpdateBefore, present[j], e}, aggTEvent{arrowflow.UpdateAfter, row, e})
			present[j] = row
		default:
			j := g.rng.IntN(len(present))
			out = append(out, aggTEvent{arrowflow.Delete, present[j], e})
			present[j] = present[len(present)-1]
			present = present[:len(present)-1]
		}
	}
	return out
}

func aggOptestRows(events []aggTEvent) []optest.Row {
	rows := make([]optest.Row, len(events))
	for i, ev := range events {
		rows[i] = optest.Row{Kind: ev.kind, Values: ev.row.values(), Epoch: ev.epoch}
	}
	return rows
}

// aggTestAggs are the aggregates of the tests, every function over
// several types.
var aggTestAggs = []window.Agg{
	{Func: kernels.AggCountStar, Name: "cnt"},
	{Func: kernels.AggCount, Args: []string{"v"}, Name: "cv"},
	{Func: kernels.AggSum, Args: []string{"v"}, Name: "sv"},
	{Func: kernels.AggMin, Args: []string{"v"}, Name: "mnv"},
	{Func: kernels.AggMax, Args: []string{"v"}, Name: "mxv"},
	{Func: kernels.AggAvg, Args: []string{"v"}, Name: "av"},
	{Func: kernels.AggCountDistinct, Args: []string{"v"}, Name: "cdv"},
	{Func: kernels.AggSum, Args: []string{"f"}, Name: "sf"},
	{Func: kernels.AggMax, Args: []string{"f"}, Name: "mxf"},
	{Func: kernels.AggAvg, Args: []string{"f"}, Name: "af"},
	{Func: kernels.AggMin, Args: []string{"s"}, Name: "mns"},
	{Func: kernels.AggMax, Args: []string{"s"}, Name: "mxs"},
	{Func: kernels.AggCountDistinct, Args: []string{"s"}, Name: "cds"},
	{Func: kernels.AggSum, Args: []string{"d"}, Name: "sd"},
	{Func: kernels.AggAvg, Args: []string{"d"}, Name: "ad"},
	{Func: kernels.AggMin, Args: []string{"d"}, Name: "mnd"},
	{Func: kernels.AggMax, Args: []string{"d"}, Name: "mxd"},
}

// aggReference is the plain row-at-a-time reference: it applies the
// changes of epochs 0..epoch to a multiset of input rows, groups the rows
// by keys and computes each aggregate from the group's list of rows.
func aggReference(t testing.TB, cfg GroupAggregate, events []aggTEvent, epoch int) [][]any {
	out, err := cfg.OutputSchema()
	if err != nil {
		t.Fatal(err)
	}
	table := map[aggTRow]int{}
	for _, ev := range events {
		if ev.epoch > epoch {
			break
		}
		if ev.kind.IsRetraction() {
			if table[ev.row] == 0 {
				t.Fatalf("reference: retraction of a row not in the table: %v", ev.row)
			}
			table[ev.row]--
		} else {
			table[ev.row]++
		}
	}
	type gkey struct {
		k       int64
		ks      string
		kN, ksN bool
	}
	groups := map[gkey][]aggTRow{}
	var order []gkey
	for row, n := range table {
		var key gkey
		for _, k := range cfg.Keys {
			switch k {
			case "k":
				key.k, key.kN = row.k, row.kN
			case "ks":
				key.ks, key.ksN = row.ks, row.ksN
			}
		}
		if _, ok := groups[key]; !ok && n > 0 {
			order = append(order, key)
		}
		for i := 0; i < n; i++ {
			groups[key] = append(groups[key], row)
		}
	}
	var want [][]any
	for _, key := range order {
		rows := groups[key]
		var res []any
		for _, k := range cfg.Keys {
			switch k {
			case "k":
				res = append(res, aggNullable(key.k, key.kN))
			case "ks":
				res = append(res, aggNullable(key.ks, key.ksN))
			}
		}
		for i, ag := range cfg.Aggs {
			res = append(res, aggRefValue(ag, rows, out.Field(len(cfg.Keys)+i).Type))
		}
		want = append(want, res)
	}
	return want
}

func aggNullable(v any, null bool) any {
	if null {
		return nil
	}
	return v
}

// aggRefValue computes one aggregate over a group's rows.
func aggRefValue(ag window.Agg, rows []aggTRow, res arrow.DataType) any {
	if ag.Func == kernels.AggCountStar {
		return int64(len(rows))
	}
	type val struct {
		i   int64
		f   float64
		s   string
		dec int64
	}
	var vals []val
	for _, r := range rows {
		switch ag.Args[0] {
		case "v":
			if !r.vN {
				vals = append(vals, val{i: r.v, f: float64(r.v)})
			}
		case "f":
			if !r.fN {
				vals = append(vals, val{f: r.f})
			}
		case "s":
			if !r.sN {
				vals = append(vals, val{s: r.s})
			}
		case "d":
			if !r.dN {
				vals = append(vals, val{dec: r.d})
			}
		}
	}
	arg := ag.Args[0]
	switch ag.Func {
	case kernels.AggCount:
		return int64(len(vals))
	case kernels.AggCountDistinct:
		seen := map[val]bool{}
		for _, v := range vals {
			seen[v] = true
		}
		return int64(len(seen))
	}
	if len(vals) == 0 {
		return nil
	}
	cmp := func(a, b val) int {
		switch arg {
		case "v":
			return int(a.i - b.i)
		case "f":
			return int((a.f - b.f) * 4)
		case "s":
			return strings.Compare(a.s, b.s)
		}
		return int(a.dec - b.dec)
	}
	format := func(v val) any {
		switch arg {
		case "v":
			return v.i
		case "f":
			return v.f
		case "s":
			return v.s
		}
		return decimal128.FromI64(v.dec).ToString(2)
	}
	switch ag.Func {
	case kernels.AggMin:
		return format(slices.MinFunc(vals, cmp))
	case kernels.AggMax:
		return format(slices.MaxFunc(vals, cmp))
	}
	var si int64
	var sf float64
	for _, v := range vals {
		si, sf = si+v.i+v.dec, sf+v.f
	}
	switch {
	case ag.Func == kernels.AggSum && arg == "v":
		return si
	case ag.Func == kernels.AggSum && arg == "f":
		return sf
	case ag.Func == kernels.AggSum:
		return decimal128.FromI64(si).ToString(2)
	case arg == "d": // AVG, HALF_UP at the result's scale
		scale := res.(*arrow.Decimal128Type).Scale
		num := new(big.Int).Mul(big.NewInt(si), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale-2)), nil))
		neg := num.Sign() < 0
		num.Abs(num)
		q, r := new(big.Int).QuoRem(num, big.NewInt(int64(len(vals))), new(big.Int))
		if r.Lsh(r, 1).Cmp(big.NewInt(int64(len(vals)))) >= 0 {
			q.Add(q, big.NewInt(1))
		}
		if neg {
			q.Neg(q)
		}
		return decimal128.FromBigInt(q).ToString(scale)
	}
	return sf / float64(len(vals))
}

// aggCase is one optest case of a GroupAggregate against the reference.
func aggCase(t *testing.T, name string, cfg GroupAggregate, events []aggTEvent) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c := optest.Case{
		Name:    name,
		Factory: cfg.Factory(),
		Inputs:  []optest.Input{{Schema: cfg.Input, KeyBy: cfg.Keys, Rows: aggOptestRows(events)}},
		Want:    func(e int) [][]any { return aggReference(t, cfg, events, e) },
		Seed:    7,
	}
	optest.Run(t, c)
}

func TestGroupAggregateRetractTwoKeys(t *testing.T) {
	cfg := GroupAggregate{Input: aggTestSchema, Keys: []string{"k", "ks"}, Aggs: aggTestAggs, Retracting: true}
	aggCase(t, "retract-2keys", cfg, aggGen{rand.New(rand.NewPCG(1, 2)), 3}.events(400, 5, true))
}

func TestGroupAggregateRetractFewGroups(t *testing.T) {
	// One key of 4 values (and NULL): every group sees many retractions
	// of its minimum and maximum.
	cfg := GroupAggregate{Input: aggTestSchema, Keys: []string{"ks"}, Aggs: aggTestAggs, Retracting: true}
	aggCase(t, "retract-fewgroups", cfg, aggGen{rand.New(rand.NewPCG(3, 4)), 1}.events(400, 4, true))
}

func TestGroupAggregateAppendOnly(t *testing.T) {
	cfg := GroupAggregate{Input: aggTestSchema, Keys: []string{"k"}, Aggs: aggTestAggs}
	aggCase(t, "append-only", cfg, aggGen{rand.New(rand.NewPCG(5, 6)), 8}.events(300, 4, false))
}

func TestGroupAggregateAppendOnlyIntoRetracting(t *testing.T) {
	cfg := GroupAggregate{Input: aggTestSchema, Keys: []string{"k"}, Aggs: aggTestAggs, Retracting: true}
	aggCase(t, "append-into-retracting", cfg, aggGen{rand.New(rand.NewPCG(7, 8)), 8}.events(300, 4, false))
}

func TestGroupAggregateGlobal(t *testing.T) {
	cfg := GroupAggregate{Input: aggTestSchema, Aggs: aggTestAggs, Retracting: true}
	aggCase(t, "global", cfg, aggGen{rand.New(rand.NewPCG(9, 10)), 3}.events(300, 5, true))
}

func TestGroupAggregateDistinct(t *testing.T) {
	// SELECT DISTINCT k, ks: keys and no aggregates.
	cfg := GroupAggregate{Input: aggTestSchema, Keys: []string{"ks", "k"}, Retracting: true}
	aggCase(t, "distinct", cfg, aggGen{rand.New(rand.NewPCG(11, 12)), 4}.events(400, 5, true))
}

// aggCollector is an Emitter that keeps the changes of each Emit.
type aggCollector struct {
	changes [][]optest.Change
	wms     []arrowflow.EventTime
}

func (c *aggCollector) Emit(b arrowflow.Batch) error {
	c.changes = append(c.changes, optest.Changes(b))
	b.Release()
	return nil
}

func (c *aggCollector) EmitWatermark(wm arrowflow.EventTime) error {
	c.wms = append(c.wms, wm)
	return nil
}

// flat returns every change emitted so far, as strings, and forgets them.
func (c *aggCollector) take() []string {
	var out []string
	for _, b := range c.changes {
		for _, ch := range b {
			out = append(out, ch.String())
		}
	}
	c.changes = nil
	return out
}

type aggFakeClock struct{ now time.Time }

func (c *aggFakeClock) Now() time.Time { return c.now }

// aggOpen opens one instance of cfg over the whole key-group range.
func aggOpen(t *testing.T, mem memory.Allocator, cfg GroupAggregate, clock arrowflow.Clock) arrowflow.Operator {
	t.Helper()
	op := cfg.Factory()()
	info := &arrowflow.TaskInfo{Name: "agg", Parallelism: 1, MaxParallelism: 128,
		KeyGroups: state.KeyGroupRange{Start: 0, End: 128}, Allocator: mem, Clock: clock}
	if err := op.Open(info); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { op.Close() })
	return op
}

// aggFeed sends rows (kind, values) as one batch.
func aggFeed(t *testing.T, mem memory.Allocator, op arrowflow.Operator, out arrowflow.Emitter, schema *arrow.Schema, kinds []arrowflow.RowKind, rows ...[]any) error {
	t.Helper()
	rec, err := optest.BuildRecord(mem, schema, rows)
	if err != nil {
		t.Fatal(err)
	}
	return op.ProcessBatch(0, arrowflow.NewChangeBatch(rec, kinds), out)
}

var aggSmallSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

func TestGroupAggregateFoldsAnEpoch(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	cfg := GroupAggregate{Input: aggSmallSchema, Keys: []string{"k"}, Retracting: true, Aggs: []window.Agg{
		{Func: kernels.AggCountStar, Name: "n"}, {Func: kernels.AggMax, Args: []string{"v"}, Name: "mx"}}}
	op := aggOpen(t, mem, cfg, nil)
	out := &aggCollector{}
	for i := 0; i < 100; i++ {
		if err := aggFeed(t, mem, op, out, aggSmallSchema, nil, []any{"a", int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := out.take(); len(got) != 0 {
		t.Fatalf("ProcessBatch emitted %v before the epoch closed", got)
	}
	fl := op.(arrowflow.EpochFlusher)
	if err := fl.FlushEpoch(1, out); err != nil {
		t.Fatal(err)
	}
	if got, want := out.take(), []string{`+I["a" 100 99]`}; !slices.Equal(got, want) {
		t.Fatalf("epoch 1: got %v, want %v", got, want)
	}
	// 100 updates of the key in one epoch: one pair.
	for i := 0; i < 100; i++ {
		if err := aggFeed(t, mem, op, out, aggSmallSchema, []arrowflow.RowKind{arrowflow.UpdateBefore, arrowflow.UpdateAfter},
			[]any{"a", int64(i)}, []any{"a", int64(i + 100)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := fl.FlushEpoch(2, out); err != nil {
		t.Fatal(err)
	}
	if got, want := out.take(), []string{`-U["a" 100 99]`, `+U["a" 100 199]`}; !slices.Equal(got, want) {
		t.Fatalf("epoch 2: got %v, want %v", got, want)
	}
	// A change that leaves the result as it was emits nothing.
	if err := aggFeed(t, mem, op, out, aggSmallSchema, []arrowflow.RowKind{arrowflow.UpdateBefore, arrowflow.UpdateAfter},
		[]any{"a", int64(100)}, []any{"a", int64(5)}); err != nil {
		t.Fatal(err)
	}
	if err := fl.FlushEpoch(3, out); err != nil {
		t.Fatal(err)
	}
	if got := out.take(); len(got) != 0 {
		t.Fatalf("epoch 3 (result unchanged): got %v, want nothing", got)
	}
	st := op.(GroupAggregateStatsReporter).GroupAggregateStats()
	// Row-at-a-time: +I for the first row, then 2 per row after.
	if want := int64(1 + 99*2 + 200*2 + 2*2); st.PerRowOutputRows != want {
		t.Errorf("PerRowOutputRows = %d, want %d", st.PerRowOutputRows, want)
	}
	if st.OutputRows != 3 || st.InputRows != 302 || st.Groups != 1 {
		t.Errorf("stats %+v: want 3 output rows, 302 input rows, 1 group", st)
	}
	// Deleting every row deletes the group; a new row starts a new one.
	for i := 5; i < 200; i++ {
		if i > 99 && i < 101 {
			continue
		}
		if err := aggFeed(t, mem, op, out, aggSmallSchema, []arrowflow.RowKind{arrowflow.Delete}, []any{"a", int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := op.Finish(out); err != nil {
		t.Fatal(err)
	}
	got := out.take()
	if want := []string{`-D["a" 100 199]`}; !slices.Equal(got, want) {
		t.Fatalf("after deleting every row: got %v, want %v", got, want)
	}
	if st := op.(GroupAggregateStatsReporter).GroupAggregateStats(); st.Groups != 0 {
		t.Errorf("%d groups left after the delete", st.Groups)
	}
}

func TestGroupAggregateMinRetraction(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	cfg := GroupAggregate{Input: aggSmallSchema, Keys: []string{"k"}, Retracting: true, Aggs: []window.Agg{
		{Func: kernels.AggMin, Args: []string{"v"}, Name: "mn"}, {Func: kernels.AggCountDistinct, Args: []string{"v"}, Name: "cd"}}}
	op := aggOpen(t, mem, cfg, nil)
	out := &aggCollector{}
	fl := op.(arrowflow.EpochFlusher)
	ins, del := arrowflow.Insert, arrowflow.Delete
	steps := []struct {
		kinds []arrowflow.RowKind
		rows  [][]any
		want  []string
	}{
		{[]arrowflow.RowKind{ins, ins, ins, ins}, [][]any{{"a", int64(3)}, {"a", int64(1)}, {"a", int64(1)}, {"a", int64(2)}}, []string{`+I["a" 1 3]`}},
		{[]arrowflow.RowKind{del}, [][]any{{"a", int64(1)}}, nil}, // one copy of the minimum is left
		{[]arrowflow.RowKind{del}, [][]any{{"a", int64(1)}}, []string{`-U["a" 1 3]`, `+U["a" 2 2]`}},
		{[]arrowflow.RowKind{del, ins}, [][]any{{"a", int64(2)}, {"a", nil}}, []string{`-U["a" 2 2]`, `+U["a" 3 1]`}},
		{[]arrowflow.RowKind{del}, [][]any{{"a", int64(3)}}, []string{`-U["a" 3 1]`, `+U["a" NULL 0]`}},
		{[]arrowflow.RowKind{del}, [][]any{{"a", nil}}, []string{`-D["a" NULL 0]`}},
		{[]arrowflow.RowKind{del}, [][]any{{"a", int64(7)}}, nil}, // a retraction of no row: ignored
	}
	for i, st := range steps {
		if err := aggFeed(t, mem, op, out, aggSmallSchema, st.kinds, st.rows...); err != nil {
			t.Fatal(err)
		}
		if err := fl.FlushEpoch(uint64(i), out); err != nil {
			t.Fatal(err)
		}
		if got := out.take(); !slices.Equal(got, st.want) {
			t.Fatalf("step %d: got %v, want %v", i, got, st.want)
		}
	}
	if st := op.(GroupAggregateStatsReporter).GroupAggregateStats(); st.IgnoredRetractions != 1 {
		t.Errorf("IgnoredRetractions = %d, want 1", st.IgnoredRetractions)
	}
}

func TestGroupAggregateTTL(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	clock := &aggFakeClock{now: time.UnixMilli(1_700_000_000_000)}
	cfg := GroupAggregate{Input: aggSmallSchema, Keys: []string{"k"}, StateTTL: time.Minute, Aggs: []window.Agg{
		{Func: kernels.AggSum, Args: []string{"v"}, Name: "s"}}}
	op := aggOpen(t, mem, cfg, clock)
	out := &aggCollector{}
	fl := op.(arrowflow.EpochFlusher)
	step := func(epoch uint64, advance time.Duration, want []string, rows ...[]any) {
		t.Helper()
		clock.now = clock.now.Add(advance)
		if len(rows) > 0 {
			if err := aggFeed(t, mem, op, out, aggSmallSchema, nil, rows...); err != nil {
				t.Fatal(err)
			}
		}
		if err := fl.FlushEpoch(epoch, out); err != nil {
			t.Fatal(err)
		}
		if got := out.take(); !slices.Equal(got, want) {
			t.Fatalf("epoch %d: got %v, want %v", epoch, got, want)
		}
	}
	step(1, 0, []string{`+I["a" 1]`, `+I["b" 10]`}, []any{"a", int64(1)}, []any{"b", int64(10)})
	step(2, 40*time.Second, []string{`-U["a" 1]`, `+U["a" 3]`}, []any{"a", int64(2)})
	// b was last updated 70 s ago and expires silently; a 30 s ago stays.
	step(3, 30*time.Second, nil)
	if st := op.(GroupAggregateStatsReporter).GroupAggregateStats(); st.Groups != 1 || st.ExpiredGroups != 1 {
		t.Fatalf("after the expiry: %+v, want 1 group and 1 expired", st)
	}
	// A new row of b starts a new group (+I); a continues.
	step(4, time.Second, []string{`-U["a" 3]`, `+U["a" 4]`, `+I["b" 5]`}, []any{"b", int64(5)}, []any{"a", int64(1)})
	// Snapshot and restore keep the update times.
	store := state.NewMemoryStore()
	w, _ := store.Create(state.SnapshotID{Job: "t", Epoch: 4, Operator: "agg"}, state.KeyGroupRange{Start: 0, End: 128})
	if err := op.SnapshotState(4, w); err != nil {
		t.Fatal(err)
	}
	h, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	op2 := aggOpen(t, mem, cfg, clock)
	r, err := store.Open(h, mem)
	if err != nil {
		t.Fatal(err)
	}
	if err := op2.RestoreState(r); err != nil {
		t.Fatal(err)
	}
	r.Close()
	op, fl = op2, op2.(arrowflow.EpochFlusher)
	step(5, 61*time.Second, nil)
	step(6, 0, []string{`+I["a" 7]`}, []any{"a", int64(7)})
}

func TestGroupAggregateRejectsRetractionWhenAppendOnly(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	cfg := GroupAggregate{Input: aggSmallSchema, Keys: []string{"k"}, Aggs: []window.Agg{{Func: kernels.AggMin, Args: []string{"v"}, Name: "m"}}}
	op := aggOpen(t, mem, cfg, nil)
	err := aggFeed(t, mem, op, &aggCollector{}, aggSmallSchema, []arrowflow.RowKind{arrowflow.Insert, arrowflow.Delete},
		[]any{"a", int64(1)}, []any{"a", int64(1)})
	if err == nil || !strings.Contains(err.Error(), "group aggregate agg") || !strings.Contains(err.Error(), "-D") {
		t.Fatalf("got %v, want an error naming the operator and the row kind", err)
	}
}

func TestGroupAggregateFlushesManyDirtyGroups(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	cfg := GroupAggregate{Input: aggSmallSchema, Keys: []string{"v"}}
	op := aggOpen(t, mem, cfg, nil)
	out := &aggCollector{}
	n := aggMaxDirty + 10
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{"x", int64(i)}
	}
	if err := aggFeed(t, mem, op, out, aggSmallSchema, nil, rows...); err != nil {
		t.Fatal(err)
	}
	if got := len(out.take()); got != n {
		t.Fatalf("%d dirty groups: ProcessBatch emitted %d rows, want all %d", n, got, n)
	}
}

func TestGroupAggregateSumOverflow(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	cfg := GroupAggregate{Input: aggSmallSchema, Keys: []string{"k"}, Aggs: []window.Agg{{Func: kernels.AggSum, Args: []string{"v"}, Name: "total"}}}
	op := aggOpen(t, mem, cfg, nil)
	err := aggFeed(t, mem, op, &aggCollector{}, aggSmallSchema, nil, []any{"a", int64(1) << 62}, []any{"a", int64(1) << 62})
	if err == nil || !strings.Contains(err.Error(), "overflows BIGINT") || !strings.Contains(err.Error(), "total") {
		t.Fatalf("got %v, want an overflow error naming the aggregate", err)
	}
}

func TestGroupAggregateValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  GroupAggregate
		want string
	}{
		{GroupAggregate{}, "no input schema"},
		{GroupAggregate{Input: aggSmallSchema, Keys: []string{"zz"}}, `key column "zz" not found`},
		{GroupAggregate{Input: aggSmallSchema}, "no keys and no aggregates"},
		{GroupAggregate{Input: aggSmallSchema, Aggs: []window.Agg{{Func: kernels.AggFirst, Args: []string{"v", "v"}, Name: "x"}}}, "not supported over a changelog"},
		{GroupAggregate{Input: aggSmallSchema, Aggs: []window.Agg{{Func: kernels.AggSum, Args: []string{"k"}, Name: "x"}}}, "unsupported argument type"},
		{GroupAggregate{Input: aggSmallSchema, Keys: []string{"k"}, Aggs: []window.Agg{{Func: kernels.AggCount, Args: []string{"v"}, Name: "k"}}}, `"k" named twice`},
		{GroupAggregate{Input: aggSmallSchema, Keys: []string{"k"}, StateTTL: -1}, "negative"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
	cfg := GroupAggregate{Input: aggTestSchema, Keys: []string{"ks", "k"}, Aggs: aggTestAggs}
	s, err := cfg.OutputSchema()
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"ks", "k"} {
		if f := s.Field(i); f.Name != want || !arrow.TypeEqual(f.Type, aggTestSchema.Field(aggTestSchema.FieldIndices(want)[0]).Type) {
			t.Errorf("output column %d is %s, want key %s of its input type", i, f, want)
		}
	}
	for i, ag := range aggTestAggs {
		var types []arrow.DataType
		for _, a := range ag.Args {
			types = append(types, aggTestSchema.Field(aggTestSchema.FieldIndices(a)[0]).Type)
		}
		acc, err := kernels.NewAccumulator(ag.Func, types)
		if err != nil {
			t.Fatal(err)
		}
		if f := s.Field(2 + i); f.Name != ag.Name || !arrow.TypeEqual(f.Type, acc.ResultType()) {
			t.Errorf("output column %d is %s, want %s %s", 2+i, f, ag.Name, acc.ResultType())
		}
	}
}

// TestGroupAggregateCompacts runs the retracting cases with compaction
// thresholds so low that groups and value multisets are rebuilt all the
// time.
func TestGroupAggregateCompacts(t *testing.T) {
	defer func(g, p int) { aggMinCompact, aggMinPairCompact = g, p }(aggMinCompact, aggMinPairCompact)
	aggMinCompact, aggMinPairCompact = 2, 2
	cfg := GroupAggregate{Input: aggTestSchema, Keys: []string{"k", "ks"}, Aggs: aggTestAggs, Retracting: true}
	gen := aggGen{rand.New(rand.NewPCG(13, 14)), 30}
	events := gen.events(400, 4, true)
	// Epoch 4 deletes most rows, so that most groups go; epoch 5 brings
	// some back.
	present := map[aggTRow]int{}
	for _, ev := range events {
		if ev.kind.IsRetraction() {
			present[ev.row]--
		} else {
			present[ev.row]++
		}
	}
	for row, n := range present {
		for ; n > 0; n-- {
			if gen.rng.IntN(10) > 0 {
				events = append(events, aggTEvent{arrowflow.Delete, row, 4})
			}
		}
	}
	for i := 0; i < 50; i++ {
		events = append(events, aggTEvent{arrowflow.Insert, gen.row(), 5})
	}
	aggCase(t, "compacting", cfg, events)

	// The same input at once, to see that compactions happened.
	mem := testutil.CheckedAllocator(t)
	op := aggOpen(t, mem, cfg, nil)
	out := &aggCollector{}
	for e := 0; e < 6; e++ {
		for _, ev := range events {
			if ev.epoch == e {
				if err := aggFeed(t, mem, op, out, aggTestSchema, []arrowflow.RowKind{ev.kind}, ev.row.values()); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := op.(arrowflow.EpochFlusher).FlushEpoch(uint64(e), out); err != nil {
			t.Fatal(err)
		}
	}
	st := op.(GroupAggregateStatsReporter).GroupAggregateStats()
	if st.Compactions == 0 {
		t.Errorf("no group compaction: %+v", st)
	}

	// One group whose values mostly go: its multisets are rebuilt, and
	// the minimum, maximum and distinct count stay right.
	small := GroupAggregate{Input: aggSmallSchema, Keys: []string{"k"}, Retracting: true, Aggs: []window.Agg{
		{Func: kernels.AggMin, Args: []string{"v"}, Name: "mn"}, {Func: kernels.AggMax, Args: []string{"v"}, Name: "mx"},
		{Func: kernels.AggCountDistinct, Args: []string{"v"}, Name: "cd"}}}
	op = aggOpen(t, mem, small, nil)
	for i := 0; i < 20; i++ {
		if err := aggFeed(t, mem, op, out, aggSmallSchema, nil, []any{"a", int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, i := range []int{0, 1, 2, 3, 4, 5, 6, 7, 19, 18, 17, 16, 15, 14, 13} {
		if err := aggFeed(t, mem, op, out, aggSmallSchema, []arrowflow.RowKind{arrowflow.Delete}, []any{"a", int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := aggFeed(t, mem, op, out, aggSmallSchema, nil, []any{"a", int64(3)}, []any{"a", int64(9)}); err != nil {
		t.Fatal(err)
	}
	out.take()
	if err := op.(arrowflow.EpochFlusher).FlushEpoch(1, out); err != nil {
		t.Fatal(err)
	}
	if got, want := out.take(), []string{`+I["a" 3 12 6]`}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if sets := op.(*aggOp).sets; len(sets) != 1 {
		t.Errorf("%d value sets, want 1 shared by min, max and count(distinct)", len(sets))
	}
	for _, s := range op.(*aggOp).sets {
		p := s.pairs
		if dead := len(p.count) - p.live; p.compactions == 0 || (dead > aggMinPairCompact && dead > p.live) {
			t.Errorf("values of column %d: %d compactions, %d dead pairs, %d live", s.col, p.compactions, dead, p.live)
		}
	}
}

// aggTwoPhase runs a local and a final phase as one operator: the local
// phase's partial rows go straight into the final phase of the same
// subtask (optest routes the input by the keys, as KeyBy would route the
// partial rows).
type aggTwoPhase struct {
	local, final arrowflow.Operator
}

type aggPipe struct {
	final arrowflow.Operator
	out   arrowflow.Emitter
}

func (p aggPipe) Emit(b arrowflow.Batch) error { return p.final.ProcessBatch(0, b, p.out) }

func (p aggPipe) EmitWatermark(arrowflow.EventTime) error { return nil }

func (o *aggTwoPhase) Open(info *arrowflow.TaskInfo) error {
	if err := o.local.Open(info); err != nil {
		return err
	}
	return o.final.Open(info)
}

func (o *aggTwoPhase) ProcessBatch(i int, b arrowflow.Batch, out arrowflow.Emitter) error {
	return o.local.ProcessBatch(i, b, aggPipe{o.final, out})
}

func (o *aggTwoPhase) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	return out.EmitWatermark(wm)
}

func (o *aggTwoPhase) FlushEpoch(e uint64, out arrowflow.Emitter) error {
	if err := o.local.(arrowflow.EpochFlusher).FlushEpoch(e, aggPipe{o.final, out}); err != nil {
		return err
	}
	return o.final.(arrowflow.EpochFlusher).FlushEpoch(e, out)
}

func (o *aggTwoPhase) SnapshotState(e uint64, w state.SnapshotWriter) error {
	if err := o.local.SnapshotState(e, w); err != nil {
		return err
	}
	return o.final.SnapshotState(e, w)
}

func (o *aggTwoPhase) RestoreState(r state.SnapshotReader) error { return o.final.RestoreState(r) }

func (o *aggTwoPhase) Finish(out arrowflow.Emitter) error {
	if err := o.local.Finish(aggPipe{o.final, out}); err != nil {
		return err
	}
	return o.final.Finish(out)
}

func (o *aggTwoPhase) Close() error {
	o.local.Close()
	return o.final.Close()
}

func aggTwoPhaseCase(t *testing.T, name string, cfg GroupAggregate, events []aggTEvent) {
	t.Helper()
	final, err := cfg.Final()
	if err != nil {
		t.Fatal(err)
	}
	local := cfg.Local()
	if err := local.Validate(); err != nil {
		t.Fatal(err)
	}
	c := optest.Case{
		Name: name,
		Factory: func() arrowflow.Operator {
			return &aggTwoPhase{local: local.Factory()(), final: final.Factory()()}
		},
		Inputs: []optest.Input{{Schema: cfg.Input, KeyBy: cfg.Keys, Rows: aggOptestRows(events)}},
		Want:   func(e int) [][]any { return aggReference(t, cfg, events, e) },
		Seed:   9,
	}
	optest.Run(t, c)
}

func TestGroupAggregateTwoPhase(t *testing.T) {
	var retractable, appendOnly []window.Agg
	for _, ag := range aggTestAggs {
		switch ag.Func {
		case kernels.AggCountDistinct:
		case kernels.AggMin, kernels.AggMax:
			appendOnly = append(appendOnly, ag)
		default:
			retractable = append(retractable, ag)
			appendOnly = append(appendOnly, ag)
		}
	}
	t.Run("retract", func(t *testing.T) {
		cfg := GroupAggregate{Input: aggTestSchema, Keys: []string{"k", "ks"}, Aggs: retractable, Retracting: true}
		aggTwoPhaseCase(t, "twophase-retract", cfg, aggGen{rand.New(rand.NewPCG(21, 22)), 3}.events(300, 4, true))
	})
	t.Run("append-only", func(t *testing.T) {
		cfg := GroupAggregate{Input: aggTestSchema, Keys: []string{"k"}, Aggs: appendOnly}
		aggTwoPhaseCase(t, "twophase-append", cfg, aggGen{rand.New(rand.NewPCG(23, 24)), 8}.events(300, 4, false))
	})
	t.Run("global", func(t *testing.T) {
		cfg := GroupAggregate{Input: aggTestSchema, Aggs: retractable, Retracting: true}
		aggTwoPhaseCase(t, "twophase-global", cfg, aggGen{rand.New(rand.NewPCG(25, 26)), 3}.events(300, 4, true))
	})
	for _, cfg := range []GroupAggregate{
		{Input: aggTestSchema, Keys: []string{"k"}, Aggs: aggTestAggs[6:7]},
		{Input: aggTestSchema, Keys: []string{"k"}, Aggs: aggTestAggs[3:4], Retracting: true},
	} {
		if _, err := cfg.Final(); !errors.Is(err, window.ErrTwoPhaseUnsupported) {
			t.Errorf("Final of %s (retracting %v): got %v, want ErrTwoPhaseUnsupported", cfg.Aggs[0].Func, cfg.Retracting, err)
		}
	}
}

func TestGroupAggregateDecimalSumLeaves38Digits(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 38, Scale: 0}, Nullable: true},
	}, nil)
	cfg := GroupAggregate{Input: schema, Keys: []string{"k"}, Retracting: true, Aggs: []window.Agg{
		{Func: kernels.AggSum, Args: []string{"d"}, Name: "s"}}}
	op := aggOpen(t, mem, cfg, nil)
	out := &aggCollector{}
	big := "90000000000000000000000000000000000000" // 9e37
	steps := []struct {
		kind arrowflow.RowKind
		want []string
	}{
		{arrowflow.Insert, []string{`+I["a" "` + big + `"]`}},
		{arrowflow.Insert, []string{`-U["a" "` + big + `"]`, `+U["a" NULL]`}}, // 1.8e38 needs 39 digits
		{arrowflow.Delete, []string{`-U["a" NULL]`, `+U["a" "` + big + `"]`}}, // and comes back
	}
	for i, st := range steps {
		if err := aggFeed(t, mem, op, out, schema, []arrowflow.RowKind{st.kind}, []any{"a", big}); err != nil {
			t.Fatal(err)
		}
		if err := op.(arrowflow.EpochFlusher).FlushEpoch(uint64(i), out); err != nil {
			t.Fatal(err)
		}
		if got := out.take(); !slices.Equal(got, st.want) {
			t.Fatalf("step %d: got %v, want %v", i, got, st.want)
		}
	}
}
