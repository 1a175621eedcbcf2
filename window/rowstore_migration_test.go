package window

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/optest"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/state"
)

// The two joins' inputs in the optest cases: a nullable int64 key, a
// millisecond event time and a nullable value.
var (
	migLeftSchema = arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	migRightSchema = arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "w", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
)

// migRow is a reference row: key (nil for NULL), time in ms, the row's
// values as optest gives them, and its epoch.
type migRow struct {
	key   any
	ts    int64
	vals  []any
	epoch int
}

// migInputs makes random rows of both sides over epochs: event times
// advance 10 ms a row with up to 60 ms of disorder, keys in [0, 6) with
// some NULLs, values with some NULLs.
func migInputs(seed uint64, epochs, perEpoch int) (left, right []migRow) {
	rng := rand.New(rand.NewPCG(seed, 9))
	base := int64(1_700_000_000_000)
	for side := range 2 {
		var rows []migRow
		for i := range epochs * perEpoch {
			ts := base + int64(i)*10 + rng.Int64N(60)
			var key any = rng.Int64N(6)
			if rng.IntN(12) == 0 {
				key = nil
			}
			var v any
			if side == 0 {
				v = fmt.Sprintf("l%d", rng.IntN(1000))
			} else {
				v = rng.Int64N(1000)
			}
			if rng.IntN(9) == 0 {
				v = nil
			}
			rows = append(rows, migRow{key: key, ts: ts, vals: []any{key, time.UnixMilli(ts).UTC(), v}, epoch: i / perEpoch})
		}
		if side == 0 {
			left = rows
		} else {
			right = rows
		}
	}
	return left, right
}

// migWatermark is the watermark (ms) after epoch e: just behind every row
// of later epochs of either side, so that no row is late.
func migWatermark(left, right []migRow, e int) int64 {
	m := int64(1<<62 - 1)
	for _, rs := range [][]migRow{left, right} {
		for _, r := range rs {
			if r.epoch > e {
				m = min(m, r.ts)
			}
		}
	}
	return m - 1
}

// migFewConfigs are the harness configurations of the secondary cases
// (the first case of each test runs optest.DefaultConfigs): a rescale up,
// one down, one to parallelism 1, and parallelism 1, over the batch
// sizes, with and without random selections.
var migFewConfigs = []optest.Config{
	{Parallelism: []int{2, 4}, BatchSize: 7, RandomSel: true},
	{Parallelism: []int{4, 2}, BatchSize: 1},
	{Parallelism: []int{2, 1}, BatchSize: 1000, RandomSel: true},
	{Parallelism: []int{1}, BatchSize: 7},
}

func migOptestRows(rs []migRow) []optest.Row {
	out := make([]optest.Row, len(rs))
	for i, r := range rs {
		out[i] = optest.Row{Values: r.vals, Epoch: r.epoch}
	}
	return out
}

// migWindowJoinReference is the window join's output after epoch e, row by
// row: every window whose end is behind the watermark (every window after
// the last epoch) joins its left and right rows.
func migWindowJoinReference(kind JoinKind, size, slide int64, left, right []migRow, e, epochs int) [][]any {
	limit := int64(1<<62 - 1)
	if e < epochs-1 {
		limit = migWatermark(left, right, e)
	}
	starts := map[int64]bool{}
	for _, rs := range [][]migRow{left, right} {
		for _, r := range rs {
			for s := r.ts - r.ts%slide; s > r.ts-size; s -= slide {
				starts[s] = true
			}
		}
	}
	var out [][]any
	nulls := func(n int) []any { return make([]any, n) }
	for s := range starts {
		if s+size-1 > limit {
			continue
		}
		in := func(rs []migRow) []migRow {
			var w []migRow
			for _, r := range rs {
				if r.ts >= s && r.ts < s+size {
					w = append(w, r)
				}
			}
			return w
		}
		l, r := in(left), in(right)
		win := []any{time.UnixMilli(s).UTC(), time.UnixMilli(s + size).UTC()}
		lm, rm := make([]bool, len(l)), make([]bool, len(r))
		for i, a := range l {
			for j, b := range r {
				if a.key != nil && b.key != nil && a.key == b.key {
					lm[i], rm[j] = true, true
					if kind != JoinSemi && kind != JoinAnti {
						out = append(out, append(append(append([]any{}, win...), a.vals...), b.vals...))
					}
				}
			}
		}
		for i, a := range l {
			switch {
			case kind == JoinSemi && lm[i], kind == JoinAnti && !lm[i]:
				out = append(out, append(append([]any{}, win...), a.vals...))
			case (kind == JoinLeftOuter || kind == JoinFullOuter) && !lm[i]:
				out = append(out, append(append(append([]any{}, win...), a.vals...), nulls(3)...))
			}
		}
		for j, b := range r {
			if (kind == JoinRightOuter || kind == JoinFullOuter) && !rm[j] {
				out = append(out, append(append(append([]any{}, win...), nulls(3)...), b.vals...))
			}
		}
	}
	return out
}

