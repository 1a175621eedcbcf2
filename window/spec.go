package window

import (
	"fmt"
	"time"
)

// Kind is a kind of window.
type Kind int

const (
	// KindTumbling windows are fixed-size, non-overlapping and contiguous.
	KindTumbling Kind = iota
	// KindHopping windows are fixed-size and start every Slide; a row
	// belongs to Size/Slide windows when Slide divides Size.
	KindHopping
	// KindSession windows are per key and close after a gap of Size
	// without rows; overlapping sessions merge.
	KindSession
	// KindCumulate windows (Flink's CUMULATE) all start at a boundary of
	// Size and end every Slide up to Size: [s, s+Slide), [s, s+2*Slide),
	// ..., [s, s+Size), then [s+Size, s+Size+Slide), ... Size is an
	// integral multiple of Slide; a row belongs to the windows of its
	// period of Size that end after it.
	KindCumulate
)

// String names the kind as Flink SQL's window functions do.
func (k Kind) String() string {
	switch k {
	case KindTumbling:
		return "TUMBLE"
	case KindHopping:
		return "HOP"
	case KindSession:
		return "SESSION"
	case KindCumulate:
		return "CUMULATE"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Spec describes a family of event-time windows. Window boundaries are
// aligned to the Unix epoch plus Offset: a tumbling window of 10 s covers
// [00:00:00, 00:00:10), [00:00:10, 00:00:20), ... A window [start, end)
// holds the rows with start <= event time < end.
type Spec struct {
	Kind   Kind
	Size   time.Duration // window length (cumulating: the max size), > 0
	Slide  time.Duration // hopping: distance between window starts; cumulating: between window ends
	Offset time.Duration // shifts every boundary, in [0, Slide) for hopping, else [0, Size)
}

// Tumbling is the spec of tumbling windows of the given size.
func Tumbling(size time.Duration) Spec { return Spec{Kind: KindTumbling, Size: size} }

// Hopping is the spec of hopping (sliding) windows of the given size,
// starting every slide.
func Hopping(size, slide time.Duration) Spec {
	return Spec{Kind: KindHopping, Size: size, Slide: slide}
}

// Cumulate is the spec of cumulating windows (Flink's CUMULATE): windows
// start every maxSize and, from each start, end every step up to maxSize.
// maxSize must be an integral multiple of step.
func Cumulate(maxSize, step time.Duration) Spec {
	return Spec{Kind: KindCumulate, Size: maxSize, Slide: step}
}

// String renders the spec, e.g. "HOP(size 10s, slide 2s)".
func (s Spec) String() string {
	switch s.Kind {
	case KindHopping:
		return fmt.Sprintf("HOP(size %s, slide %s)", s.Size, s.Slide)
	case KindSession:
		return fmt.Sprintf("SESSION(gap %s)", s.Size)
	case KindCumulate:
		return fmt.Sprintf("CUMULATE(max size %s, step %s)", s.Size, s.Slide)
	}
	return fmt.Sprintf("%s(size %s)", s.Kind, s.Size)
}

// Validate reports a spec that cannot describe windows.
func (s Spec) Validate() error {
	if s.Size <= 0 {
		switch s.Kind {
		case KindSession:
			return fmt.Errorf("window %s: the gap must be positive", s)
		case KindCumulate:
			return fmt.Errorf("window %s: max size must be positive", s)
		}
		return fmt.Errorf("window %s: size must be positive", s)
	}
	if s.Kind == KindSession {
		if s.Offset != 0 || s.Slide != 0 {
			return fmt.Errorf("window %s: sessions take neither an offset nor a slide", s)
		}
		return nil
	}
	step := s.Size
	switch s.Kind {
	case KindTumbling:
	case KindHopping:
		if s.Slide <= 0 {
			return fmt.Errorf("window %s: slide must be positive", s)
		}
		if s.Slide > s.Size {
			return fmt.Errorf("window %s: a slide longer than the size would leave rows in no window", s)
		}
		step = s.Slide
	case KindCumulate:
		// Every window starts at a boundary of Size, so the offset ranges
		// over [0, Size).
		if s.Slide <= 0 {
			return fmt.Errorf("window %s: step must be positive", s)
		}
		if s.Slide > s.Size {
			return fmt.Errorf("window %s: a step longer than the max size would leave rows in no window", s)
		}
		if s.Size%s.Slide != 0 {
			return fmt.Errorf("window %s: max size must be an integral multiple of the step", s)
		}
	default:
		return fmt.Errorf("window: unknown kind %d", int(s.Kind))
	}
	if s.Offset < 0 || s.Offset >= step {
		return fmt.Errorf("window %s: offset %s must be in [0, %s)", s, s.Offset, step)
	}
	return nil
}

// pane is the length of the panes rows are aggregated into: the window
// size for tumbling windows, gcd(size, slide) for hopping ones, the step
// for cumulating ones, so that every window is a whole number of panes
// and each row is aggregated once however many windows it belongs to.
func (s Spec) pane() int64 {
	switch s.Kind {
	case KindHopping:
		return gcd(int64(s.Size), int64(s.Slide))
	case KindCumulate:
		return int64(s.Slide)
	}
	return int64(s.Size)
}

// step is the distance between consecutive window starts (for cumulating
// windows, between the starts of consecutive periods: their windows share
// a start).
func (s Spec) step() int64 {
	if s.Kind == KindHopping {
		return int64(s.Slide)
	}
	return int64(s.Size)
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// floorTo is the largest boundary offset + k*unit that is <= t, also for
// negative t.
func floorTo(t, unit, offset int64) int64 {
	d := t - offset
	q := d / unit
	if d%unit != 0 && d < 0 {
		q--
	}
	return q*unit + offset
}

// lastWindowEnd is the end of the last window containing the pane that
// starts at p: the pane lives until that window has fired. The last
// window starts at the last step boundary at or before p (for cumulating
// windows, the start of p's period, whose largest window ends last).
func (s Spec) lastWindowEnd(p int64) int64 {
	return floorTo(p, s.step(), int64(s.Offset)) + int64(s.Size)
}

// bounds is a window [start, end), in ns.
type bounds struct{ start, end int64 }

// appendWindows appends to dst the windows that contain the pane
// starting at p, in increasing order of end, and returns the extended
// slice. The last one ends at lastWindowEnd(p).
func (s Spec) appendWindows(dst []bounds, p int64) []bounds {
	size, off := int64(s.Size), int64(s.Offset)
	if s.Kind == KindCumulate {
		// One start, the period's; the ends after p, every step up to the
		// max size.
		step := int64(s.Slide)
		start := floorTo(p, size, off)
		for end := start + ((p-start)/step+1)*step; end <= start+size; end += step {
			dst = append(dst, bounds{start, end})
		}
		return dst
	}
	// Tumbling and hopping: one size, starts at the step boundaries in
	// (p - size, p].
	step := s.step()
	for start := floorTo(p-size, step, off) + step; start <= p; start += step {
		dst = append(dst, bounds{start, start + size})
	}
	return dst
}
