package datagen

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
)

// BenchmarkNext measures generating batches with one reader over all
// splits, for the default fields and for every supported type.
func BenchmarkNext(b *testing.B) {
	for _, size := range []int{1024, 8192, 65536} {
		for _, fields := range []struct {
			name string
			cfg  Config
		}{
			{"default", Config{Seed: 1}},
			{"alltypes", allTypesConfig(0)},
		} {
			b.Run(fmt.Sprintf("batch=%d/fields=%s", size, fields.name), func(b *testing.B) {
				cfg := fields.cfg
				cfg.BatchSize = size
				src := mustNew(b, cfg)
				mem := memory.NewGoAllocator()
				rd, err := src.Open(&arrowflow.TaskInfo{Allocator: mem}, allStates(src))
				if err != nil {
					b.Fatal(err)
				}
				defer rd.Close()
				ctx := context.Background()
				b.ReportAllocs()
				rows := 0
				for b.Loop() {
					batch, err := rd.Next(ctx)
					if err != nil {
						b.Fatal(err)
					}
					rows += batch.NumRows()
					batch.Release()
				}
				b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}
