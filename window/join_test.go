package window

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
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

var (
	joinTsType      = &arrow.TimestampType{Unit: arrow.Millisecond}
	joinLeftSchema  = joinSchema("id", "lv")
	joinRightSchema = joinSchema("seller", "rv")
)

// joinSchema is the schema of one side: a key, a group name (the second
// key column of two-column joins), the event time and a row number.
func joinSchema(key, v string) *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: key, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "grp", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: joinTsType, Nullable: true},
		{Name: v, Type: arrow.PrimitiveTypes.Int64},
	}, nil)
}

// joinRow is one input row; key, grp and ts may be NULL (nil). v numbers
// the rows, so every output row says which input rows made it.
type joinRow struct {
	key *int64
	grp *string
	ts  *int64 // ms
	v   int64
}

// joinStep is one batch of one side; the watermark advances after it.
type joinStep struct {
	side int
	rows []joinRow
}

// joinGen draws the batches of both sides, interleaved at random, with
// event times advancing and jittered up to bound ms behind the running
// maximum. With lateP a row is pushed up to 1.5 s further back; some rows
// sit exactly on a boundary of the align grid (start or last instant).
// Left keys are in [0, keys), right keys in [keys/3, keys/3+keys), so
// some keys exist on one side only.
func joinGen(rng *rand.Rand, n, keys int, bound int64, lateP float64, align int64) []joinStep {
	t := int64(1_700_000_000_000)
	var steps []joinStep
	var v int64
	for v < int64(n) {
		st := joinStep{side: rng.IntN(2)}
		size := 1 + rng.IntN(12)
		if rng.IntN(10) == 0 {
			size = 80
		}
		for range size {
			t += rng.Int64N(25)
			ts := t - rng.Int64N(bound)
			if rng.Float64() < lateP {
				ts -= bound + rng.Int64N(1500)
			}
			switch rng.IntN(12) {
			case 0:
				ts = floorTo(ts, align, 0)
			case 1:
				ts = floorTo(ts, align, 0) + align - 1
			}
			r := joinRow{v: v}
			v++
			if rng.IntN(100) > 0 {
				r.ts = &ts
			}
			if rng.IntN(15) > 0 {
				k := int64(rng.IntN(keys))
				if st.side == 1 {
					k += int64(keys / 3)
				}
				r.key = &k
			}
			if rng.IntN(30) > 0 {
				g := []string{"a", "b"}[rng.IntN(2)]
				r.grp = &g
			}
			st.rows = append(st.rows, r)
		}
		steps = append(steps, st)
	}
	return steps
}

// joinBuild builds a batch of one side. With junk, random rows that must
// not be seen are interleaved, and the returned selection leaves them out.
func joinBuild(mem memory.Allocator, side int, rows []joinRow, junk *rand.Rand) (arrow.RecordBatch, []int32) {
	schema := joinLeftSchema
	if side == 1 {
		schema = joinRightSchema
	}
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
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(*r.ts))
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

func joinTestConfig(kind JoinKind, spec Spec, lateness time.Duration, keys int) Join {
	j := Join{
		Left: joinLeftSchema, Right: joinRightSchema, LeftTime: "ts", RightTime: "ts",
		LeftKeys: []string{"id"}, RightKeys: []string{"seller"},
		Window: spec, Kind: kind, RightPrefix: "r_", AllowedLateness: lateness,
		LeftLateOutput: "late_left", RightLateOutput: "late_right",
	}
	if keys == 2 {
		j.LeftKeys, j.RightKeys = []string{"id", "grp"}, []string{"seller", "grp"}
	}
	return j
}

// joinValue is the value of column name of row r, as arrowflow.ValueAt
// renders it.
func joinValue(r joinRow, name string) any {
	switch name {
	case "id", "seller":
		if r.key == nil {
			return nil
		}
		return *r.key
	case "grp":
		if r.grp == nil {
			return nil
		}
		return *r.grp
	case "ts":
		if r.ts == nil {
			return nil
		}
		return time.UnixMilli(*r.ts).UTC()
	}
	return r.v
}

// joinExpect is what the reference computes.
type joinExpect struct {
	rows               []string
	late               [2]int64
	nullTime, nullKeys int64
}

