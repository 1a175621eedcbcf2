package window

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
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

// A snapshot of the top-N's layout before the row stores (candidates with
// _pane_start, _pane_end, _key_group and, later, _watermark columns first)
// fails to restore, naming the operator and the reason, rather than losing
// the candidates.
func TestTopNRefusesOldSnapshotLayout(t *testing.T) {
	cfg := topNConfig(topNForms[1], topNOrders[0], 2, true, true, 0, 4)
	cfg.KeyBy = []string{"g"}
	lead := []arrow.Field{
		{Name: "_pane_start", Type: arrow.PrimitiveTypes.Int64},
		{Name: "_pane_end", Type: arrow.PrimitiveTypes.Int64},
		{Name: state.KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16},
		{Name: watermarkColumn, Type: arrow.PrimitiveTypes.Int64},
	}
	for name, lead := range map[string][]arrow.Field{"with writer watermark": lead, "without": slices.Delete(slices.Clone(lead), 3, 4)} {
		t.Run(name, func(t *testing.T) {
			mem := testutil.CheckedAllocator(t)
			r := migOldSnapshot(t, mem, topNStateTable, lead, cfg.Input)
			defer r.Close()
			op := cfg.Factory()()
			if err := op.Open(&arrowflow.TaskInfo{Name: "q19-topn", Parallelism: 1, MaxParallelism: state.DefaultMaxParallelism,
				KeyGroups: state.RangeOf(0, state.DefaultMaxParallelism, 1), Allocator: mem}); err != nil {
				t.Fatal(err)
			}
			defer op.Close()
			err := op.RestoreState(r)
			if err == nil || !strings.Contains(err.Error(), "window top-n q19-topn") || !strings.Contains(err.Error(), "snapshot layout of an older weir version") {
				t.Fatalf("restoring an old-layout snapshot: %v", err)
			}
		})
	}
}
