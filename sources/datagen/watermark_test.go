package datagen

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
)

// TestWatermarkNoLateRow checks, batch by batch, that no generated row is
// at or behind the watermark current before it, that the watermark never
// goes back, and that it equals its definition, computed here from the
// rows seen: per unfinished split, the largest event time minus
// MaxOutOfOrderness (rounded up to the column's unit) minus 1ns.
func TestWatermarkNoLateRow(t *testing.T) {
	defaultJitter := Config{Seed: 3, Rows: 20_000, BatchSize: 50, EventTime: EventTimeConfig{MaxOutOfOrderness: 7 * time.Millisecond}}
	unbounded := defaultJitter
	unbounded.Rows = 0
	nanos := Config{
		Rows: 5_000, BatchSize: 33, Splits: 3,
		Fields: []Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64, Kind: Sequence},
			{Name: "t", Type: arrow.FixedWidthTypes.Timestamp_ns},
		},
		EventTime: EventTimeConfig{Column: "t", Interval: 1, MaxOutOfOrderness: 40},
	}
	seconds := allTypesConfig(20_000)
	seconds.BatchSize = 13
	for _, tc := range []struct {
		name    string
		cfg     Config
		readers int
		etCol   int
		unit    arrow.TimeUnit
		margin  time.Duration // MaxOutOfOrderness rounded up to the unit
	}{
		{"ms/readers=1", defaultJitter, 1, 4, arrow.Millisecond, 7 * time.Millisecond},
		{"ms/readers=3", defaultJitter, 3, 4, arrow.Millisecond, 7 * time.Millisecond},
		{"ms/unbounded", unbounded, 2, 4, arrow.Millisecond, 7 * time.Millisecond},
		{"s/readers=2", seconds, 2, 21, arrow.Second, 2 * time.Second},
		{"ns/readers=1", nanos, 1, 1, arrow.Nanosecond, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := mustNew(t, tc.cfg)
			mem := newMem(t)
			cfg := src.Config()
			S := int64(cfg.Splits)
			for p := range tc.readers {
				var mine []int
				for s := p; s < cfg.Splits; s += tc.readers {
					mine = append(mine, s)
				}
				rd := open(t, src, mem, states(mine...))
				maxET := map[int64]arrowflow.EventTime{} // by split
				seen := map[int64]int64{}                // rows per split
				splitRows := func(s int64) int64 {       // rows a split has in all
					if cfg.Rows == 0 {
						return -1
					}
					return (cfg.Rows - s + S - 1) / S
				}
				want := func() arrowflow.EventTime {
					wm := arrowflow.MaxEventTime
					for _, s := range mine {
						s := int64(s)
						if seen[s] == splitRows(s) {
							continue // done
						}
						m, ok := maxET[s]
						if !ok {
							return arrowflow.MinEventTime
						}
						wm = min(wm, m-arrowflow.EventTime(tc.margin)-1)
					}
					return wm
				}
				prev := arrowflow.MinEventTime
				rows := 0
				for batches := 0; cfg.Rows > 0 || batches < 200; batches++ {
					wm := rd.Watermark()
					if wm != want() {
						t.Fatalf("reader %d, after %d rows: watermark %v, want %v", p, rows, wm, want())
					}
					if wm < prev {
						t.Fatalf("reader %d: watermark went back from %v to %v", p, prev, wm)
					}
					prev = wm
					b, err := rd.Next(context.Background())
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					for _, row := range rowsOf(t, b.Record) {
						et := arrowflow.TimestampToEventTime(row[tc.etCol].(arrow.Timestamp), tc.unit)
						if et <= wm {
							t.Fatalf("row %v: event time %v is at or behind the watermark %v", row[0], et, wm)
						}
						s := row[0].(int64) % S
						if m, ok := maxET[s]; !ok || et > m {
							maxET[s] = et
						}
						seen[s]++
						rows++
					}
					b.Release()
				}
				if cfg.Rows > 0 && rd.Watermark() != arrowflow.MaxEventTime {
					t.Fatalf("reader %d: watermark after the last row %v, want +inf", p, rd.Watermark())
				}
				if prev == arrowflow.MinEventTime {
					t.Fatalf("reader %d: the watermark never advanced", p)
				}
			}
		})
	}
}

func TestWatermarkWithoutEventTime(t *testing.T) {
	cfg := Config{Rows: 100, Fields: []Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Kind: Sequence}}}
	src := mustNew(t, cfg)
	rd := open(t, src, newMem(t), allStates(src))
	for {
		if wm := rd.Watermark(); wm != arrowflow.MinEventTime {
			t.Fatalf("watermark %v without event time, want -inf", wm)
		}
		b, err := rd.Next(context.Background())
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		b.Release()
	}
}

func TestWatermarkFinishedSplitsDoNotHoldBack(t *testing.T) {
	// Rows 10 over 8 splits: splits 0 and 1 have two rows, the others one.
	cfg := Config{Rows: 10, BatchSize: 1}
	src := mustNew(t, cfg)
	rd := open(t, src, newMem(t), allStates(src))
	// One round of 8 batches: rows 0..7; splits 2..7 are done.
	if rows, _ := readBatches(t, rd, 8); len(rows) != 8 {
		t.Fatalf("read %d rows", len(rows))
	}
	start := arrowflow.EventTimeOf(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	// Splits 0 and 1 emitted rows 0 and 1 (ts +0ms, +1ms): min is split 0.
	if wm, want := rd.Watermark(), start-1; wm != want {
		t.Fatalf("watermark %v, want %v", wm, want)
	}
	readBatches(t, rd, 1) // row 8, split 0's last: only split 1 is left
	if wm, want := rd.Watermark(), start+arrowflow.EventTime(time.Millisecond)-1; wm != want {
		t.Fatalf("watermark %v (%d), want %v", wm, wm, want)
	}
}
