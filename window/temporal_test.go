package window

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
)

func tjTestConfig(kind JoinKind, keys int) TemporalJoin {
	j := TemporalJoin{
		Left: joinLeftSchema, Right: joinRightSchema, LeftTime: "ts", RightTime: "ts",
		LeftKeys: []string{"id"}, RightKeys: []string{"seller"}, Kind: kind, RightPrefix: "r_",
		LeftLateOutput: "late_left", RightLateOutput: "late_right",
	}
	if keys == 2 {
		j.LeftKeys, j.RightKeys = []string{"id", "grp"}, []string{"seller", "grp"}
	}
	return j
}

// tjExpect is what the reference computes.
type tjExpect struct {
	rows               []string
	late               [2]int64
	nullTime, nullKeys int64
	pairs, padded      int64
	ties               int64 // pairs whose version had a same-time rival
	inRows             [2]int64
}

// tjReference computes the temporal join by the definition, replaying the
// watermarks: a row at or before the watermark is late; a left row with a
// NULL key is padded (left outer) or dropped; every other left row meets,
// among the accepted right rows with equal keys and time <= its time, the
// one with the largest time, of those the last to arrive.
func tjReference(j TemporalJoin, steps []ivStep) tjExpect {
	var exp tjExpect
	wm, seen := int64(0), false
	outer := j.Kind == JoinLeftOuter
	cols := [2][]string{j.LeftColumns, j.RightColumns}
	for s, schema := range []*arrow.Schema{j.Left, j.Right} {
		if cols[s] == nil {
			for _, f := range schema.Fields() {
				cols[s] = append(cols[s], f.Name)
			}
		}
	}
	ij := IntervalJoin{LeftKeys: j.LeftKeys}
	format := func(l joinRow, r *joinRow) string {
		var vals []any
		for _, name := range cols[0] {
			vals = append(vals, joinValue(l, name))
		}
		for _, name := range cols[1] {
			if r == nil {
				vals = append(vals, nil)
			} else {
				vals = append(vals, joinValue(*r, name))
			}
		}
		return fmt.Sprint(vals)
	}
	var left, right []joinRow // accepted, in arrival order
	for _, st := range steps {
		for _, r := range st.rows {
			exp.inRows[st.side]++
			switch {
			case r.ts == nil:
				exp.nullTime++
			case seen && *r.ts <= wm:
				exp.late[st.side]++
			case ivNullKey(ij, r):
				if st.side == 0 && outer {
					exp.rows = append(exp.rows, format(r, nil))
					exp.padded++
				} else {
					exp.nullKeys++
				}
			case st.side == 0:
				left = append(left, r)
			default:
				right = append(right, r)
			}
		}
		if st.wm != nil {
			wm, seen = *st.wm, true
		}
	}
	for _, l := range left {
		best, rivals := -1, 0
		for i, r := range right {
			if !ivKeysEqual(ij, l, r) || *r.ts > *l.ts {
				continue
			}
			switch {
			case best < 0 || *r.ts > *right[best].ts:
				best, rivals = i, 0
			case *r.ts == *right[best].ts:
				best, rivals = i, rivals+1 // the later arrival wins
			}
		}
		switch {
		case best >= 0:
			exp.rows = append(exp.rows, format(l, &right[best]))
			exp.pairs++
			if rivals > 0 {
				exp.ties++
			}
		case outer:
			exp.rows = append(exp.rows, format(l, nil))
			exp.padded++
		}
	}
	sort.Strings(exp.rows)
	return exp
}

// tjCollector is the emitter of every subtask in the harness.
type tjCollector struct {
	t    testing.TB
	cfg  TemporalJoin
	out  *arrow.Schema
	rows []string
	late map[string]int64
	// wm is the watermark of the subtask emitting; checked: every pair
	// emitted has a left time at or before it.
	wm      arrowflow.EventTime
	inBatch bool
}