// joinReference computes the window join by nested loops: it replays the
// watermarks the harness sends (after each step, the largest event time so
// far minus bound) to find which windows each row still counts in, then
// pairs every left and right row of each window.
func joinReference(j Join, steps []joinStep, bound int64) joinExpect {
	c, err := j.compile()
	if err != nil {
		panic(err)
	}
	size, step := j.Window.Size.Milliseconds(), j.Window.Size.Milliseconds()
	if j.Window.Kind == KindHopping {
		step = j.Window.Slide.Milliseconds()
	}
	off, lateMs := j.Window.Offset.Milliseconds(), j.AllowedLateness.Milliseconds()
	var exp joinExpect
	wins := map[int64]*[2][]joinRow{}
	wm, maxTs := int64(math.MinInt64/2), int64(math.MinInt64/2)
	nullKey := func(r joinRow) bool { return r.key == nil || (len(j.LeftKeys) == 2 && r.grp == nil) }
	for _, st := range steps {
		for _, r := range st.rows {
			if r.ts == nil {
				exp.nullTime++
				continue
			}
			ts := *r.ts
			last := floorTo(ts, step, off)
			if wm >= last+size-1+lateMs {
				exp.late[st.side]++
				continue
			}
			if nullKey(r) && !c.sides[st.side].keepNullKeys {
				exp.nullKeys++
				continue
			}
			for s := last; s > ts-size; s -= step {
				if wm >= s+size-1+lateMs {
					continue // this window had already fired
				}
				if wins[s] == nil {
					wins[s] = &[2][]joinRow{}
				}
				wins[s][st.side] = append(wins[s][st.side], r)
			}
		}
		for _, r := range st.rows {
			if r.ts != nil {
				maxTs = max(maxTs, *r.ts)
			}
		}
		wm = max(wm, maxTs-bound)
	}
	cols := [2][]string{j.LeftColumns, j.RightColumns}
	schemas := [2]*arrow.Schema{j.Left, j.Right}
	for s := range cols {
		if cols[s] == nil && (s == 0 || c.rightCols) {
			for _, f := range schemas[s].Fields() {
				cols[s] = append(cols[s], f.Name)
			}
		}
	}
	format := func(start int64, rs [2]*joinRow) string {
		vals := []any{time.UnixMilli(start).UTC(), time.UnixMilli(start + size).UTC()}
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
	for start, w := range wins {
		left, right := w[0], w[1]
		matched := [2][]bool{make([]bool, len(left)), make([]bool, len(right))}
		for a := range left {
			for b := range right {
				l, r := left[a], right[b]
				if nullKey(l) || nullKey(r) || *l.key != *r.key || (len(j.LeftKeys) == 2 && *l.grp != *r.grp) {
					continue
				}
				matched[0][a], matched[1][b] = true, true
				if c.pairs {
					exp.rows = append(exp.rows, format(start, [2]*joinRow{&l, &r}))
				}
			}
		}
		for a := range left {
			if (c.semi && matched[0][a]) || (c.sides[0].unmatched && !matched[0][a]) {
				exp.rows = append(exp.rows, format(start, [2]*joinRow{&left[a], nil}))
			}
		}
		for b := range right {
			if c.sides[1].unmatched && !matched[1][b] {
				exp.rows = append(exp.rows, format(start, [2]*joinRow{nil, &right[b]}))
			}
		}
	}
	sort.Strings(exp.rows)
	return exp
}

// joinEvent is one call a subtask made on its emitter: an output batch
// (with its window's end) or a watermark.
type joinEvent struct {
	sub  int
	isWM bool
	wm   arrowflow.EventTime
	end  int64 // ns
}

// joinCollector is the emitter of every subtask in the harness.
type joinCollector struct {
	t       testing.TB
	rows    []string
	late    map[string]int64
	events  []joinEvent
	sub     int  // the subtask being driven
	inBatch bool // the harness is inside ProcessBatch
}

func (c *joinCollector) Emit(b arrowflow.Batch) error {
	defer b.Release()
	if err := b.Validate(); err != nil {
		return err
	}
	if c.inBatch {
		c.t.Errorf("subtask %d emitted output while processing a batch", c.sub)
	}
	if b.NumRows() == 0 {
		c.t.Errorf("subtask %d emitted an empty batch", c.sub)
		return nil
	}
	ends := b.Record.Column(1).(*array.Timestamp)
	for k := range b.NumRows() {
		c.rows = append(c.rows, fmt.Sprint(b.RowValues(k)))
		if ends.Value(b.Row(k)) != ends.Value(b.Row(0)) {
			c.t.Errorf("one output batch holds several windows")
		}
	}
	c.events = append(c.events, joinEvent{sub: c.sub, end: int64(ends.Value(b.Row(0))) * int64(time.Millisecond)})
	return nil
}

func (c *joinCollector) EmitWatermark(wm arrowflow.EventTime) error {
	c.events = append(c.events, joinEvent{sub: c.sub, isWM: true, wm: wm})
	return nil
}

func (c *joinCollector) EmitSide(output string, b arrowflow.Batch) error {
	defer b.Release()
	if output != "late_left" && output != "late_right" {
		return fmt.Errorf("unexpected side output %q", output)
	}
	want := joinLeftSchema
	if output == "late_right" {
		want = joinRightSchema
	}
	if !b.Schema().Equal(want) {
		return fmt.Errorf("side output %q carries schema %s", output, b.Schema())
	}
	ts := b.Record.Column(3).(*array.Int64)
	for k := range b.NumRows() {
		if ts.Value(b.Row(k)) < 0 {
			return fmt.Errorf("a junk row (outside the selection) went to the late output")
		}
	}
	if c.late == nil {
		c.late = map[string]int64{}
	}
	c.late[output] += int64(b.NumRows())
	return nil
}

// checkFiring verifies that every window was emitted while the watermark
// that completes it was processed: the subtask's previous watermark had
// not completed it, the next one (if any: Finish emits none) does, and
// windows come in order of their end.
func (c *joinCollector) checkFiring(t testing.TB, tick, lateness int64) {
	t.Helper()
	lastWM := map[int]arrowflow.EventTime{}
	lastEnd := map[int]int64{}
	for i, e := range c.events {
		if e.isWM {
			lastWM[e.sub] = e.wm
			delete(lastEnd, e.sub)
			continue
		}
		if wm, ok := lastWM[e.sub]; ok && windowFired(e.end, tick, lateness, wm) {
			t.Fatalf("subtask %d: window ending %d emitted after watermark %v had already completed it", e.sub, e.end, wm)
		}
		if prev, ok := lastEnd[e.sub]; ok && prev > e.end {
			t.Fatalf("subtask %d: window ending %d emitted after the one ending %d", e.sub, e.end, prev)
		}
		lastEnd[e.sub] = e.end
		for _, n := range c.events[i+1:] {
			if n.sub == e.sub && n.isWM {
				if !windowFired(e.end, tick, lateness, n.wm) {
					t.Fatalf("subtask %d: window ending %d emitted before a watermark completed it (next %v)", e.sub, e.end, n.wm)
				}
				break
			}
		}
	}
}

// joinHarness drives a window join's subtasks as the runtime would: each
// step's rows are routed to the subtask owning their key, then every
// subtask's watermark advances.
type joinHarness struct {
	t    testing.TB
	mem  memory.Allocator
	cfg  Join
	mask uint64 // hash mask for the join table (collisions when narrow)
	subs []subtask
	out  *joinCollector
}

func (h *joinHarness) open(par int) []subtask {
	subs := make([]subtask, par)
	for i := range subs {
		info := &arrowflow.TaskInfo{Job: "t", Name: "join", Subtask: i, Parallelism: par,
			MaxParallelism: state.DefaultMaxParallelism, KeyGroups: state.RangeOf(i, state.DefaultMaxParallelism, par), Allocator: h.mem}
		op := h.cfg.Factory()()
		if err := op.Open(info); err != nil {
			h.t.Fatal(err)
		}
		if h.mask != 0 {
			op.(*joinOp).hashMask = h.mask
		}
		subs[i] = subtask{op, info}
	}
	return subs
}

func (h *joinHarness) feed(st joinStep, wm arrowflow.EventTime, junk *rand.Rand) {
	t := h.t
	rec, sel := joinBuild(h.mem, st.side, st.rows, junk)
	defer rec.Release()
	keys := h.cfg.LeftKeys
	if st.side == 1 {
		keys = h.cfg.RightKeys
	}
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
			b.Sel = nil // the whole batch: buffered without a copy
		}
		rec.Retain()
		h.out.sub, h.out.inBatch = i, true
		if err := s.op.ProcessBatch(st.side, b, h.out); err != nil {
			t.Fatal(err)
		}
		h.out.inBatch = false
		if err := s.op.ProcessWatermark(wm, h.out); err != nil {
			t.Fatal(err)
		}
	}
}

