package window

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/sinks/collect"
)

// fakeClock is a processing-time clock the test moves by hand.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func procAggregate(spec Spec) Aggregate {
	a := testAggregate(spec, 0)
	a.Time, a.LateOutput, a.ProcessingTime = "", "", true
	return a
}

// procReference puts every row of a batch into the windows of the batch's
// arrival time (ms) and aggregates each window directly.
func procReference(spec Spec, batches [][]row, arrivals []int64) []result {
	var rows []row
	for i, b := range batches {
		for _, r := range b {
			r.ts = arrivals[i] // the "event time" is the arrival time
			rows = append(rows, r)
		}
	}
	// No watermark ever makes a row late: bound = +inf.
	want, _ := reference(spec, 0, rows, len(rows)+1, 1<<61)
	return want
}

// TestProcessingTimeMatchesReference drives processing-time windows with a
// hand-moved clock: batches arrive at random times, the timer fires as the
// runtime would (whenever the clock has reached NextProcessingTime), and a
// snapshot in the middle is restored into another parallelism.
func TestProcessingTimeMatchesReference(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	specs := []Spec{Tumbling(time.Second), Hopping(time.Second, 250*time.Millisecond),
		{Kind: KindTumbling, Size: 700 * time.Millisecond, Offset: 300 * time.Millisecond},
		{Kind: KindCumulate, Size: time.Second, Slide: 250 * time.Millisecond, Offset: 400 * time.Millisecond}}
	for _, spec := range specs {
		for _, par := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/par%d", spec, par), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(par), 11))
				a := procAggregate(spec)
				clock := &fakeClock{now: time.UnixMilli(1_700_000_000_000)}
				subs := openSubtasksClock(t, mem, a, par, clock)
				out := &collector{}
				// fireDue runs every due timer and checks that each window
				// emitted has ended by the clock.
				fireDue := func() {
					for _, s := range subs {
						pt := s.op.(arrowflow.ProcessingTimeOperator)
						at, ok := pt.NextProcessingTime()
						if !ok || clock.now.Before(at) {
							continue
						}
						before := len(out.batches)
						if err := pt.OnProcessingTime(clock.now, out); err != nil {
							t.Fatal(err)
						}
						for _, r := range readResults(t, out.batches[before:]) {
							if r.end > clock.now.UnixMilli() {
								t.Fatalf("window %v fired at %d, before its end", r, clock.now.UnixMilli())
							}
						}
					}
				}
				var batches [][]row
				var arrivals []int64
				for i := 0; i < 200; i++ {
					clock.now = clock.now.Add(time.Duration(rng.IntN(120)) * time.Millisecond)
					fireDue()
					rows := stream(rng, 1+rng.IntN(30), 20, 0, 0)
					batches, arrivals = append(batches, rows), append(arrivals, clock.now.UnixMilli())
					feed(t, mem, subs, rows, arrowflow.MinEventTime, out)
					if i == 100 {
						subs = snapshotRestoreClock(t, mem, a, subs, 3-par, clock)
						fireDue() // windows that ended "while the job was down"
					}
				}
				// Before the input ends, every window that ended has fired.
				clock.now = clock.now.Add(50 * time.Millisecond)
				fireDue()
				fired := readResults(t, out.batches)
				for _, s := range subs {
					if err := s.op.Finish(out); err != nil {
						t.Fatal(err)
					}
					s.op.Close()
				}
				all := readResults(t, out.batches)
				finishedLate := 0
				seen := map[string]bool{}
				for _, r := range fired {
					seen[r.String()] = true
				}
				for _, r := range all {
					if !seen[r.String()] && r.end <= clock.now.UnixMilli() {
						finishedLate++
					}
				}
				if finishedLate > 0 {
					t.Fatalf("%d window rows had ended by the clock but only came out at Finish", finishedLate)
				}
				want := procReference(spec, batches, arrivals)
				if !slices.Equal(all, want) {
					t.Fatalf("%d results, reference %d; first difference: %s", len(all), len(want), firstDiff(all, want))
				}
				out.release()
			})
		}
	}
}

