package window

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
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

var topNMs = &arrow.TimestampType{Unit: arrow.Millisecond}

// topNRawSchema is raw rows; topNWinSchema the same rows carrying a
// window (ws, we) each, as pre-windowed input.
var (
	topNRawSchema = arrow.NewSchema(topNFields, nil)
	topNWinSchema = arrow.NewSchema(append([]arrow.Field{
		{Name: "ws", Type: topNMs, Nullable: true},
		{Name: "we", Type: topNMs, Nullable: true},
	}, topNFields...), nil)
	topNFields = []arrow.Field{
		{Name: "g", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: topNMs, Nullable: true},
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	}
)

// topNRow is one input row. g, a, f and s may be NULL (nil); nullTime
// makes ts (raw) or ws (windowed) NULL.
type topNRow struct {
	g        *int64
	ts       int64 // ms
	nullTime bool
	a        *int64
	f        *float64
	s        *string
	id       int64
	ws, we   int64 // ms, windowed input only
}

// topNStream draws rows whose event times advance with jitter strictly
// less than bound behind the running maximum (so that, without lateP, no
// row is late for a watermark of max - bound); with lateP a row is pushed
// up to 1.5 s further back. Order columns take few distinct values, so
// ties are common; f has NaNs and negative zeros.
func topNStream(rng *rand.Rand, n, parts int, bound int64, lateP float64, windowed bool) []topNRow {
	rows := make([]topNRow, n)
	t := int64(1_700_000_000_000)
	for i := range rows {
		t += rng.Int64N(30)
		ts := t - rng.Int64N(bound)
		if rng.Float64() < lateP {
			ts -= bound + rng.Int64N(1500)
		}
		r := topNRow{ts: ts, id: int64(i), nullTime: lateP > 0 && rng.IntN(200) == 0}
		if rng.IntN(15) > 0 {
			g := rng.Int64N(int64(parts))
			r.g = &g
		}
		if rng.IntN(8) > 0 {
			a := rng.Int64N(20)
			r.a = &a
		}
		if rng.IntN(8) > 0 {
			f := float64(rng.IntN(30)) / 2
			switch rng.IntN(40) {
			case 0:
				f = math.NaN()
			case 1:
				f = math.Copysign(0, -1)
			}
			r.f = &f
		}
		if rng.IntN(8) > 0 {
			s := strings.Repeat("x", rng.IntN(3)) + strconv.Itoa(rng.IntN(5))
			r.s = &s
		}
		if windowed {
			r.ws = floorTo(ts, 500, 0) - 500*rng.Int64N(2)
			r.we = r.ws + []int64{1000, 1500}[rng.IntN(2)]
		}
		rows[i] = r
	}
	return rows
}

// topNBuild builds a batch of rows. With junk set, dead rows that would
// top every ranking are interleaved, and the selection vector leaves them
// out.
func topNBuild(mem memory.Allocator, schema *arrow.Schema, rows []topNRow, junk *rand.Rand) arrowflow.Batch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	base := schema.NumFields() - len(topNFields)
	add := func(r topNRow) {
		if base > 0 {
			if r.nullTime {
				b.Field(0).AppendNull()
			} else {
				b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ws))
			}
			b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(r.we))
		}
		if r.g == nil {
			b.Field(base).AppendNull()
		} else {
			b.Field(base).(*array.Int64Builder).Append(*r.g)
		}
		if r.nullTime && base == 0 {
			b.Field(base + 1).AppendNull()
		} else {
			b.Field(base + 1).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts))
		}
		if r.a == nil {
			b.Field(base + 2).AppendNull()
		} else {
			b.Field(base + 2).(*array.Int64Builder).Append(*r.a)
		}
		if r.f == nil {
			b.Field(base + 3).AppendNull()
		} else {
			b.Field(base + 3).(*array.Float64Builder).Append(*r.f)
		}
		if r.s == nil {
			b.Field(base + 4).AppendNull()
		} else {
			b.Field(base + 4).(*array.StringBuilder).Append(*r.s)
		}
		b.Field(base + 5).(*array.Int64Builder).Append(r.id)
	}
	var sel []int32
	if junk != nil {
		sel = []int32{}
	}
	n := 0
	for _, r := range rows {
		for junk != nil && junk.IntN(3) == 0 {
			big, bigF, bigS := int64(1_000_000), 1e9, "zzzz"
			add(topNRow{g: r.g, ts: r.ts, a: &big, f: &bigF, s: &bigS, id: -1, ws: r.ws, we: r.we})
			n++
		}
		if junk != nil {
			sel = append(sel, int32(n))
		}
		add(r)
		n++
	}
	return arrowflow.Batch{Record: b.NewRecordBatch(), Sel: sel}
}