// joinRunOpts vary a harness run.
type joinRunOpts struct {
	par       int
	restoreAt int // snapshot after this many steps (0: never) ...
	newPar    int // ... and continue on this many restored subtasks
	mask      uint64
	junk      bool
	// openAll restores every subtask from every old snapshot in full,
	// not only the parts holding its key groups: the operator must then
	// keep only its own key groups itself.
	openAll bool
	// finishOnly ends with Finish alone, without the final +inf watermark
	// the runtime sends first.
	finishOnly bool
}

// joinResult is a harness run's output.
type joinResult struct {
	rows  []string
	stats JoinStats // summed over the final subtasks
	late  map[string]int64
}

func joinRun(t testing.TB, mem memory.Allocator, cfg Join, steps []joinStep, bound int64, o joinRunOpts) joinResult {
	h := &joinHarness{t: t, mem: mem, cfg: cfg, mask: o.mask, out: &joinCollector{t: t}}
	h.subs = h.open(o.par)
	var junk *rand.Rand
	if o.junk {
		junk = rand.New(rand.NewPCG(7, 7))
	}
	maxTs := int64(math.MinInt64 / 2)
	for i, st := range steps {
		if o.restoreAt > 0 && i == o.restoreAt {
			h.subs = h.snapshotRestore(o.newPar, o.openAll)
		}
		for _, r := range st.rows {
			if r.ts != nil {
				maxTs = max(maxTs, *r.ts)
			}
		}
		h.feed(st, arrowflow.EventTime((maxTs-bound)*int64(time.Millisecond)), junk)
	}
	var res joinResult
	for i, s := range h.subs {
		h.out.sub = i
		if !o.finishOnly {
			if err := s.op.ProcessWatermark(arrowflow.MaxEventTime, h.out); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.op.Finish(h.out); err != nil {
			t.Fatal(err)
		}
		st := s.op.(JoinStatsReporter).JoinStats()
		res.stats.LateRows += st.LateRows
		res.stats.NullTimeRows += st.NullTimeRows
		res.stats.NullKeyRows += st.NullKeyRows
		res.stats.OutputRows += st.OutputRows
		if st.Panes != 0 || st.StateRows != 0 || st.StateBytes != 0 {
			t.Errorf("subtask %d holds %d panes, %d rows, %d bytes after the end", i, st.Panes, st.StateRows, st.StateBytes)
		}
		if err := s.op.Close(); err != nil {
			t.Fatal(err)
		}
	}
	h.out.checkFiring(t, int64(time.Millisecond), int64(cfg.AllowedLateness))
	res.rows, res.late = h.out.rows, h.out.late
	sort.Strings(res.rows)
	return res
}

// snapshotRestore snapshots every subtask into real snapshot files, closes
// it, and opens newPar fresh subtasks that each restore the parts of the
// old files holding their key groups.
func (h *joinHarness) snapshotRestore(newPar int, openAll bool) []subtask {
	t := h.t
	store, err := state.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var handles []state.Handle
	for _, s := range h.subs {
		handles = append(handles, snapshotSubtask(t, store, "join", s))
		if err := s.op.Close(); err != nil {
			t.Fatal(err)
		}
	}
	fresh := h.open(newPar)
	for _, s := range fresh {
		restoreSubtask(t, store, h.mem, handles, s, openAll)
	}
	return fresh
}

func joinDiff(got, want []string) string {
	for i := 0; i < min(len(got), len(want)); i++ {
		if got[i] != want[i] {
			return fmt.Sprintf("got %s, want %s", got[i], want[i])
		}
	}
	if len(got) > len(want) {
		return "extra " + got[len(want)]
	}
	if len(want) > len(got) {
		return "missing " + want[len(got)]
	}
	return "none"
}

func TestJoinMatchesReference(t *testing.T) {
	kinds := []JoinKind{JoinInner, JoinLeftOuter, JoinRightOuter, JoinFullOuter, JoinSemi, JoinAnti}
	specs := []Spec{
		Tumbling(time.Second),
		Hopping(time.Second, 250*time.Millisecond),
		{Kind: KindTumbling, Size: 500 * time.Millisecond, Offset: 200 * time.Millisecond},
	}
	for ki, kind := range kinds {
		for si, spec := range specs {
			for _, par := range []int{1, 2} {
				// Vary the rest with the case, so that each appears with
				// every kind and window.
				v := ki + si + par
				lateness := []time.Duration{0, 150 * time.Millisecond}[v%2]
				keys := 1 + (ki+par)%2
				mask := []uint64{0, 3}[(si+par)%2] // 3: four hash values, collisions everywhere
				junk := (ki+si)%2 == 0
				finishOnly := v%3 == 0
				name := fmt.Sprintf("%s/%s/par=%d/lateness=%s/keys=%d/mask=%d/junk=%t", kind, spec, par, lateness, keys, mask, junk)
				t.Run(name, func(t *testing.T) {
					mem := testutil.CheckedAllocator(t)
					rng := rand.New(rand.NewPCG(uint64(ki), uint64(si*10+par)))
					align := spec.step() / int64(time.Millisecond)
					steps := joinGen(rng, 1500, 12, 200, 0.05, align)
					cfg := joinTestConfig(kind, spec, lateness, keys)
					got := joinRun(t, mem, cfg, steps, 200, joinRunOpts{par: par, mask: mask, junk: junk, finishOnly: finishOnly})
					want := joinReference(cfg, steps, 200)
					if !slices.Equal(got.rows, want.rows) {
						t.Fatalf("%d rows, reference %d; first difference: %s", len(got.rows), len(want.rows), joinDiff(got.rows, want.rows))
					}
					if len(want.rows) == 0 {
						t.Fatal("the reference has no rows; the test would not see anything")
					}
					if got.stats.LateRows != want.late[0]+want.late[1] || got.late["late_left"] != want.late[0] || got.late["late_right"] != want.late[1] {
						t.Errorf("late rows: counted %d, side outputs %v, reference %v", got.stats.LateRows, got.late, want.late)
					}
					if want.late[0] == 0 || want.late[1] == 0 {
						t.Errorf("no late rows on a side (%v): the test would not see them", want.late)
					}
					if got.stats.NullTimeRows != want.nullTime || got.stats.NullKeyRows != want.nullKeys {
						t.Errorf("NULL time/key rows %d/%d, reference %d/%d", got.stats.NullTimeRows, got.stats.NullKeyRows, want.nullTime, want.nullKeys)
					}
					if got.stats.OutputRows != int64(len(want.rows)) {
						t.Errorf("OutputRows %d, emitted %d", got.stats.OutputRows, len(want.rows))
					}
				})
			}
		}
	}
}

// A hand-checked case, so that the reference itself is not the only
// judge: boundaries, NULL keys, many-to-many, a key on one side only and
// a late row.
func TestJoinSmallExample(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	i64 := func(v int64) *int64 { return &v }
	row := func(key *int64, ts, v int64) joinRow { return joinRow{key: key, ts: i64(ts), v: v} }
	steps := []joinStep{
		// The watermark follows the largest event time (bound 0): 998.
		{0, []joinRow{row(i64(1), 998, 1), row(i64(1), 0, 2), row(nil, 10, 3), row(i64(2), 500, 4)}},
		// 999 is [0, 1000)'s last instant: not late at watermark 998.
		// Then the watermark is 1000: [0, 1000) fires.
		{1, []joinRow{row(i64(1), 0, 101), row(i64(1), 999, 102), row(nil, 10, 103), row(i64(3), 1000, 104)}},
		{0, []joinRow{row(i64(3), 1999, 5)}},
		// The watermark is now 1999 - 0: [1000, 2000) has fired.
		{1, []joinRow{row(i64(3), 1500, 105), row(i64(1), 1000, 106)}},
		{0, []joinRow{row(i64(3), 2000, 6)}},
	}
	cfg := joinTestConfig(JoinFullOuter, Tumbling(time.Second), 0, 1)
	cfg.LeftColumns, cfg.RightColumns, cfg.RightPrefix = []string{"lv", "id"}, []string{"rv"}, ""
	got := joinRun(t, mem, cfg, steps, 0, joinRunOpts{par: 1})
	w := func(start int64, cells ...any) string {
		return fmt.Sprint(append([]any{time.UnixMilli(start).UTC(), time.UnixMilli(start + 1000).UTC()}, cells...))
	}
	want := []string{
		// [0, 1000): ids 1 x sellers 1 pair four ways; NULL keys and id 2
		// stay unmatched.
		w(0, int64(1), int64(1), int64(101)), w(0, int64(1), int64(1), int64(102)),
		w(0, int64(2), int64(1), int64(101)), w(0, int64(2), int64(1), int64(102)),
		w(0, int64(3), nil, nil), w(0, int64(4), int64(2), nil), w(0, nil, nil, int64(103)),
		// [1000, 2000): id 3 at 1999 meets seller 3 at 1000 (a window's
		// first instant); 105 and 106 came after the window fired.
		w(1000, int64(5), int64(3), int64(104)),
		// [2000, 3000): 2000 is the next window's first instant.
		w(2000, int64(6), int64(3), nil),
	}
	sort.Strings(want)
	if !slices.Equal(got.rows, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got.rows, "\n"), strings.Join(want, "\n"))
	}
	if got.stats.LateRows != 2 || got.late["late_right"] != 2 {
		t.Errorf("late rows: %d counted, %v on the side outputs; want the 2 right rows", got.stats.LateRows, got.late)
	}
	ref := joinReference(cfg, steps, 0)
	if !slices.Equal(ref.rows, want) {
		t.Errorf("the reference disagrees with the hand-checked rows: %s", joinDiff(ref.rows, want))
	}
}