func (c *tjCollector) Emit(b arrowflow.Batch) error {
	defer b.Release()
	if err := b.Validate(); err != nil {
		return err
	}
	if b.NumRows() == 0 {
		c.t.Errorf("an empty batch was emitted")
	}
	if !b.Schema().Equal(c.out) {
		c.t.Errorf("output schema %s, want %s", b.Schema(), c.out)
	}
	for k := range b.NumRows() {
		vals := b.RowValues(k)
		c.rows = append(c.rows, fmt.Sprint(vals))
		// A left row with a key is emitted when the watermark passes it,
		// never on arrival.
		nullKey := vals[0] == nil || (len(c.cfg.LeftKeys) == 2 && vals[1] == nil)
		if lt, ok := vals[2].(time.Time); ok && !nullKey && (c.inBatch || lt.UnixNano() > int64(c.wm)) {
			c.t.Errorf("row %v emitted at watermark %v (in batch: %t)", vals, c.wm, c.inBatch)
		}
	}
	return nil
}

func (c *tjCollector) EmitWatermark(arrowflow.EventTime) error { return nil }

func (c *tjCollector) EmitSide(output string, b arrowflow.Batch) error {
	defer b.Release()
	want := map[string]*arrow.Schema{"late_left": c.cfg.Left, "late_right": c.cfg.Right}[output]
	if want == nil || !b.Schema().Equal(want) {
		return fmt.Errorf("unexpected side output %q with schema %s", output, b.Schema())
	}
	vs := b.Record.Column(3).(*array.Int64)
	for k := range b.NumRows() {
		if vs.Value(b.Row(k)) < 0 {
			return fmt.Errorf("a junk row (outside the selection) went to the late output")
		}
	}
	if c.late == nil {
		c.late = map[string]int64{}
	}
	c.late[output] += int64(b.NumRows())
	return nil
}

// tjHarness drives a temporal join's subtasks as the runtime would: each
// step's rows go to the subtask owning their key, then, if the step has
// one, every subtask's watermark advances.
type tjHarness struct {
	t     testing.TB
	mem   memory.Allocator
	cfg   TemporalJoin
	mask  uint64
	purge int
	subs  []subtask
	wms   []arrowflow.EventTime
	out   *tjCollector
	// maxRight is the most versions any subtask held after a watermark.
	maxRight int64
}

func (h *tjHarness) open(par int) {
	h.subs = make([]subtask, par)
	h.wms = make([]arrowflow.EventTime, par)
	for i := range h.subs {
		info := &arrowflow.TaskInfo{Job: "t", Name: "tj", Subtask: i, Parallelism: par,
			MaxParallelism: state.DefaultMaxParallelism, KeyGroups: state.RangeOf(i, state.DefaultMaxParallelism, par), Allocator: h.mem}
		op := h.cfg.Factory()()
		if err := op.Open(info); err != nil {
			h.t.Fatal(err)
		}
		if h.mask != 0 {
			op.(*temporalOp).hashMask = h.mask
		}
		if h.purge != 0 {
			op.(*temporalOp).purgeMin = h.purge
		}
		h.subs[i] = subtask{op, info}
		h.wms[i] = arrowflow.MinEventTime
	}
}

func (h *tjHarness) feed(st ivStep, junk *rand.Rand) {
	t := h.t
	schema, keys := h.cfg.Left, h.cfg.LeftKeys
	if st.side == 1 {
		schema, keys = h.cfg.Right, h.cfg.RightKeys
	}
	rec, sel := ivBuild(h.mem, schema, st.rows, junk)
	defer rec.Release()
	var cols []arrow.Array
	for _, k := range keys {
		cols = append(cols, rec.Column(rec.Schema().FieldIndices(k)[0]))
	}
	part, err := kernels.NewPartitioner(state.DefaultMaxParallelism, len(h.subs))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := part.Assign(cols, sel); err != nil {
		t.Fatal(err)
	}
	sels := make([][]int32, len(h.subs))
	for i := range sels {
		sels[i] = []int32{}
	}
	part.Split(sel, sels)
	for i, s := range h.subs {
		b := arrowflow.Batch{Record: rec, Sel: sels[i]}
		if junk == nil && len(h.subs) == 1 {
			b.Sel = nil // the whole batch: held without a copy
		}
		rec.Retain()
		h.out.inBatch, h.out.wm = true, h.wms[i]
		if err := s.op.ProcessBatch(st.side, b, h.out); err != nil {
			t.Fatal(err)
		}
		if st.wm != nil {
			h.watermark(i, arrowflow.EventTime(*st.wm*int64(time.Millisecond)))
		}
	}
}