// gatedSource emits one batch, then nothing until release is closed, then
// a second batch and the end of input. While it waits, only a timer can
// make a processing-time window fire.
type gatedSource struct {
	first, second arrow.RecordBatch
	release       chan struct{}
}

func (s *gatedSource) Schema() *arrow.Schema                    { return inSchema }
func (s *gatedSource) Splits(context.Context) ([]string, error) { return []string{"only"}, nil }
func (s *gatedSource) Open(*arrowflow.TaskInfo, []arrowflow.SplitState) (arrowflow.SourceReader, error) {
	return &gatedReader{s: s, deadline: time.Now().Add(30 * time.Second)}, nil
}

type gatedReader struct {
	s        *gatedSource
	step     int
	deadline time.Time
}

func (r *gatedReader) Next(ctx context.Context) (arrowflow.Batch, error) {
	switch r.step {
	case 0:
		r.step++
		r.s.first.Retain()
		return arrowflow.NewBatch(r.s.first), nil
	case 1:
		select {
		case <-r.s.release:
			r.step++
			r.s.second.Retain()
			return arrowflow.NewBatch(r.s.second), nil
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return arrowflow.Batch{}, ctx.Err()
		}
		if time.Now().After(r.deadline) {
			return arrowflow.Batch{}, errors.New("no processing-time window fired while the source was idle")
		}
		return arrowflow.Batch{}, nil
	}
	return arrowflow.Batch{}, io.EOF
}

func (r *gatedReader) Watermark() arrowflow.EventTime { return arrowflow.MinEventTime }
func (r *gatedReader) Positions() ([]arrowflow.SplitState, error) {
	return []arrowflow.SplitState{{Split: "only"}}, nil
}
func (r *gatedReader) Close() error { return nil }

// TestProcessingTimeWindowFiresWhileIdle runs a real job on the wall
// clock: a window must fire while no input arrives, both in a task of its
// own (woken from its input queue) and chained to the source.
func TestProcessingTimeWindowFiresWhileIdle(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(3, 4))
	first, second := stream(rng, 300, 7, 0, 0), stream(rng, 200, 7, 0, 0)
	counts := map[string]int64{}
	for _, r := range append(append([]row{}, first...), second...) {
		k := "NULL"
		if r.key != nil {
			k = fmt.Sprint(*r.key)
		}
		counts[k]++
	}
	for _, keyed := range []bool{true, false} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			src := &gatedSource{first: buildBatch(mem, first), second: buildBatch(mem, second), release: make(chan struct{})}
			defer src.first.Release()
			defer src.second.Release()
			var once sync.Once
			g := arrowflow.NewGraph("proctime")
			in := g.Source("src", src, 1)
			a := procAggregate(Tumbling(40 * time.Millisecond))
			edge, par := arrowflow.Forward(in), 1
			if keyed {
				edge, par = arrowflow.KeyBy(in, "key"), 2
			}
			win := g.Operator("win", a.Factory(), par, edge)
			seen := g.Operator("seen", ops.MapRecords(func(rec arrow.RecordBatch, _ memory.Allocator) (arrow.RecordBatch, error) {
				once.Do(func() { close(src.release) })
				rec.Retain()
				return rec, nil
			}), par, arrowflow.Forward(win))
			sink := collect.New()
			g.Sink("out", sink, par, arrowflow.Forward(seen))
			job, err := g.Plan(arrowflow.Options{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := job.Run(ctx); err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			windows := map[int64]bool{}
			for _, r := range sink.Rows() {
				k := "NULL"
				if r[2] != nil {
					k = fmt.Sprint(r[2])
				}
				got[k] += r[3].(int64)
				windows[r[0].(time.Time).UnixMilli()] = true
			}
			if fmt.Sprint(got) != fmt.Sprint(counts) {
				t.Fatalf("rows per key over all windows: got %v, want %v", got, counts)
			}
			// The second batch was sent only after a window had fired, so
			// it lies in a later window than the first.
			if len(windows) < 2 {
				t.Fatalf("all rows in %d window(s); the window of the first batch should have fired before the second arrived", len(windows))
			}
		})
	}
}