// Stopping after K steps, snapshotting and restoring into another
// parallelism gives exactly the uninterrupted run's output.
func TestJoinSnapshotRestoreRescale(t *testing.T) {
	for _, kind := range []JoinKind{JoinInner, JoinFullOuter} {
		for _, spec := range []Spec{Tumbling(time.Second), Hopping(time.Second, 250*time.Millisecond)} {
			for _, pars := range [][2]int{{1, 2}, {2, 1}, {1, 1}, {2, 3}} {
				t.Run(fmt.Sprintf("%s/%s/%d->%d", kind, spec, pars[0], pars[1]), func(t *testing.T) {
					mem := testutil.CheckedAllocator(t)
					rng := rand.New(rand.NewPCG(uint64(pars[0]), uint64(pars[1])))
					steps := joinGen(rng, 1500, 20, 300, 0.03, 250)
					cfg := joinTestConfig(kind, spec, 0, 1)
					want := joinReference(cfg, steps, 300)
					base := joinRun(t, mem, cfg, steps, 300, joinRunOpts{par: pars[0]})
					if !slices.Equal(base.rows, want.rows) {
						t.Fatalf("uninterrupted: %s", joinDiff(base.rows, want.rows))
					}
					for i, k := range []int{1, len(steps) / 3, 2 * len(steps) / 3} {
						o := joinRunOpts{par: pars[0], restoreAt: k, newPar: pars[1], junk: true, openAll: i == 2}
						got := joinRun(t, mem, cfg, steps, 300, o)
						if !slices.Equal(got.rows, want.rows) {
							t.Fatalf("restored after %d steps: %d rows, uninterrupted %d; %s", k, len(got.rows), len(want.rows), joinDiff(got.rows, want.rows))
						}
					}
				})
			}
		}
	}
}

