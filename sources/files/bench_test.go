package files

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkRead reads one file of 200,000 events (5 columns) with one
// reader, batches of 8192 rows.
func BenchmarkRead(b *testing.B) {
	const rows = 200_000
	dir := b.TempDir()
	for _, format := range []string{Parquet, "json", "csv"} {
		path := filepath.Join(dir, "events."+format)
		switch format {
		case Parquet:
			writeParquet(b, path, eventSchema, events(0, rows), 64<<10, true)
		case "json":
			writeFile(b, path, joinLines(linesOf(events(0, rows), jsonLine), false, false))
		case "csv":
			writeFile(b, path, joinLines(linesOf(events(0, rows), csvLine), false, false))
		}
		st, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("format=%s", format), func(b *testing.B) {
			src := mustNew(b, Options{Path: path, Format: format, Schema: eventSchema})
			ids := mustSplits(b, src)
			b.SetBytes(st.Size())
			b.ReportAllocs()
			for b.Loop() {
				rd, err := src.Open(nil, subtaskStates(ids, nil, 0, 1))
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for {
					batch, err := rd.Next(ctx)
					if err != nil {
						break
					}
					n += batch.NumRows()
					batch.Release()
				}
				rd.Close()
				if n != rows {
					b.Fatalf("%d rows", n)
				}
			}
			b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
