package window

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/testutil"
)

// cumulateSpecs are the cumulating windows the tests run: several steps
// per period, a step not dividing the stream's jitter evenly, an offset,
// and one step per period (tumbling windows by another name).
var cumulateSpecs = []Spec{
	Cumulate(time.Second, 200*time.Millisecond),
	{Kind: KindCumulate, Size: 1200 * time.Millisecond, Slide: 300 * time.Millisecond, Offset: 700 * time.Millisecond},
	Cumulate(600*time.Millisecond, 600*time.Millisecond),
}

// TestCumulateMatchesReference runs cumulating aggregates over random
// keyed streams, out of order within the watermark bound plus some late
// rows, with a watermark after every batch, and compares them with the
// row-at-a-time reference (refWindows enumerates the windows from the
// definition). run also checks that the late side output got every row
// counted late and that no pane is left after the final watermark.
func TestCumulateMatchesReference(t *testing.T) {
	for si, spec := range cumulateSpecs {
		for _, lateness := range []time.Duration{0, 150 * time.Millisecond} {
			for _, par := range []int{1, 3} {
				for _, batch := range []int{7, 500} {
					name := fmt.Sprintf("%s/offset=%s/lateness=%s/par=%d/batch=%d", spec, spec.Offset, lateness, par, batch)
					t.Run(name, func(t *testing.T) {
						mem := testutil.CheckedAllocator(t)
						rng := rand.New(rand.NewPCG(uint64(100+si), uint64(par*1000+batch)))
						rows := stream(rng, 3000, 30, 200, 0.05)
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

// With one step per period, cumulating windows are tumbling windows.
func TestCumulateOneStepIsTumbling(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rows := stream(rand.New(rand.NewPCG(7, 7)), 2000, 20, 200, 0.05)
	size, off := 600*time.Millisecond, 100*time.Millisecond
	cum := Spec{Kind: KindCumulate, Size: size, Slide: size, Offset: off}
	tum := Spec{Kind: KindTumbling, Size: size, Offset: off}
	got, _ := run(t, mem, testAggregate(cum, 0), rows, 50, 200, 2, 0, 0)
	want, _ := run(t, mem, testAggregate(tum, 0), rows, 50, 200, 2, 0, 0)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("%d results, tumbling %d; first difference: %s", len(got), len(want), firstDiff(got, want))
	}
}

// Snapshotting in the middle of a period (some of its windows fired,
// others not) and restoring into another parallelism gives the
// reference's output.
func TestCumulateSnapshotRestoreRescale(t *testing.T) {
	spec := cumulateSpecs[1]
	for _, par := range []int{1, 3} {
		for _, newPar := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/%d->%d", spec, par, newPar), func(t *testing.T) {
				mem := testutil.CheckedAllocator(t)
				rng := rand.New(rand.NewPCG(uint64(par), uint64(newPar)+50))
				rows := stream(rng, 4000, 50, 300, 0.03)
				a := testAggregate(spec, 100*time.Millisecond)
				want, _ := reference(spec, a.AllowedLateness, rows, 100, 300)
				for _, k := range []int{1, 17, 39} {
					got, _ := run(t, mem, a, rows, 100, 300, par, k, newPar)
					if !slices.Equal(got, want) {
						t.Fatalf("restored after %d batches: %d results, reference %d; %s", k, len(got), len(want), firstDiff(got, want))
					}
				}
			})
		}
	}
}

// The example of the definition: with a step of 1 min and a max size of
// 10 min, a row at 00:03:30 is in [00:00, 00:04), ..., [00:00, 00:10).
func TestCumulateExample(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC).UnixMilli() // a 10 min boundary
	k, v := int64(1), int64(5)
	at := base + (3*time.Minute + 30*time.Second).Milliseconds()
	got, _ := run(t, mem, testAggregate(Cumulate(10*time.Minute, time.Minute), 0), []row{{&k, at, &v}}, 1, 0, 1, 0, 0)
	var want []result
	for m := int64(4); m <= 10; m++ {
		want = append(want, result{base, base + m*time.Minute.Milliseconds(), "1", "n=1 cnt=1 sum=5 max=5"})
	}
	sortResults(want)
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// A pane is held until the last window containing it (the period's
// largest) has fired, and no longer.
func TestCumulateFreesPanes(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	spec := cumulateSpecs[1]
	a := testAggregate(spec, 0)
	subs := openSubtasks(t, mem, a, 1)
	op := subs[0].op.(*aggOp)
	out := &collector{}
	defer out.release()
	rows := stream(rand.New(rand.NewPCG(3, 9)), 3000, 10, 200, 0)
	maxTs := int64(-1 << 62)
	held := 0
	for i := 0; i < len(rows); i += 50 {
		chunk := rows[i:min(i+50, len(rows))]
		for _, r := range chunk {
			maxTs = max(maxTs, r.ts)
		}
		wm := arrowflow.EventTime((maxTs - 200) * int64(time.Millisecond))
		feed(t, mem, subs, chunk, wm, out)
		for p := range op.panes {
			if op.fired(spec.lastWindowEnd(p), wm) {
				t.Fatalf("pane %d is held after its last window [.., %d) fired at watermark %d", p, spec.lastWindowEnd(p), wm)
			}
		}
		held = max(held, len(op.panes))
	}
	// A period's panes stay until its end: at least a period's worth of
	// steps is held at some point.
	if steps := int(spec.Size / spec.Slide); held < steps {
		t.Errorf("at most %d panes held, fewer than the %d steps of a period", held, steps)
	}
	if err := op.Close(); err != nil {
		t.Fatal(err)
	}
}

// appendWindows lists, for every kind with panes, exactly the windows
// that contain a pane, found by brute force over the definitions; each
// window is a whole number of panes, and the last ends at lastWindowEnd.
func TestSpecWindowsOfPane(t *testing.T) {
	ms := time.Millisecond
	specs := []Spec{
		Tumbling(500 * ms),
		{Kind: KindTumbling, Size: 500 * ms, Offset: 200 * ms},
		Hopping(time.Second, 300*ms),
		{Kind: KindHopping, Size: time.Second, Slide: 400 * ms, Offset: 100 * ms},
		Cumulate(time.Second, 250*ms),
		{Kind: KindCumulate, Size: 900 * ms, Slide: 300 * ms, Offset: 800 * ms},
		Cumulate(300*ms, 300*ms),
	}
	for _, spec := range specs {
		if err := spec.Validate(); err != nil {
			t.Fatal(err)
		}
		size, slide, off, pane := int64(spec.Size), int64(spec.Slide), int64(spec.Offset), spec.pane()
		// every window whose start lies in [lo, hi), by the definition
		every := func(lo, hi int64) []bounds {
			var ws []bounds
			for s := floorTo(lo, int64(time.Millisecond), 0); s < hi; s += int64(time.Millisecond) {
				switch spec.Kind {
				case KindTumbling:
					if (s-off)%size == 0 {
						ws = append(ws, bounds{s, s + size})
					}
				case KindHopping:
					if (s-off)%slide == 0 {
						ws = append(ws, bounds{s, s + size})
					}
				case KindCumulate:
					if (s-off)%size == 0 {
						for e := s + slide; e <= s+size; e += slide {
							ws = append(ws, bounds{s, e})
						}
					}
				}
			}
			return ws
		}
		for _, p0 := range []int64{-3_000, 0, 1_700_000_000_000} {
			p0 *= int64(time.Millisecond)
			for i := int64(0); i < 12; i++ {
				p := floorTo(p0, pane, off) + i*pane
				var want []bounds
				for _, w := range every(p-size, p+1) {
					if w.start <= p && p < w.end {
						if w.start != floorTo(w.start, pane, off) || w.end != floorTo(w.end, pane, off) {
							t.Fatalf("%s: window %v is not a whole number of panes of %d", spec, w, pane)
						}
						want = append(want, w)
					}
				}
				slices.SortFunc(want, func(a, b bounds) int { return cmp.Compare(a.end, b.end) })
				got := spec.appendWindows(nil, p)
				if len(want) == 0 || !slices.Equal(got, want) {
					t.Fatalf("%s: pane %d: got %v, want %v", spec, p, got, want)
				}
				if last := want[len(want)-1].end; spec.lastWindowEnd(p) != last {
					t.Fatalf("%s: pane %d: lastWindowEnd %d, want %d", spec, p, spec.lastWindowEnd(p), last)
				}
			}
		}
	}
}

func TestCumulateSpecValidate(t *testing.T) {
	if got, want := Cumulate(10*time.Minute, time.Minute).String(), "CUMULATE(max size 10m0s, step 1m0s)"; got != want {
		t.Errorf("String: got %q, want %q", got, want)
	}
	cases := []struct {
		spec Spec
		want string // "" for a valid spec
	}{
		{Cumulate(10*time.Minute, time.Minute), ""},
		{Cumulate(time.Minute, time.Minute), ""},
		{Spec{Kind: KindCumulate, Size: 10 * time.Minute, Slide: time.Minute, Offset: 9 * time.Minute}, ""},
		{Cumulate(10*time.Minute, 3*time.Minute), "max size must be an integral multiple of the step"},
		{Cumulate(time.Minute, 2*time.Minute), "a step longer than the max size"},
		{Cumulate(time.Minute, 0), "step must be positive"},
		{Cumulate(time.Minute, -time.Second), "step must be positive"},
		{Cumulate(0, time.Second), "max size must be positive"},
		{Spec{Kind: KindCumulate, Size: time.Minute, Slide: time.Second, Offset: time.Minute}, "offset 1m0s must be in [0, 1m0s)"},
		{Spec{Kind: KindCumulate, Size: time.Minute, Slide: time.Second, Offset: -time.Second}, "must be in [0, 1m0s)"},
	}
	for _, c := range cases {
		err := c.spec.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s offset %s: %v", c.spec, c.spec.Offset, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s offset %s: got %v, want an error containing %q", c.spec, c.spec.Offset, err, c.want)
		}
	}
	// The aggregate reports the spec's error.
	if err := testAggregate(Cumulate(time.Minute, 7*time.Second), 0).Validate(); err == nil || !strings.Contains(err.Error(), "integral multiple") {
		t.Errorf("aggregate over a bad cumulating spec: got %v", err)
	}
}

// The operators that do not take cumulating windows say so when validated
// and when an instance opens, naming themselves.
func TestCumulateRejectedByOtherOperators(t *testing.T) {
	spec := Cumulate(time.Second, 250*time.Millisecond)
	topN := topNConfig(topNForms[0], topNOrders[0], 2, false, true, 0, 0)
	topN.Window = spec
	join := joinTestConfig(JoinInner, spec, 0, 1)
	for _, c := range []struct {
		name     string
		op       string
		validate func() error
		factory  arrowflow.OperatorFactory
	}{
		{"top-n", "window top-n", topN.Validate, topN.Factory()},
		{"join", "window join", join.Validate, join.Factory()},
	} {
		check := func(what string, err error) {
			if err == nil || !strings.Contains(err.Error(), c.op) || !strings.Contains(err.Error(), "CUMULATE") {
				t.Errorf("%s %s: got %v, want an error naming %q and CUMULATE", c.name, what, err, c.op)
			}
		}
		check("Validate", c.validate())
		mem := testutil.CheckedAllocator(t)
		op := c.factory()
		err := op.Open(&arrowflow.TaskInfo{Name: "win", Parallelism: 1, Allocator: mem})
		check("Open", err)
		if err == nil {
			_ = op.Close()
		}
	}
}

// runCounting is run without a restore, also returning the pane merges
// and accumulator drops its subtasks counted.
func runCounting(t *testing.T, mem memory.Allocator, a Aggregate, rows []row, batch int, bound int64, par int) (got []result, st Stats, merges, drops int64) {
	out := &collector{}
	defer out.release()
	subs := openSubtasks(t, mem, a, par)
	maxTs := int64(-1 << 62)
	for i := 0; i < len(rows); i += batch {
		chunk := rows[i:min(i+batch, len(rows))]
		for _, r := range chunk {
			maxTs = max(maxTs, r.ts)
		}
		feed(t, mem, subs, chunk, arrowflow.EventTime((maxTs-bound)*int64(time.Millisecond)), out)
	}
	for _, s := range subs {
		if err := s.op.ProcessWatermark(arrowflow.MaxEventTime, out); err != nil {
			t.Fatal(err)
		}
		op := s.op.(*aggOp)
		merges, drops = merges+op.paneMerges, drops+op.accDrops
		st.LateRows += op.stats.LateRows
		st.Windows += op.stats.Windows
		if len(op.panes) != 0 || op.accLive {
			t.Errorf("subtask %d holds %d panes (accumulator live: %t) after the final watermark", s.info.Subtask, len(op.panes), op.accLive)
		}
		if err := op.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return readResults(t, out.batches), st, merges, drops
}

// Each pane is merged into windows once, however many windows of its
// period fire: a period of K = 60 steps with rows in every step costs 60
// merges, not the K(K+1)/2 = 1830 of building each window from its panes,
// whether the watermark fires the windows one by one, several at once or
// all at the end.
func TestCumulateMergesEachPaneOnce(t *testing.T) {
	spec := Cumulate(6*time.Second, 100*time.Millisecond)
	const k = 60
	// In order, a row every 0 to 39 ms (so in every step), for about 20 s:
	// three whole periods and parts of two others. The watermark trails
	// the stream by 1 ms, so no row is at or behind it.
	rows := stream(rand.New(rand.NewPCG(60, 60)), 1000, 20, 0, 0)
	panes := map[int64]bool{}
	for _, r := range rows {
		panes[floorTo(r.ts*int64(time.Millisecond), spec.pane(), 0)] = true
	}
	for _, batch := range []int{3, 400, len(rows)} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			mem := testutil.CheckedAllocator(t)
			got, st, merges, drops := runCounting(t, mem, testAggregate(spec, 0), rows, batch, 1, 1)
			want, _ := reference(spec, 0, rows, batch, 1)
			if !slices.Equal(got, want) {
				t.Fatalf("%d results, reference %d; first difference: %s", len(got), len(want), firstDiff(got, want))
			}
			if st.Windows < 3*k {
				t.Fatalf("%d windows fired, want at least three periods of %d", st.Windows, k)
			}
			if merges != int64(len(panes)) || drops != 0 {
				t.Errorf("%d windows fired with %d pane merges and %d accumulators dropped; want one merge per pane (%d), no drop",
					st.Windows, merges, drops, len(panes))
			}
		})
	}
}

