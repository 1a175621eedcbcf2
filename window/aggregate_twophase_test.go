package window

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
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

// twoPhaseSpecs are the window kinds with a two-phase form: tumbling,
// hopping with a pane shorter than the slide, and cumulating with an
// offset.
var twoPhaseSpecs = []Spec{
	Tumbling(time.Second),
	Hopping(time.Second, 300*time.Millisecond),
	{Kind: KindCumulate, Size: 1200 * time.Millisecond, Slide: 300 * time.Millisecond, Offset: 700 * time.Millisecond},
}

// twoPhaseAggregate is testAggregate, keyed by "key" or without keys.
func twoPhaseAggregate(spec Spec, lateness time.Duration, keyed bool) Aggregate {
	a := testAggregate(spec, lateness)
	if !keyed {
		a.Keys = nil
	}
	return a
}

// twoPhaseInputs cuts rows into batches of inSchema, with the watermark
// after each: the largest event time so far minus bound (as run does).
func twoPhaseInputs(mem memory.Allocator, rows []row, batch int, bound int64) ([]arrowflow.Batch, []arrowflow.EventTime) {
	var ins []arrowflow.Batch
	var wms []arrowflow.EventTime
	maxTs := int64(-1 << 62)
	for i := 0; i < len(rows); i += batch {
		chunk := rows[i:min(i+batch, len(rows))]
		ins = append(ins, arrowflow.NewBatch(buildBatch(mem, chunk)))
		for _, r := range chunk {
			maxTs = max(maxTs, r.ts)
		}
		wms = append(wms, arrowflow.EventTime((maxTs-bound)*int64(time.Millisecond)))
	}
	return ins, wms
}

func releaseAll(bs []arrowflow.Batch) {
	for _, b := range bs {
		b.Release()
	}
}

// statsAtClose records an operator's Stats when it is closed: after
// Finish for the instances that ran to the end, before a restore for the
// others.
type statsAtClose struct {
	arrowflow.Operator
	got *[]Stats
}

func (s statsAtClose) Close() error {
	*s.got = append(*s.got, s.Operator.(StatsReporter).Stats())
	return s.Operator.Close()
}

func recordStats(f arrowflow.OperatorFactory, got *[]Stats) arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return statsAtClose{f(), got} }
}

// readAggregate reads testAggregate's output, with or without its key
// column (a keyless window reads as key NULL, as the reference computes
// it from rows whose keys are all NULL).
func readAggregate(t testing.TB, batches []arrowflow.Batch, keyed bool) []result {
	if keyed {
		return readResults(t, batches)
	}
	var out []result
	for _, b := range batches {
		rec := b.Record
		st, en := rec.Column(0).(*array.Timestamp), rec.Column(1).(*array.Timestamp)
		n, cnt := rec.Column(2).(*array.Int64), rec.Column(3).(*array.Int64)
		sum, mx := rec.Column(4).(*array.Int64), rec.Column(5).(*array.Int64)
		for k := 0; k < b.NumRows(); k++ {
			i := b.Row(k)
			s, m := "NULL", "NULL"
			if sum.IsValid(i) {
				s, m = fmt.Sprint(sum.Value(i)), fmt.Sprint(mx.Value(i))
			}
			out = append(out, result{int64(st.Value(i)), int64(en.Value(i)), "NULL", fmt.Sprintf("n=%d cnt=%d sum=%s max=%s", n.Value(i), cnt.Value(i), s, m)})
		}
	}
	sortResults(out)
	return out
}

// twoPhaseReference is reference for a, keyed or not.
func twoPhaseReference(a Aggregate, rows []row, batch int, bound int64) ([]result, int64) {
	if len(a.Keys) == 0 {
		rows = slices.Clone(rows)
		for i := range rows {
			rows[i].key = nil
		}
	}
	return reference(a.Window, a.AllowedLateness, rows, batch, bound)
}

