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
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var inSchema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// row is one input row; key and v may be NULL (nil).
type row struct {
	key *int64
	ts  int64 // ms
	v   *int64
}

// stream draws rows whose event times advance with jitter up to bound ms
// behind the running maximum; with lateP, a row is instead pushed up to
// 1.5 s further back (many of those end up late).
func stream(rng *rand.Rand, n, keys int, bound int64, lateP float64) []row {
	rows := make([]row, n)
	t := int64(1_700_000_000_000)
	for i := range rows {
		t += int64(rng.IntN(40))
		ts := t - rng.Int64N(bound+1)
		if rng.Float64() < lateP {
			ts -= bound + rng.Int64N(1500)
		}
		r := row{ts: ts}
		if rng.IntN(20) > 0 {
			k := int64(rng.IntN(keys))
			r.key = &k
		}
		if rng.IntN(10) > 0 {
			v := rng.Int64N(1000) - 200
			r.v = &v
		}
		rows[i] = r
	}
	return rows
}

func buildBatch(mem memory.Allocator, rows []row) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, inSchema)
	defer b.Release()
	for _, r := range rows {
		if r.key == nil {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(*r.key)
		}
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts))
		if r.v == nil {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Int64Builder).Append(*r.v)
		}
	}
	return b.NewRecordBatch()
}

// result is one output row: window, key and aggregates, as comparable text.
type result struct {
	start, end int64 // ms
	key        string
	aggs       string
}

func (r result) String() string { return fmt.Sprintf("[%d,%d) %s: %s", r.start, r.end, r.key, r.aggs) }

// reference computes the windowed aggregate directly: it replays the
// watermarks the test sends to find the late rows, then, for every window
// of every key, aggregates the rows of the window that were not late.
func reference(spec Spec, lateness time.Duration, rows []row, batch int, bound int64) ([]result, int64) {
	lateMs := lateness.Milliseconds()
	// A row counts in each of its windows that had not fired when it
	// arrived; a row none of whose windows was still open is late.
	type arrived struct {
		row
		wm int64
	}
	var kept []arrived
	var late int64
	wm := int64(-1 << 62)
	maxTs := int64(-1 << 62)
	for i := 0; i < len(rows); i += batch {
		for _, r := range rows[i:min(i+batch, len(rows))] {
			// The row is late when its last window has fired.
			ws := refWindows(spec, r.ts)
			if wm >= ws[len(ws)-1][1]-1+lateMs {
				late++
				continue
			}
			kept = append(kept, arrived{r, wm})
		}
		for _, r := range rows[i:min(i+batch, len(rows))] {
			maxTs = max(maxTs, r.ts)
		}
		wm = max(wm, maxTs-bound)
	}
	type acc struct {
		n, cnt, sum, mx int64
		hasSum          bool
	}
	wins := map[[2]int64]map[string]*acc{}
	for _, r := range kept {
		for _, w := range refWindows(spec, r.ts) {
			if r.wm >= w[1]-1+lateMs {
				continue // this window had already fired
			}
			if wins[w] == nil {
				wins[w] = map[string]*acc{}
			}
			k := "NULL"
			if r.key != nil {
				k = fmt.Sprint(*r.key)
			}
			a := wins[w][k]
			if a == nil {
				a = &acc{}
				wins[w][k] = a
			}
			a.n++
			if r.v != nil {
				a.cnt++
				if !a.hasSum || *r.v > a.mx {
					a.mx = *r.v
				}
				a.sum += *r.v
				a.hasSum = true
			}
		}
	}
	var out []result
	for w, keys := range wins {
		for k, a := range keys {
			sum, mx := "NULL", "NULL"
			if a.hasSum {
				sum, mx = fmt.Sprint(a.sum), fmt.Sprint(a.mx)
			}
			out = append(out, result{w[0], w[1], k, fmt.Sprintf("n=%d cnt=%d sum=%s max=%s", a.n, a.cnt, sum, mx)})
		}
	}
	sortResults(out)
	return out, late
}

