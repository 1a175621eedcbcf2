package window

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/state"
)

// A two-phase top-N's local phase runs behind arrowflow.Forward, so each
// local subtask has its own watermark. After a rescale a local subtask
// restores the candidates of several old subtasks at the smallest of
// their watermarks; candidates of a pane whose writer was ahead must not
// reach again the hopping windows that writer had already emitted, or the
// final phase ranks them twice (the same row twice in a window's top N).
// Tumbling windows have one window per pane, so nothing repeats there.
func TestTopNTwoPhaseRestoreLocalWatermarksApart(t *testing.T) {
	forms := []topNForm{
		topNForms[0], // tumble
		topNForms[1], // hop 1s/250ms
		{"hop-offset", Spec{Kind: KindHopping, Size: time.Second, Slide: 300 * time.Millisecond, Offset: 100 * time.Millisecond}, false},
	}
	// Each scenario restores before the given rounds into the given local
	// parallelism, with the splits then read by the given local subtasks.
	// "3->2->2" restores again right after a rescale, at the same
	// parallelism, while the panes restored from a writer ahead are held:
	// their snapshot must keep what their writer had emitted. At the same
	// parallelism each subtask restores its own snapshot (keyless rows
	// are in their writer's key group), so states cannot be swapped;
	// "3->3/splits-moved" moves the splits instead.
	type restore struct {
		round, par int
		owner      []int // split -> local subtask
	}
	scenarios := []struct {
		name     string
		restores []restore
	}{
		{"3->2", []restore{{0, 2, []int{0, 0, 1}}}},
		{"3->2->2", []restore{{0, 2, []int{0, 0, 1}}, {0, 2, []int{0, 0, 1}}}},
		{"3->2->3", []restore{{0, 2, []int{1, 0, 1}}, {1, 3, []int{2, 0, 1}}}},
		{"3->3/splits-moved", []restore{{0, 3, []int{2, 0, 1}}}},
	}
	for fi, form := range forms {
		for oi, ties := range []bool{false, true} {
			cfg := topNConfig(form, topNOrders[3-3*oi], 3, ties, oi == 1, 0, 16)
			byValue := !cfg.WithTies
			final, err := cfg.Final()
			if err != nil {
				t.Fatal(err)
			}
			rows := topNStream(rand.New(rand.NewPCG(uint64(fi), uint64(oi))), 3000, 4, 200, 0, false)
			want := topNReference(cfg, rows, topNSplitsRound, 200, byValue)
			if want.late != 0 || len(want.rows) == 0 {
				t.Fatalf("the reference has %d late rows and %d results; the stream should have none late and some results", want.late, len(want.rows))
			}
			name := fmt.Sprintf("%s/ties=%v", form.name, ties)
			read := func(t *testing.T, out []arrowflow.Batch) []string {
				defer releaseAll(out)
				return topNReadOutput(t, final, out, &want, byValue)
			}
			t.Run(name+"/uninterrupted", func(t *testing.T) {
				out, _ := topNSplitsRun(t, testutil.CheckedAllocator(t), cfg, rows, nil)
				if got := read(t, out); !slices.Equal(got, want.rows) {
					t.Fatalf("%d rows, reference %d; %s", len(got), len(want.rows), topNFirstDiff(got, want.rows))
				}
			})
			for _, sc := range scenarios {
				t.Run(name+"/"+sc.name, func(t *testing.T) {
					mem := testutil.CheckedAllocator(t)
					sawAhead := false
					for _, at := range []int{9, 20} {
						var rs []topNSplitsRestore
						for _, r := range sc.restores {
							rs = append(rs, topNSplitsRestore{round: at + r.round, par: r.par, owner: r.owner})
						}
						out, ahead := topNSplitsRun(t, mem, cfg, rows, rs)
						sawAhead = sawAhead || ahead
						if got := read(t, out); !slices.Equal(got, want.rows) {
							t.Fatalf("restored at round %d: %d rows, reference %d; %s", at, len(got), len(want.rows), topNFirstDiff(got, want.rows))
						}
					}
					if form.spec.Kind == KindHopping && sc.restores[0].par < 3 && !sawAhead {
						t.Errorf("no restored pane had windows its writer had emitted; the test would not see the hazard")
					}
				})
			}
		}
	}
}

// topNSplitsRound is the number of rows per round of topNSplitsRun.
const topNSplitsRound = 99

// topNSplitsRestore is a snapshot and restore of topNSplitsRun before a
// round: the local phase into par subtasks, which then read the splits
// as owner says.
type topNSplitsRestore struct {
	round, par int
	owner      []int
}