// onePhase runs a in one phase through the stage harness: keyed at par
// subtasks, or without keys at one.
func onePhase(t testing.TB, mem memory.Allocator, a Aggregate, ins []arrowflow.Batch, wms []arrowflow.EventTime, par int) []result {
	if len(a.Keys) == 0 {
		par = 1
	}
	stages := []*topNStage{{name: "agg", factory: a.Factory(), keyBy: a.Keys}}
	run := topNDrive(t, mem, stages, []int{par}, ins, wms, 0, []int{par}, false)
	defer run.release()
	return readAggregate(t, run.out, len(a.Keys) > 0)
}

// twoPhaseOutcome is what a two-phase run produced.
type twoPhaseOutcome struct {
	results []result
	late    int64 // rows on the "late" side outputs of both phases
	// localLate sums the local subtasks' LateRows; local and final are
	// the Stats of the instances that ran to the end.
	localLate     int64
	local, final  []Stats
	localWindows  int64 // partial windows the local subtasks emitted
	finalWindows  int64
	finalLateRows int64
}

// twoPhase runs a.Local() at localPar subtasks (rows dealt round robin,
// as from a source's splits) and a.Final() behind it, keyed by the keys
// at finalPar subtasks or without keys at one. With restoreAt > 0 both
// phases are snapshotted before input restoreAt and restored into
// newLocalPar and newFinalPar subtasks. It checks that no state is left
// after the end.
func twoPhase(t testing.TB, mem memory.Allocator, a Aggregate, ins []arrowflow.Batch, wms []arrowflow.EventTime, localPar, finalPar, restoreAt, newLocalPar, newFinalPar int) twoPhaseOutcome {
	t.Helper()
	final, err := a.Final()
	if err != nil {
		t.Fatal(err)
	}
	final.LateOutput = "late"
	if len(a.Keys) == 0 {
		finalPar, newFinalPar = 1, 1
	}
	var ls, fs []Stats
	stages := []*topNStage{
		{name: "local", factory: recordStats(a.Local().Factory(), &ls)},
		{name: "final", factory: recordStats(final.Factory(), &fs), keyBy: a.Keys},
	}
	pars, newPars := []int{localPar, finalPar}, []int{newLocalPar, newFinalPar}
	if restoreAt == 0 {
		newPars = pars
	}
	run := topNDrive(t, mem, stages, pars, ins, wms, restoreAt, newPars, false)
	defer run.release()
	o := twoPhaseOutcome{results: readAggregate(t, run.out, len(a.Keys) > 0), late: run.late}
	// The instances closed last are those that ran to the end.
	o.local, o.final = ls[len(ls)-newPars[0]:], fs[len(fs)-newPars[1]:]
	for _, s := range ls {
		o.localLate += s.LateRows
		o.localWindows += s.Windows
	}
	for _, s := range fs {
		o.finalWindows += s.Windows
		o.finalLateRows += s.LateRows
	}
	for i, s := range slices.Concat(o.local, o.final) {
		if s.Panes != 0 {
			t.Errorf("instance %d holds %d panes or windows after the end", i, s.Panes)
		}
	}
	return o
}

