package nexmark

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/weirflow/weir/arrowflow"
)

// TestWatermark checks, batch by batch, that no event is at or behind the
// watermark current before its batch, that the watermark never goes back,
// that it is tight (at most MaxOutOfOrderness + WatermarkHoldback behind
// the newest event of the slowest split), and that no event is behind an
// earlier event of its split by more than MaxOutOfOrderness.
func TestWatermark(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		readers int
		margin  time.Duration // the expected MaxOutOfOrderness
	}{
		{"in-order", Config{Events: 20_000, Splits: 4, BatchSize: 300}, 2, 0},
		{"ooo=11/rate=3", Config{Seed: 2, Events: 3_000, Splits: 3, BatchSize: 10, EventsPerSecond: 3, OutOfOrderGroupSize: 11}, 1, 3334 * time.Millisecond},
		{"ooo=1000", Config{Seed: 3, Events: 30_000, Splits: 5, BatchSize: 256, OutOfOrderGroupSize: 1000}, 2, 100 * time.Millisecond},
		{"ooo=50/holdback", Config{Seed: 4, Splits: 2, BatchSize: 64, OutOfOrderGroupSize: 50, WatermarkHoldback: 4 * time.Second}, 1, 5 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := mustNew(t, tc.cfg)
			cfg := src.Config()
			if got := src.MaxOutOfOrderness(); got != tc.margin {
				t.Fatalf("MaxOutOfOrderness %v, want %v", got, tc.margin)
			}
			margin := arrowflow.EventTime(src.MaxOutOfOrderness())
			hold := arrowflow.EventTime(cfg.WatermarkHoldback)
			mem := newMem(t)
			late := 0 // events behind an earlier event of their split
			for r := range tc.readers {
				var mine []int
				for s := r; s < cfg.Splits; s += tc.readers {
					mine = append(mine, s)
				}
				rd := open(t, src, mem, states(mine...))
				maxET := map[int]arrowflow.EventTime{}
				prev := arrowflow.MinEventTime
				for batches := 0; cfg.Events > 0 || batches < 300; batches++ {
					wm := rd.Watermark()
					if wm < prev {
						t.Fatalf("watermark went back from %v to %v", prev, wm)
					}
					prev = wm
					if len(maxET) == len(mine) {
						slowest := arrowflow.MaxEventTime
						for _, s := range mine {
							if !rd.done(&rd.cursors[indexOf(rd, s)]) {
								slowest = min(slowest, maxET[s])
							}
						}
						if slowest != arrowflow.MaxEventTime && wm < slowest-margin-hold-1 {
							t.Fatalf("watermark %v is more than %v behind the slowest split's newest event %v",
								wm, time.Duration(margin+hold), slowest)
						}
					}
					k := rd.pick()
					b, err := rd.Next(context.Background())
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					s := rd.cursors[k].split
					for _, e := range eventsOf(t, b.Record) {
						et := arrowflow.EventTime(e.DateTime * int64(time.Millisecond))
						if et <= wm {
							t.Fatalf("split %d: event %v at or behind the watermark %v", s, e, wm)
						}
						if m, ok := maxET[s]; ok && et < m {
							late++
							if m-et > margin {
								t.Fatalf("split %d: event at %v is %v behind an earlier one at %v, more than MaxOutOfOrderness %v",
									s, et, time.Duration(m-et), m, time.Duration(margin))
							}
						}
						if m, ok := maxET[s]; !ok || et > m {
							maxET[s] = et
						}
					}
					b.Release()
				}
			}
			if (tc.margin > 0) != (late > 0) {
				t.Fatalf("%d events out of order, with MaxOutOfOrderness %v", late, tc.margin)
			}
		})
	}
}

func indexOf(rd *reader, split int) int {
	for i, c := range rd.cursors {
		if c.split == split {
			return i
		}
	}
	return -1
}

// TestWatermarkStart checks the watermark of a reader that has generated
// nothing yet: just below BaseTime, or below the holdback.
func TestWatermarkStart(t *testing.T) {
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	src := mustNew(t, Config{BaseTime: base, WatermarkHoldback: time.Second})
	rd := open(t, src, newMem(t), states(0, 1))
	if got, want := rd.Watermark(), arrowflow.EventTimeOf(base.Add(-time.Second))-1; got != want {
		t.Fatalf("watermark %v, want %v", got, want)
	}
}