// topNSplitsRun drives a two-phase top-N over three splits (row i is in
// split i%3) read by three local subtasks behind Forward edges, split s
// with a watermark lag[s] behind the others', the final phase keyed at
// parallelism 2, and restores as rs say (the final phase at its
// parallelism). It returns the final phase's output and whether a
// restored local subtask held candidates of a writer ahead that its
// writer had emitted in some windows.
func topNSplitsRun(t *testing.T, mem memory.Allocator, cfg TopN, rows []topNRow, rs []topNSplitsRestore) ([]arrowflow.Batch, bool) {
	const bound = 200
	lag := []int64{0, 400, 900}
	final, err := cfg.Final()
	if err != nil {
		t.Fatal(err)
	}
	local := &topNStage{name: "local", factory: cfg.Local().Factory()}
	fin := &topNStage{name: "final", factory: final.Factory(), keyBy: final.KeyBy}
	const finPar = 2
	local.open(t, mem, 3)
	fin.open(t, mem, finPar)
	owner := []int{0, 1, 2}
	maxTs := []int64{-1 << 62, -1 << 62, -1 << 62}
	splitWM := func(s int) arrowflow.EventTime {
		return arrowflow.EventTime((maxTs[s] - bound - lag[s]) * int64(time.Millisecond))
	}
	var out []arrowflow.Batch
	ahead := false
	// step runs one round: each local subtask gets its splits' rows and
	// their smallest watermark, the final phase the candidates and the
	// smallest local watermark (or, at the end, Finish everywhere).
	step := func(chunk []topNRow, end bool) {
		parts := &collector{}
		finalWM := arrowflow.MaxEventTime
		for j, s := range local.subs {
			var mine []topNRow
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
				if err := s.op.ProcessBatch(0, topNBuild(mem, topNRawSchema, mine, nil), parts); err != nil {
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
		releaseAll(parts.late)
		releaseAll(res.late)
	}
	for r, i := 0, 0; i < len(rows); r, i = r+1, i+topNSplitsRound {
		for _, x := range rs {
			if x.round != r {
				continue
			}
			local.snapshotRestore(t, mem, x.par)
			fin.snapshotRestore(t, mem, finPar)
			owner = x.owner
			for _, s := range local.subs {
				ahead = ahead || topNHoldsAhead(s.op.(*topNOp))
			}
		}
		step(rows[i:min(i+topNSplitsRound, len(rows))], false)
	}
	step(nil, true)
	for _, st := range []*topNStage{local, fin} {
		for _, s := range st.subs {
			if ts := s.op.(TopNStatsReporter).TopNStats(); ts.Panes != 0 || ts.Rows != 0 {
				t.Errorf("%s subtask %d holds %d panes and %d rows after the end", st.name, s.info.Subtask, ts.Panes, ts.Rows)
			}
			if err := s.op.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out, ahead
}

// topNHoldsAhead reports whether the subtask holds candidates restored
// from a writer whose watermark had fired some of their windows.
func topNHoldsAhead(o *topNOp) bool {
	return len(o.ahead) > 0
}

// A snapshot written before the writer's watermark was recorded (the
// state table without its _watermark column) restores as before: every
// row into its pane. With the local subtasks' watermarks equal, as the
// stage harness sends them, that gives the reference's output.
func TestTopNRestoreSnapshotWithoutWriterWatermark(t *testing.T) {
	keyed := topNConfig(topNForms[1], topNOrders[0], 2, true, true, 0, 4)
	keyed.KeyBy = []string{"g"}
	cases := map[string]topNCase{
		"hop/keyed":     {cfg: keyed},
		"hop/two-phase": {cfg: topNConfig(topNForms[1], topNOrders[1], 3, false, true, 0, 0), twoPhase: true},
		"windowed/two-phase": {cfg: topNConfig(topNForms[3], topNOrders[2], 1, true, false, 100*time.Millisecond, 0),
			twoPhase: true},
	}
	for name, c := range cases {
		for _, p := range [][2]int{{2, 3}, {3, 2}} {
			t.Run(fmt.Sprintf("%s/%d->%d", name, p[0], p[1]), func(t *testing.T) {
				mem := testutil.CheckedAllocator(t)
				windowed := c.cfg.Time == ""
				rows := topNStream(rand.New(rand.NewPCG(uint64(p[0]), 3)), 2000, 6, 200, 0.05, windowed)
				schema := topNRawSchema
				if windowed {
					schema = topNWinSchema
				}
				ins, wms := topNInputs(mem, schema, rows, 60, 200, nil)
				defer releaseAll(ins)
				byValue := !c.cfg.WithTies
				want := topNReference(c.cfg, rows, 60, 200, byValue)
				stages := topNStages(t, c.cfg, c.twoPhase)
				for _, st := range stages {
					st.factory = topNOldLayoutFactory(t, st.factory)
				}
				run := topNDrive(t, mem, stages, []int{p[0], p[0]}[:len(stages)], ins, wms, 13, []int{p[1], p[1]}[:len(stages)], false)
				defer run.release()
				got := topNReadOutput(t, stagesCfg(t, c), run.out, &want, byValue)
				if !slices.Equal(got, want.rows) {
					t.Fatalf("%d rows, reference %d; first difference: %s", len(got), len(want.rows), topNFirstDiff(got, want.rows))
				}
				if run.late != want.late {
					t.Errorf("%d rows on the late output, reference %d late", run.late, want.late)
				}
			})
		}
	}
}

// topNOldLayoutFactory makes f's operators write their state table
// without the writer's watermark column, as before it was recorded.
func topNOldLayoutFactory(t testing.TB, f arrowflow.OperatorFactory) arrowflow.OperatorFactory {
	return func() arrowflow.Operator { return topNOldLayout{f(), t} }
}

type topNOldLayout struct {
	arrowflow.Operator
	t testing.TB
}

func (o topNOldLayout) TopNStats() TopNStats {
	return o.Operator.(TopNStatsReporter).TopNStats()
}

func (o topNOldLayout) SnapshotState(epoch uint64, w state.SnapshotWriter) error {
	return o.Operator.SnapshotState(epoch, topNOldWriter{w, o.t})
}

type topNOldWriter struct {
	state.SnapshotWriter
	t testing.TB
}

func (w topNOldWriter) Write(table string, rec arrow.RecordBatch) error {
	if table != topNStateTable {
		return w.SnapshotWriter.Write(table, rec)
	}
	if f := rec.Schema().Field(3); f.Name != watermarkColumn {
		w.t.Fatalf("state column 3 is %s, want the writer's watermark %q", f, watermarkColumn)
	}
	old := array.NewRecordBatch(arrow.NewSchema(slices.Delete(rec.Schema().Fields(), 3, 4), nil),
		slices.Delete(slices.Clone(rec.Columns()), 3, 4), rec.NumRows())
	defer old.Release()
	return w.SnapshotWriter.Write(table, old)
}