// refWindows lists the windows [start, end) (ms) holding a row at ts,
// straight from the definitions, in increasing order of end.
func refWindows(spec Spec, ts int64) [][2]int64 {
	size, step := spec.Size.Milliseconds(), spec.Size.Milliseconds()
	if spec.Kind != KindTumbling {
		step = spec.Slide.Milliseconds()
	}
	off := spec.Offset.Milliseconds()
	var ws [][2]int64
	switch spec.Kind {
	case KindCumulate:
		// One period of the max size; its windows end every step.
		start := floorTo(ts, size, off)
		for end := start + step; end <= start+size; end += step {
			if ts < end {
				ws = append(ws, [2]int64{start, end})
			}
		}
	default:
		for s := floorTo(ts, step, off); s > ts-size; s -= step {
			ws = append(ws, [2]int64{s, s + size})
		}
		slices.Reverse(ws)
	}
	return ws
}

func sortResults(rs []result) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].String() < rs[j].String() })
}

func readResults(t testing.TB, batches []arrowflow.Batch) []result {
	var out []result
	for _, b := range batches {
		rec := b.Record
		st, en := rec.Column(0).(*array.Timestamp), rec.Column(1).(*array.Timestamp)
		key := rec.Column(2).(*array.Int64)
		n, cnt := rec.Column(3).(*array.Int64), rec.Column(4).(*array.Int64)
		sum, mx := rec.Column(5).(*array.Int64), rec.Column(6).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			k := "NULL"
			if key.IsValid(i) {
				k = fmt.Sprint(key.Value(i))
			}
			s, m := "NULL", "NULL"
			if sum.IsValid(i) {
				s, m = fmt.Sprint(sum.Value(i)), fmt.Sprint(mx.Value(i))
			}
			out = append(out, result{int64(st.Value(i)), int64(en.Value(i)), k, fmt.Sprintf("n=%d cnt=%d sum=%s max=%s", n.Value(i), cnt.Value(i), s, m)})
		}
	}
	sortResults(out)
	return out
}

func testAggregate(spec Spec, lateness time.Duration) Aggregate {
	return Aggregate{
		Input: inSchema, Time: "ts", Window: spec, Keys: []string{"key"}, AllowedLateness: lateness, LateOutput: "late",
		Aggs: []Agg{
			{Func: kernels.AggCountStar, Name: "n"},
			{Func: kernels.AggCount, Args: []string{"v"}, Name: "cnt"},
			{Func: kernels.AggSum, Args: []string{"v"}, Name: "sum"},
			{Func: kernels.AggMax, Args: []string{"v"}, Name: "max"},
		},
	}
}

type collector struct {
	batches []arrowflow.Batch
	late    []arrowflow.Batch // the "late" side output
}

func (c *collector) EmitSide(output string, b arrowflow.Batch) error {
	if output != "late" {
		b.Release()
		return fmt.Errorf("unexpected side output %q", output)
	}
	c.late = append(c.late, b)
	return nil
}

func (c *collector) lateRows() int64 {
	var n int64
	for _, b := range c.late {
		n += int64(b.NumRows())
	}
	return n
}

func (c *collector) Emit(b arrowflow.Batch) error            { c.batches = append(c.batches, b); return nil }
func (c *collector) EmitWatermark(arrowflow.EventTime) error { return nil }
func (c *collector) release() {
	for _, b := range c.batches {
		b.Release()
	}
	for _, b := range c.late {
		b.Release()
	}
}

// subtask is one operator instance with its key-group range.
type subtask struct {
	op   arrowflow.Operator
	info *arrowflow.TaskInfo
}

func openSubtasks(t testing.TB, mem memory.Allocator, a Aggregate, par int) []subtask {
	return openSubtasksClock(t, mem, a, par, nil)
}

func openSubtasksClock(t testing.TB, mem memory.Allocator, a Aggregate, par int, clock arrowflow.Clock) []subtask {
	subs := make([]subtask, par)
	for i := range subs {
		info := &arrowflow.TaskInfo{Job: "t", Name: "win", Subtask: i, Parallelism: par,
			MaxParallelism: state.DefaultMaxParallelism, KeyGroups: state.RangeOf(i, state.DefaultMaxParallelism, par), Allocator: mem, Clock: clock}
		op := a.Factory()()
		if err := op.Open(info); err != nil {
			t.Fatal(err)
		}
		subs[i] = subtask{op, info}
	}
	return subs
}

