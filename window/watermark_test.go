package window

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/sinks/collect"
)

func TestSplitWatermarks(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	et := func(s int) arrowflow.EventTime { return arrowflow.EventTime(int64(s) * int64(time.Second)) }
	w := NewSplitWatermarks(time.Second, 5*time.Second)

	if got := w.Watermark(at(0)); got != arrowflow.MinEventTime {
		t.Fatalf("no splits: %v", got)
	}
	w.AddSplit("a", at(0))
	w.AddSplit("b", at(0))
	w.Observe("a", et(10), at(1))
	if got := w.Watermark(at(1)); got != arrowflow.MinEventTime {
		t.Fatalf("b has no rows yet and is not idle: want -inf, got %v", got)
	}
	w.Observe("b", et(5), at(2))
	if got := w.Watermark(at(2)); got != et(4) {
		t.Fatalf("min over splits minus bound: want %v, got %v", et(4), got)
	}
	w.Observe("a", et(12), at(6))
	// b last produced at 2 s: idle from 7 s on.
	if got := w.Watermark(at(6.5)); got != et(4) {
		t.Fatalf("b not idle yet: want %v, got %v", et(4), got)
	}
	if got := w.Watermark(at(7)); got != et(11) {
		t.Fatalf("b idle, a rules: want %v, got %v", et(11), got)
	}
	// b wakes up behind: the watermark does not go back.
	w.Observe("b", et(6), at(8))
	if got := w.Watermark(at(8)); got != et(11) {
		t.Fatalf("never backwards: want %v, got %v", et(11), got)
	}
	w.Observe("b", et(20), at(9))
	w.Observe("a", et(13), at(9))
	if got := w.Watermark(at(9)); got != et(12) {
		t.Fatalf("both active: want %v, got %v", et(12), got)
	}
	// Everything idle: the largest split watermark.
	if got := w.Watermark(at(30)); got != et(19) {
		t.Fatalf("all idle: want %v, got %v", et(19), got)
	}
	w.EndSplit("a")
	w.EndSplit("b")
	if got := w.Watermark(at(31)); got != arrowflow.MaxEventTime {
		t.Fatalf("all ended: want +inf, got %v", got)
	}
}

func TestSplitWatermarksWithoutIdleness(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := NewSplitWatermarks(0, 0)
	w.Observe("a", 100, t0)
	w.AddSplit("quiet", t0)
	if got := w.Watermark(t0.Add(time.Hour)); got != arrowflow.MinEventTime {
		t.Fatalf("without an idle timeout a quiet split holds time forever: got %v", got)
	}
	w.Observe("quiet", arrowflow.MinEventTime+5, t0)
	if got := w.Watermark(t0); got != arrowflow.MinEventTime+5 {
		t.Fatalf("got %v", got)
	}
}

// A split that goes quiet must not stall the windows of the others: with
// an idle timeout, windows fire while the busy split keeps producing;
// without one, nothing fires before the end of the stream.
func TestIdleSplitDoesNotStallWindows(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	a := testAggregate(Tumbling(time.Second), 0)
	for _, idle := range []time.Duration{0, 100 * time.Millisecond} {
		subs := openSubtasks(t, mem, a, 1)
		out := &collector{}
		wmGen := NewSplitWatermarks(200*time.Millisecond, idle)
		clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		k, v := int64(1), int64(1)
		// Split "quiet" produces one row at the start, then nothing.
		wmGen.Observe("quiet", arrowflow.EventTime(1_700_000_000_000*int64(time.Millisecond)), clock)
		firedEarly := 0
		for i := 0; i < 100; i++ {
			clock = clock.Add(10 * time.Millisecond)
			ts := int64(1_700_000_000_000 + i*100) // 10 s of event time on split "busy"
			wmGen.Observe("busy", arrowflow.EventTime(ts*int64(time.Millisecond)), clock)
			feed(t, mem, subs, []row{{key: &k, ts: ts, v: &v}}, wmGen.Watermark(clock), out)
			firedEarly = len(out.batches)
		}
		if idle == 0 && firedEarly != 0 {
			t.Fatalf("without idleness the quiet split must hold every window back; %d fired", firedEarly)
		}
		if idle > 0 && firedEarly < 8 {
			t.Fatalf("with an idle timeout, windows of the busy split must fire; only %d did", firedEarly)
		}
		for _, s := range subs {
			if err := s.op.ProcessWatermark(arrowflow.MaxEventTime, out); err != nil {
				t.Fatal(err)
			}
			s.op.Close()
		}
		got := readResults(t, out.batches)
		total := 0
		for _, r := range got {
			var n, cnt int
			var rest string
			fmt.Sscanf(r.aggs, "n=%d cnt=%d %s", &n, &cnt, &rest)
			total += n
		}
		if total != 100 {
			t.Fatalf("idle=%s: windows hold %d rows, want all 100", idle, total)
		}
		out.release()
	}
}