// Many tiny batches are compacted in state; the result does not change,
// and the chunks a pane holds stay few.
func TestJoinCompactsTinyBatches(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	cfg := joinTestConfig(JoinInner, Tumbling(time.Hour), 0, 1)
	rng := rand.New(rand.NewPCG(3, 3))
	var steps []joinStep
	for i := range 3000 {
		k, ts := rng.Int64N(50), int64(1_700_000_000_000+i)
		steps = append(steps, joinStep{side: i % 2, rows: []joinRow{{key: &k, ts: &ts, v: int64(i)}}})
	}
	h := &joinHarness{t: t, mem: mem, cfg: cfg, out: &joinCollector{t: t}}
	h.subs = h.open(1)
	for _, st := range steps {
		h.feed(st, arrowflow.EventTime((*st.rows[0].ts-10)*int64(time.Millisecond)), nil)
	}
	op := h.subs[0].op.(*joinOp)
	for _, pn := range op.panes {
		for s, st := range pn.stores {
			if n := st.NumChunks(); n > 2*joinCompactRun {
				t.Errorf("side %d holds %d chunks for 1500 rows", s, n)
			}
		}
	}
	if st := op.JoinStats(); st.StateRows != 3000 || st.StateBytes == 0 {
		t.Errorf("state: %+v", st)
	}
	if err := op.Finish(h.out); err != nil {
		t.Fatal(err)
	}
	op.Close()
	sort.Strings(h.out.rows)
	want := joinReference(cfg, steps, 10)
	if !slices.Equal(h.out.rows, want.rows) {
		t.Fatalf("%s", joinDiff(h.out.rows, want.rows))
	}
}