func (h *tjHarness) watermark(i int, wm arrowflow.EventTime) {
	if wm <= h.wms[i] {
		return
	}
	h.out.inBatch, h.out.wm = false, wm
	if err := h.subs[i].op.ProcessWatermark(wm, h.out); err != nil {
		h.t.Fatal(err)
	}
	h.wms[i] = wm
	h.maxRight = max(h.maxRight, h.subs[i].op.(TemporalJoinStatsReporter).TemporalJoinStats().RightStateRows)
}

func tjAddStats(sum *TemporalJoinStats, s TemporalJoinStats) {
	sum.LeftRows += s.LeftRows
	sum.RightRows += s.RightRows
	sum.LateRows += s.LateRows
	sum.NullTimeRows += s.NullTimeRows
	sum.NullKeyRows += s.NullKeyRows
	sum.Pairs += s.Pairs
	sum.PaddedRows += s.PaddedRows
	sum.OutputRows += s.OutputRows
}

// snapshotRestore snapshots every subtask into snapshot files, closes it,
// and opens newPar subtasks that each restore their key groups (from every
// old file in full with openAll). It returns the old counters.
func (h *tjHarness) snapshotRestore(newPar int, openAll bool) TemporalJoinStats {
	t := h.t
	store, err := state.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var handles []state.Handle
	var stats TemporalJoinStats
	var rows [2]int64
	minWM := arrowflow.MaxEventTime
	for i, s := range h.subs {
		handles = append(handles, snapshotSubtask(t, store, "tj", s))
		st := s.op.(TemporalJoinStatsReporter).TemporalJoinStats()
		tjAddStats(&stats, st)
		rows[0], rows[1] = rows[0]+st.LeftStateRows, rows[1]+st.RightStateRows
		minWM = min(minWM, h.wms[i])
		if err := s.op.Close(); err != nil {
			t.Fatal(err)
		}
	}
	h.open(newPar)
	var restored [2]int64
	for i, s := range h.subs {
		restoreSubtask(t, store, h.mem, handles, s, openAll)
		h.wms[i] = minWM
		st := s.op.(TemporalJoinStatsReporter).TemporalJoinStats()
		restored[0], restored[1] = restored[0]+st.LeftStateRows, restored[1]+st.RightStateRows
	}
	if restored != rows {
		t.Fatalf("restored %v left/right rows, the snapshots held %v", restored, rows)
	}
	if rows[0] == 0 || rows[1] == 0 {
		t.Fatalf("the snapshot held %v left/right rows: restore is not exercised", rows)
	}
	return stats
}

type tjRunOpts struct {
	par, restoreAt, newPar int
	openAll, junk          bool
	mask                   uint64
	purge                  int
}

type tjResult struct {
	rows     []string
	stats    TemporalJoinStats
	late     map[string]int64
	maxRight int64
}