// Rows behind the watermark by the allowed lateness or more, in a period
// whose last window has not fired, land in panes the period's accumulator
// already holds: they count in the period's later windows only. A small
// stream shows it step by step; random streams with late rows check it at
// scale. The results are the reference's, and the case did occur
// (accumulators were dropped).
func TestCumulateLateRowsIntoAccumulatedPanes(t *testing.T) {
	t.Run("example", func(t *testing.T) {
		spec := Cumulate(time.Second, 100*time.Millisecond)
		lateness := 150 * time.Millisecond
		mk := func(ts, v int64) row { k := int64(1 + v%2); return row{&k, ts, &v} }
		base := int64(1_700_000_000_000) // a period boundary
		// One row per batch and the watermark at the newest row: after
		// the row at 650 ms the windows up to [0, 500) have fired
		// (650 >= 499 + 150), so the accumulator holds panes [0, 500)
		// and the row at 120 ms drops it. At 760 ms [0, 600) fires,
		// rebuilt from the panes, and the row at 480 ms drops it again;
		// at 900 ms [0, 700), and the row at 10 ms. 1200 ms fires the
		// period's last window.
		var rows []row
		for i, ms := range []int64{50, 150, 250, 350, 650, 120, 760, 480, 900, 10, 990, 1200, 1300} {
			rows = append(rows, mk(base+ms, int64(i)))
		}
		mem := testutil.CheckedAllocator(t)
		got, st, _, drops := runCounting(t, mem, testAggregate(spec, lateness), rows, 1, 0, 1)
		want, late := reference(spec, lateness, rows, 1, 0)
		if !slices.Equal(got, want) {
			t.Fatalf("%d results, reference %d; first difference: %s", len(got), len(want), firstDiff(got, want))
		}
		if st.LateRows != late || late != 0 {
			t.Errorf("%d late rows, reference %d, want none", st.LateRows, late)
		}
		if drops != 3 {
			t.Errorf("%d accumulators dropped, want 3 (at 120, 480 and 10 ms)", drops)
		}
	})
	spec := Cumulate(3*time.Second, 100*time.Millisecond) // K = 30
	for _, lateness := range []time.Duration{0, 300 * time.Millisecond} {
		for _, par := range []int{1, 2} {
			for _, batch := range []int{7, 60} {
				t.Run(fmt.Sprintf("lateness=%s/par=%d/batch=%d", lateness, par, batch), func(t *testing.T) {
					mem := testutil.CheckedAllocator(t)
					rng := rand.New(rand.NewPCG(uint64(lateness), uint64(par*1000+batch)))
					rows := stream(rng, 4000, 20, 200, 0.05)
					got, st, merges, drops := runCounting(t, mem, testAggregate(spec, lateness), rows, batch, 200, par)
					want, late := reference(spec, lateness, rows, batch, 200)
					if !slices.Equal(got, want) {
						t.Fatalf("%d results, reference %d; first difference: %s", len(got), len(want), firstDiff(got, want))
					}
					if st.LateRows != late {
						t.Errorf("%d late rows counted, reference %d", st.LateRows, late)
					}
					if drops == 0 {
						t.Errorf("no accumulator was dropped: no row landed in an accumulated pane")
					}
					t.Logf("%d windows, %d pane merges, %d accumulators dropped", st.Windows, merges, drops)
				})
			}
		}
	}
}
