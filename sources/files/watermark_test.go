package files

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirflow/weir/arrowflow"
)

// The watermark follows its definition after every batch, computed here
// from the rows seen: each file's largest event time minus the delay;
// the minimum over the files still to read (all of them, or only the one
// being read with FilesInEventTimeOrder), never going back, and
// MaxEventTime once every file is read. The files are out of event-time
// order: by default no row is at or behind the watermark; with
// FilesInEventTimeOrder the second file's rows are late, as documented.
func TestWatermark(t *testing.T) {
	const delay = 2 * time.Second
	// Files in split order, with the event ids they hold.
	files := []struct{ name, from, to int }{{0, 100, 200}, {1, 0, 100}, {2, 200, 260}}
	for _, format := range []string{Parquet, "json"} {
		for _, ordered := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/ordered=%v", format, ordered), func(t *testing.T) {
				mem := newMem(t)
				dir := t.TempDir()
				fileOf := map[int64]int{} // event id -> file
				for _, f := range files {
					path := filepath.Join(dir, fmt.Sprint("f", f.name))
					rows := events(f.from, f.to)
					if format == Parquet {
						writeParquet(t, path, eventSchema, rows, 16, true)
					} else {
						writeFile(t, path, joinLines(linesOf(rows, jsonLine), false, false))
					}
					for i := f.from; i < f.to; i++ {
						fileOf[int64(i)] = f.name
					}
				}
				src := mustNew(t, Options{Path: dir, Format: format, Schema: eventSchema, BatchSize: 13,
					EventTime: "ts", MaxOutOfOrderness: delay, FilesInEventTimeOrder: ordered})
				if c, ok := arrowflow.EventTimeColumn(src.Schema()); !ok || c != 3 {
					t.Fatalf("event-time column %d, %v", c, ok)
				}
				rd := openReader(t, src, mem, 0, 1, subtaskStates(mustSplits(t, src), nil, 0, 1))

				maxET := map[int]arrowflow.EventTime{}
				seen := map[int]int{}
				want := func(prev arrowflow.EventTime) arrowflow.EventTime {
					wm := arrowflow.MaxEventTime
					for _, f := range files {
						if seen[f.name] == f.to-f.from {
							continue // read to its end
						}
						m, ok := maxET[f.name]
						if !ok {
							wm = arrowflow.MinEventTime
						} else {
							wm = min(wm, m-arrowflow.EventTime(delay))
						}
						if ordered {
							break // only the file being read counts
						}
					}
					return max(prev, wm)
				}
				prev, late := arrowflow.MinEventTime, 0
				for {
					wm := rd.Watermark()
					if w := want(prev); wm != w {
						t.Fatalf("after %v rows: watermark %v, want %v", seen, wm, w)
					}
					prev = wm
					rows, eof := readN(t, rd, 1)
					if eof {
						break
					}
					for _, r := range rows {
						et := arrowflow.EventTime(r[3].(time.Time).UnixNano())
						if et <= wm {
							late++
						}
						f := fileOf[r[0].(int64)]
						if m, ok := maxET[f]; !ok || et > m {
							maxET[f] = et
						}
						seen[f]++
					}
				}
				if wm := rd.Watermark(); wm != arrowflow.MaxEventTime {
					t.Fatalf("watermark after the last file %v, want MaxEventTime", wm)
				}
				if ordered != (late > 0) {
					t.Fatalf("%d rows at or behind the watermark", late)
				}
			})
		}
	}
}

// Without an event-time column the watermark is MinEventTime.
func TestWatermarkWithoutEventTime(t *testing.T) {
	mem := newMem(t)
	path := filepath.Join(t.TempDir(), "a.json")
	writeFile(t, path, jsonLine(event(1)))
	src := mustNew(t, Options{Path: path, Format: "json", Schema: eventSchema})
	rd := openReader(t, src, mem, 0, 1, subtaskStates(mustSplits(t, src), nil, 0, 1))
	readN(t, rd, -1)
	if wm := rd.Watermark(); wm != arrowflow.MinEventTime {
		t.Fatalf("watermark %v", wm)
	}
}