func tjRun(t testing.TB, mem memory.Allocator, cfg TemporalJoin, steps []ivStep, o tjRunOpts) tjResult {
	outSchema, err := cfg.OutputSchema()
	if err != nil {
		t.Fatal(err)
	}
	h := &tjHarness{t: t, mem: mem, cfg: cfg, mask: o.mask, purge: o.purge, out: &tjCollector{t: t, cfg: cfg, out: outSchema}}
	h.open(o.par)
	var junk *rand.Rand
	if o.junk {
		junk = rand.New(rand.NewPCG(7, 7))
	}
	var stats TemporalJoinStats
	for i, st := range steps {
		if o.restoreAt > 0 && i == o.restoreAt {
			stats = h.snapshotRestore(o.newPar, o.openAll)
		}
		h.feed(st, junk)
	}
	for i, s := range h.subs {
		h.out.inBatch, h.out.wm = false, arrowflow.MaxEventTime
		if err := s.op.Finish(h.out); err != nil {
			t.Fatal(err)
		}
		st := s.op.(TemporalJoinStatsReporter).TemporalJoinStats()
		tjAddStats(&stats, st)
		if st.LeftStateRows != 0 || st.RightStateRows != 0 {
			t.Errorf("subtask %d holds %d + %d rows after the end", i, st.LeftStateRows, st.RightStateRows)
		}
		if err := s.op.Close(); err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(h.out.rows)
	return tjResult{rows: h.out.rows, stats: stats, late: h.out.late, maxRight: h.maxRight}
}

func tjCheck(t *testing.T, got tjResult, want tjExpect) {
	t.Helper()
	if !slices.Equal(got.rows, want.rows) {
		t.Fatalf("%d rows, reference %d; first difference: %s", len(got.rows), len(want.rows), joinDiff(got.rows, want.rows))
	}
	if got.stats.LateRows != want.late[0]+want.late[1] || got.late["late_left"] != want.late[0] || got.late["late_right"] != want.late[1] {
		t.Errorf("late rows: counted %d, side outputs %v, reference %v", got.stats.LateRows, got.late, want.late)
	}
	st := got.stats
	if st.NullTimeRows != want.nullTime || st.NullKeyRows != want.nullKeys {
		t.Errorf("NULL time/key rows %d/%d, reference %d/%d", st.NullTimeRows, st.NullKeyRows, want.nullTime, want.nullKeys)
	}
	if st.Pairs != want.pairs || st.PaddedRows != want.padded || st.OutputRows != int64(len(want.rows)) {
		t.Errorf("pairs/padded/output %d/%d/%d, reference %d/%d/%d", st.Pairs, st.PaddedRows, st.OutputRows, want.pairs, want.padded, len(want.rows))
	}
	if st.LeftRows != want.inRows[0] || st.RightRows != want.inRows[1] {
		t.Errorf("rows in %d/%d, sent %v", st.LeftRows, st.RightRows, want.inRows)
	}
}

// tjGen draws steps as ivGen does, then rewrites about one right row in
// ten as a second version of the right row before it (same key and time,
// so that the later arrival must win), in the same batch or the next
// right one.
func tjGen(rng *rand.Rand, n, keys int, bound int64, lateP, wmP float64) []ivStep {
	steps := ivGen(rng, n, keys, bound, lateP, wmP)
	var prev *joinRow
	for _, st := range steps {
		if st.side != 1 {
			continue
		}
		for i := range st.rows {
			r := &st.rows[i]
			if prev != nil && rng.IntN(10) == 0 {
				r.key, r.grp, r.ts = prev.key, prev.grp, prev.ts
			}
			prev = r
		}
	}
	return steps
}

func TestTemporalJoinMatchesReference(t *testing.T) {
	var ties, padded, late int64
	for ki, kind := range []JoinKind{JoinInner, JoinLeftOuter} {
		for _, par := range []int{1, 2} {
			for variant := range 4 {
				v := ki + par + variant
				keys := 1 + v%2
				mask := []uint64{0, 3}[(variant/2+par)%2] // 3: four hash values, collisions everywhere
				junk := variant%2 == 0
				micros := (ki+variant)%3 == 0
				purge := []int{0, 16}[(ki+variant)%2] // 16: compact often
				wmP := []float64{1, 0.3}[(par+variant)%2]
				name := fmt.Sprintf("%s/par=%d/keys=%d/mask=%d/junk=%t/us=%t/purge=%d/wm=%.1f", kind, par, keys, mask, junk, micros, purge, wmP)
				t.Run(name, func(t *testing.T) {
					mem := testutil.CheckedAllocator(t)
					rng := rand.New(rand.NewPCG(uint64(ki), uint64(par*10+variant)))
					steps := tjGen(rng, 1500, 6, 200, 0.05, wmP)
					cfg := tjTestConfig(kind, keys)
					if micros {
						cfg.Right = ivRightMicros
					}
					got := tjRun(t, mem, cfg, steps, tjRunOpts{par: par, junk: junk, mask: mask, purge: purge})
					want := tjReference(cfg, steps)
					tjCheck(t, got, want)
					if want.pairs == 0 || want.late[0] == 0 || want.late[1] == 0 {
						t.Fatalf("reference has %d pairs, late rows %v: the test would not see them", want.pairs, want.late)
					}
					ties += want.ties
					padded += want.padded
					late += want.late[1]
				})
			}
		}
	}
	if ties == 0 || padded == 0 || late == 0 {
		t.Errorf("same-time versions %d, padded rows %d, late versions %d: some case is not exercised", ties, padded, late)
	}
}

func TestTemporalJoinSnapshotRestoreRescale(t *testing.T) {
	for _, c := range []struct {
		kind           JoinKind
		par, newPar    int
		openAll, junk  bool
		keys, restored int
	}{
		{JoinInner, 1, 2, false, false, 1, 0},
		{JoinLeftOuter, 2, 1, false, true, 2, 0},
		{JoinLeftOuter, 2, 3, true, false, 1, 0},
		{JoinInner, 3, 2, true, true, 2, 0},
	} {
		name := fmt.Sprintf("%s/%d->%d/openAll=%t/keys=%d", c.kind, c.par, c.newPar, c.openAll, c.keys)
		t.Run(name, func(t *testing.T) {
			mem := testutil.CheckedAllocator(t)
			rng := rand.New(rand.NewPCG(11, uint64(c.par*10+c.newPar)))
			steps := tjGen(rng, 1500, 6, 200, 0.05, 0.5)
			// Restore right after a step without a watermark, so that
			// left rows are waiting.
			at := len(steps) / 2
			for steps[at-1].wm != nil {
				at++
			}
			cfg := tjTestConfig(c.kind, c.keys)
			got := tjRun(t, mem, cfg, steps, tjRunOpts{par: c.par, restoreAt: at, newPar: c.newPar, openAll: c.openAll, junk: c.junk})
			tjCheck(t, got, tjReference(cfg, steps))
		})
	}
}

// The hand-checked example: currency rates versioned by time, orders
// priced at the rate valid at their time. Rates come out of order, one
// rate time is written twice, rows come late on both sides.
func TestTemporalJoinSmallExample(t *testing.T) {
	orders := arrow.NewSchema([]arrow.Field{
		{Name: "order", Type: arrow.PrimitiveTypes.Int64},
		{Name: "currency", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
	}, nil)
	rates := arrow.NewSchema([]arrow.Field{
		{Name: "currency", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "rate", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	type row struct {
		side int
		cur  string // "" is NULL
		ms   int64
		val  float64 // order number or rate
	}
	type step struct {
		rows []row
		wm   int64 // ms; 0: none
	}
	steps := []step{
		{rows: []row{{1, "EUR", 1000, 1.10}, {1, "USD", 1000, 1.00}, {1, "EUR", 3000, 1.20}}},
		{rows: []row{{0, "EUR", 500, 1}, {0, "EUR", 2000, 2}, {0, "EUR", 3000, 3}, {0, "EUR", 2700, 7}}},
		{rows: []row{{1, "EUR", 3000, 1.25}, {1, "EUR", 2500, 1.15}}}, // 1.25 replaces 1.20; 1.15 comes late but not behind the watermark
		{rows: []row{{0, "USD", 4000, 4}, {0, "JPY", 2500, 5}, {0, "", 2000, 6}}, wm: 5000},
		{rows: []row{{0, "EUR", 4000, 8}, {1, "EUR", 4500, 1.30}}}, // both late: at or behind 5000
		{rows: []row{{0, "EUR", 6000, 9}}, wm: 7000},
	}
	ts := func(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
	pair := func(order int64, cur string, ms int64, rate float64, rms int64) string {
		return fmt.Sprint([]any{order, cur, ts(ms), rate, ts(rms)})
	}
	padded := func(order int64, cur any, ms int64) string {
		return fmt.Sprint([]any{order, cur, ts(ms), nil, nil})
	}
	inner := []string{
		pair(2, "EUR", 2000, 1.10, 1000),
		pair(7, "EUR", 2700, 1.15, 2500),
		pair(3, "EUR", 3000, 1.25, 3000), // the later of the two 3000 versions
		pair(4, "USD", 4000, 1.00, 1000),
		pair(9, "EUR", 6000, 1.25, 3000), // not 1.30: that one was late
	}
	outer := append(slices.Clone(inner),
		padded(1, "EUR", 500), // before the first EUR rate
		padded(5, "JPY", 2500),
		padded(6, nil, 2000))
	for _, c := range []struct {
		kind     JoinKind
		want     []string
		nullKeys int64
	}{{JoinInner, inner, 1}, {JoinLeftOuter, outer, 0}} {
		t.Run(c.kind.String(), func(t *testing.T) {
			mem := testutil.CheckedAllocator(t)
			cfg := TemporalJoin{Left: orders, Right: rates, LeftTime: "ts", RightTime: "ts",
				LeftKeys: []string{"currency"}, RightKeys: []string{"currency"}, Kind: c.kind,
				RightColumns: []string{"rate", "ts"}, RightPrefix: "r_",
				LeftLateOutput: "late_orders", RightLateOutput: "late_rates"}
			out, err := cfg.OutputSchema()
			if err != nil {
				t.Fatal(err)
			}
			info := &arrowflow.TaskInfo{Job: "t", Name: "tj", Parallelism: 1, MaxParallelism: state.DefaultMaxParallelism,
				KeyGroups: state.RangeOf(0, state.DefaultMaxParallelism, 1), Allocator: mem}
			op := cfg.Factory()()
			if err := op.Open(info); err != nil {
				t.Fatal(err)
			}
			em := &tjExampleEmitter{t: t, out: out}
			for _, st := range steps {
				for side, schema := range []*arrow.Schema{orders, rates} {
					b := array.NewRecordBuilder(mem, schema)
					for _, r := range st.rows {
						if r.side != side {
							continue
						}
						if side == 0 {
							b.Field(0).(*array.Int64Builder).Append(int64(r.val))
							tjAppendCur(b.Field(1), r.cur)
							b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ms))
						} else {
							tjAppendCur(b.Field(0), r.cur)
							b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ms * 1000))
							b.Field(2).(*array.Float64Builder).Append(r.val)
						}
					}
					rec := b.NewRecordBatch()
					b.Release()
					if err := op.ProcessBatch(side, arrowflow.NewBatch(rec), em); err != nil {
						t.Fatal(err)
					}
				}
				if st.wm != 0 {
					if err := op.ProcessWatermark(arrowflow.EventTime(st.wm*int64(time.Millisecond)), em); err != nil {
						t.Fatal(err)
					}
					if st.wm == 5000 {
						// EUR keeps only its 3000 version (the later of two), USD its one.
						if n := op.(TemporalJoinStatsReporter).TemporalJoinStats().RightStateRows; n != 2 {
							t.Errorf("%d versions held at watermark 5000, want 2", n)
						}
					}
				}
			}
			if err := op.Finish(em); err != nil {
				t.Fatal(err)
			}
			st := op.(TemporalJoinStatsReporter).TemporalJoinStats()
			if err := op.Close(); err != nil {
				t.Fatal(err)
			}
			sort.Strings(em.rows)
			want := slices.Clone(c.want)
			sort.Strings(want)
			if !slices.Equal(em.rows, want) {
				t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(em.rows, "\n"), strings.Join(want, "\n"))
			}
			if em.late["late_orders"] != 1 || em.late["late_rates"] != 1 || st.LateRows != 2 {
				t.Errorf("late rows %v, counted %d; want one of each", em.late, st.LateRows)
			}
			if st.NullKeyRows != c.nullKeys || st.Pairs != 5 || st.OutputRows != int64(len(want)) {
				t.Errorf("NULL-key rows %d, pairs %d, output %d; want %d, 5, %d", st.NullKeyRows, st.Pairs, st.OutputRows, c.nullKeys, len(want))
			}
		})
	}
}

func tjAppendCur(b array.Builder, cur string) {
	if cur == "" {
		b.AppendNull()
	} else {
		b.(*array.StringBuilder).Append(cur)
	}
}

// tjExampleEmitter collects output rows and counts side-output rows.
type tjExampleEmitter struct {
	t    testing.TB
	out  *arrow.Schema
	rows []string
	late map[string]int
}

func (e *tjExampleEmitter) Emit(b arrowflow.Batch) error {
	defer b.Release()
	if !b.Schema().Equal(e.out) {
		e.t.Errorf("output schema %s, want %s", b.Schema(), e.out)
	}
	for k := range b.NumRows() {
		e.rows = append(e.rows, fmt.Sprint(b.RowValues(k)))
	}
	return nil
}

func (e *tjExampleEmitter) EmitWatermark(arrowflow.EventTime) error { return nil }

func (e *tjExampleEmitter) EmitSide(output string, b arrowflow.Batch) error {
	defer b.Release()
	if e.late == nil {
		e.late = map[string]int{}
	}
	e.late[output] += b.NumRows()
	return nil
}

// State stays bounded over a long stream: each key keeps the versions
// after the watermark and one before it, and the left rows wait only
// until the watermark passes them.
func TestTemporalJoinStateStaysSmall(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	const keys, bound = 6, 200
	rng := rand.New(rand.NewPCG(3, 3))
	steps := ivGen(rng, 30000, keys, bound, 0, 1)
	cfg := tjTestConfig(JoinLeftOuter, 1)
	got := tjRun(t, mem, cfg, steps, tjRunOpts{par: 1, purge: 64})
	tjCheck(t, got, tjReference(cfg, steps))
	// Versions within the watermark's reach: rows come about every 12 ms
	// on average, half of them right rows, up to bound+25 ms ahead of
	// the watermark; with keys keys, a generous bound is keys + the right
	// rows of 2*bound ms.
	t.Logf("at most %d versions held after a watermark, of %d right rows", got.maxRight, got.stats.RightRows)
	if limit := int64(keys + 2*bound/12); got.maxRight > limit || got.maxRight == 0 {
		t.Errorf("held up to %d versions after a watermark, want at most %d (of %d right rows)", got.maxRight, limit, got.stats.RightRows)
	}
}

func TestTemporalJoinOutputSchema(t *testing.T) {
	cfg := tjTestConfig(JoinLeftOuter, 1)
	cfg.LeftColumns, cfg.RightColumns = []string{"id", "ts"}, []string{"rv"}
	s, err := cfg.OutputSchema()
	if err != nil {
		t.Fatal(err)
	}
	want := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
		{Name: "r_rv", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, // padded
	}, nil)
	if !s.Equal(want) {
		t.Errorf("output schema %s, want %s", s, want)
	}
	cfg.Kind = JoinInner
	if s, _ = cfg.OutputSchema(); s.Field(2).Nullable {
		t.Errorf("inner join: right column %s is nullable", s.Field(2))
	}
}