// topNRefCompare ranks two rows as the ORDER BY does, in plain Go.
func topNRefCompare(x, y topNRow, order []OrderKey) int {
	for _, o := range order {
		var c int
		switch o.Column {
		case "a":
			c = topNRefCmp(x.a, y.a, o)
		case "f":
			c = topNRefCmp(x.f, y.f, o)
		case "s":
			c = topNRefCmp(x.s, y.s, o)
		case "id":
			c = topNRefCmp(&x.id, &y.id, o)
		case "ts":
			c = topNRefCmp(&x.ts, &y.ts, o)
		default:
			panic("BUG: order column " + o.Column)
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func topNRefCmp[T cmp.Ordered](x, y *T, o OrderKey) int {
	switch {
	case x == nil && y == nil:
		return 0
	case x == nil:
		if o.NullsFirst {
			return -1
		}
		return 1
	case y == nil:
		if o.NullsFirst {
			return 1
		}
		return -1
	}
	if o.Desc {
		return cmp.Compare(*y, *x)
	}
	return cmp.Compare(*x, *y)
}

func topNVals(r topNRow, order []OrderKey) string {
	var sb strings.Builder
	for _, o := range order {
		sb.WriteString(" " + o.Column + "=")
		switch o.Column {
		case "a":
			sb.WriteString(topNFmt(r.a))
		case "f":
			if r.f != nil && *r.f == 0 {
				sb.WriteString("0") // -0 ties with 0
			} else {
				sb.WriteString(topNFmt(r.f))
			}
		case "s":
			sb.WriteString(topNFmt(r.s))
		case "id":
			sb.WriteString(fmt.Sprint(r.id))
		case "ts":
			sb.WriteString(fmt.Sprint(r.ts))
		}
	}
	return sb.String()
}

func topNFmt[T any](v *T) string {
	if v == nil {
		return "NULL"
	}
	return fmt.Sprint(*v)
}

// topNRender is one output row as comparable text. byValue leaves out the
// row's id, for runs whose choice among tied rows is arbitrary.
func topNRender(cfg TopN, start, end int64, r topNRow, rank int64, byValue bool) string {
	part, rk := "-", "-"
	if len(cfg.PartitionBy) > 0 {
		part = "g=" + topNFmt(r.g)
	}
	if cfg.RowNumber != "" {
		rk = fmt.Sprint(rank)
	}
	s := fmt.Sprintf("[%d,%d) %s #%s%s", start, end, part, rk, topNVals(r, cfg.OrderBy))
	if !byValue {
		s += fmt.Sprintf(" id=%d", r.id)
	}
	return s
}

// topNRef is what the reference computes.
type topNRef struct {
	rows []string // sorted
	// members maps "[start,end) partition id" to the order values of every
	// row counted in a window, for checking the ids of byValue runs.
	members     map[string]string
	late, nulls int64
}

// topNReference computes the top-N directly: it replays the watermarks
// the harness sends (the largest event time so far minus bound after
// each batch) to find late rows, puts every other row into each of its
// windows that had not fired when it arrived, sorts each window's
// partitions stably (arrival order breaks ties) and takes the first N, or
// the first N and their ties.
func topNReference(cfg TopN, rows []topNRow, batch int, bound int64, byValue bool) topNRef {
	type winKey [2]int64
	groups := map[winKey]map[string][]topNRow{}
	out := topNRef{members: map[string]string{}}
	lateMs := cfg.AllowedLateness.Milliseconds()
	fired := func(end, wm int64) bool { return wm >= end-1+lateMs }
	part := func(r topNRow) string {
		if len(cfg.PartitionBy) == 0 {
			return "-"
		}
		return "g=" + topNFmt(r.g)
	}
	add := func(w winKey, r topNRow) {
		if groups[w] == nil {
			groups[w] = map[string][]topNRow{}
		}
		groups[w][part(r)] = append(groups[w][part(r)], r)
		out.members[fmt.Sprintf("[%d,%d) %s %d", w[0], w[1], part(r), r.id)] = topNVals(r, cfg.OrderBy)
	}
	raw := cfg.Time != ""
	size, step, off := cfg.Window.Size.Milliseconds(), cfg.Window.Size.Milliseconds(), cfg.Window.Offset.Milliseconds()
	if cfg.Window.Kind == KindHopping {
		step = cfg.Window.Slide.Milliseconds()
	}
	wm, maxTs := int64(math.MinInt64/2), int64(math.MinInt64/2)
	for i := 0; i < len(rows); i += batch {
		chunk := rows[i:min(i+batch, len(rows))]
		for _, r := range chunk {
			switch {
			case r.nullTime:
				out.nulls++
			case raw:
				last := floorTo(r.ts, step, off)
				if fired(last+size, wm) {
					out.late++
					continue
				}
				for s := last; s > r.ts-size && !fired(s+size, wm); s -= step {
					add(winKey{s, s + size}, r)
				}
			default:
				if fired(r.we, wm) {
					out.late++
					continue
				}
				add(winKey{r.ws, r.we}, r)
			}
		}
		for _, r := range chunk {
			if !r.nullTime {
				maxTs = max(maxTs, r.ts)
			}
		}
		wm = max(wm, maxTs-bound)
	}
	for w, parts := range groups {
		for _, list := range parts {
			slices.SortStableFunc(list, func(x, y topNRow) int { return topNRefCompare(x, y, cfg.OrderBy) })
			var rank int64
			for p, r := range list {
				if p >= cfg.N && (!cfg.WithTies || topNRefCompare(r, list[cfg.N-1], cfg.OrderBy) != 0) {
					break
				}
				if !cfg.WithTies || p == 0 || topNRefCompare(r, list[p-1], cfg.OrderBy) != 0 {
					rank = int64(p + 1)
				}
				out.rows = append(out.rows, topNRender(cfg, w[0], w[1], r, rank, byValue))
			}
		}
	}
	slices.Sort(out.rows)
	return out
}

// topNReadOutput renders the rows a top-N emitted, and checks in
// byValue mode that every row is a distinct one counted in its window
// and partition.
func topNReadOutput(t testing.TB, cfg TopN, batches []arrowflow.Batch, ref *topNRef, byValue bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, b := range batches {
		rec := b.Record
		col := func(name string) arrow.Array {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) != 1 {
				t.Fatalf("output has no column %q: %s", name, rec.Schema())
			}
			return rec.Column(idx[0])
		}
		wsName, weName := cfg.WindowStart, cfg.WindowEnd
		if cfg.Time != "" {
			wsName, weName = "window_start", "window_end"
		}
		ws, we := col(wsName).(*array.Timestamp), col(weName).(*array.Timestamp)
		g, ts, a := col("g").(*array.Int64), col("ts").(*array.Timestamp), col("a").(*array.Int64)
		f, s, id := col("f").(*array.Float64), col("s").(*array.String), col("id").(*array.Int64)
		var rn *array.Int64
		if cfg.RowNumber != "" {
			rn = col(cfg.RowNumber).(*array.Int64)
		}
		for k := 0; k < b.NumRows(); k++ {
			i := b.Row(k)
			r := topNRow{ts: int64(ts.Value(i)), id: id.Value(i)}
			if g.IsValid(i) {
				v := g.Value(i)
				r.g = &v
			}
			if a.IsValid(i) {
				v := a.Value(i)
				r.a = &v
			}
			if f.IsValid(i) {
				v := f.Value(i)
				r.f = &v
			}
			if s.IsValid(i) {
				v := s.Value(i)
				r.s = &v
			}
			var rank int64
			if rn != nil {
				rank = rn.Value(i)
			}
			start, end := int64(ws.Value(i)), int64(we.Value(i))
			out = append(out, topNRender(cfg, start, end, r, rank, byValue))
			if ref != nil && byValue {
				p := "-"
				if len(cfg.PartitionBy) > 0 {
					p = "g=" + topNFmt(r.g)
				}
				key := fmt.Sprintf("[%d,%d) %s %d", start, end, p, r.id)
				if vals, ok := ref.members[key]; !ok || vals != topNVals(r, cfg.OrderBy) {
					t.Errorf("emitted row %s (id %d) is not a row of its window and partition", out[len(out)-1], r.id)
				}
				if seen[key] {
					t.Errorf("row %d emitted twice in %s", r.id, key)
				}
				seen[key] = true
			}
		}
	}
	slices.Sort(out)
	return out
}

func topNFirstDiff(got, want []string) string {
	for i := 0; i < min(len(got), len(want)); i++ {
		if got[i] != want[i] {
			return fmt.Sprintf("got %s, want %s", got[i], want[i])
		}
	}
	switch {
	case len(got) > len(want):
		return "extra " + got[len(want)]
	case len(want) > len(got):
		return "missing " + want[len(got)]
	}
	return "none"
}

// topNStage is one operator of a test pipeline with its subtasks and its
// input edge: keyed by keyBy, or else rows dealt round robin.
type topNStage struct {
	name    string
	factory arrowflow.OperatorFactory
	keyBy   []string
	subs    []subtask
}

func (st *topNStage) open(t testing.TB, mem memory.Allocator, par int) {
	st.subs = make([]subtask, par)
	for i := range st.subs {
		info := &arrowflow.TaskInfo{Job: "t", Name: st.name, Subtask: i, Parallelism: par,
			MaxParallelism: state.DefaultMaxParallelism, KeyGroups: state.RangeOf(i, state.DefaultMaxParallelism, par), Allocator: mem}
		op := st.factory()
		if err := op.Open(info); err != nil {
			t.Fatal(err)
		}
		st.subs[i] = subtask{op, info}
	}
}

// push routes the selected rows of b to the subtasks, as the stage's input
// edge does. b stays the caller's.
func (st *topNStage) push(t testing.TB, b arrowflow.Batch, out *collector) {
	par := len(st.subs)
	sels := make([][]int32, par)
	for i := range sels {
		sels[i] = []int32{}
	}
	if len(st.keyBy) > 0 {
		part, err := kernels.NewPartitioner(state.DefaultMaxParallelism, par)
		if err != nil {
			t.Fatal(err)
		}
		var keys []arrow.Array
		for _, k := range st.keyBy {
			keys = append(keys, b.Record.Column(b.Record.Schema().FieldIndices(k)[0]))
		}
		if _, _, err := part.Assign(keys, b.Sel); err != nil {
			t.Fatal(err)
		}
		part.Split(b.Sel, sels)
	} else {
		for k := 0; k < b.NumRows(); k++ {
			sels[k%par] = append(sels[k%par], int32(b.Row(k)))
		}
	}
	for i, s := range st.subs {
		b.Record.Retain()
		if err := s.op.ProcessBatch(0, arrowflow.Batch{Record: b.Record, Sel: sels[i]}, out); err != nil {
			t.Fatal(err)
		}
	}
}

func (st *topNStage) watermark(t testing.TB, wm arrowflow.EventTime, out *collector) {
	for _, s := range st.subs {
		if err := s.op.ProcessWatermark(wm, out); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshotRestore snapshots every subtask into real snapshot files and
// replaces them with newPar fresh subtasks, each restored from the parts
// of the old files that hold its key groups; for newPar 3 from the whole
// files, so that operators must keep only their own key groups.
func (st *topNStage) snapshotRestore(t testing.TB, mem memory.Allocator, newPar int) {
	store, err := state.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var handles []state.Handle
	for _, s := range st.subs {
		w, err := store.Create(state.SnapshotID{Job: "t", Epoch: 1, Operator: st.name, Subtask: s.info.Subtask}, s.info.KeyGroups)
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
	st.open(t, mem, newPar)
	for _, s := range st.subs {
		var readers []state.SnapshotReader
		for _, h := range handles {
			if h.IsZero() || !h.KeyGroups.Overlaps(s.info.KeyGroups) {
				continue
			}
			var r state.SnapshotReader
			if newPar == 3 {
				r, err = store.Open(h, mem)
			} else {
				r, err = state.OpenKeyGroups(store, h, s.info.KeyGroups, mem)
			}
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
}

// topNRun is the outcome of driving a pipeline.
type topNRun struct {
	out   []arrowflow.Batch // the last stage's output
	late  int64             // rows on the "late" side outputs
	stats TopNStats         // summed over the first stage's subtasks (when a TopN), as of the end
}

func (r topNRun) release() {
	for _, b := range r.out {
		b.Release()
	}
}

// topNDrive pushes each input batch through the stages, each stage
// followed by the watermark wms[i] (rows first, then the watermark that
// fires them, as the runtime orders them). With restoreAt > 0, every
// stage is snapshotted before input restoreAt and restored into
// newPars[j] subtasks. At the end each stage gets the final watermark
// (unless finishOnly) and Finish.
func topNDrive(t testing.TB, mem memory.Allocator, stages []*topNStage, pars []int, inputs []arrowflow.Batch, wms []arrowflow.EventTime, restoreAt int, newPars []int, finishOnly bool) topNRun {
	for j, st := range stages {
		st.open(t, mem, pars[j])
	}
	var run topNRun
	step := func(in []arrowflow.Batch, owned bool, last func(st *topNStage, out *collector)) {
		cur := in
		for _, st := range stages {
			out := &collector{}
			for _, b := range cur {
				st.push(t, b, out)
			}
			last(st, out)
			run.late += out.lateRows()
			for _, b := range out.late {
				b.Release()
			}
			if owned {
				for _, b := range cur {
					b.Release()
				}
			}
			cur, owned = out.batches, true
		}
		run.out = append(run.out, cur...)
	}
	for i, in := range inputs {
		if restoreAt > 0 && i == restoreAt {
			for j, st := range stages {
				st.snapshotRestore(t, mem, newPars[j])
			}
		}
		step([]arrowflow.Batch{in}, false, func(st *topNStage, out *collector) { st.watermark(t, wms[i], out) })
	}
	step(nil, false, func(st *topNStage, out *collector) {
		for _, s := range st.subs {
			if !finishOnly {
				if err := s.op.ProcessWatermark(arrowflow.MaxEventTime, out); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.op.Finish(out); err != nil {
				t.Fatal(err)
			}
		}
	})
	for j, st := range stages {
		for _, s := range st.subs {
			if r, ok := s.op.(TopNStatsReporter); ok {
				ts := r.TopNStats()
				if ts.Panes != 0 || ts.Rows != 0 || ts.StateBytes != 0 {
					t.Errorf("stage %s subtask %d holds %d panes, %d rows, %d bytes after Finish", st.name, s.info.Subtask, ts.Panes, ts.Rows, ts.StateBytes)
				}
				if j == 0 {
					run.stats.LateRows += ts.LateRows
					run.stats.NullTimeRows += ts.NullTimeRows
					run.stats.Windows += ts.Windows
					run.stats.Pruned += ts.Pruned
				}
			}
			if err := s.op.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return run
}

// topNInputs cuts rows into batches, with the watermark after each: the
// largest event time so far minus bound.
func topNInputs(mem memory.Allocator, schema *arrow.Schema, rows []topNRow, batch int, bound int64, junk *rand.Rand) ([]arrowflow.Batch, []arrowflow.EventTime) {
	var ins []arrowflow.Batch
	var wms []arrowflow.EventTime
	maxTs := int64(math.MinInt64 / 2)
	for i := 0; i < len(rows); i += batch {
		chunk := rows[i:min(i+batch, len(rows))]
		ins = append(ins, topNBuild(mem, schema, chunk, junk))
		for _, r := range chunk {
			if !r.nullTime {
				maxTs = max(maxTs, r.ts)
			}
		}
		wms = append(wms, arrowflow.EventTime((maxTs-bound)*int64(time.Millisecond)))
	}
	return ins, wms
}

// topNStages is the pipeline running cfg: one keyed (or, without keys,
// single-subtask) stage, or the two phases of Local and Final.
func topNStages(t testing.TB, cfg TopN, twoPhase bool) []*topNStage {
	if !twoPhase {
		return []*topNStage{{name: "topn", factory: cfg.Factory(), keyBy: cfg.KeyBy}}
	}
	local := cfg.Local()
	final, err := cfg.Final()
	if err != nil {
		t.Fatal(err)
	}
	if err := local.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := final.Validate(); err != nil {
		t.Fatal(err)
	}
	return []*topNStage{
		{name: "local", factory: local.Factory()},
		{name: "final", factory: final.Factory(), keyBy: final.KeyBy},
	}
}

// topNCase is one randomized comparison with the reference.
type topNCase struct {
	cfg        TopN
	twoPhase   bool
	par        int
	batch      int
	junk       bool
	finishOnly bool
}

func (c topNCase) run(t *testing.T, seed uint64, n int, restoreAt, newPar int) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(seed, 11))
	windowed := c.cfg.Time == ""
	rows := topNStream(rng, n, 6, 200, 0.05, windowed)
	schema := topNRawSchema
	if windowed {
		schema = topNWinSchema
	}
	var junk *rand.Rand
	if c.junk {
		junk = rand.New(rand.NewPCG(seed, 12))
	}
	ins, wms := topNInputs(mem, schema, rows, c.batch, 200, junk)
	defer func() {
		for _, b := range ins {
			b.Release()
		}
	}()
	// Which of several rows tied on every ORDER BY column are kept is
	// unspecified without WithTies (it depends on panes and, in two
	// phases, on how rows were dealt to the local subtasks): compare
	// ranks and values, and check the ids apart.
	byValue := !c.cfg.WithTies
	want := topNReference(c.cfg, rows, c.batch, 200, byValue)
	stages := topNStages(t, c.cfg, c.twoPhase)
	pars := make([]int, len(stages))
	newPars := make([]int, len(stages))
	for j := range stages {
		pars[j], newPars[j] = c.par, newPar
	}
	if len(stages[0].keyBy) == 0 && !c.twoPhase {
		pars[0], newPars[0] = 1, 1 // not keyed: one subtask
	}
	run := topNDrive(t, mem, stages, pars, ins, wms, restoreAt, newPars, c.finishOnly)
	defer run.release()
	got := topNReadOutput(t, stagesCfg(t, c), run.out, &want, byValue)
	if !slices.Equal(got, want.rows) {
		t.Fatalf("%d rows, reference %d; first difference: %s", len(got), len(want.rows), topNFirstDiff(got, want.rows))
	}
	if run.late != want.late {
		t.Errorf("%d rows on the late output, reference %d late", run.late, want.late)
	}
	if restoreAt == 0 {
		if run.stats.LateRows != want.late || run.stats.NullTimeRows != want.nulls {
			t.Errorf("stats count %d late and %d null-time rows, reference %d and %d", run.stats.LateRows, run.stats.NullTimeRows, want.late, want.nulls)
		}
	}
	// (Batches of 500 rows span more event time than rows are pushed back,
	// so they see few late rows.)
	if (want.late == 0 && c.batch < 500) || len(want.rows) == 0 {
		t.Errorf("the stream produced %d late rows and %d results; the test would not see them", want.late, len(want.rows))
	}
}

// stagesCfg is the configuration whose output the last stage emits.
func stagesCfg(t testing.TB, c topNCase) TopN {
	if !c.twoPhase {
		return c.cfg
	}
	f, err := c.cfg.Final()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

var topNOrders = [][]OrderKey{
	{{Column: "a", Desc: true}},
	{{Column: "a"}, {Column: "f", Desc: true}},
	{{Column: "s", NullsFirst: true}, {Column: "a", Desc: true}},
	{{Column: "f", Desc: true, NullsFirst: true}, {Column: "id"}},
}

// topNForm is an input form: raw rows over a window spec, or windowed.
type topNForm struct {
	name     string
	spec     Spec
	windowed bool
}

var topNForms = []topNForm{
	{"tumble", Tumbling(time.Second), false},
	{"hop", Hopping(time.Second, 250*time.Millisecond), false},
	{"tumble-offset", Spec{Kind: KindTumbling, Size: 700 * time.Millisecond, Offset: 200 * time.Millisecond}, false},
	{"windowed", Spec{}, true},
}

// topNConfig is a test configuration; compactMin 0 keeps the operator's
// default.
func topNConfig(form topNForm, order []OrderKey, n int, ties, partitioned bool, lateness time.Duration, compactMin int) TopN {
	cfg := TopN{OrderBy: order, N: n, WithTies: ties, RowNumber: "rn", AllowedLateness: lateness, LateOutput: "late", compactMin: compactMin}
	if form.windowed {
		cfg.Input, cfg.WindowStart, cfg.WindowEnd = topNWinSchema, "ws", "we"
	} else {
		cfg.Input, cfg.Time, cfg.Window = topNRawSchema, "ts", form.spec
	}
	if partitioned {
		cfg.PartitionBy = []string{"g"}
	}
	return cfg
}

func TestTopNMatchesReference(t *testing.T) {
	i := 0
	for _, form := range topNForms {
		for oi, order := range topNOrders {
			for _, n := range []int{1, 3} {
				for _, ties := range []bool{false, true} {
					for _, partitioned := range []bool{false, true} {
						i++
						lateness := time.Duration(i%2) * 150 * time.Millisecond
						c := topNCase{
							cfg:        topNConfig(form, order, n, ties, partitioned, lateness, []int{1, 3, 16, 0}[(i/2)%4]),
							par:        1 + i%3,
							batch:      []int{7, 60, 500}[(i/3)%3],
							junk:       i%4 == 0,
							finishOnly: i%5 == 0,
						}
						// Key the edge as a job would: raw rows by their
						// partition, windowed rows by window columns and
						// partition (several subsets); whole windows of raw
						// rows at parallelism > 1 in two phases.
						switch {
						case form.windowed && i%3 == 0:
							c.twoPhase = true
						case form.windowed:
							c.cfg.KeyBy = [][]string{{"ws", "we"}, {"we"}, {"ws"}}[i%3]
							if partitioned && i%2 == 0 {
								c.cfg.KeyBy = append(c.cfg.KeyBy, "g")
							}
						case partitioned && i%2 == 0:
							c.cfg.KeyBy = []string{"g"}
						default:
							c.twoPhase = c.par > 1
						}
						name := fmt.Sprintf("%s/order=%d/n=%d/ties=%v/partitioned=%v/par=%d/batch=%d/two-phase=%v", form.name, oi, n, ties, partitioned, c.par, c.batch, c.twoPhase)
						t.Run(name, func(t *testing.T) { c.run(t, uint64(i), 1500, 0, 0) })
					}
				}
			}
		}
	}
	// Batches of one row, where every row meets the thresholds alone.
	for fi, form := range topNForms {
		c := topNCase{cfg: topNConfig(form, topNOrders[fi], 2, fi%2 == 0, true, 0, 1), par: 2, batch: 1, junk: true}
		c.cfg.KeyBy = []string{"g"}
		t.Run(form.name+"/batch=1", func(t *testing.T) { c.run(t, uint64(100+fi), 400, 0, 0) })
	}
}

// Stopping after K batches, snapshotting and restoring into another
// parallelism gives exactly the reference's output (and so the
// uninterrupted run's).
func TestTopNSnapshotRestoreRescale(t *testing.T) {
	cases := map[string]topNCase{
		"raw/keyed": {cfg: func() TopN {
			c := topNConfig(topNForms[0], topNOrders[0], 2, false, true, 0, 4)
			c.KeyBy = []string{"g"}
			return c
		}()},
		"windowed/keyed": {cfg: func() TopN {
			c := topNConfig(topNForms[3], topNOrders[2], 1, true, false, 100*time.Millisecond, 0)
			c.KeyBy = []string{"ws", "we"}
			return c
		}()},
		"raw/two-phase/ties": {cfg: topNConfig(topNForms[1], topNOrders[0], 1, true, false, 0, 2), twoPhase: true},
		"raw/two-phase":      {cfg: topNConfig(topNForms[0], topNOrders[1], 3, false, true, 0, 0), twoPhase: true},
	}
	for name, c := range cases {
		for _, p := range [][2]int{{1, 2}, {2, 1}, {2, 3}} {
			for _, k := range []int{1, 13, 29} {
				c.par, c.batch = p[0], 60
				t.Run(fmt.Sprintf("%s/%d->%d/at=%d", name, p[0], p[1], k), func(t *testing.T) {
					c.run(t, uint64(k*10+p[0]), 2400, k, p[1])
				})
			}
		}
	}
}

// q5's shape: a real windowed Aggregate counting rows per key in hopping
// windows, then per window the keys with the largest count, with ties.
func TestTopNAfterAggregate(t *testing.T) {
	for _, twoPhase := range []bool{false, true} {
		for _, p := range [][2]int{{1, 1}, {2, 2}, {1, 3}, {3, 1}} {
			t.Run(fmt.Sprintf("two-phase=%v/%d->%d", twoPhase, p[0], p[1]), func(t *testing.T) {
				mem := testutil.CheckedAllocator(t)
				rng := rand.New(rand.NewPCG(uint64(p[0]), uint64(p[1])))
				rows := topNStream(rng, 3000, 12, 300, 0, false)
				agg := Aggregate{Input: topNRawSchema, Time: "ts", Window: Hopping(2*time.Second, 400*time.Millisecond), Keys: []string{"g"},
					Aggs: []Agg{{Func: kernels.AggCountStar, Name: "n"}}}
				aggOut, err := agg.OutputSchema()
				if err != nil {
					t.Fatal(err)
				}
				top := TopN{Input: aggOut, WindowStart: "window_start", WindowEnd: "window_end",
					OrderBy: []OrderKey{{Column: "n", Desc: true}}, N: 1, WithTies: true, RowNumber: "rank",
					KeyBy: []string{"window_start", "window_end"}}
				stages := []*topNStage{{name: "agg", factory: agg.Factory(), keyBy: []string{"g"}}}
				if twoPhase {
					final, err := top.Final()
					if err != nil {
						t.Fatal(err)
					}
					stages = append(stages, &topNStage{name: "local", factory: top.Local().Factory()},
						&topNStage{name: "final", factory: final.Factory(), keyBy: final.KeyBy})
				} else {
					stages = append(stages, &topNStage{name: "topn", factory: top.Factory(), keyBy: top.KeyBy})
				}
				ins, wms := topNInputs(mem, topNRawSchema, rows, 100, 300, nil)
				defer func() {
					for _, b := range ins {
						b.Release()
					}
				}()
				pars, newPars := make([]int, len(stages)), make([]int, len(stages))
				for j := range stages {
					pars[j], newPars[j] = p[0], p[1]
				}
				restoreAt := 0
				if p[0] != p[1] {
					restoreAt = 11
				}
				run := topNDrive(t, mem, stages, pars, ins, wms, restoreAt, newPars, false)
				defer run.release()
				var got []string
				for _, b := range run.out {
					for k := 0; k < b.NumRows(); k++ {
						v := b.RowValues(k)
						got = append(got, fmt.Sprintf("[%d,%d) g=%v n=%v #%v", v[0].(time.Time).UnixMilli(), v[1].(time.Time).UnixMilli(), topNAny(v[2]), v[3], v[4]))
					}
				}
				slices.Sort(got)
				want := topNHotKeys(rows, 2000, 400)
				if !slices.Equal(got, want) {
					t.Fatalf("%d rows, reference %d; first difference: %s", len(got), len(want), topNFirstDiff(got, want))
				}
				windows := map[string]bool{}
				for _, w := range want {
					windows[w[:strings.Index(w, ")")]] = true
				}
				if len(want) == len(windows) {
					t.Errorf("%d results for %d windows: no ties, the test would not see them", len(want), len(windows))
				}
			})
		}
	}
}

func topNAny(v any) string {
	if v == nil {
		return "NULL"
	}
	return fmt.Sprint(v)
}

// topNHotKeys is q5's answer: per hopping window, the keys with the most
// rows (all of them when tied).
func topNHotKeys(rows []topNRow, size, slide int64) []string {
	counts := map[[2]int64]map[string]int64{}
	for _, r := range rows {
		k := "NULL"
		if r.g != nil {
			k = fmt.Sprint(*r.g)
		}
		for s := floorTo(r.ts, slide, 0); s > r.ts-size; s -= slide {
			w := [2]int64{s, s + size}
			if counts[w] == nil {
				counts[w] = map[string]int64{}
			}
			counts[w][k]++
		}
	}
	var out []string
	for w, keys := range counts {
		var best int64
		for _, n := range keys {
			best = max(best, n)
		}
		for k, n := range keys {
			if n == best {
				out = append(out, fmt.Sprintf("[%d,%d) g=%s n=%d #1", w[0], w[1], k, n))
			}
		}
	}
	slices.Sort(out)
	return out
}

// For a top-1 with ties over raw rows the state holds the rows equal to
// the running maximum and at most one probation batch, not the window:
// also when every row beats the last maximum (ascending prices).
func TestTopNStateStaysSmall(t *testing.T) {
	for _, ascending := range []bool{false, true} {
		t.Run(fmt.Sprintf("ascending=%v", ascending), func(t *testing.T) {
			mem := testutil.CheckedAllocator(t)
			rng := rand.New(rand.NewPCG(5, 6))
			cfg := TopN{Input: topNRawSchema, Time: "ts", Window: Tumbling(time.Hour), OrderBy: []OrderKey{{Column: "a", Desc: true}}, N: 1, WithTies: true}
			op := cfg.Factory()()
			info := &arrowflow.TaskInfo{Job: "t", Name: "q7", Parallelism: 1, MaxParallelism: state.DefaultMaxParallelism,
				KeyGroups: state.RangeOf(0, state.DefaultMaxParallelism, 1), Allocator: mem}
			if err := op.Open(info); err != nil {
				t.Fatal(err)
			}
			out := &collector{}
			defer out.release()
			const total, batch = 50_000, 1000
			t0 := int64(1_700_000_000_000)
			t0 -= t0 % int64(time.Hour/time.Millisecond)
			var best int64 = -1
			for i := 0; i < total; i += batch {
				rows := make([]topNRow, batch)
				for k := range rows {
					a := rng.Int64N(1_000_000)
					if ascending {
						a = int64(i + k)
					}
					best = max(best, a)
					rows[k] = topNRow{ts: t0 + int64(i+k)/20, a: &a, id: int64(i + k)}
				}
				if err := op.ProcessBatch(0, topNBuild(mem, topNRawSchema, rows, nil), out); err != nil {
					t.Fatal(err)
				}
				st := op.(TopNStatsReporter).TopNStats()
				if st.Rows >= topNCompactMin+8 {
					t.Fatalf("after %d rows the window holds %d candidate rows (%d bytes)", i+batch, st.Rows, st.StateBytes)
				}
			}
			if err := op.Finish(out); err != nil {
				t.Fatal(err)
			}
			st := op.(TopNStatsReporter).TopNStats()
			var emitted int
			for _, b := range out.batches {
				a := b.Record.Column(4).(*array.Int64) // window_start, window_end, g, ts, a
				for k := 0; k < b.NumRows(); k++ {
					if a.Value(b.Row(k)) != best {
						t.Errorf("emitted a=%d, the maximum is %d", a.Value(b.Row(k)), best)
					}
					emitted++
				}
			}
			if emitted == 0 || st.Pruned+int64(emitted) != total {
				t.Errorf("emitted %d rows and pruned %d of %d", emitted, st.Pruned, total)
			}
			if err := op.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestTopNConfigErrors(t *testing.T) {
	good := topNConfig(topNForms[0], topNOrders[0], 2, false, true, 0, 0)
	good.KeyBy = []string{"g"}
	win := topNConfig(topNForms[3], topNOrders[0], 2, false, true, 0, 0)
	cases := map[string]func(c *TopN){
		"no input schema":          func(c *TopN) { c.Input = nil },
		"N must be at least 1":     func(c *TopN) { c.N = 0 },
		"no ORDER BY":              func(c *TopN) { c.OrderBy = nil },
		"negative":                 func(c *TopN) { c.AllowedLateness = -time.Second },
		"not both":                 func(c *TopN) { c.WindowStart, c.WindowEnd = "ts", "ts" },
		"give Time and Window":     func(c *TopN) { c.Time = "" },
		"want a timestamp":         func(c *TopN) { c.Time = "a" },
		"size must be positive":    func(c *TopN) { c.Window = Tumbling(0) },
		"session windows":          func(c *TopN) { c.Window = Session(time.Second) },
		"partition column":         func(c *TopN) { c.PartitionBy = []string{"nope"} },
		"order column \"nope\"":    func(c *TopN) { c.OrderBy = []OrderKey{{Column: "nope"}} },
		"not a PartitionBy column": func(c *TopN) { c.KeyBy = []string{"a"} },
		"row number column \"id\"": func(c *TopN) { c.RowNumber = "id" },
		"already has a column": func(c *TopN) {
			c.Input = arrow.NewSchema(append(topNRawSchema.Fields(), arrow.Field{Name: "window_start", Type: topNMs}), nil)
		},
		"reserve": func(c *TopN) {
			c.Input = arrow.NewSchema(append(topNRawSchema.Fields(), arrow.Field{Name: state.KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16}), nil)
		},
		"cannot hold": func(c *TopN) {
			c.Input = arrow.NewSchema(append(topNRawSchema.Fields(), arrow.Field{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}), nil)
		},
		"cannot be ranked": func(c *TopN) {
			c.Input = arrow.NewSchema(append(topNRawSchema.Fields(), arrow.Field{Name: "b", Type: arrow.FixedWidthTypes.Boolean}), nil)
			c.OrderBy = []OrderKey{{Column: "b"}}
		},
		"needs both":                             func(c *TopN) { *c = win; c.WindowEnd = "" },
		"takes no Window spec":                   func(c *TopN) { *c = win; c.Window = Tumbling(time.Second) },
		"neither a window nor":                   func(c *TopN) { *c = win; c.KeyBy = []string{"ws", "a"} },
		"window end column \"a\" has type int64": func(c *TopN) { *c = win; c.WindowEnd = "a" },
		"but window end":                         func(c *TopN) { *c = win; c.Input = topNWinTypes(); c.WindowEnd = "we_us" },
		"window start column \"nope\"":           func(c *TopN) { *c = win; c.WindowStart = "nope" },
		"raw rows can only be keyed":             func(c *TopN) { c.KeyBy = []string{"ts"} },
	}
	for want, mutate := range cases {
		c := good
		mutate(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
		if _, err := c.OutputSchema(); err == nil {
			t.Errorf("%s: OutputSchema accepted the configuration", want)
		}
	}
	for _, c := range []TopN{good, win} {
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Final(); err != nil {
			t.Fatal(err)
		}
	}
	// A bad configuration fails the operator's Open, naming the problem.
	bad := good
	bad.N = -1
	err := bad.Factory()().Open(&arrowflow.TaskInfo{Name: "x"})
	if err == nil || !strings.Contains(err.Error(), "N must be at least 1") {
		t.Errorf("Open with N=-1: %v", err)
	}
}

func topNWinTypes() *arrow.Schema {
	return arrow.NewSchema(append(topNWinSchema.Fields(), arrow.Field{Name: "we_us", Type: &arrow.TimestampType{Unit: arrow.Microsecond}}), nil)
}

func TestTopNOutputSchema(t *testing.T) {
	raw := topNConfig(topNForms[0], topNOrders[0], 1, false, false, 0, 0)
	s, err := raw.OutputSchema()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range s.Fields() {
		names = append(names, f.Name)
	}
	if got, want := strings.Join(names, ","), "window_start,window_end,g,ts,a,f,s,id,rn"; got != want {
		t.Errorf("raw output columns %s, want %s", got, want)
	}
	if !arrow.TypeEqual(s.Field(0).Type, topNMs) {
		t.Errorf("window_start is %s, want the event-time column's type", s.Field(0).Type)
	}
	final, err := raw.Final()
	if err != nil {
		t.Fatal(err)
	}
	fs, err := final.OutputSchema()
	if err != nil {
		t.Fatal(err)
	}
	if !fs.Equal(s) {
		t.Errorf("two phases emit %s, one phase %s", fs, s)
	}
	if local, _ := raw.Local().OutputSchema(); local.NumFields() != s.NumFields()-1 {
		t.Errorf("the local phase emits %s: it should add no row number", local)
	}
}

// topNSource is a bounded source of prebuilt batches, one list per split;
// each split's watermark is its largest event time minus bound.
type topNSource struct {
	schema *arrow.Schema
	splits [][]arrow.RecordBatch
	tsCol  int
	bound  int64 // ms
}

func (s *topNSource) Schema() *arrow.Schema { return s.schema }
func (s *topNSource) Splits(context.Context) ([]string, error) {
	var names []string
	for i := range s.splits {
		names = append(names, strconv.Itoa(i))
	}
	return names, nil
}
func (s *topNSource) Open(_ *arrowflow.TaskInfo, splits []arrowflow.SplitState) (arrowflow.SourceReader, error) {
	r := &topNReader{s: s}
	for _, sp := range splits {
		i, err := strconv.Atoi(sp.Split)
		if err != nil {
			return nil, err
		}
		r.cur = append(r.cur, &topNCursor{split: sp.Split, batches: s.splits[i]})
	}
	return r, nil
}

type topNCursor struct {
	split   string
	batches []arrow.RecordBatch
	pos     int
	maxTs   int64
}

type topNReader struct {
	s    *topNSource
	cur  []*topNCursor
	next int
}

func (r *topNReader) Next(context.Context) (arrowflow.Batch, error) {
	for range r.cur {
		c := r.cur[r.next%len(r.cur)]
		r.next++
		if c.pos == len(c.batches) {
			continue
		}
		rec := c.batches[c.pos]
		c.pos++
		ts := rec.Column(r.s.tsCol).(*array.Timestamp)
		for i := 0; i < ts.Len(); i++ {
			c.maxTs = max(c.maxTs, int64(ts.Value(i)))
		}
		rec.Retain()
		return arrowflow.NewBatch(rec), nil
	}
	return arrowflow.Batch{}, io.EOF
}

func (r *topNReader) Watermark() arrowflow.EventTime {
	wm := arrowflow.MaxEventTime
	for _, c := range r.cur {
		switch {
		case c.pos == len(c.batches):
		case c.pos == 0:
			return arrowflow.MinEventTime
		default:
			wm = min(wm, arrowflow.EventTime((c.maxTs-r.s.bound)*int64(time.Millisecond)))
		}
	}
	return wm
}

func (r *topNReader) Positions() ([]arrowflow.SplitState, error) {
	var out []arrowflow.SplitState
	for _, c := range r.cur {
		out = append(out, arrowflow.SplitState{Split: c.split, Position: []byte(strconv.Itoa(c.pos))})
	}
	return out, nil
}

func (r *topNReader) Close() error { return nil }

var topNBidSchema = arrow.NewSchema([]arrow.Field{
	{Name: "auction", Type: arrow.PrimitiveTypes.Int64},
	{Name: "bidder", Type: arrow.PrimitiveTypes.Int64},
	{Name: "price", Type: arrow.PrimitiveTypes.Int64},
	{Name: "channel", Type: arrow.BinaryTypes.String},
	{Name: "date_time", Type: topNMs},
}, nil)

// topNBid is one Nexmark-shaped bid; bidder numbers bids uniquely.
type topNBid struct{ auction, bidder, price, ts int64 }

// topNBids draws splits of bids whose times run ahead with jitter less
// than bound, so that no bid is late for its split's watermark.
func topNBids(mem memory.Allocator, rng *rand.Rand, splits, perSplit, batch int, bound int64) ([][]arrow.RecordBatch, []topNBid) {
	var all []topNBid
	out := make([][]arrow.RecordBatch, splits)
	for sp := range out {
		t := int64(1_700_000_000_000)
		for i := 0; i < perSplit; i += batch {
			b := array.NewRecordBuilder(mem, topNBidSchema)
			for k := i; k < min(i+batch, perSplit); k++ {
				t += rng.Int64N(40)
				bid := topNBid{auction: rng.Int64N(30), bidder: int64(len(all)), price: rng.Int64N(200), ts: t - rng.Int64N(bound)}
				all = append(all, bid)
				b.Field(0).(*array.Int64Builder).Append(bid.auction)
				b.Field(1).(*array.Int64Builder).Append(bid.bidder)
				b.Field(2).(*array.Int64Builder).Append(bid.price)
				b.Field(3).(*array.StringBuilder).Append([]string{"web", "app", "api"}[rng.IntN(3)])
				b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(bid.ts))
			}
			out[sp] = append(out[sp], b.NewRecordBatch())
			b.Release()
		}
	}
	return out, all
}

func topNRunJob(t *testing.T, mem memory.Allocator, g *arrowflow.Graph) {
	job, err := g.Plan(arrowflow.Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// Nexmark q7 in a real job: the bids with the highest price of each 10 s
// tumbling window, as a local top-1 with ties per subtask on raw bids,
// then a final one keyed by window.
func TestTopNJobQ7(t *testing.T) {
	for _, par := range []int{1, 2} {
		t.Run(fmt.Sprintf("par=%d", par), func(t *testing.T) {
			mem := testutil.CheckedAllocator(t)
			rng := rand.New(rand.NewPCG(7, uint64(par)))
			splits, bids := topNBids(mem, rng, 2, 4000, 250, 500)
			defer func() {
				for _, s := range splits {
					for _, b := range s {
						b.Release()
					}
				}
			}()
			q7 := TopN{Input: topNBidSchema, Time: "date_time", Window: Tumbling(10 * time.Second),
				OrderBy: []OrderKey{{Column: "price", Desc: true}}, N: 1, WithTies: true, RowNumber: "rank"}
			final, err := q7.Final()
			if err != nil {
				t.Fatal(err)
			}
			g := arrowflow.NewGraph("q7")
			src := g.Source("bids", &topNSource{schema: topNBidSchema, splits: splits, tsCol: 4, bound: 500}, par)
			local := g.Operator("q7-local", q7.Local().Factory(), par, arrowflow.Forward(src))
			top := g.Operator("q7", final.Factory(), par, arrowflow.KeyBy(local, final.KeyBy...))
			sink := collect.New()
			g.Sink("out", sink, par, arrowflow.Forward(top))
			topNRunJob(t, mem, g)

			var got []string
			for _, r := range sink.Rows() {
				got = append(got, fmt.Sprintf("[%d,%d) bidder=%d price=%d #%d", r[0].(time.Time).UnixMilli(), r[1].(time.Time).UnixMilli(), r[3], r[4], r[7]))
			}
			slices.Sort(got)
			// The reference: per window, every bid at the window's maximum.
			best := map[int64]int64{}
			for _, b := range bids {
				w := floorTo(b.ts, 10_000, 0)
				if p, ok := best[w]; !ok || b.price > p {
					best[w] = b.price
				}
			}
			var want []string
			for _, b := range bids {
				if w := floorTo(b.ts, 10_000, 0); b.price == best[w] {
					want = append(want, fmt.Sprintf("[%d,%d) bidder=%d price=%d #1", w, w+10_000, b.bidder, b.price))
				}
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("%d rows, reference %d; first difference: %s", len(got), len(want), topNFirstDiff(got, want))
			}
			if len(want) <= len(best) {
				t.Errorf("%d rows for %d windows: no ties, the test would not see them", len(want), len(best))
			}
		})
	}
}

// Nexmark q5 in a real job: a hopping count per auction, then per window
// the auctions with the most bids, keyed by window; also in two phases.
func TestTopNJobQ5(t *testing.T) {
	for _, twoPhase := range []bool{false, true} {
		for _, par := range []int{1, 2} {
			t.Run(fmt.Sprintf("two-phase=%v/par=%d", twoPhase, par), func(t *testing.T) {
				mem := testutil.CheckedAllocator(t)
				rng := rand.New(rand.NewPCG(5, uint64(par)))
				splits, bids := topNBids(mem, rng, 2, 3000, 200, 500)
				defer func() {
					for _, s := range splits {
						for _, b := range s {
							b.Release()
						}
					}
				}()
				counts := Aggregate{Input: topNBidSchema, Time: "date_time", Window: Hopping(10*time.Second, 2*time.Second),
					Keys: []string{"auction"}, Aggs: []Agg{{Func: kernels.AggCountStar, Name: "num"}}}
				countsOut, err := counts.OutputSchema()
				if err != nil {
					t.Fatal(err)
				}
				hot := TopN{Input: countsOut, WindowStart: "window_start", WindowEnd: "window_end",
					OrderBy: []OrderKey{{Column: "num", Desc: true}}, N: 1, WithTies: true,
					KeyBy: []string{"window_start", "window_end"}}
				g := arrowflow.NewGraph("q5")
				src := g.Source("bids", &topNSource{schema: topNBidSchema, splits: splits, tsCol: 4, bound: 500}, par)
				agg := g.Operator("q5-counts", counts.Factory(), par, arrowflow.KeyBy(src, "auction"))
				var top *arrowflow.Node
				if twoPhase {
					final, err := hot.Final()
					if err != nil {
						t.Fatal(err)
					}
					local := g.Operator("q5-local", hot.Local().Factory(), par, arrowflow.Forward(agg))
					top = g.Operator("q5", final.Factory(), par, arrowflow.KeyBy(local, final.KeyBy...))
				} else {
					top = g.Operator("q5", hot.Factory(), par, arrowflow.KeyBy(agg, hot.KeyBy...))
				}
				sink := collect.New()
				g.Sink("out", sink, par, arrowflow.Forward(top))
				topNRunJob(t, mem, g)

				var got []string
				for _, r := range sink.Rows() {
					got = append(got, fmt.Sprintf("[%d,%d) g=%d n=%d #1", r[0].(time.Time).UnixMilli(), r[1].(time.Time).UnixMilli(), r[2], r[3]))
				}
				slices.Sort(got)
				rows := make([]topNRow, len(bids))
				for i, b := range bids {
					rows[i] = topNRow{g: &b.auction, ts: b.ts}
				}
				want := topNHotKeys(rows, 10_000, 2_000)
				if len(want) == 0 {
					t.Fatal("no windows: the test would not see anything")
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%d rows, reference %d; first difference: %s", len(got), len(want), topNFirstDiff(got, want))
				}
			})
		}
	}
}

// BenchmarkTopN: per 10 s window, the rows with the largest v (top-1 with
// ties over raw rows, q7's shape) and the top 3 per key among 1e4 keys,
// one subtask, a watermark after every 64Ki-row batch. Reports rows/s
// (one goroutine) and the most candidate rows held after a batch.
func BenchmarkTopN(b *testing.B) {
	const rows = 4 << 20
	batches := benchStream(rows, 10_000)
	schema := batches[0].Schema()
	desc := []OrderKey{{Column: "v", Desc: true}}
	cases := []struct {
		name string
		cfg  TopN
	}{
		{"top=1-ties/window=TUMBLE", TopN{Input: schema, Time: "ts", Window: Tumbling(10 * time.Second), OrderBy: desc, N: 1, WithTies: true}},
		{"top=1-ties/window=HOP", TopN{Input: schema, Time: "ts", Window: Hopping(10*time.Second, 2*time.Second), OrderBy: desc, N: 1, WithTies: true}},
		{"top=3/partitions=10000/window=TUMBLE", TopN{Input: schema, Time: "ts", Window: Tumbling(10 * time.Second), OrderBy: desc, N: 3, PartitionBy: []string{"key"}, KeyBy: []string{"key"}}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var peak int64
			for i := 0; i < b.N; i++ {
				op := c.cfg.Factory()()
				info := &arrowflow.TaskInfo{Name: "bench", Parallelism: 1, MaxParallelism: state.DefaultMaxParallelism,
					KeyGroups: state.RangeOf(0, state.DefaultMaxParallelism, 1), Allocator: memory.DefaultAllocator}
				if err := op.Open(info); err != nil {
					b.Fatal(err)
				}
				out := &discard{}
				for _, rec := range batches {
					rec.Retain()
					if err := op.ProcessBatch(0, arrowflow.NewBatch(rec), out); err != nil {
						b.Fatal(err)
					}
					if i == 0 {
						peak = max(peak, op.(TopNStatsReporter).TopNStats().Rows)
					}
					last := rec.Column(1).(*array.Timestamp).Value(int(rec.NumRows()) - 1)
					if err := op.ProcessWatermark(arrowflow.EventTime(int64(last)*1000), out); err != nil {
						b.Fatal(err)
					}
				}
				if err := op.Finish(out); err != nil {
					b.Fatal(err)
				}
				op.Close()
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(peak), "peak-rows")
		})
	}
}
