package window

import (
	"time"

	"github.com/weirflow/weir/arrowflow"
)

// SplitWatermarks generates a source reader's watermark from the event
// times it reads, split by split, as Flink's bounded-out-of-orderness
// strategy with idleness does:
//
//   - each split's watermark is the largest event time it produced minus
//     Bound (rows up to Bound behind the newest one still count as on time);
//   - the reader's watermark is the minimum over its active splits, so a
//     slow split holds time back for everyone;
//   - a split that produced no row for IdleTimeout (0: never) is idle and
//     stops holding the watermark back until it produces a row again;
//   - when every split is idle, the watermark is the largest of their
//     watermarks: nothing that was seen can be contradicted any more, and
//     windows of a quiet stream still fire.
//
// The watermark never goes backwards, also when an idle split wakes up
// behind it (its rows up to the watermark are then late, as in Flink).
// A SplitWatermarks serves one reader goroutine.
type SplitWatermarks struct {
	Bound       time.Duration
	IdleTimeout time.Duration

	splits  map[string]*splitMark
	emitted arrowflow.EventTime
}

type splitMark struct {
	max      arrowflow.EventTime // largest event time seen, MinEventTime if none
	lastSeen time.Time           // wall-clock time of the last row
	ended    bool
}

// NewSplitWatermarks returns a generator with the given bound and idle
// timeout.
func NewSplitWatermarks(bound, idleTimeout time.Duration) *SplitWatermarks {
	return &SplitWatermarks{Bound: bound, IdleTimeout: idleTimeout, splits: map[string]*splitMark{}, emitted: arrowflow.MinEventTime}
}

// AddSplit registers a split (with no rows yet) at wall-clock time now. A
// split with no rows holds the watermark at its minimum until it produces
// one or turns idle.
func (w *SplitWatermarks) AddSplit(split string, now time.Time) {
	if _, ok := w.splits[split]; !ok {
		w.splits[split] = &splitMark{max: arrowflow.MinEventTime, lastSeen: now}
	}
}

// Observe records that split produced rows whose largest event time is
// maxEventTime, at wall-clock time now.
func (w *SplitWatermarks) Observe(split string, maxEventTime arrowflow.EventTime, now time.Time) {
	s, ok := w.splits[split]
	if !ok {
		s = &splitMark{max: arrowflow.MinEventTime}
		w.splits[split] = s
	}
	s.max = max(s.max, maxEventTime)
	s.lastSeen = now
}

// EndSplit records that a split has no more rows (a bounded split that is
// done): it no longer holds the watermark back.
func (w *SplitWatermarks) EndSplit(split string) {
	if s, ok := w.splits[split]; ok {
		s.ended = true
	}
}

// Watermark returns the reader's watermark at wall-clock time now.
func (w *SplitWatermarks) Watermark(now time.Time) arrowflow.EventTime {
	active, idle := arrowflow.MaxEventTime, arrowflow.MinEventTime
	anyActive, any := false, false
	for _, s := range w.splits {
		if s.ended {
			continue
		}
		any = true
		m := w.markOf(s)
		if w.IdleTimeout > 0 && now.Sub(s.lastSeen) >= w.IdleTimeout {
			idle = max(idle, m)
			continue
		}
		anyActive = true
		active = min(active, m)
	}
	var wm arrowflow.EventTime
	switch {
	case anyActive:
		wm = active
	case any:
		wm = idle
	default:
		// Every split ended (or there is none yet): nothing holds time.
		if len(w.splits) == 0 {
			return w.emitted
		}
		wm = arrowflow.MaxEventTime
	}
	w.emitted = max(w.emitted, wm)
	return w.emitted
}

// Idle reports whether the reader is idle at wall-clock time now: an idle
// timeout is set and no split is active (each one has been quiet for the
// timeout or has ended, or the reader has no split at all). A reader
// implementing arrowflow.IdleReporter returns this, so that its quiet
// subtask stops holding back the watermark downstream.
func (w *SplitWatermarks) Idle(now time.Time) bool {
	if w.IdleTimeout <= 0 {
		return false
	}
	for _, s := range w.splits {
		if !s.ended && now.Sub(s.lastSeen) < w.IdleTimeout {
			return false
		}
	}
	return true
}

// markOf is a split's own watermark: its largest event time minus the
// bound, saturating at the ends of event time.
func (w *SplitWatermarks) markOf(s *splitMark) arrowflow.EventTime {
	if s.max == arrowflow.MinEventTime {
		return arrowflow.MinEventTime
	}
	b := arrowflow.EventTime(w.Bound)
	if s.max < arrowflow.MinEventTime+b {
		return arrowflow.MinEventTime
	}
	return s.max - b
}