// TestWindowJoinOptest runs the window join (on its row stores) through
// the operator harness: keyed at parallelism 1, 2 and 4 with restores and
// rescales, batch sizes 1 to 1000, random selections, a watermark per
// epoch, against the row-at-a-time reference.
func TestWindowJoinOptest(t *testing.T) {
	const epochs, perEpoch = 4, 60
	left, right := migInputs(5, epochs, perEpoch)
	for i, tc := range []struct {
		kind        JoinKind
		size, slide int64
	}{{JoinFullOuter, 200, 200}, {JoinInner, 300, 100}, {JoinSemi, 200, 100}} {
		var configs []optest.Config // the default ones
		if i > 0 {
			configs = migFewConfigs
		}
		spec := Tumbling(time.Duration(tc.size) * time.Millisecond)
		if tc.slide != tc.size {
			spec = Hopping(time.Duration(tc.size)*time.Millisecond, time.Duration(tc.slide)*time.Millisecond)
		}
		j := Join{Left: migLeftSchema, Right: migRightSchema, LeftTime: "ts", RightTime: "ts",
			LeftKeys: []string{"k"}, RightKeys: []string{"k"}, Window: spec, Kind: tc.kind,
			LeftPrefix: "l_", RightPrefix: "r_"}
		if tc.kind == JoinSemi {
			j.RightColumns = []string{}
		}
		if err := j.Validate(); err != nil {
			t.Fatal(err)
		}
		if n := len(migWindowJoinReference(tc.kind, tc.size, tc.slide, left, right, epochs-1, epochs)); n < 50 {
			t.Fatalf("%s: the reference outputs only %d rows", tc.kind, n)
		}
		t.Run(fmt.Sprintf("%s/%s", tc.kind, spec), func(t *testing.T) {
			optest.Run(t, optest.Case{
				Name:    "window join " + tc.kind.String(),
				Factory: j.Factory(),
				Inputs: []optest.Input{
					{Schema: migLeftSchema, KeyBy: []string{"k"}, Rows: migOptestRows(left)},
					{Schema: migRightSchema, KeyBy: []string{"k"}, Rows: migOptestRows(right)},
				},
				Want: func(e int) [][]any {
					return migWindowJoinReference(tc.kind, tc.size, tc.slide, left, right, e, epochs)
				},
				AppendOnly: true,
				Watermark: func(e int) (arrowflow.EventTime, bool) {
					return arrowflow.EventTime(migWatermark(left, right, e) * int64(time.Millisecond)), e < epochs-1
				},
				Configs: configs,
				Seed:    17,
			})
		})
	}
}