// Local at 1 and 3 subtasks plus Final give the one-phase aggregate's
// results and the reference's, keyed and without keys, over every window
// kind with a two-phase form, with rows out of order and late (counted
// and sent to the local phase's late output, as one phase does).
func TestAggregateTwoPhaseMatchesReference(t *testing.T) {
	for si, spec := range twoPhaseSpecs {
		for _, keyed := range []bool{true, false} {
			for _, lateness := range []time.Duration{0, 150 * time.Millisecond} {
				for _, localPar := range []int{1, 3} {
					for _, batch := range []int{7, 500} {
						name := fmt.Sprintf("%s/keyed=%v/lateness=%s/local=%d/batch=%d", spec, keyed, lateness, localPar, batch)
						t.Run(name, func(t *testing.T) {
							mem := testutil.CheckedAllocator(t)
							rng := rand.New(rand.NewPCG(uint64(300+si), uint64(localPar*1000+batch)))
							rows := stream(rng, 3000, 30, 200, 0.05)
							a := twoPhaseAggregate(spec, lateness, keyed)
							ins, wms := twoPhaseInputs(mem, rows, batch, 200)
							defer releaseAll(ins)

							got := twoPhase(t, mem, a, ins, wms, localPar, 2, 0, 0, 0)
							want, late := twoPhaseReference(a, rows, batch, 200)
							if !slices.Equal(got.results, want) {
								t.Fatalf("%d results, reference %d; first difference: %s", len(got.results), len(want), firstDiff(got.results, want))
							}
							if one := onePhase(t, mem, a, ins, wms, 2); !slices.Equal(got.results, one) {
								t.Fatalf("%d results, one phase %d; first difference: %s", len(got.results), len(one), firstDiff(got.results, one))
							}
							if got.localLate != late || got.late != late {
								t.Errorf("%d late rows counted and %d on the late output, reference %d", got.localLate, got.late, late)
							}
							if got.finalLateRows != 0 {
								t.Errorf("the final phase counted %d late partials", got.finalLateRows)
							}
							if batch < 500 && late == 0 {
								t.Errorf("the stream produced no late rows; the test would not see them")
							}
							if localPar > 1 && !keyed && got.localWindows <= got.finalWindows {
								t.Errorf("%d partial windows for %d windows: the final phase merged nothing", got.localWindows, got.finalWindows)
							}
						})
					}
				}
			}
		}
	}
}

// Snapshotting both phases in the middle and restoring them into other
// parallelisms gives the uninterrupted run's output (and the
// reference's). With 3 new subtasks the harness opens whole snapshot
// files, so each phase must keep only its own key groups' rows.
func TestAggregateTwoPhaseSnapshotRestoreRescale(t *testing.T) {
	specs := []Spec{Tumbling(time.Second), Hopping(time.Second, 250*time.Millisecond), Cumulate(time.Second, 250*time.Millisecond)}
	for si, spec := range specs {
		for _, keyed := range []bool{true, false} {
			for _, p := range [][2]int{{1, 3}, {3, 2}, {2, 1}} {
				t.Run(fmt.Sprintf("%s/keyed=%v/local=%d->%d", spec, keyed, p[0], p[1]), func(t *testing.T) {
					mem := testutil.CheckedAllocator(t)
					rng := rand.New(rand.NewPCG(uint64(400+si), uint64(p[0]*10+p[1])))
					rows := stream(rng, 4000, 50, 300, 0.03)
					a := twoPhaseAggregate(spec, 0, keyed)
					ins, wms := twoPhaseInputs(mem, rows, 100, 300)
					defer releaseAll(ins)
					want, late := twoPhaseReference(a, rows, 100, 300)
					if base := twoPhase(t, mem, a, ins, wms, p[0], 2, 0, 0, 0); !slices.Equal(base.results, want) {
						t.Fatalf("uninterrupted: %d results, reference %d; %s", len(base.results), len(want), firstDiff(base.results, want))
					}
					for _, k := range []int{1, 17, 39} {
						got := twoPhase(t, mem, a, ins, wms, p[0], 2, k, p[1], 3)
						if !slices.Equal(got.results, want) {
							t.Fatalf("restored after %d batches: %d results, reference (and uninterrupted) %d; %s", k, len(got.results), len(want), firstDiff(got.results, want))
						}
						if got.late != late {
							t.Errorf("restored after %d batches: %d rows on the late output, reference %d", k, got.late, late)
						}
					}
				})
			}
		}
	}
}

