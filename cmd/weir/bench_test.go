package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirflow/weir/arrowflow"
)

// BenchmarkCheckpointOverhead runs the built-in windowed job (datagen ->
// keyed 1 s tumbling windows -> Parquet) without periodic checkpoints and
// with durable checkpoints every 10 s and every 1 s, in one run, so the
// rows/s can be compared on the same machine state:
//
//	go test -run XXX -bench CheckpointOverhead -benchtime 1x ./cmd/weir/
func BenchmarkCheckpointOverhead(b *testing.B) {
	const rows = 30_000_000
	for _, iv := range []time.Duration{0, 10 * time.Second, time.Second} {
		name := "none"
		if iv > 0 {
			name = "every-" + iv.String()
		}
		b.Run(name, func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				dir := b.TempDir()
				o := jobOptions{rows: rows, parallelism: 2, seed: 1, out: filepath.Join(dir, "out"), fileSize: 128 << 20}
				o.cp = checkpointFlags{interval: iv, retain: 3}
				if iv > 0 {
					o.cp.dir = filepath.Join(dir, "cp")
				}
				g, err := builtinJob("windowed", o)
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				job, err := runWithCheckpoints(context.Background(), io.Discard, g, o.cp, arrowflow.Options{})
				total += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if i == 0 {
					b.Logf("%s: %d epochs", name, job.EpochsCompleted())
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/total.Seconds(), "rows/s")
			b.ReportMetric(0, "ns/op")
			_ = fmt.Sprint()
		})
	}
}
