package window

import (
	"context"
	"fmt"
	"math"
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
	"github.com/weirflow/weir/sinks/collect"
	"github.com/weirflow/weir/state"
)

// ivRightMicros is the right schema with its event time in microseconds,
// so that the two sides' units differ.
var ivRightMicros = arrow.NewSchema([]arrow.Field{
	{Name: "seller", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "grp", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "rv", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// ivStep is one batch of one side, then, when wm is set, a watermark (ms).
type ivStep struct {
	side int
	rows []joinRow
	wm   *int64
}

// ivGen draws batches as joinGen does (random sides, sizes, keys with
// NULLs, jittered and late times) and follows a batch with the watermark
// "largest event time so far minus bound" with probability wmP.
func ivGen(rng *rand.Rand, n, keys int, bound int64, lateP, wmP float64) []ivStep {
	var steps []ivStep
	maxTs := int64(math.MinInt64 / 2)
	for _, st := range joinGen(rng, n, keys, bound, lateP, 100) {
		s := ivStep{side: st.side, rows: st.rows}
		for _, r := range st.rows {
			if r.ts != nil {
				maxTs = max(maxTs, *r.ts)
			}
		}
		if rng.Float64() < wmP {
			wm := maxTs - bound
			s.wm = &wm
		}
		steps = append(steps, s)
	}
	return steps
}

func ivTestConfig(kind JoinKind, lower, upper time.Duration, lateness time.Duration, keys int) IntervalJoin {
	j := IntervalJoin{
		Left: joinLeftSchema, Right: joinRightSchema, LeftTime: "ts", RightTime: "ts",
		LeftKeys: []string{"id"}, RightKeys: []string{"seller"},
		Lower: lower, Upper: upper, Kind: kind, RightPrefix: "r_", AllowedLateness: lateness,
		LeftLateOutput: "late_left", RightLateOutput: "late_right",
	}
	switch keys {
	case 0:
		j.LeftKeys, j.RightKeys = nil, nil
	case 2:
		j.LeftKeys, j.RightKeys = []string{"id", "grp"}, []string{"seller", "grp"}
	}
	return j
}

// ivBuild builds a batch of a side's schema (key, grp, ts, v, with ts in
// the schema's unit). With junk, random rows that must not be seen are
// interleaved, and the returned selection leaves them out.
func ivBuild(mem memory.Allocator, schema *arrow.Schema, rows []joinRow, junk *rand.Rand) (arrow.RecordBatch, []int32) {
	mult := int64(time.Millisecond) / int64(schema.Field(2).Type.(*arrow.TimestampType).Unit.Multiplier())
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	var sel []int32
	add := func(r joinRow) {
		if r.key == nil {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(*r.key)
		}
		if r.grp == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(*r.grp)
		}
		if r.ts == nil {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(*r.ts * mult))
		}
		b.Field(3).(*array.Int64Builder).Append(r.v)
	}
	n := int32(0)
	for _, r := range rows {
		if junk != nil && junk.IntN(3) == 0 {
			k, ts, g := junk.Int64N(5), 1_700_000_000_000+junk.Int64N(100_000), "a"
			add(joinRow{key: &k, grp: &g, ts: &ts, v: -1})
			n++
		}
		add(r)
		sel = append(sel, n)
		n++
	}
	return b.NewRecordBatch(), sel
}

// ivExpect is what the reference computes.
type ivExpect struct {
	rows               []string
	late               [2]int64
	nullTime, nullKeys int64
	pairs, padded      int64
	onBound            int64 // key-equal pairs exactly on Lower or Upper
	inRows             [2]int64
	accepted           [2][]joinRow
}

// ivMatch is the join condition, by the definition:
// r.time + Lower <= l.time <= r.time + Upper (< when exclusive).
func ivMatch(j IntervalJoin, lt, rt int64) bool {
	l, r := lt*int64(time.Millisecond), rt*int64(time.Millisecond)
	lo, hi := r+int64(j.Lower), r+int64(j.Upper)
	if l < lo || (j.LowerExclusive && l == lo) || l > hi || (j.UpperExclusive && l == hi) {
		return false
	}
	return true
}

// ivNullKey reports whether a row has a NULL in one of the join keys.
func ivNullKey(j IntervalJoin, r joinRow) bool {
	switch len(j.LeftKeys) {
	case 0:
		return false
	case 1:
		return r.key == nil
	}
	return r.key == nil || r.grp == nil
}

func ivKeysEqual(j IntervalJoin, l, r joinRow) bool {
	switch len(j.LeftKeys) {
	case 0:
		return true
	case 1:
		return *l.key == *r.key
	}
	return *l.key == *r.key && *l.grp == *r.grp
}

// ivReference computes the interval join by nested loops over the rows
// that are not late, replaying the watermarks: a row at or before the
// watermark minus the allowed lateness is late; every other pair of a left
// and a right row with equal keys and times within the interval is
// output; with an outer kind, every row of a preserved side without a
// pair (NULL keys included) is output padded.
func ivReference(j IntervalJoin, steps []ivStep) ivExpect {
	var exp ivExpect
	wm, seen := int64(0), false
	lateMs := j.AllowedLateness.Milliseconds()
	outer := [2]bool{j.Kind == JoinLeftOuter || j.Kind == JoinFullOuter, j.Kind == JoinRightOuter || j.Kind == JoinFullOuter}
	cols := [2][]string{j.LeftColumns, j.RightColumns}
	for s, schema := range []*arrow.Schema{j.Left, j.Right} {
		if cols[s] == nil {
			for _, f := range schema.Fields() {
				cols[s] = append(cols[s], f.Name)
			}
		}
	}
	format := func(rs [2]*joinRow) string {
		var vals []any
		for s, names := range cols {
			for _, name := range names {
				if rs[s] == nil {
					vals = append(vals, nil)
				} else {
					vals = append(vals, joinValue(*rs[s], name))
				}
			}
		}
		return fmt.Sprint(vals)
	}
	for _, st := range steps {
		for _, r := range st.rows {
			exp.inRows[st.side]++
			switch {
			case r.ts == nil:
				exp.nullTime++
			case seen && *r.ts <= wm-lateMs:
				exp.late[st.side]++
			case ivNullKey(j, r):
				if outer[st.side] {
					var rs [2]*joinRow
					rs[st.side] = &r
					exp.rows = append(exp.rows, format(rs))
					exp.padded++
				} else {
					exp.nullKeys++
				}
			default:
				exp.accepted[st.side] = append(exp.accepted[st.side], r)
			}
		}
		if st.wm != nil {
			wm, seen = *st.wm, true
		}
	}
	left, right := exp.accepted[0], exp.accepted[1]
	matched := [2][]bool{make([]bool, len(left)), make([]bool, len(right))}
	for a := range left {
		for b := range right {
			l, r := left[a], right[b]
			if !ivKeysEqual(j, l, r) {
				continue
			}
			if d := time.Duration(*l.ts-*r.ts) * time.Millisecond; d == j.Lower || d == j.Upper {
				exp.onBound++
			}
			if !ivMatch(j, *l.ts, *r.ts) {
				continue
			}
			matched[0][a], matched[1][b] = true, true
			exp.rows = append(exp.rows, format([2]*joinRow{&l, &r}))
			exp.pairs++
		}
	}
	for s, rows := range exp.accepted {
		if !outer[s] {
			continue
		}
		for i := range rows {
			if !matched[s][i] {
				var rs [2]*joinRow
				rs[s] = &rows[i]
				exp.rows = append(exp.rows, format(rs))
				exp.padded++
			}
		}
	}
	sort.Strings(exp.rows)
	return exp
}

// ivPhase is what the harness is doing when the operator emits.
type ivPhase int

const (
	ivInBatch ivPhase = iota
	ivInWatermark
	ivInFinish
)

// ivCollector is the emitter of every subtask in the harness. It checks,
// for every output row, that it came at the right moment: pairs while
// the later row's batch is processed, padded rows exactly when the
// watermark first proves that nothing can match them.
type ivCollector struct {
	t    testing.TB
	cfg  IntervalJoin
	c    *ivCompiled
	rows []string
	late map[string]int64
	// byV finds an input row by its v (which numbers the rows).
	byV map[int64]joinRow
	// the phase: during ivInWatermark the subtask's watermark moves from
	// prev to wm; otherwise it is wm.
	phase    ivPhase
	prev, wm arrowflow.EventTime
	checked  bool // rows carry lv and r_rv at 3 and 7: check the timing
	discard  bool // only count the rows
	n        int
}

func (c *ivCollector) horizon(wm arrowflow.EventTime) int64 {
	if wm == arrowflow.MinEventTime {
		return math.MinInt64
	}
	return ivAdd(int64(wm), -int64(c.cfg.AllowedLateness))
}

func (c *ivCollector) Emit(b arrowflow.Batch) error {
	defer b.Release()
	if err := b.Validate(); err != nil {
		return err
	}
	if b.NumRows() == 0 {
		c.t.Errorf("an empty batch was emitted")
		return nil
	}
	if !b.Schema().Equal(c.c.out) {
		c.t.Errorf("output schema %s, want %s", b.Schema(), c.c.out)
	}
	c.n += b.NumRows()
	if c.discard {
		return nil
	}
	for k := range b.NumRows() {
		vals := b.RowValues(k)
		c.rows = append(c.rows, fmt.Sprint(vals))
		if c.checked {
			c.checkTiming(vals[3], vals[7])
		}
	}
	return nil
}

func (c *ivCollector) checkTiming(lv, rv any) {
	t := c.t
	if lv != nil && rv != nil {
		if c.phase != ivInBatch {
			t.Errorf("pair (%v, %v) emitted while processing a watermark or Finish, not when its later row came", lv, rv)
		}
		return
	}
	side, v := 0, lv
	if lv == nil {
		side, v = 1, rv
	}
	r := c.byV[v.(int64)]
	if ivNullKey(c.cfg, r) {
		if c.phase != ivInBatch {
			t.Errorf("row %v with a NULL key padded after its batch", v)
		}
		return
	}
	exp := ivAdd(*r.ts*int64(time.Millisecond), c.c.sides[side].hi)
	switch c.phase {
	case ivInBatch:
		if exp > c.horizon(c.wm) {
			t.Errorf("row %v padded on arrival, but a row still to come could match it (watermark %v)", v, c.wm)
		}
	case ivInWatermark:
		if exp > c.horizon(c.wm) || exp <= c.horizon(c.prev) {
			t.Errorf("row %v padded at watermark %v (previous %v); it can last match at %d", v, c.wm, c.prev, exp)
		}
	case ivInFinish:
		if exp <= c.horizon(c.wm) {
			t.Errorf("row %v padded only at Finish, though watermark %v had proven it unmatched", v, c.wm)
		}
	}
}

func (c *ivCollector) EmitWatermark(arrowflow.EventTime) error { return nil }

func (c *ivCollector) EmitSide(output string, b arrowflow.Batch) error {
	defer b.Release()
	want := map[string]*arrow.Schema{"late_left": c.cfg.Left, "late_right": c.cfg.Right}[output]
	if want == nil {
		return fmt.Errorf("unexpected side output %q", output)
	}
	if !b.Schema().Equal(want) {
		return fmt.Errorf("side output %q carries schema %s", output, b.Schema())
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

// ivHarness drives an interval join's subtasks as the runtime would:
// each step's rows go to the subtask owning their key, then, if the step
// has one, every subtask's watermark advances.
type ivHarness struct {
	t     testing.TB
	mem   memory.Allocator
	cfg   IntervalJoin
	mask  uint64
	purge int // compact a side once this many rows are dropped (0: default)
	subs  []subtask
	wms   []arrowflow.EventTime // each subtask's watermark
	out   *ivCollector
}

func (h *ivHarness) open(par int) []subtask {
	subs := make([]subtask, par)
	for i := range subs {
		info := &arrowflow.TaskInfo{Job: "t", Name: "ij", Subtask: i, Parallelism: par,
			MaxParallelism: state.DefaultMaxParallelism, KeyGroups: state.RangeOf(i, state.DefaultMaxParallelism, par), Allocator: h.mem}
		op := h.cfg.Factory()()
		if err := op.Open(info); err != nil {
			h.t.Fatal(err)
		}
		if h.mask != 0 {
			op.(*intervalOp).hashMask = h.mask
		}
		if h.purge != 0 {
			op.(*intervalOp).purgeMin = h.purge
		}
		subs[i] = subtask{op, info}
	}
	return subs
}

func (h *ivHarness) schema(side int) *arrow.Schema {
	if side == 0 {
		return h.cfg.Left
	}
	return h.cfg.Right
}

func (h *ivHarness) feed(st ivStep, junk *rand.Rand) {
	t := h.t
	rec, sel := ivBuild(h.mem, h.schema(st.side), st.rows, junk)
	defer rec.Release()
	keys := h.cfg.LeftKeys
	if st.side == 1 {
		keys = h.cfg.RightKeys
	}
	sels := make([][]int32, len(h.subs))
	if len(keys) == 0 {
		sels[0] = sel
	} else {
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
		for i := range sels {
			sels[i] = []int32{}
		}
		part.Split(sel, sels)
	}
	for i, s := range h.subs {
		b := arrowflow.Batch{Record: rec, Sel: sels[i]}
		if junk == nil && len(h.subs) == 1 {
			b.Sel = nil // the whole batch: buffered without a copy
		}
		rec.Retain()
		h.out.phase, h.out.wm = ivInBatch, h.wms[i]
		if err := s.op.ProcessBatch(st.side, b, h.out); err != nil {
			t.Fatal(err)
		}
		if st.wm != nil {
			h.watermark(i, arrowflow.EventTime(*st.wm*int64(time.Millisecond)))
		}
	}
}

func (h *ivHarness) watermark(i int, wm arrowflow.EventTime) {
	if wm <= h.wms[i] {
		return
	}
	h.out.phase, h.out.prev, h.out.wm = ivInWatermark, h.wms[i], wm
	if err := h.subs[i].op.ProcessWatermark(wm, h.out); err != nil {
		h.t.Fatal(err)
	}
	h.wms[i] = wm
}

// ivRunOpts vary a harness run.
type ivRunOpts struct {
	par       int
	restoreAt int // snapshot after this many steps (0: never) ...
	newPar    int // ... and continue on this many restored subtasks
	mask      uint64
	purge     int
	junk      bool
	// openAll restores every subtask from every old snapshot in full:
	// the operator must keep only its own key groups itself.
	openAll bool
	// finishOnly ends with Finish alone, without the final +inf watermark.
	finishOnly bool
}

type ivResult struct {
	rows  []string
	stats IntervalJoinStats // summed over the final subtasks
	late  map[string]int64
}

func ivRun(t testing.TB, mem memory.Allocator, cfg IntervalJoin, steps []ivStep, o ivRunOpts) ivResult {
	c, err := cfg.compile()
	if err != nil {
		t.Fatal(err)
	}
	byV := map[int64]joinRow{}
	for _, st := range steps {
		for _, r := range st.rows {
			byV[r.v] = r
		}
	}
	checked := cfg.LeftColumns == nil && cfg.RightColumns == nil
	h := &ivHarness{t: t, mem: mem, cfg: cfg, mask: o.mask, purge: o.purge, out: &ivCollector{t: t, cfg: cfg, c: c, byV: byV, checked: checked}}
	h.subs = h.open(o.par)
	h.wms = make([]arrowflow.EventTime, o.par)
	for i := range h.wms {
		h.wms[i] = arrowflow.MinEventTime
	}
	var junk *rand.Rand
	if o.junk {
		junk = rand.New(rand.NewPCG(7, 7))
	}
	var stats IntervalJoinStats
	for i, st := range steps {
		if o.restoreAt > 0 && i == o.restoreAt {
			stats = h.snapshotRestore(o.newPar, o.openAll)
		}
		h.feed(st, junk)
	}
	res := ivResult{stats: stats}
	for i, s := range h.subs {
		if !o.finishOnly {
			h.watermark(i, arrowflow.MaxEventTime)
		}
		h.out.phase, h.out.wm = ivInFinish, h.wms[i]
		if err := s.op.Finish(h.out); err != nil {
			t.Fatal(err)
		}
		st := s.op.(IntervalJoinStatsReporter).IntervalJoinStats()
		ivAddStats(&res.stats, st)
		if st.LeftStateRows != 0 || st.RightStateRows != 0 || st.StateBytes != 0 {
			t.Errorf("subtask %d holds %d + %d rows, %d bytes after the end", i, st.LeftStateRows, st.RightStateRows, st.StateBytes)
		}
		if err := s.op.Close(); err != nil {
			t.Fatal(err)
		}
	}
	res.rows, res.late = h.out.rows, h.out.late
	sort.Strings(res.rows)
	return res
}

// ivAddStats adds the counters (not the state sizes) of s to sum.
func ivAddStats(sum *IntervalJoinStats, s IntervalJoinStats) {
	sum.LeftRows += s.LeftRows
	sum.RightRows += s.RightRows
	sum.LateRows += s.LateRows
	sum.NullTimeRows += s.NullTimeRows
	sum.NullKeyRows += s.NullKeyRows
	sum.Pairs += s.Pairs
	sum.PaddedRows += s.PaddedRows
	sum.OutputRows += s.OutputRows
}

// snapshotRestore snapshots every subtask into real snapshot files, closes
// it, and opens newPar fresh subtasks that each restore the parts of the
// old files holding their key groups. It returns the old subtasks'
// counters.
func (h *ivHarness) snapshotRestore(newPar int, openAll bool) IntervalJoinStats {
	t := h.t
	store, err := state.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var handles []state.Handle
	var stats IntervalJoinStats
	var rows int64
	minWM := arrowflow.MaxEventTime
	for i, s := range h.subs {
		handles = append(handles, snapshotSubtask(t, store, "ij", s))
		st := s.op.(IntervalJoinStatsReporter).IntervalJoinStats()
		ivAddStats(&stats, st)
		rows += st.LeftStateRows + st.RightStateRows
		minWM = min(minWM, h.wms[i])
		if err := s.op.Close(); err != nil {
			t.Fatal(err)
		}
	}
	h.subs = h.open(newPar)
	h.wms = make([]arrowflow.EventTime, newPar)
	var restored int64
	for i, s := range h.subs {
		restoreSubtask(t, store, h.mem, handles, s, openAll)
		h.wms[i] = minWM
		st := s.op.(IntervalJoinStatsReporter).IntervalJoinStats()
		restored += st.LeftStateRows + st.RightStateRows
	}
	if restored != rows {
		t.Fatalf("restored %d buffered rows, the snapshots held %d", restored, rows)
	}
	return stats
}

// ivBounds are the intervals the randomized tests try.
var ivBounds = []struct {
	name         string
	lower, upper time.Duration
	lex, uex     bool
}{
	{"around", -300 * time.Millisecond, 200 * time.Millisecond, false, false},
	{"after-exclusive", 100 * time.Millisecond, 400 * time.Millisecond, true, false},
	{"before-exclusive", -400 * time.Millisecond, -100 * time.Millisecond, false, true},
	{"zero-width", 0, 0, false, false},
	{"from-zero-exclusive", 0, 300 * time.Millisecond, true, true},
	{"sub-ms", -250*time.Millisecond - 1, 150*time.Millisecond + 1, true, true},
}

func TestIntervalJoinMatchesReference(t *testing.T) {
	kinds := []JoinKind{JoinInner, JoinLeftOuter, JoinRightOuter, JoinFullOuter}
	var onBound, padded, pairs int64
	for ki, kind := range kinds {
		for bi, bd := range ivBounds {
			for _, par := range []int{1, 2} {
				// Vary the rest with the case, so that each appears with
				// every kind and interval.
				v := ki + bi + par
				lateness := []time.Duration{0, 150 * time.Millisecond}[v%2]
				keys := 1 + (ki+par)%2
				if bi == 2 && par == 1 {
					keys = 0 // every pair in the interval joins
				}
				mask := []uint64{0, 3}[(bi+par)%2] // 3: four hash values, collisions everywhere
				junk := (ki+bi)%2 == 0
				finishOnly := v%3 == 0
				wmP := []float64{1, 0.3}[(ki+bi/2)%2]
				micros := (ki+bi+2*par)%4 == 0
				purge := []int{0, 16}[(ki+par)%2] // 16: compact the buffers often
				name := fmt.Sprintf("%s/%s/par=%d/lateness=%s/keys=%d/mask=%d/junk=%t/wm=%.1f/us=%t/purge=%d", kind, bd.name, par, lateness, keys, mask, junk, wmP, micros, purge)
				t.Run(name, func(t *testing.T) {
					mem := testutil.CheckedAllocator(t)
					rng := rand.New(rand.NewPCG(uint64(ki), uint64(bi*10+par)))
					n, nkeys := 1500, 12
					switch {
					case keys == 0:
						n = 800
					case bd.lower == bd.upper:
						nkeys = 2 // pairs need equal times: make them likelier
					}
					steps := ivGen(rng, n, nkeys, 200, 0.05, wmP)
					cfg := ivTestConfig(kind, bd.lower, bd.upper, lateness, keys)
					cfg.LowerExclusive, cfg.UpperExclusive = bd.lex, bd.uex
					if micros {
						cfg.Right = ivRightMicros
					}
					got := ivRun(t, mem, cfg, steps, ivRunOpts{par: par, mask: mask, purge: purge, junk: junk, finishOnly: finishOnly})
					want := ivReference(cfg, steps)
					if !slices.Equal(got.rows, want.rows) {
						t.Fatalf("%d rows, reference %d; first difference: %s", len(got.rows), len(want.rows), joinDiff(got.rows, want.rows))
					}
					if want.pairs == 0 {
						t.Fatal("the reference has no pairs; the test would not see anything")
					}
					if got.stats.LateRows != want.late[0]+want.late[1] || got.late["late_left"] != want.late[0] || got.late["late_right"] != want.late[1] {
						t.Errorf("late rows: counted %d, side outputs %v, reference %v", got.stats.LateRows, got.late, want.late)
					}
					if want.late[0] == 0 || want.late[1] == 0 {
						t.Errorf("no late rows on a side (%v): the test would not see them", want.late)
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
					onBound += want.onBound
					padded += want.padded
					pairs += want.pairs
				})
			}
		}
	}
	if onBound == 0 || padded == 0 || pairs == 0 {
		t.Errorf("pairs exactly on a bound %d, padded rows %d, pairs %d: some case is not exercised", onBound, padded, pairs)
	}
}

// A hand-checked case, so that the reference itself is not the only
// judge: both bounds inclusive, NULL keys, a key on one side only, rows
// that expire matched and unmatched, late rows on both sides.
// SQL: L.t BETWEEN R.t - INTERVAL '10' MILLISECOND AND R.t + INTERVAL '5'
// MILLISECOND.
func TestIntervalJoinSmallExample(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	i64 := func(v int64) *int64 { return &v }
	row := func(key *int64, ts, v int64) joinRow { return joinRow{key: key, ts: i64(ts), v: v} }
	steps := []ivStep{
		{0, []joinRow{row(i64(1), 100, 1), row(i64(1), 89, 2), row(nil, 100, 3), row(i64(2), 100, 4)}, nil},
		// 101 meets 1 (l - r = 0); 102 meets 1 (+5, the upper bound) and 2
		// (-6); 103 meets 1 (-10, the lower bound); 2 is 11 before 101.
		// At watermark 100, 2 (it matches rights up to 99) and 102 (lefts
		// up to 100) are dropped, both matched.
		{1, []joinRow{row(i64(1), 100, 101), row(i64(1), 95, 102), row(i64(1), 110, 103), row(nil, 100, 104)}, i64(100)},
		// 5 meets 101 and 103; 6 is late (at the watermark); 7 waits.
		// At 105, 101 is dropped.
		{0, []joinRow{row(i64(1), 101, 5), row(i64(1), 100, 6), row(i64(3), 104, 7)}, i64(105)},
		// 105 is too late for 7 (7 needs rights in [99, 114]); 106 meets 4;
		// 107 is late. At 111, 1, 4, 5 and 106 are dropped, matched.
		{1, []joinRow{row(i64(3), 120, 105), row(i64(2), 106, 106), row(i64(1), 105, 107)}, i64(111)},
		// 8 meets 105. At 200 every row is dropped; 7 never matched.
		{0, []joinRow{row(i64(3), 115, 8)}, i64(200)},
	}
	cfg := ivTestConfig(JoinFullOuter, -10*time.Millisecond, 5*time.Millisecond, 0, 1)
	cfg.LeftColumns, cfg.RightColumns, cfg.RightPrefix = []string{"lv", "id"}, []string{"rv"}, ""
	got := ivRun(t, mem, cfg, steps, ivRunOpts{par: 1})
	w := func(cells ...any) string { vals := cells; return fmt.Sprint(vals) }
	want := []string{
		w(int64(1), int64(1), int64(101)), w(int64(1), int64(1), int64(102)), w(int64(2), int64(1), int64(102)),
		w(int64(1), int64(1), int64(103)), w(int64(5), int64(1), int64(101)), w(int64(5), int64(1), int64(103)),
		w(int64(4), int64(2), int64(106)), w(int64(8), int64(3), int64(105)),
		w(int64(3), nil, nil), w(nil, nil, int64(104)), w(int64(7), int64(3), nil),
	}
	sort.Strings(want)
	if !slices.Equal(got.rows, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got.rows, "\n"), strings.Join(want, "\n"))
	}
	if got.stats.LateRows != 2 || got.late["late_left"] != 1 || got.late["late_right"] != 1 {
		t.Errorf("late rows: %d counted, %v on the side outputs; want 6 and 107", got.stats.LateRows, got.late)
	}
	ref := ivReference(cfg, steps)
	if !slices.Equal(ref.rows, want) {
		t.Errorf("the reference disagrees with the hand-checked rows: %s", joinDiff(ref.rows, want))
	}
	// Rows are dropped exactly when no row to come can match them.
	h := &ivHarness{t: t, mem: mem, cfg: cfg, out: &ivCollector{t: t, cfg: cfg, c: mustCompile(t, cfg)}}
	h.subs, h.wms = h.open(1), []arrowflow.EventTime{arrowflow.MinEventTime}
	wantRows := [][2]int64{{3, 0}, {2, 2}, {4, 1}, {1, 2}, {0, 0}}
	for i, st := range steps {
		h.feed(st, nil)
		s := h.subs[0].op.(IntervalJoinStatsReporter).IntervalJoinStats()
		if s.LeftStateRows != wantRows[i][0] || s.RightStateRows != wantRows[i][1] {
			t.Errorf("after step %d: %d left and %d right rows buffered, want %v", i, s.LeftStateRows, s.RightStateRows, wantRows[i])
		}
	}
	if s := h.subs[0].op.(StatsReporter).Stats(); s.LateRows != 2 || s.StateBytes != 0 {
		t.Errorf("Stats: %+v", s)
	}
	h.subs[0].op.Close()
}

func mustCompile(t testing.TB, cfg IntervalJoin) *ivCompiled {
	c, err := cfg.compile()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Stopping after K steps, snapshotting and restoring into another
// parallelism gives exactly the uninterrupted run's output.
func TestIntervalJoinSnapshotRestoreRescale(t *testing.T) {
	for _, kind := range []JoinKind{JoinInner, JoinFullOuter} {
		for _, pars := range [][2]int{{1, 2}, {2, 1}, {1, 1}, {2, 3}} {
			t.Run(fmt.Sprintf("%s/%d->%d", kind, pars[0], pars[1]), func(t *testing.T) {
				mem := testutil.CheckedAllocator(t)
				rng := rand.New(rand.NewPCG(uint64(pars[0]), uint64(pars[1])))
				steps := ivGen(rng, 1500, 20, 300, 0.03, 0.5)
				cfg := ivTestConfig(kind, -300*time.Millisecond, 100*time.Millisecond, 50*time.Millisecond, 1)
				want := ivReference(cfg, steps)
				base := ivRun(t, mem, cfg, steps, ivRunOpts{par: pars[0]})
				if !slices.Equal(base.rows, want.rows) {
					t.Fatalf("uninterrupted: %s", joinDiff(base.rows, want.rows))
				}
				for i, k := range []int{1, len(steps) / 3, 2 * len(steps) / 3} {
					o := ivRunOpts{par: pars[0], restoreAt: k, newPar: pars[1], junk: true, openAll: i == 2, purge: 16 * (i % 2)}
					got := ivRun(t, mem, cfg, steps, o)
					if !slices.Equal(got.rows, want.rows) {
						t.Fatalf("restored after %d steps: %d rows, uninterrupted %d; %s", k, len(got.rows), len(want.rows), joinDiff(got.rows, want.rows))
					}
					if got.stats.Pairs != base.stats.Pairs || got.stats.LateRows != base.stats.LateRows {
						t.Errorf("restored after %d steps: counters %+v, uninterrupted %+v", k, got.stats, base.stats)
					}
				}
			})
		}
	}
}

// A join without keys restores too, at parallelism 1.
func TestIntervalJoinKeylessRestore(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	steps := ivGen(rand.New(rand.NewPCG(9, 9)), 600, 5, 100, 0.03, 1)
	cfg := ivTestConfig(JoinLeftOuter, -50*time.Millisecond, 50*time.Millisecond, 0, 0)
	want := ivReference(cfg, steps)
	got := ivRun(t, mem, cfg, steps, ivRunOpts{par: 1, restoreAt: len(steps) / 2, newPar: 1, openAll: true})
	if len(want.rows) == 0 || !slices.Equal(got.rows, want.rows) {
		t.Fatalf("%d rows, reference %d; %s", len(got.rows), len(want.rows), joinDiff(got.rows, want.rows))
	}
	op := cfg.Factory()()
	info := &arrowflow.TaskInfo{Name: "ij", Parallelism: 2, MaxParallelism: state.DefaultMaxParallelism, KeyGroups: state.RangeOf(0, state.DefaultMaxParallelism, 2)}
	if err := op.Open(info); err == nil || !strings.Contains(err.Error(), "parallelism 1") {
		t.Errorf("a keyless join at parallelism 2 opened: %v", err)
	}
}

// Over a long run the buffered rows are exactly those a row still to
// come can match, and the memory stays about what the interval needs,
// also with many tiny batches; after the final watermark nothing is left.
// Buffered rows, row-store chunks and bytes stay bounded by the interval,
// with whole batches and with batches that carry junk rows outside their
// selection (only the selected rows are copied into the row store).
func TestIntervalJoinStateStaysSmall(t *testing.T) {
	for _, tc := range []struct {
		batch int
		sel   bool
	}{{500, false}, {1, false}, {500, true}, {7, true}} {
		batch := tc.batch
		t.Run(fmt.Sprintf("batch=%d/sel=%t", batch, tc.sel), func(t *testing.T) {
			mem := testutil.CheckedAllocator(t)
			rng := rand.New(rand.NewPCG(5, uint64(batch)))
			const lower, upper, bound = -200, 100, 50 // ms
			cfg := ivTestConfig(JoinFullOuter, lower*time.Millisecond, upper*time.Millisecond, 0, 1)
			h := &ivHarness{t: t, mem: mem, cfg: cfg, out: &ivCollector{t: t, cfg: cfg, c: mustCompile(t, cfg), discard: true}}
			h.subs, h.wms = h.open(1), []arrowflow.EventTime{arrowflow.MinEventTime}
			op := h.subs[0].op.(*intervalOp)
			total := 60_000
			if batch == 1 {
				total = 6_000
			}
			t0 := int64(1_700_000_000_000)
			var held [2][]int64 // times of the rows sent, per side
			maxTs := int64(0)
			var peak int64
			wm := int64(math.MinInt64)
			for i := 0; i < total; i += 2 * batch {
				// Both sides cover the same span of event time, then the
				// watermark follows: no row is late.
				for side := range 2 {
					rows := make([]joinRow, batch)
					for k := range rows {
						ts := t0 + int64(i+k)/2 - rng.Int64N(bound)
						key := rng.Int64N(100)
						rows[k] = joinRow{key: &key, ts: &ts, v: int64(i + side*batch + k)}
						maxTs = max(maxTs, ts)
						held[side] = append(held[side], ts)
					}
					step := ivStep{side: side, rows: rows}
					if side == 1 {
						wm = maxTs - bound
						step.wm = &wm
					}
					var junk *rand.Rand
					if tc.sel {
						junk = rng
					}
					h.feed(step, junk)
					// Rows still buffered: those a row later than the
					// watermark can match.
					hi := [2]int64{-lower, upper}
					var want [2]int64
					for s := range held {
						kept := held[s][:0]
						for _, ts := range held[s] {
							if ts+hi[s] > wm {
								kept = append(kept, ts)
							}
						}
						held[s] = kept
						want[s] = int64(len(kept))
					}
					st := op.IntervalJoinStats()
					if st.LeftStateRows != want[0] || st.RightStateRows != want[1] {
						t.Fatalf("after %d rows: %d/%d rows buffered, want %v", i, st.LeftStateRows, st.RightStateRows, want)
					}
					for s := range op.bufs {
						b := &op.bufs[s]
						if len(b.rows) > 2*b.live+ivPurgeMin+batch {
							t.Fatalf("side %d keeps %d rows for %d live ones", s, len(b.rows), b.live)
						}
						recs := 0
						if b.store != nil {
							recs = b.store.NumChunks()
							if b.store.IDs() != len(b.rows) || b.store.Len() != b.live {
								t.Fatalf("side %d: the row store holds %d ids, %d live; the buffer %d rows, %d live", s, b.store.IDs(), b.store.Len(), len(b.rows), b.live)
							}
						}
						if recs > 3*joinCompactRun+len(b.rows)/joinSmallChunk+4 {
							t.Fatalf("side %d holds %d records for %d rows", s, recs, len(b.rows))
						}
					}
					peak = max(peak, st.StateBytes)
				}
			}
			// About 300 ms of rows per side at 1 row per ms, plus rows
			// waiting for compaction: well under a megabyte.
			if peak > 1<<20 {
				t.Errorf("state peaked at %d bytes", peak)
			}
			h.watermark(0, arrowflow.MaxEventTime)
			st := op.IntervalJoinStats()
			if st.LeftStateRows != 0 || st.RightStateRows != 0 || st.StateBytes != 0 || st.LateRows != 0 {
				t.Errorf("after the final watermark: %+v", st)
			}
			if st.Pairs == 0 || st.PaddedRows == 0 {
				t.Errorf("nothing joined or padded: %+v", st)
			}
			op.Close()
		})
	}
}

func TestIntervalJoinOutputSchema(t *testing.T) {
	cfg := ivTestConfig(JoinLeftOuter, -time.Second, 0, 0, 1)
	cfg.LeftColumns, cfg.RightColumns = []string{"id", "ts"}, []string{"rv", "ts"}
	s, err := cfg.OutputSchema()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range s.Fields() {
		got = append(got, fmt.Sprintf("%s:%s:%t", f.Name, f.Type, f.Nullable))
	}
	want := []string{"id:int64:true", "ts:timestamp[ms]:true", "r_rv:int64:true", "r_ts:timestamp[ms]:true"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	cfg.Kind = JoinInner
	s, _ = cfg.OutputSchema()
	if s.Field(2).Nullable {
		t.Errorf("an inner join pads nothing: r_rv need not be nullable")
	}
	cfg.Kind = JoinRightOuter
	s, _ = cfg.OutputSchema()
	if !s.Field(0).Nullable || s.Field(2).Nullable {
		t.Errorf("a right join pads the left columns only: %s", s)
	}
	cfg.RightColumns = []string{}
	if s, _ = cfg.OutputSchema(); s.NumFields() != 2 {
		t.Errorf("an empty RightColumns outputs no right column: %s", s)
	}
}

func TestIntervalJoinConfigErrors(t *testing.T) {
	good := ivTestConfig(JoinInner, -time.Second, time.Second, 0, 1)
	listSchema := arrow.NewSchema([]arrow.Field{
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
		{Name: "ts", Type: joinTsType},
	}, nil)
	cases := map[string]func(j *IntervalJoin){
		"Kind SEMI":                   func(j *IntervalJoin) { j.Kind = JoinSemi },
		"Kind JoinKind(17)":           func(j *IntervalJoin) { j.Kind = 17 },
		"Lower (2s) is greater than":  func(j *IntervalJoin) { j.Lower = 2 * time.Second },
		"Upper 1000000h0m0s is out":   func(j *IntervalJoin) { j.Upper = 1_000_000 * time.Hour },
		"LowerExclusive":              func(j *IntervalJoin) { j.Lower, j.Upper, j.UpperExclusive = 0, 0, true },
		"AllowedLateness -1ns":        func(j *IntervalJoin) { j.AllowedLateness = -1 },
		"RightKeys 0":                 func(j *IntervalJoin) { j.RightKeys = nil },
		"Right: no right input":       func(j *IntervalJoin) { j.Right = nil },
		"RightTime: event-time":       func(j *IntervalJoin) { j.RightTime = "missing" },
		"LeftTime: column \"lv\"":     func(j *IntervalJoin) { j.LeftTime = "lv" },
		"LeftKeys: key column":        func(j *IntervalJoin) { j.LeftKeys = []string{"nope"} },
		"RightColumns: output column": func(j *IntervalJoin) { j.RightColumns = []string{"nope"} },
		"LeftColumns: column \"id\"":  func(j *IntervalJoin) { j.LeftColumns = []string{"id", "id"} },
		"LeftKeys/RightKeys":          func(j *IntervalJoin) { j.RightKeys = []string{"grp"} },
		"LeftLateOutput and":          func(j *IntervalJoin) { j.RightLateOutput = j.LeftLateOutput },
		"set LeftPrefix or":           func(j *IntervalJoin) { j.RightPrefix = "" },
		"LeftKeys: key \"l\"": func(j *IntervalJoin) {
			j.Left, j.Right, j.LeftKeys, j.RightKeys = listSchema, listSchema, []string{"l"}, []string{"l"}
			j.RightPrefix = "r_"
		},
		"out of LeftColumns": func(j *IntervalJoin) {
			j.Left, j.LeftKeys, j.RightKeys = listSchema, nil, nil
		},
	}
	for want, mutate := range cases {
		j := good
		mutate(&j)
		err := j.Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
		if _, err := j.OutputSchema(); err == nil {
			t.Errorf("%s: OutputSchema accepted the configuration", want)
		}
	}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
}

// The join in a real job: two sources of two splits each, keyed edges on
// the join keys, a collecting sink, epochs closing while it runs.
func TestIntervalJoinInJob(t *testing.T) {
	for _, par := range []int{1, 2} {
		for _, kind := range []JoinKind{JoinInner, JoinFullOuter} {
			t.Run(fmt.Sprintf("%s/par=%d", kind, par), func(t *testing.T) {
				mem := testutil.CheckedAllocator(t)
				rng := rand.New(rand.NewPCG(uint64(par), 98))
				const bound = 200
				// Each split's rows are at most bound-1 ms behind its
				// largest event time: no row is late, whatever the
				// interleaving of the splits.
				srcs := [2]*joinSource{{schema: joinLeftSchema, side: 0, bound: bound * time.Millisecond},
					{schema: joinRightSchema, side: 1, bound: bound * time.Millisecond}}
				var all []ivStep
				v := int64(0)
				for side, src := range srcs {
					for range 2 {
						var batches [][]joinRow
						t0 := int64(1_700_000_000_000)
						for range 40 {
							var rows []joinRow
							for range 1 + rng.IntN(20) {
								t0 += rng.Int64N(30)
								ts := t0 - rng.Int64N(bound)
								k := int64(rng.IntN(15) + side*5)
								g := "a"
								rows = append(rows, joinRow{key: &k, grp: &g, ts: &ts, v: v})
								v++
							}
							batches = append(batches, rows)
							all = append(all, ivStep{side: side, rows: rows})
						}
						src.splits = append(src.splits, batches)
					}
				}
				cfg := ivTestConfig(kind, -150*time.Millisecond, 50*time.Millisecond, 0, 1)
				g := arrowflow.NewGraph("ij")
				left := g.Source("left", srcs[0], par)
				right := g.Source("right", srcs[1], par)
				join := g.Operator("ij", cfg.Factory(), par, arrowflow.KeyBy(left, cfg.LeftKeys...), arrowflow.KeyBy(right, cfg.RightKeys...))
				sink := collect.New()
				g.Sink("out", sink, par, arrowflow.Forward(join))
				job, err := g.Plan(arrowflow.Options{Allocator: mem, CheckpointInterval: 5 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := job.Run(ctx); err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range sink.Rows() {
					got = append(got, fmt.Sprint(r))
				}
				sort.Strings(got)
				// With no late rows the result does not depend on the
				// order of arrival: the reference sees no watermark.
				want := ivReference(cfg, all)
				if want.pairs == 0 || !slices.Equal(got, want.rows) {
					t.Fatalf("%d rows, reference %d; %s", len(got), len(want.rows), joinDiff(got, want.rows))
				}
			})
		}
	}
}

// BenchmarkIntervalJoin: an inner interval join of persons and auctions
// (Nexmark q8's shape: each auction's seller registered at most 0.2 s
// earlier), one subtask, a watermark after every pair of 64Ki-row
// batches. Reports input rows/s (both sides), output rows and the state's
// peak size.
func BenchmarkIntervalJoin(b *testing.B) {
	const rows = 2 << 20
	left, right := joinBenchBatches(rows)
	for _, bd := range []struct{ lower, upper time.Duration }{{-10 * time.Second, 0}, {-time.Second, time.Second}} {
		for _, kind := range []JoinKind{JoinInner, JoinFullOuter} {
			b.Run(fmt.Sprintf("interval=%s..%s/kind=%s", bd.lower, bd.upper, kind), func(b *testing.B) {
				j := IntervalJoin{Left: left[0].Schema(), Right: right[0].Schema(), LeftTime: "ts", RightTime: "ts",
					LeftKeys: []string{"id"}, RightKeys: []string{"seller"}, Lower: bd.lower, Upper: bd.upper, Kind: kind,
					LeftColumns: []string{"id", "v"}, RightColumns: []string{"v"}, RightPrefix: "a_"}
				b.ReportAllocs()
				var outRows, peakBytes, peakRows int64
				for i := 0; i < b.N; i++ {
					op := j.Factory()()
					info := &arrowflow.TaskInfo{Name: "bench", Parallelism: 1, MaxParallelism: state.DefaultMaxParallelism,
						KeyGroups: state.RangeOf(0, state.DefaultMaxParallelism, 1), Allocator: memory.DefaultAllocator}
					if err := op.Open(info); err != nil {
						b.Fatal(err)
					}
					out := &discard{}
					for k := range left {
						for side, rec := range []arrow.RecordBatch{left[k], right[k]} {
							rec.Retain()
							if err := op.ProcessBatch(side, arrowflow.NewBatch(rec), out); err != nil {
								b.Fatal(err)
							}
						}
						last := left[k].Column(1).(*array.Timestamp).Value(int(left[k].NumRows()) - 1)
						if err := op.ProcessWatermark(arrowflow.EventTime(int64(last)*1000), out); err != nil {
							b.Fatal(err)
						}
						if i == 0 {
							st := op.(IntervalJoinStatsReporter).IntervalJoinStats()
							peakBytes = max(peakBytes, st.StateBytes)
							peakRows = max(peakRows, st.LeftStateRows+st.RightStateRows)
						}
					}
					if err := op.Finish(out); err != nil {
						b.Fatal(err)
					}
					op.Close()
					outRows = out.rows
				}
				b.ReportMetric(float64(2*rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric(float64(outRows), "out-rows")
				b.ReportMetric(float64(peakRows), "peak-state-rows")
				b.ReportMetric(float64(peakBytes)/float64(max(peakRows, 1)), "state-B/row")
			})
		}
	}
}
