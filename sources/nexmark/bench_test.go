package nexmark

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
)

// BenchmarkNext measures generating batches with one reader (one core)
// over all splits; events/s is the rate of one core.
func BenchmarkNext(b *testing.B) {
	for _, size := range []int{1024, 4096, 16384} {
		for _, ooo := range []int64{1, 1000} {
			b.Run(fmt.Sprintf("batch=%d/ooo=%d", size, ooo), func(b *testing.B) {
				src := mustNew(b, Config{Seed: 1, BatchSize: size, OutOfOrderGroupSize: ooo})
				rd, err := src.Open(&arrowflow.TaskInfo{Allocator: memory.NewGoAllocator()}, states(allSplits(src)...))
				if err != nil {
					b.Fatal(err)
				}
				defer rd.Close()
				ctx := context.Background()
				b.ReportAllocs()
				events := 0
				for b.Loop() {
					batch, err := rd.Next(ctx)
					if err != nil {
						b.Fatal(err)
					}
					events += batch.NumRows()
					batch.Release()
				}
				b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}

// BenchmarkProject measures flattening batches of mixed events into
// persons, auctions and bids.
func BenchmarkProject(b *testing.B) {
	src := mustNew(b, Config{Seed: 1, BatchSize: 4096, Splits: 1})
	mem := memory.NewGoAllocator()
	rd, err := src.Open(&arrowflow.TaskInfo{Allocator: mem}, states(0))
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	batch, err := rd.Next(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer batch.Release()
	for _, typ := range []EventType{PersonEvent, AuctionEvent, BidEvent} {
		b.Run(typ.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec, err := Project(mem, batch, typ)
				if err != nil {
					b.Fatal(err)
				}
				rec.Release()
			}
			b.ReportMetric(float64(batch.NumRows())*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