func TestJoinOutputSchema(t *testing.T) {
	cfg := joinTestConfig(JoinLeftOuter, Tumbling(time.Second), 0, 1)
	cfg.LeftColumns, cfg.RightColumns = []string{"id", "ts"}, []string{"rv", "grp"}
	s, err := cfg.OutputSchema()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range s.Fields() {
		got = append(got, fmt.Sprintf("%s:%s:%t", f.Name, f.Type, f.Nullable))
	}
	want := []string{"window_start:timestamp[ms]:false", "window_end:timestamp[ms]:false",
		"id:int64:true", "ts:timestamp[ms]:true", "r_rv:int64:true", "r_grp:utf8:true"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	cfg.Kind = JoinInner
	s, _ = cfg.OutputSchema()
	if s.Field(4).Nullable {
		t.Errorf("an inner join pads nothing: r_rv need not be nullable")
	}
	cfg.Kind, cfg.RightColumns = JoinSemi, nil
	s, _ = cfg.OutputSchema()
	if s.NumFields() != 4 {
		t.Errorf("a semi join outputs the left columns only: %s", s)
	}
}

func TestJoinConfigErrors(t *testing.T) {
	good := joinTestConfig(JoinInner, Tumbling(time.Second), 0, 1)
	cases := map[string]func(j *Join){
		"appears twice":         func(j *Join) { j.RightPrefix = "" },
		"window_start":          func(j *Join) { j.Left, j.LeftTime = joinSchemaRenamed("window_start"), "window_start" },
		"different types":       func(j *Join) { j.RightKeys = []string{"grp"} },
		"as many on the left":   func(j *Join) { j.RightKeys = nil },
		"want a timestamp":      func(j *Join) { j.RightTime = "rv" },
		"not found":             func(j *Join) { j.LeftKeys = []string{"nope"} },
		"session windows":       func(j *Join) { j.Window = Session(time.Second) },
		"negative":              func(j *Join) { j.AllowedLateness = -1 },
		"only left columns":     func(j *Join) { j.Kind = JoinSemi; j.RightColumns = []string{"rv"} },
		"listed twice":          func(j *Join) { j.LeftColumns = []string{"id", "id"} },
		"schemas differ":        func(j *Join) { j.RightLateOutput = j.LeftLateOutput },
		"unknown kind":          func(j *Join) { j.Kind = 17 },
		"no right input schema": func(j *Join) { j.Right = nil },
		"size must be positive": func(j *Join) { j.Window = Tumbling(0) },
		"longer than the size":  func(j *Join) { j.Window = Hopping(time.Second, 2*time.Second) },
		"unsupported key type": func(j *Join) {
			j.Left, j.Right = joinListKeySchema(), joinListKeySchema()
			j.LeftKeys, j.RightKeys = []string{"l"}, []string{"l"}
		},
		"right event-time colum": func(j *Join) { j.RightTime = "missing" },
	}
	for want, mutate := range cases {
		j := good
		mutate(&j)
		err := j.Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
}

// joinSchemaRenamed is the left schema with its time column named name.
func joinSchemaRenamed(name string) *arrow.Schema {
	fields := slices.Clone(joinLeftSchema.Fields())
	fields[2].Name = name
	return arrow.NewSchema(fields, nil)
}

func joinListKeySchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
		{Name: "ts", Type: joinTsType},
	}, nil)
}