// twoSplitSource has a busy split, producing rows with rising event times
// until release is closed, and a quiet split producing two rows and then
// nothing until release. Its readers use SplitWatermarks and report
// idleness to the runtime.
type twoSplitSource struct {
	release  chan struct{}
	start    int64 // ms
	produced atomic.Int64
}

func (s *twoSplitSource) Schema() *arrow.Schema { return inSchema }
func (s *twoSplitSource) Splits(context.Context) ([]string, error) {
	return []string{"busy", "quiet"}, nil
}
func (s *twoSplitSource) Open(info *arrowflow.TaskInfo, splits []arrowflow.SplitState) (arrowflow.SourceReader, error) {
	r := &twoSplitReader{s: s, mem: info.Allocator, marks: NewSplitWatermarks(0, 50*time.Millisecond), deadline: time.Now().Add(30 * time.Second)}
	for _, sp := range splits {
		r.splits = append(r.splits, sp.Split)
		r.marks.AddSplit(sp.Split, time.Now())
	}
	return r, nil
}

type twoSplitReader struct {
	s        *twoSplitSource
	mem      memory.Allocator
	splits   []string
	marks    *SplitWatermarks
	sent     int
	deadline time.Time
	done     bool
}

func (r *twoSplitReader) Next(ctx context.Context) (arrowflow.Batch, error) {
	if r.done || len(r.splits) == 0 {
		return arrowflow.Batch{}, io.EOF
	}
	split := r.splits[0]
	released := false
	select {
	case <-r.s.release:
		released = true
	case <-ctx.Done():
		return arrowflow.Batch{}, ctx.Err()
	case <-time.After(5 * time.Millisecond):
	}
	if time.Now().After(r.deadline) {
		return arrowflow.Batch{}, errors.New("no window fired: the quiet split held event time back")
	}
	k, v := int64(1), int64(1)
	var rows []row
	switch {
	case released:
		// A row sent on the quiet split now could be late: the busy
		// subtask's final watermark (+inf, it ends) is not held back by an
		// idle input, in Flink as here.
		r.done = true
		return arrowflow.Batch{}, io.EOF
	case split == "quiet" && r.sent > 0:
		return arrowflow.Batch{}, nil // quiet: nothing
	default:
		ts := r.s.start + int64(r.sent)*100
		rows = []row{{key: &k, ts: ts, v: &v}, {key: &k, ts: ts + 50, v: &v}}
	}
	r.sent++
	r.s.produced.Add(int64(len(rows)))
	now := time.Now()
	r.marks.Observe(split, arrowflow.EventTime((rows[len(rows)-1].ts)*int64(time.Millisecond)), now)
	return arrowflow.NewBatch(buildBatch(r.mem, rows)), nil
}

func (r *twoSplitReader) Watermark() arrowflow.EventTime { return r.marks.Watermark(time.Now()) }
func (r *twoSplitReader) Idle() bool                     { return r.marks.Idle(time.Now()) }
func (r *twoSplitReader) Positions() ([]arrowflow.SplitState, error) {
	var out []arrowflow.SplitState
	for _, s := range r.splits {
		out = append(out, arrowflow.SplitState{Split: s})
	}
	return out, nil
}
func (r *twoSplitReader) Close() error { return nil }

// TestIdleSubtaskDoesNotStallDownstream runs a real job with two source
// subtasks, one of them quiet: the downstream window's watermark is the
// minimum over its inputs, and only the quiet subtask's idle status lets
// it advance, so a window fires while the quiet subtask still runs.
func TestIdleSubtaskDoesNotStallDownstream(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	src := &twoSplitSource{release: make(chan struct{}), start: 1_700_000_000_000}
	var once sync.Once
	g := arrowflow.NewGraph("idle")
	in := g.Source("src", src, 2)
	win := g.Operator("win", testAggregate(Tumbling(time.Second), 0).Factory(), 1, arrowflow.KeyBy(in, "key"))
	seen := g.Operator("seen", ops.MapRecords(func(rec arrow.RecordBatch, _ memory.Allocator) (arrow.RecordBatch, error) {
		once.Do(func() { close(src.release) })
		rec.Retain()
		return rec, nil
	}), 1, arrowflow.Forward(win))
	sink := collect.New()
	g.Sink("out", sink, 1, arrowflow.Forward(seen))
	job, err := g.Plan(arrowflow.Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, r := range sink.Rows() {
		total += r[3].(int64)
	}
	// Every row of both splits is counted once: none was late.
	if want := src.produced.Load(); total != want {
		t.Fatalf("windows count %d rows, the source produced %d", total, want)
	}
}
