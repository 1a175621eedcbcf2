package window

import (
	"fmt"
	"testing"
	"time"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/testutil"
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
