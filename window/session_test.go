package window

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/weirflow/weir/internal/testutil"
)

// sessionReference replays the rows in arrival order with plain Go maps:
// per key a list of open sessions, merged when a row bridges them, fired
// when the watermark (largest event time so far minus bound, after each
// batch) passes a session's end minus one millisecond plus the lateness.
func sessionReference(gap, lateness time.Duration, rows []row, batch int, bound int64) ([]result, int64) {
	type sess struct {
		start, end      int64
		n, cnt, sum, mx int64
		hasSum          bool
	}
	g, late := gap.Milliseconds(), lateness.Milliseconds()
	open := map[string][]*sess{}
	var out []result
	var lateRows int64
	wm, maxTs := int64(-1<<62), int64(-1<<62)
	emit := func(k string, s *sess) {
		sum, mx := "NULL", "NULL"
		if s.hasSum {
			sum, mx = fmt.Sprint(s.sum), fmt.Sprint(s.mx)
		}
		out = append(out, result{s.start, s.end, k, fmt.Sprintf("n=%d cnt=%d sum=%s max=%s", s.n, s.cnt, sum, mx)})
	}
	fire := func() {
		for k, list := range open {
			var kept []*sess
			for _, s := range list {
				if wm >= s.end-1+late {
					emit(k, s)
				} else {
					kept = append(kept, s)
				}
			}
			open[k] = kept
		}
	}
	for i := 0; i < len(rows); i += batch {
		for _, r := range rows[i:min(i+batch, len(rows))] {
			k := "NULL"
			if r.key != nil {
				k = fmt.Sprint(*r.key)
			}
			ns := &sess{start: r.ts, end: r.ts + g}
			var kept []*sess
			merged := false
			for _, s := range open[k] {
				if s.start < ns.end && r.ts < s.end {
					ns.start, ns.end = min(ns.start, s.start), max(ns.end, s.end)
					ns.n, ns.cnt, ns.sum = ns.n+s.n, ns.cnt+s.cnt, ns.sum+s.sum
					if s.hasSum && (!ns.hasSum || s.mx > ns.mx) {
						ns.mx = s.mx
					}
					ns.hasSum = ns.hasSum || s.hasSum
					merged = true
				} else {
					kept = append(kept, s)
				}
			}
			if !merged && wm >= ns.end-1+late {
				lateRows++
				continue
			}
			ns.n++
			if r.v != nil {
				ns.cnt++
				ns.sum += *r.v
				if !ns.hasSum || *r.v > ns.mx {
					ns.mx = *r.v
				}
				ns.hasSum = true
			}
			open[k] = append(kept, ns)
			maxTs = max(maxTs, r.ts)
		}
		for _, r := range rows[i:min(i+batch, len(rows))] {
			maxTs = max(maxTs, r.ts)
		}
		wm = max(wm, maxTs-bound)
		fire()
	}
	wm = 1 << 62
	fire()
	sortResults(out)
	return out, lateRows
}

func TestSessionMatchesReference(t *testing.T) {
	for _, gap := range []time.Duration{50 * time.Millisecond, 400 * time.Millisecond} {
		for _, lateness := range []time.Duration{0, 150 * time.Millisecond} {
			for _, par := range []int{1, 2, 4} {
				for _, batch := range []int{1, 7, 500} {
					if batch == 1 && (par > 1 || testing.Short()) {
						continue
					}
					t.Run(fmt.Sprintf("gap=%s/lateness=%s/par=%d/batch=%d", gap, lateness, par, batch), func(t *testing.T) {
						mem := testutil.CheckedAllocator(t)
						rng := rand.New(rand.NewPCG(uint64(gap), uint64(par*1000+batch)))
						n := 3000
						if batch == 1 {
							n = 400
						}
						rows := stream(rng, n, 20, 200, 0.05)
						a := testAggregate(Session(gap), lateness)
						got, stats := run(t, mem, a, rows, batch, 200, par, 0, 0)
						want, late := sessionReference(gap, lateness, rows, batch, 200)
						if !slices.Equal(got, want) {
							t.Fatalf("%d results, reference %d; first difference: %s", len(got), len(want), firstDiff(got, want))
						}
						if stats.LateRows != late {
							t.Errorf("%d late rows counted, reference %d", stats.LateRows, late)
						}
					})
				}
			}
		}
	}
}

func TestSessionSnapshotRestoreRescale(t *testing.T) {
	for _, par := range []int{1, 3} {
		for _, newPar := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%d->%d", par, newPar), func(t *testing.T) {
				mem := testutil.CheckedAllocator(t)
				rng := rand.New(rand.NewPCG(uint64(par), uint64(newPar)+100))
				rows := stream(rng, 3000, 40, 300, 0.03)
				a := testAggregate(Session(300*time.Millisecond), 0)
				want, _ := run(t, mem, a, rows, 100, 300, par, 0, 0)
				for _, k := range []int{1, 13, 27} {
					got, _ := run(t, mem, a, rows, 100, 300, par, k, newPar)
					if !slices.Equal(got, want) {
						t.Fatalf("restored after %d batches: %d results, uninterrupted %d; %s", k, len(got), len(want), firstDiff(got, want))
					}
				}
			})
		}
	}
}

// A hand-checked case: gap 50 ms; rows of key 1 at 0, 30 and 100 ms make
// sessions [0, 80) and [100, 150); a row at 60 then bridges them into
// [0, 150), when it arrives before either fires.
func TestSessionMergesBridgedSessions(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	k, v := int64(1), int64(5)
	at := func(ts int64) row { return row{key: &k, ts: ts, v: &v} }
	rows := []row{at(1000), at(1030), at(1100), at(1060)}
	a := testAggregate(Session(50*time.Millisecond), 0)
	got, _ := run(t, mem, a, rows, 4, 1000, 1, 0, 0)
	want := []result{{1000, 1150, "1", "n=4 cnt=4 sum=20 max=5"}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// Without the bridge, two sessions.
	got, _ = run(t, mem, a, rows[:3], 3, 1000, 1, 0, 0)
	want = []result{{1000, 1080, "1", "n=2 cnt=2 sum=10 max=5"}, {1100, 1150, "1", "n=1 cnt=1 sum=5 max=5"}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if ref, _ := sessionReference(50*time.Millisecond, 0, rows, 4, 1000); !slices.Equal(ref, []result{{1000, 1150, "1", "n=4 cnt=4 sum=20 max=5"}}) {
		t.Fatalf("the reference disagrees with the hand-checked answer: %v", ref)
	}
}
