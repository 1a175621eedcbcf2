package window

import (
	"testing"
	"time"

	"github.com/weirflow/weir/arrowflow"
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