// A local subtask's watermark is its own input's: when one is ahead of
// another at a snapshot and a rescale gives a new subtask both one's
// panes and the other's (smaller) watermark, panes whose earlier windows
// the first had already emitted must not count in those windows again.
// Three sources splits with watermarks lagging by 0, 400 and 900 ms feed
// three local subtasks, restored into two (the first taking splits 0 and
// 1, whose old subtasks it restores from, the second split 2); the
// final phase follows the smallest local watermark. No row is late at
// any watermark, so every run must give the reference's windows.
func TestAggregateTwoPhaseRestoreLocalWatermarksApart(t *testing.T) {
	for _, spec := range []Spec{Tumbling(time.Second), Hopping(time.Second, 250*time.Millisecond), Cumulate(time.Second, 250*time.Millisecond)} {
		for _, keyed := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/keyed=%v", spec, keyed), func(t *testing.T) {
				mem := testutil.CheckedAllocator(t)
				rows := stream(rand.New(rand.NewPCG(9, uint64(spec.Kind))), 4000, 20, 200, 0)
				a := twoPhaseAggregate(spec, 0, keyed)
				want, late := twoPhaseReference(a, rows, 99, 200)
				if late != 0 {
					t.Fatalf("the reference has %d late rows; the stream should have none", late)
				}
				base, _ := splitsRun(t, mem, a, rows, 0)
				if !slices.Equal(base, want) {
					t.Fatalf("uninterrupted: %d results, reference %d; %s", len(base), len(want), firstDiff(base, want))
				}
				sawRestored := false
				for _, at := range []int{9, 20, 31} {
					got, restored := splitsRun(t, mem, a, rows, at)
					sawRestored = sawRestored || restored
					if !slices.Equal(got, want) {
						t.Fatalf("restored at round %d: %d results, reference %d; %s", at, len(got), len(want), firstDiff(got, want))
					}
				}
				if spec.Kind != KindTumbling && !sawRestored {
					t.Errorf("no restored pane had windows its writer had fired; the test would not see the hazard")
				}
			})
		}
	}
}

