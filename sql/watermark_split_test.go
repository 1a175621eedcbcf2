package sql

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// A WATERMARK on a computed column is generated per split inside the
// source: a subtask reading several splits, each in order but far apart
// in event time within one batch, must lose no row as late. Before the
// watermark moved into the source, one watermark operator per subtask
// ran over the interleaved splits and dropped rows of the lagging ones
// (a different number on every run).
func TestComputedColumnWatermarkIsPerSplit(t *testing.T) {
	const rows = 200_000
	for _, par := range []int{1, 2, 4} {
		for _, splits := range []int{1, 8, 50} {
			t.Run(fmt.Sprintf("p%d/s%d", par, splits), func(t *testing.T) {
				script := fmt.Sprintf(`
CREATE TABLE src (
    v BIGINT,
    ts AS TO_TIMESTAMP_LTZ(v, 3),
    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
    'connector' = 'datagen',
    'fields.v.kind' = 'sequence',
    'fields.v.start' = '0',
    'fields.v.end' = '%d',
    'splits' = '%d'
);
CREATE TABLE out (w TIMESTAMP(3), n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out
SELECT window_start, COUNT(*)
FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY window_start, window_end;`, rows-1, splits)
				got := compileRun(t, script, par, "out")
				// The reference: v is 0..rows-1 milliseconds, 1000 a
				// window.
				var want []string
				for w := int64(0); w < rows/1000; w++ {
					want = append(want, fmt.Sprintf("%s | 1000", time.UnixMilli(w*1000).UTC().Format("2006-01-02 15:04:05 -0700 UTC")))
				}
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Fatalf("%d windows, want %d; first %q, want %q", len(got), len(want), first(got), first(want))
				}
			})
		}
	}
}