// feed routes each row of the batch to the subtask owning its key, as a
// keyed exchange does, then advances every subtask's watermark.
func feed(t testing.TB, mem memory.Allocator, subs []subtask, rows []row, wm arrowflow.EventTime, out *collector) {
	rec := buildBatch(mem, rows)
	defer rec.Release()
	part, err := kernels.NewPartitioner(state.DefaultMaxParallelism, len(subs))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := part.Assign([]arrow.Array{rec.Column(0)}, nil); err != nil {
		t.Fatal(err)
	}
	sels := make([][]int32, len(subs))
	for i := range sels {
		sels[i] = []int32{}
	}
	part.Split(nil, sels)
	for i, s := range subs {
		rec.Retain()
		if err := s.op.ProcessBatch(0, arrowflow.Batch{Record: rec, Sel: sels[i]}, out); err != nil {
			t.Fatal(err)
		}
		if err := s.op.ProcessWatermark(wm, out); err != nil {
			t.Fatal(err)
		}
	}
}

// run drives rows through par subtasks in batches, with the watermark at
// the largest event time so far minus bound after each batch. With
// restoreAt > 0 it snapshots every subtask after that many batches and
// continues on newPar fresh subtasks restored from the snapshots.
func run(t testing.TB, mem memory.Allocator, a Aggregate, rows []row, batch int, bound int64, par, restoreAt, newPar int) ([]result, Stats) {
	out := &collector{}
	defer out.release()
	subs := openSubtasks(t, mem, a, par)
	maxTs := int64(-1 << 62)
	for i, b := 0, 0; i < len(rows); i, b = i+batch, b+1 {
		if restoreAt > 0 && b == restoreAt {
			subs = snapshotRestore(t, mem, a, subs, newPar)
		}
		chunk := rows[i:min(i+batch, len(rows))]
		for _, r := range chunk {
			maxTs = max(maxTs, r.ts)
		}
		feed(t, mem, subs, chunk, arrowflow.EventTime((maxTs-bound)*int64(time.Millisecond)), out)
	}
	var total Stats
	for _, s := range subs {
		if err := s.op.ProcessWatermark(arrowflow.MaxEventTime, out); err != nil {
			t.Fatal(err)
		}
		if err := s.op.Finish(out); err != nil {
			t.Fatal(err)
		}
		st := s.op.(StatsReporter).Stats()
		total.LateRows += st.LateRows
		total.NullTimeRows += st.NullTimeRows
		total.Windows += st.Windows
		if st.Panes != 0 {
			t.Errorf("subtask %d holds %d panes after the final watermark", s.info.Subtask, st.Panes)
		}
		if err := s.op.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// (Counters are per instance: a restore starts them again.)
	if a.LateOutput != "" && restoreAt == 0 && out.lateRows() != total.LateRows {
		t.Errorf("%d rows on the late output, %d counted late", out.lateRows(), total.LateRows)
	}
	return readResults(t, out.batches), total
}

func snapshotRestore(t testing.TB, mem memory.Allocator, a Aggregate, subs []subtask, newPar int) []subtask {
	return snapshotRestoreClock(t, mem, a, subs, newPar, nil)
}

func snapshotRestoreClock(t testing.TB, mem memory.Allocator, a Aggregate, subs []subtask, newPar int, clock arrowflow.Clock) []subtask {
	// Real snapshot files, read back by key group: each restored subtask
	// reads only the parts of the old files that hold its key groups.
	store, err := state.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var handles []state.Handle
	for _, s := range subs {
		w, err := store.Create(state.SnapshotID{Job: "t", Epoch: 1, Operator: "win", Subtask: s.info.Subtask}, s.info.KeyGroups)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.op.SnapshotState(1, w); err != nil {
			t.Fatal(err)
		}
		h, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		handles = append(handles, h)
		if err := s.op.Close(); err != nil {
			t.Fatal(err)
		}
	}
	fresh := openSubtasksClock(t, mem, a, newPar, clock)
	for _, s := range fresh {
		var readers []state.SnapshotReader
		for _, h := range handles {
			if h.IsZero() || !h.KeyGroups.Overlaps(s.info.KeyGroups) {
				continue
			}
			r, err := state.OpenKeyGroups(store, h, s.info.KeyGroups, mem)
			if err != nil {
				t.Fatal(err)
			}
			readers = append(readers, r)
		}
		r := state.MultiReader(readers...)
		if err := s.op.RestoreState(r); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return fresh
}

func TestAggregateMatchesReference(t *testing.T) {
	specs := []Spec{
		Tumbling(time.Second),
		Tumbling(250 * time.Millisecond),
		Hopping(time.Second, 200*time.Millisecond),
		Hopping(time.Second, 300*time.Millisecond), // pane = gcd = 100 ms
		{Kind: KindTumbling, Size: time.Second, Offset: 300 * time.Millisecond},
	}
	for si, spec := range specs {
		for _, lateness := range []time.Duration{0, 150 * time.Millisecond} {
			for _, par := range []int{1, 2, 4} {
				for _, batch := range []int{1, 7, 500} {
					if batch == 1 && (par > 1 || testing.Short()) {
						continue // slow and adds nothing over batch 7
					}
					name := fmt.Sprintf("%s/offset=%s/lateness=%s/par=%d/batch=%d", spec, spec.Offset, lateness, par, batch)
					t.Run(name, func(t *testing.T) {
						mem := testutil.CheckedAllocator(t)
						rng := rand.New(rand.NewPCG(uint64(si), uint64(par*1000+batch)))
						n := 3000
						if batch == 1 {
							n = 400
						}
						rows := stream(rng, n, 30, 200, 0.05)
						a := testAggregate(spec, lateness)
						got, stats := run(t, mem, a, rows, batch, 200, par, 0, 0)
						want, late := reference(spec, lateness, rows, batch, 200)
						if !slices.Equal(got, want) {
							t.Fatalf("%d results, reference %d; first difference: %s", len(got), len(want), firstDiff(got, want))
						}
						if stats.LateRows != late {
							t.Errorf("%d late rows counted, reference %d", stats.LateRows, late)
						}
						if batch < 500 && late == 0 {
							t.Errorf("the stream produced no late rows; the test would not see them")
						}
					})
				}
			}
		}
	}
}

func firstDiff(got, want []result) string {
	for i := 0; i < min(len(got), len(want)); i++ {
		if got[i] != want[i] {
			return fmt.Sprintf("got %s, want %s", got[i], want[i])
		}
	}
	if len(got) > len(want) {
		return "extra " + got[len(want)].String()
	}
	if len(want) > len(got) {
		return "missing " + want[len(got)].String()
	}
	return "none"
}

// Stopping after K batches, snapshotting and restoring into another
// parallelism gives exactly the uninterrupted run's output.
func TestAggregateSnapshotRestoreRescale(t *testing.T) {
	for _, spec := range []Spec{Tumbling(time.Second), Hopping(time.Second, 250*time.Millisecond)} {
		for _, par := range []int{1, 2, 3} {
			for _, newPar := range []int{1, 3, 4} {
				t.Run(fmt.Sprintf("%s/%d->%d", spec, par, newPar), func(t *testing.T) {
					mem := testutil.CheckedAllocator(t)
					rng := rand.New(rand.NewPCG(uint64(par), uint64(newPar)))
					rows := stream(rng, 4000, 50, 300, 0.03)
					a := testAggregate(spec, 0)
					want, _ := run(t, mem, a, rows, 100, 300, par, 0, 0)
					for _, k := range []int{1, 17, 39} {
						got, _ := run(t, mem, a, rows, 100, 300, par, k, newPar)
						if !slices.Equal(got, want) {
							t.Fatalf("restored after %d batches: %d results, uninterrupted %d; %s", k, len(got), len(want), firstDiff(got, want))
						}
					}
				})
			}
		}
	}
}

func TestAggregateConfigErrors(t *testing.T) {
	good := testAggregate(Tumbling(time.Second), 0)
	cases := map[string]func(a *Aggregate){
		"not found":             func(a *Aggregate) { a.Time = "nope" },
		"want a timestamp":      func(a *Aggregate) { a.Time = "v" },
		"size must be positive": func(a *Aggregate) { a.Window = Tumbling(0) },
		"longer than the size":  func(a *Aggregate) { a.Window = Hopping(time.Second, 2*time.Second) },
		"key column":            func(a *Aggregate) { a.Keys = []string{"missing"} },
		"negative":              func(a *Aggregate) { a.AllowedLateness = -time.Second },
	}
	for want, mutate := range cases {
		a := good
		mutate(&a)
		err := a.Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
}