// joinSource is a bounded source over fixed rows: each split is a list of
// batches, read in order. Its readers keep per-split watermarks (largest
// event time minus bound); rows are never more than bound - 1 ms behind
// their split's largest, so none is late.
type joinSource struct {
	schema *arrow.Schema
	side   int
	splits [][][]joinRow
	bound  time.Duration
}

func (s *joinSource) Schema() *arrow.Schema { return s.schema }
func (s *joinSource) Splits(context.Context) ([]string, error) {
	var ids []string
	for i := range s.splits {
		ids = append(ids, fmt.Sprint(i))
	}
	return ids, nil
}

func (s *joinSource) Open(info *arrowflow.TaskInfo, splits []arrowflow.SplitState) (arrowflow.SourceReader, error) {
	r := &joinSourceReader{s: s, mem: info.Allocator, marks: NewSplitWatermarks(s.bound, 0)}
	for _, sp := range splits {
		var i, pos int
		fmt.Sscan(sp.Split, &i)
		if sp.Position != nil {
			pos = int(binary.BigEndian.Uint64(sp.Position))
		}
		r.ids, r.batches, r.pos = append(r.ids, sp.Split), append(r.batches, s.splits[i]), append(r.pos, pos)
		r.marks.AddSplit(sp.Split, time.Now())
	}
	return r, nil
}

type joinSourceReader struct {
	s       *joinSource
	mem     memory.Allocator
	marks   *SplitWatermarks
	ids     []string
	batches [][][]joinRow
	pos     []int
	next    int
}

func (r *joinSourceReader) Next(context.Context) (arrowflow.Batch, error) {
	for range r.ids {
		i := r.next % len(r.ids)
		r.next++
		if r.pos[i] >= len(r.batches[i]) {
			continue
		}
		rows := r.batches[i][r.pos[i]]
		r.pos[i]++
		for _, row := range rows {
			if row.ts != nil {
				r.marks.Observe(r.ids[i], arrowflow.EventTime(*row.ts*int64(time.Millisecond)), time.Now())
			}
		}
		if r.pos[i] == len(r.batches[i]) {
			r.marks.EndSplit(r.ids[i])
		}
		rec, _ := joinBuild(r.mem, r.s.side, rows, nil)
		return arrowflow.NewBatch(rec), nil
	}
	return arrowflow.Batch{}, io.EOF
}

func (r *joinSourceReader) Watermark() arrowflow.EventTime { return r.marks.Watermark(time.Now()) }
func (r *joinSourceReader) Positions() ([]arrowflow.SplitState, error) {
	out := make([]arrowflow.SplitState, len(r.ids))
	for i, id := range r.ids {
		out[i] = arrowflow.SplitState{Split: id, Position: binary.BigEndian.AppendUint64(nil, uint64(r.pos[i]))}
	}
	return out, nil
}
func (r *joinSourceReader) Close() error { return nil }