// splitsRun drives the scenario of TestAggregateTwoPhaseRestoreLocalWatermarksApart,
// with the restore before round restoreAt (none if 0). It reports
// whether a restored local subtask took panes as window states.
func splitsRun(t *testing.T, mem memory.Allocator, a Aggregate, rows []row, restoreAt int) ([]result, bool) {
	const bound, round = 200, 99
	lag := []int64{0, 400, 900}
	final, err := a.Final()
	if err != nil {
		t.Fatal(err)
	}
	local := &topNStage{name: "local", factory: a.Local().Factory()}
	fin := &topNStage{name: "final", factory: final.Factory(), keyBy: a.Keys}
	finPar := 2
	if len(a.Keys) == 0 {
		finPar = 1
	}
	local.open(t, mem, 3)
	fin.open(t, mem, finPar)
	owner := []int{0, 1, 2} // split -> local subtask
	maxTs := []int64{-1 << 62, -1 << 62, -1 << 62}
	splitWM := func(s int) arrowflow.EventTime {
		return arrowflow.EventTime((maxTs[s] - bound - lag[s]) * int64(time.Millisecond))
	}
	var out []arrowflow.Batch
	defer func() { releaseAll(out) }()
	restored := false
	// step runs one round: each local subtask gets its splits' rows and
	// their smallest watermark, the final phase their partials and the
	// smallest local watermark (or, at the end, Finish everywhere).
	step := func(chunk []row, end bool) {
		parts := &collector{}
		finalWM := arrowflow.MaxEventTime
		for j, s := range local.subs {
			var mine []row
			wm := arrowflow.MaxEventTime
			for sp, o := range owner {
				if o != j {
					continue
				}
				for i, r := range chunk {
					if i%3 == sp {
						mine = append(mine, r)
						maxTs[sp] = max(maxTs[sp], r.ts)
					}
				}
				wm = min(wm, splitWM(sp))
			}
			if len(mine) > 0 {
				if err := s.op.ProcessBatch(0, arrowflow.NewBatch(buildBatch(mem, mine)), parts); err != nil {
					t.Fatal(err)
				}
			}
			if end {
				wm = arrowflow.MaxEventTime
			}
			if err := s.op.ProcessWatermark(wm, parts); err != nil {
				t.Fatal(err)
			}
			if end {
				if err := s.op.Finish(parts); err != nil {
					t.Fatal(err)
				}
			}
			finalWM = min(finalWM, wm)
		}
		res := &collector{}
		for _, b := range parts.batches {
			fin.push(t, b, res)
			b.Release()
		}
		fin.watermark(t, finalWM, res)
		if end {
			for _, s := range fin.subs {
				if err := s.op.Finish(res); err != nil {
					t.Fatal(err)
				}
			}
		}
		out = append(out, res.batches...)
		if len(parts.late)+len(res.late) > 0 {
			t.Errorf("%d and %d batches of late rows", len(parts.late), len(res.late))
		}
	}
	for r, i := 0, 0; i < len(rows); r, i = r+1, i+round {
		if restoreAt > 0 && r == restoreAt {
			local.snapshotRestore(t, mem, 2)
			fin.snapshotRestore(t, mem, finPar)
			owner = []int{0, 0, 1}
			for _, s := range local.subs {
				restored = restored || len(s.op.(*aggOp).restored) > 0
			}
		}
		step(rows[i:min(i+round, len(rows))], false)
	}
	step(nil, true)
	for _, st := range []*topNStage{local, fin} {
		for _, s := range st.subs {
			if n := s.op.(StatsReporter).Stats().Panes; n != 0 {
				t.Errorf("%s subtask %d holds %d panes or windows after the end", st.name, s.info.Subtask, n)
			}
			if err := s.op.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return readAggregate(t, out, len(a.Keys) > 0), restored
}

// twoPhaseWideSchema is inSchema with a unique row id (first and last
// order by it, so that no tie makes their choice depend on how rows were
// spread) and a string.
var twoPhaseWideSchema = arrow.NewSchema(append(slices.Clone(inSchema.Fields()),
	arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	arrow.Field{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
), nil)

func twoPhaseWideBatch(mem memory.Allocator, rows []row, firstID int) arrowflow.Batch {
	base := buildBatch(mem, rows)
	defer base.Release()
	ib, sb := array.NewInt64Builder(mem), array.NewStringBuilder(mem)
	defer ib.Release()
	defer sb.Release()
	for i, r := range rows {
		ib.Append(int64(firstID + i))
		if r.v == nil {
			sb.AppendNull()
		} else {
			sb.Append(fmt.Sprintf("s%d", *r.v%37))
		}
	}
	id, s := ib.NewArray(), sb.NewArray()
	defer id.Release()
	defer s.Release()
	return arrowflow.NewBatch(array.NewRecordBatch(twoPhaseWideSchema, append(slices.Clone(base.Columns()), id, s), base.NumRows()))
}

// renderRows renders output rows as sorted text, all columns.
func renderRows(batches []arrowflow.Batch) []string {
	var out []string
	for _, b := range batches {
		for k := 0; k < b.NumRows(); k++ {
			out = append(out, fmt.Sprint(b.RowValues(k)))
		}
	}
	slices.Sort(out)
	return out
}

// Every aggregate function kernels offers runs in two phases with the
// one-phase results: count(*), count, sum, min, max, avg, count(distinct)
// (partials are lists of the distinct values), first and last.
func TestAggregateTwoPhaseAllFunctions(t *testing.T) {
	aggs := []Agg{
		{Func: kernels.AggCountStar, Name: "n"},
		{Func: kernels.AggCount, Args: []string{"v"}, Name: "cnt"},
		{Func: kernels.AggSum, Args: []string{"v"}, Name: "sum"},
		{Func: kernels.AggMin, Args: []string{"s"}, Name: "min_s"},
		{Func: kernels.AggMax, Args: []string{"v"}, Name: "max"},
		{Func: kernels.AggAvg, Args: []string{"v"}, Name: "avg"},
		{Func: kernels.AggCountDistinct, Args: []string{"s"}, Name: "distinct_s"},
		{Func: kernels.AggFirst, Args: []string{"v", "id"}, Name: "first_v"},
		{Func: kernels.AggLast, Args: []string{"s", "id"}, Name: "last_s"},
	}
	for _, spec := range twoPhaseSpecs {
		for _, keyed := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/keyed=%v", spec, keyed), func(t *testing.T) {
				mem := testutil.CheckedAllocator(t)
				rows := stream(rand.New(rand.NewPCG(11, uint64(spec.Kind))), 3000, 20, 200, 0.05)
				a := Aggregate{Input: twoPhaseWideSchema, Time: "ts", Window: spec, Aggs: aggs, LateOutput: "late"}
				if keyed {
					a.Keys = []string{"key"}
				}
				var ins []arrowflow.Batch
				var wms []arrowflow.EventTime
				maxTs := int64(-1 << 62)
				for i := 0; i < len(rows); i += 50 {
					chunk := rows[i:min(i+50, len(rows))]
					ins = append(ins, twoPhaseWideBatch(mem, chunk, i))
					for _, r := range chunk {
						maxTs = max(maxTs, r.ts)
					}
					wms = append(wms, arrowflow.EventTime((maxTs-200)*int64(time.Millisecond)))
				}
				defer releaseAll(ins)

				one := topNDrive(t, mem, []*topNStage{{name: "agg", factory: a.Factory(), keyBy: a.Keys}}, []int{1}, ins, wms, 0, []int{1}, false)
				defer one.release()
				final, err := a.Final()
				if err != nil {
					t.Fatal(err)
				}
				stages := []*topNStage{{name: "local", factory: a.Local().Factory()}, {name: "final", factory: final.Factory(), keyBy: a.Keys}}
				finalPar := 2
				if !keyed {
					finalPar = 1
				}
				two := topNDrive(t, mem, stages, []int{3, finalPar}, ins, wms, 0, []int{3, finalPar}, false)
				defer two.release()
				got, want := renderRows(two.out), renderRows(one.out)
				if len(want) == 0 || !slices.Equal(got, want) {
					t.Fatalf("%d rows, one phase %d; first difference: %s", len(got), len(want), topNFirstDiff(got, want))
				}
				if two.late != one.late || one.late == 0 {
					t.Errorf("%d late rows in two phases, %d in one", two.late, one.late)
				}
			})
		}
	}
}