func TestTemporalJoinConfigErrors(t *testing.T) {
	base := tjTestConfig(JoinInner, 1)
	for _, c := range []struct {
		name, want string
		edit       func(*TemporalJoin)
	}{
		{"no keys", "LeftKeys and RightKeys are required", func(j *TemporalJoin) { j.LeftKeys, j.RightKeys = nil, nil }},
		{"right outer", "Kind RIGHT", func(j *TemporalJoin) { j.Kind = JoinRightOuter }},
		{"full outer", "not supported", func(j *TemporalJoin) { j.Kind = JoinFullOuter }},
		{"semi", "not supported", func(j *TemporalJoin) { j.Kind = JoinSemi }},
		{"unpaired keys", "LeftKeys has 2 columns", func(j *TemporalJoin) { j.LeftKeys = []string{"id", "grp"} }},
		{"bad key", `key column "nope"`, func(j *TemporalJoin) { j.RightKeys = []string{"nope"} }},
		{"key types", "different types", func(j *TemporalJoin) { j.RightKeys = []string{"grp"} }},
		{"bad time", `RightTime: event-time column "nope"`, func(j *TemporalJoin) { j.RightTime = "nope" }},
		{"time not timestamp", "want a timestamp", func(j *TemporalJoin) { j.LeftTime = "lv" }},
		{"bad column", `LeftColumns: output column "nope"`, func(j *TemporalJoin) { j.LeftColumns = []string{"nope"} }},
		{"duplicate output", `output column "grp" appears twice`, func(j *TemporalJoin) { j.RightPrefix = "" }},
		{"late outputs", "LeftLateOutput and RightLateOutput", func(j *TemporalJoin) { j.RightLateOutput = j.LeftLateOutput }},
		{"no schema", "no left input schema", func(j *TemporalJoin) { j.Left = nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := base
			c.edit(&j)
			err := j.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "temporal join: ") {
				t.Fatalf("error %v, want one starting \"temporal join: \" and containing %q", err, c.want)
			}
			info := &arrowflow.TaskInfo{Name: "tj", Parallelism: 1, MaxParallelism: state.DefaultMaxParallelism}
			if err := j.Factory()().Open(info); err == nil {
				t.Error("Open accepted the configuration")
			}
		})
	}
	if err := base.Validate(); err != nil {
		t.Errorf("the base configuration: %v", err)
	}
}