// migOldSnapshot writes one table of an old layout (the given leading
// columns, then the stored columns) with one row, and returns a reader
// of it.
func migOldSnapshot(t *testing.T, mem memory.Allocator, table string, lead []arrow.Field, stored *arrow.Schema) state.SnapshotReader {
	t.Helper()
	schema := arrow.NewSchema(append(append([]arrow.Field{}, lead...), stored.Fields()...), nil)
	cols := make([]arrow.Array, schema.NumFields())
	for i, f := range schema.Fields() {
		b := array.NewBuilder(mem, f.Type)
		b.AppendEmptyValue()
		cols[i] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(schema, cols, 1)
	for _, c := range cols {
		c.Release()
	}
	defer rec.Release()
	store := state.NewMemoryStore()
	w, err := store.Create(state.SnapshotID{Job: "old", Epoch: 1, Operator: "j"}, state.RangeOf(0, state.DefaultMaxParallelism, 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(table, rec); err != nil {
		t.Fatal(err)
	}
	if err := writeMeta(mem, arrowflow.MinEventTime, w); err != nil {
		t.Fatal(err)
	}
	h, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	r, err := store.Open(h, mem)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A snapshot of the window join's layout before the row stores (per-pane
// chunks: _pane, _key_group, then the stored columns) fails to restore,
// naming the operator and the reason, rather than losing the rows.
func TestWindowJoinRefusesOldSnapshotLayout(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	j := Join{Left: migLeftSchema, Right: migRightSchema, LeftTime: "ts", RightTime: "ts",
		LeftKeys: []string{"k"}, RightKeys: []string{"k"}, Window: Tumbling(time.Second), RightPrefix: "r_"}
	c, err := j.compile()
	if err != nil {
		t.Fatal(err)
	}
	r := migOldSnapshot(t, mem, "join_left", []arrow.Field{
		{Name: paneColumn, Type: arrow.PrimitiveTypes.Int64},
		{Name: state.KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16},
	}, c.sides[joinLeft].stored)
	defer r.Close()
	op := j.Factory()()
	if err := op.Open(&arrowflow.TaskInfo{Name: "q8-join", Parallelism: 1, MaxParallelism: state.DefaultMaxParallelism,
		KeyGroups: state.RangeOf(0, state.DefaultMaxParallelism, 1), Allocator: mem}); err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	err = op.RestoreState(r)
	if err == nil || !strings.Contains(err.Error(), "window join q8-join") || !strings.Contains(err.Error(), "snapshot layout of an older weir version") {
		t.Fatalf("restoring an old-layout snapshot: %v", err)
	}
}

// migIntervalReference is the interval join's output after epoch e, row by
// row: every pair of rows of epochs up to e within the interval, and, on a
// preserved side, each row of those epochs that matches no row at all once
// no row to come can match it (at once for a NULL key; its time plus the
// side's reach behind the watermark; or at the end).
func migIntervalReference(j IntervalJoin, left, right []migRow, e, epochs int) [][]any {
	h := int64(1<<62 - 1)
	if e < epochs-1 {
		h = migWatermark(left, right, e)
	}
	lowMs, upMs := j.Lower.Milliseconds(), j.Upper.Milliseconds()
	in := func(l, r migRow) bool {
		lo, hi := r.ts+lowMs, r.ts+upMs
		return (l.ts > lo || !j.LowerExclusive && l.ts == lo) && (l.ts < hi || !j.UpperExclusive && l.ts == hi)
	}
	keyless := len(j.LeftKeys) == 0
	match := func(l, r migRow) bool {
		return in(l, r) && (keyless || l.key != nil && r.key != nil && l.key == r.key)
	}
	var out [][]any
	lm, rm := make([]bool, len(left)), make([]bool, len(right))
	for i, l := range left {
		for k, r := range right {
			if match(l, r) {
				lm[i], rm[k] = true, true
				if l.epoch <= e && r.epoch <= e {
					out = append(out, append(append([]any{}, l.vals...), r.vals...))
				}
			}
		}
	}
	nulls := make([]any, 3)
	// The reach of a row: no row later than the watermark matches it once
	// its time plus reach is at or behind it.
	// (An exclusive bound takes 1 ns off the reach, which at millisecond
	// times changes nothing.)
	reach := [2]int64{-lowMs, upMs}
	outer := [2]bool{j.Kind == JoinLeftOuter || j.Kind == JoinFullOuter, j.Kind == JoinRightOuter || j.Kind == JoinFullOuter}
	for s, rows := range [][]migRow{left, right} {
		if !outer[s] {
			continue
		}
		matched := [][]bool{lm, rm}[s]
		for i, r := range rows {
			if r.epoch > e || matched[i] || !(r.key == nil && !keyless || r.ts+reach[s] <= h) {
				continue
			}
			if s == 0 {
				out = append(out, append(append([]any{}, r.vals...), nulls...))
			} else {
				out = append(out, append(append([]any{}, nulls...), r.vals...))
			}
		}
	}
	return out
}

// TestIntervalJoinOptest runs the interval join (on its row stores)
// through the operator harness, keyed at parallelism 1, 2 and 4 with
// restores and rescales (and once without keys at parallelism 1), a
// watermark per epoch, against the row-at-a-time reference.
func TestIntervalJoinOptest(t *testing.T) {
	const epochs = 4
	for _, tc := range []struct {
		name         string
		kind         JoinKind
		lower, upper time.Duration
		excl, keyed  bool
		perEpoch     int
	}{
		{"full", JoinFullOuter, -300 * time.Millisecond, 200 * time.Millisecond, false, true, 60},
		{"inner-exclusive", JoinInner, -100 * time.Millisecond, 100 * time.Millisecond, true, true, 60},
		{"right-keyless", JoinRightOuter, -40 * time.Millisecond, 0, false, false, 25},
	} {
		var configs []optest.Config // the default ones
		if tc.name == "inner-exclusive" {
			configs = migFewConfigs
		}
		left, right := migInputs(uint64(len(tc.name)), epochs, tc.perEpoch)
		j := IntervalJoin{Left: migLeftSchema, Right: migRightSchema, LeftTime: "ts", RightTime: "ts",
			Lower: tc.lower, Upper: tc.upper, LowerExclusive: tc.excl, UpperExclusive: tc.excl, Kind: tc.kind,
			LeftPrefix: "l_", RightPrefix: "r_"}
		var keyBy []string
		if tc.keyed {
			j.LeftKeys, j.RightKeys, keyBy = []string{"k"}, []string{"k"}, []string{"k"}
		}
		if err := j.Validate(); err != nil {
			t.Fatal(err)
		}
		if n := len(migIntervalReference(j, left, right, epochs-1, epochs)); n < 50 {
			t.Fatalf("%s: the reference outputs only %d rows", tc.name, n)
		}
		t.Run(tc.name, func(t *testing.T) {
			optest.Run(t, optest.Case{
				Name:    "interval join " + tc.name,
				Factory: j.Factory(),
				Inputs: []optest.Input{
					{Schema: migLeftSchema, KeyBy: keyBy, Rows: migOptestRows(left)},
					{Schema: migRightSchema, KeyBy: keyBy, Rows: migOptestRows(right)},
				},
				Want:       func(e int) [][]any { return migIntervalReference(j, left, right, e, epochs) },
				AppendOnly: true,
				Watermark: func(e int) (arrowflow.EventTime, bool) {
					return arrowflow.EventTime(migWatermark(left, right, e) * int64(time.Millisecond)), e < epochs-1
				},
				Configs: configs,
				Seed:    23,
			})
		})
	}
}

// A snapshot of the interval join's layout before the row stores
// (_key_group, _matched, then the stored columns) fails to restore,
// naming the operator and the reason.
func TestIntervalJoinRefusesOldSnapshotLayout(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	j := IntervalJoin{Left: migLeftSchema, Right: migRightSchema, LeftTime: "ts", RightTime: "ts",
		LeftKeys: []string{"k"}, RightKeys: []string{"k"}, Lower: -time.Second, Upper: time.Second, RightPrefix: "r_"}
	c, err := j.compile()
	if err != nil {
		t.Fatal(err)
	}
	r := migOldSnapshot(t, mem, "interval_right", []arrow.Field{
		{Name: state.KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16},
		{Name: "_matched", Type: arrow.FixedWidthTypes.Boolean},
	}, c.sides[joinRight].stored)
	defer r.Close()
	op := j.Factory()()
	if err := op.Open(&arrowflow.TaskInfo{Name: "q8-interval", Parallelism: 1, MaxParallelism: state.DefaultMaxParallelism,
		KeyGroups: state.RangeOf(0, state.DefaultMaxParallelism, 1), Allocator: mem}); err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	err = op.RestoreState(r)
	if err == nil || !strings.Contains(err.Error(), "interval join q8-interval") || !strings.Contains(err.Error(), "snapshot layout of an older weir version") {
		t.Fatalf("restoring an old-layout snapshot: %v", err)
	}
}