// A partial arriving for a window the final phase has fired (a local
// subtask that was idle and resumed behind the others) is not merged: it
// is counted late and sent to the final phase's late output, and the
// window is not emitted again.
func TestAggregateTwoPhaseLatePartials(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	a := testAggregate(Tumbling(time.Second), 0)
	final, err := a.Final()
	if err != nil {
		t.Fatal(err)
	}
	final.LateOutput = "late"
	local := &topNStage{name: "local", factory: a.Local().Factory()}
	fin := &topNStage{name: "final", factory: final.Factory(), keyBy: a.Keys}
	local.open(t, mem, 1)
	fin.open(t, mem, 1)
	ms := func(v int64) arrowflow.EventTime { return arrowflow.EventTime(v * int64(time.Millisecond)) }
	k1, k2, v := int64(1), int64(2), int64(5)
	parts := &collector{}
	defer parts.release()
	in := arrowflow.NewBatch(buildBatch(mem, []row{{key: &k1, ts: 100, v: &v}, {key: &k2, ts: 200, v: &v}, {key: &k1, ts: 1500, v: &v}}))
	local.push(t, in, parts)
	in.Release()
	local.watermark(t, ms(1000), parts) // fires [0, 1 s)
	if len(parts.batches) != 1 || parts.batches[0].NumRows() != 2 {
		t.Fatalf("local phase emitted %d batches, want one of 2 partial rows", len(parts.batches))
	}
	res := &collector{}
	defer res.release()
	fin.push(t, parts.batches[0], res)
	fin.watermark(t, ms(1000), res)
	fired := len(res.batches)
	// The same partials again, after their window fired.
	fin.push(t, parts.batches[0], res)
	if len(res.batches) != fired || res.lateRows() != 2 {
		t.Fatalf("%d batches and %d late rows after a late partial, want %d and 2", len(res.batches), res.lateRows(), fired)
	}
	st := fin.subs[0].op.(StatsReporter).Stats()
	if st.LateRows != 2 || st.Panes != 0 {
		t.Errorf("final stats count %d late rows and hold %d windows, want 2 and 0", st.LateRows, st.Panes)
	}
	if err := fin.subs[0].op.Finish(res); err != nil {
		t.Fatal(err)
	}
	for _, s := range slices.Concat(local.subs, fin.subs) {
		s.op.Close()
	}
	got := readAggregate(t, res.batches, true)
	want := []result{{0, 1000, "1", "n=1 cnt=1 sum=5 max=5"}, {0, 1000, "2", "n=1 cnt=1 sum=5 max=5"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// Aggregates without a two-phase form fail in Final and in the local
// phase's Validate with ErrTwoPhaseUnsupported, so that a planner can
// fall back to one phase; a bad configuration fails with another error.
func TestAggregateTwoPhaseErrors(t *testing.T) {
	clash := arrow.NewSchema([]arrow.Field{
		{Name: "window_start", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	unsupported := map[string]func(a *Aggregate){
		"SESSION":         func(a *Aggregate) { a.Window = Session(time.Second) },
		"processing time": func(a *Aggregate) { a.ProcessingTime, a.Time = true, "" },
		"ambiguous":       func(a *Aggregate) { a.Input, a.Keys = clash, []string{"window_start"} },
		"no mergeable partial": func(a *Aggregate) {
			a.Aggs = append(a.Aggs, Agg{Func: kernels.AggFunc(99), Args: []string{"v"}, Name: "x"})
		},
	}
	for want, mutate := range unsupported {
		a := testAggregate(Tumbling(time.Second), 0)
		mutate(&a)
		_, err := a.Final()
		if !errors.Is(err, ErrTwoPhaseUnsupported) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Final: got %v", want, err)
		}
		if err := a.Local().Validate(); !errors.Is(err, ErrTwoPhaseUnsupported) {
			t.Errorf("%s: Local().Validate: got %v", want, err)
		}
	}
	bad := testAggregate(Tumbling(time.Second), 0)
	bad.Keys = []string{"missing"}
	if _, err := bad.Final(); err == nil || errors.Is(err, ErrTwoPhaseUnsupported) {
		t.Errorf("bad configuration: got %v, want an error other than ErrTwoPhaseUnsupported", err)
	}

	// Without keys the final phase needs every partial: one subtask.
	keyless := twoPhaseAggregate(Tumbling(time.Second), 0, false)
	final, err := keyless.Final()
	if err != nil {
		t.Fatal(err)
	}
	info := &arrowflow.TaskInfo{Name: "final", Subtask: 0, Parallelism: 2, MaxParallelism: state.DefaultMaxParallelism,
		KeyGroups: state.RangeOf(0, state.DefaultMaxParallelism, 2), Allocator: memory.DefaultAllocator}
	if err := final.Factory()().Open(info); err == nil || !strings.Contains(err.Error(), "parallelism 1") {
		t.Errorf("keyless final phase at parallelism 2: got %v", err)
	}
}

// The local phase's output is the final phase's input, and the final
// phase's output the one-phase aggregate's.
func TestAggregateTwoPhaseSchemas(t *testing.T) {
	for _, keyed := range []bool{true, false} {
		a := twoPhaseAggregate(Hopping(time.Second, 250*time.Millisecond), 0, keyed)
		final, err := a.Final()
		if err != nil {
			t.Fatal(err)
		}
		lo, err := a.Local().OutputSchema()
		if err != nil {
			t.Fatal(err)
		}
		fi, err := final.InputSchema()
		if err != nil {
			t.Fatal(err)
		}
		fo, err := final.OutputSchema()
		if err != nil {
			t.Fatal(err)
		}
		one, err := a.OutputSchema()
		if err != nil {
			t.Fatal(err)
		}
		if !lo.Equal(fi) || !fo.Equal(one) {
			t.Errorf("keyed=%v: local output %s, final input %s; final output %s, one phase %s", keyed, lo, fi, fo, one)
		}
		if lo.Field(0).Name != "window_start" || lo.Field(1).Name != "window_end" || (keyed && lo.Field(2).Name != "key") {
			t.Errorf("keyed=%v: local output %s", keyed, lo)
		}
	}
}

// A job through arrowflow: bids from two source splits, the local phase
// beside the source, the final phase behind final.Edge, a collecting
// sink: a count and the highest price per 10 s tumbling window over all
// bids (keyless), and per auction over hopping windows with a count of
// distinct channels.
func TestAggregateTwoPhaseJob(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		for _, par := range []int{1, 2} {
			t.Run(fmt.Sprintf("keyed=%v/par=%d", keyed, par), func(t *testing.T) {
				mem := testutil.CheckedAllocator(t)
				rng := rand.New(rand.NewPCG(13, uint64(par)))
				splits, bids := topNBids(mem, rng, 2, 3000, 250, 500)
				defer func() {
					for _, s := range splits {
						for _, b := range s {
							b.Release()
						}
					}
				}()
				agg := Aggregate{Input: topNBidSchema, Time: "date_time", Window: Tumbling(10 * time.Second),
					Aggs: []Agg{{Func: kernels.AggCountStar, Name: "n"}, {Func: kernels.AggMax, Args: []string{"price"}, Name: "max_price"}}}
				if keyed {
					agg.Window, agg.Keys = Hopping(10*time.Second, 5*time.Second), []string{"auction"}
					agg.Aggs = append(agg.Aggs, Agg{Func: kernels.AggCountDistinct, Args: []string{"channel"}, Name: "channels"})
				}
				final, err := agg.Final()
				if err != nil {
					t.Fatal(err)
				}
				finalPar := par
				if !keyed {
					finalPar = 1
				}
				g := arrowflow.NewGraph("two-phase")
				src := g.Source("bids", &topNSource{schema: topNBidSchema, splits: splits, tsCol: 4, bound: 500}, par)
				local := g.Operator("agg-local", agg.Local().Factory(), par, arrowflow.Forward(src))
				out := g.Operator("agg", final.Factory(), finalPar, final.Edge(local))
				sink := collect.New()
				g.Sink("out", sink, finalPar, arrowflow.Forward(out))
				topNRunJob(t, mem, g)

				var got []string
				for _, r := range sink.Rows() {
					line := fmt.Sprintf("[%d,%d)", r[0].(time.Time).UnixMilli(), r[1].(time.Time).UnixMilli())
					for _, v := range r[2:] {
						line += fmt.Sprintf(" %v", v)
					}
					got = append(got, line)
				}
				slices.Sort(got)
				// The reference: no bid is late for its split's watermark.
				type acc struct {
					n, max   int64
					channels map[string]bool
				}
				wins := map[string]*acc{}
				for i, b := range bids {
					for _, w := range refWindows(agg.Window, b.ts) {
						k := fmt.Sprintf("[%d,%d)", w[0], w[1])
						if keyed {
							k += fmt.Sprintf(" %d", b.auction)
						}
						c := wins[k]
						if c == nil {
							c = &acc{max: b.price, channels: map[string]bool{}}
							wins[k] = c
						}
						c.n++
						c.max = max(c.max, b.price)
						c.channels[topNBidChannel(splits, i)] = true
					}
				}
				var want []string
				for k, c := range wins {
					line := fmt.Sprintf("%s %d %d", k, c.n, c.max)
					if keyed {
						line += fmt.Sprintf(" %d", len(c.channels))
					}
					want = append(want, line)
				}
				slices.Sort(want)
				if len(want) == 0 || !slices.Equal(got, want) {
					t.Fatalf("%d rows, reference %d; first difference: %s", len(got), len(want), topNFirstDiff(got, want))
				}
			})
		}
	}
}

// topNBidChannel is the channel of the i-th bid topNBids drew (it keeps
// them only in the batches), split after split in order.
func topNBidChannel(splits [][]arrow.RecordBatch, i int) string {
	for _, s := range splits {
		for _, b := range s {
			if n := int(b.NumRows()); i >= n {
				i -= n
				continue
			}
			return b.Column(3).(*array.String).Value(i)
		}
	}
	panic("bid index out of range")
}
