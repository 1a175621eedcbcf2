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
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Spec describes a family of event-time windows. Window boundaries are
// aligned to the Unix epoch plus Offset: a tumbling window of 10 s covers
// [00:00:00, 00:00:10), [00:00:10, 00:00:20), ... A window [start, end)
// holds the rows with start <= event time < end.
type Spec struct {
	Kind   Kind
	Size   time.Duration // window length, > 0
	Slide  time.Duration // hopping only: distance between window starts, > 0
	Offset time.Duration // shifts every boundary, in [0, Slide) (or [0, Size))
}

// Tumbling is the spec of tumbling windows of the given size.
func Tumbling(size time.Duration) Spec { return Spec{Kind: KindTumbling, Size: size} }

// Hopping is the spec of hopping (sliding) windows of the given size,
// starting every slide.
func Hopping(size, slide time.Duration) Spec {
	return Spec{Kind: KindHopping, Size: size, Slide: slide}
}

// String renders the spec, e.g. "HOP(size 10s, slide 2s)".
func (s Spec) String() string {
	switch s.Kind {
	case KindHopping:
		return fmt.Sprintf("HOP(size %s, slide %s)", s.Size, s.Slide)
	case KindSession:
		return fmt.Sprintf("SESSION(gap %s)", s.Size)
	}
	return fmt.Sprintf("%s(size %s)", s.Kind, s.Size)
}

// Validate reports a spec that cannot describe windows.
func (s Spec) Validate() error {
	if s.Size <= 0 {
		if s.Kind == KindSession {
			return fmt.Errorf("window %s: the gap must be positive", s)
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
	default:
		return fmt.Errorf("window: unknown kind %d", int(s.Kind))
	}
	if s.Offset < 0 || s.Offset >= step {
		return fmt.Errorf("window %s: offset %s must be in [0, %s)", s, s.Offset, step)
	}
	return nil
}

// pane is the length of the panes rows are aggregated into: the window
// size for tumbling windows, gcd(size, slide) for hopping ones, so that
// every window is a whole number of panes and each row is aggregated once
// however many windows it belongs to.
func (s Spec) pane() int64 {
	if s.Kind == KindHopping {
		return gcd(int64(s.Size), int64(s.Slide))
	}
	return int64(s.Size)
}

// step is the distance between consecutive window starts.
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
// starts at p: the pane lives until that window has fired.
func (s Spec) lastWindowEnd(p int64) int64 {
	return floorTo(p, s.step(), int64(s.Offset)) + int64(s.Size)
}