// The join in a real job: two sources of two splits each, keyed edges on
// the join keys, a collecting sink, epochs closing while it runs.
func TestJoinInJob(t *testing.T) {
	for _, par := range []int{1, 2} {
		for _, kind := range []JoinKind{JoinInner, JoinFullOuter} {
			t.Run(fmt.Sprintf("%s/par=%d", kind, par), func(t *testing.T) {
				mem := testutil.CheckedAllocator(t)
				rng := rand.New(rand.NewPCG(uint64(par), 99))
				const bound = 200
				// Each split's rows are at most bound-1 ms behind its
				// largest event time: no row is late, whatever the
				// interleaving of the splits.
				srcs := [2]*joinSource{{schema: joinLeftSchema, side: 0, bound: bound * time.Millisecond},
					{schema: joinRightSchema, side: 1, bound: bound * time.Millisecond}}
				var all []joinStep
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
							all = append(all, joinStep{side: side, rows: rows})
						}
						src.splits = append(src.splits, batches)
					}
				}
				cfg := joinTestConfig(kind, Hopping(time.Second, 500*time.Millisecond), 0, 1)
				g := arrowflow.NewGraph("join")
				left := g.Source("persons", srcs[0], par)
				right := g.Source("auctions", srcs[1], par)
				join := g.Operator("join", cfg.Factory(), par, arrowflow.KeyBy(left, cfg.LeftKeys...), arrowflow.KeyBy(right, cfg.RightKeys...))
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
				// With no late rows, the order of arrival does not matter:
				// the reference sees every row before any watermark.
				want := joinReference(cfg, all, math.MaxInt64/4)
				if len(want.rows) == 0 || !slices.Equal(got, want.rows) {
					t.Fatalf("%d rows, reference %d; %s", len(got), len(want.rows), joinDiff(got, want.rows))
				}
			})
		}
	}
}

// joinBenchBatches is a q8-like input in batches of 64Ki rows per side:
// persons with increasing ids, auctions by a seller among the last 20k
// persons, event time advancing 10 µs per row on each side (100k rows per
// second per side), in order.
func joinBenchBatches(rows int) (left, right []arrow.RecordBatch) {
	const batch = 1 << 16
	rng := rand.New(rand.NewPCG(1, 2))
	mem := memory.NewGoAllocator()
	ts := int64(1_700_000_000_000_000) // µs
	schema := func(key string) *arrow.Schema {
		return arrow.NewSchema([]arrow.Field{
			{Name: key, Type: arrow.PrimitiveTypes.Int64},
			{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
			{Name: "v", Type: arrow.PrimitiveTypes.Int64},
		}, nil)
	}
	var id int64
	for done := 0; done < rows; done += batch {
		lb, rb := array.NewRecordBuilder(mem, schema("id")), array.NewRecordBuilder(mem, schema("seller"))
		for i := 0; i < batch; i++ {
			lb.Field(0).(*array.Int64Builder).Append(id)
			rb.Field(0).(*array.Int64Builder).Append(max(0, id-rng.Int64N(20_000)))
			for _, b := range []*array.RecordBuilder{lb, rb} {
				b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(ts))
				b.Field(2).(*array.Int64Builder).Append(rng.Int64N(1_000_000))
			}
			id++
			ts += 10
		}
		left, right = append(left, lb.NewRecordBatch()), append(right, rb.NewRecordBatch())
		lb.Release()
		rb.Release()
	}
	return left, right
}

// BenchmarkJoin: an inner window join of persons and auctions (Nexmark
// q8's shape), one subtask, a watermark after every pair of batches.
// Reports input rows/s (both sides) and output rows.
func BenchmarkJoin(b *testing.B) {
	const rows = 2 << 20
	left, right := joinBenchBatches(rows)
	for _, spec := range []Spec{Tumbling(10 * time.Second), Hopping(10*time.Second, 2*time.Second)} {
		b.Run(fmt.Sprintf("window=%s", spec.Kind), func(b *testing.B) {
			j := Join{Left: left[0].Schema(), Right: right[0].Schema(), LeftTime: "ts", RightTime: "ts",
				LeftKeys: []string{"id"}, RightKeys: []string{"seller"}, Window: spec,
				LeftColumns: []string{"id", "v"}, RightColumns: []string{"v"}, RightPrefix: "a_"}
			b.ReportAllocs()
			var outRows int64
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
				}
				if err := op.Finish(out); err != nil {
					b.Fatal(err)
				}
				op.Close()
				outRows = out.rows
			}
			b.ReportMetric(float64(2*rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(outRows), "out-rows")
		})
	}
}
