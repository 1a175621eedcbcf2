package iceberg_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/iceberg"
	"github.com/weirflow/weir/sinks/parquet"
)

// The Nexmark bid shape: auction, bidder, price, channel, url, date_time,
// extra.
var bidSchema = arrow.NewSchema([]arrow.Field{
	{Name: "auction", Type: arrow.PrimitiveTypes.Int64},
	{Name: "bidder", Type: arrow.PrimitiveTypes.Int64},
	{Name: "price", Type: arrow.PrimitiveTypes.Int64},
	{Name: "channel", Type: arrow.BinaryTypes.String},
	{Name: "url", Type: arrow.BinaryTypes.String},
	{Name: "date_time", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
	{Name: "extra", Type: arrow.BinaryTypes.String},
}, nil)

// bidBatches makes n batches of size rows of bid-shaped data, the same
// for a seed.
func bidBatches(n, size int) []arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(3, 4))
	channels := []string{"Google", "Facebook", "Baidu", "Apple"}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	out := make([]arrow.RecordBatch, n)
	for i := range out {
		b := array.NewRecordBuilder(memory.DefaultAllocator, bidSchema)
		for r := 0; r < size; r++ {
			row := int64(i*size + r)
			auction := 1000 + rng.Int64N(1000)
			ch := channels[rng.IntN(len(channels))]
			b.Field(0).(*array.Int64Builder).Append(auction)
			b.Field(1).(*array.Int64Builder).Append(1000 + rng.Int64N(5000))
			b.Field(2).(*array.Int64Builder).Append(100 + rng.Int64N(100_000))
			b.Field(3).(*array.StringBuilder).Append(ch)
			b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("https://www.nexmark.com/%s/item.htm?query=1&channel_id=%d", ch, auction%97))
			b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(base + row*1000))
			b.Field(6).(*array.StringBuilder).Append(fmt.Sprintf("%032x", rng.Uint64()))
		}
		out[i] = b.NewRecordBatch()
		b.Release()
	}
	return out
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// BenchmarkSinkBids writes epochs of bid-shaped batches through one sink
// subtask, pre-commits and commits each: into an Iceberg table (SQL
// catalog on SQLite, local warehouse) and, in the same run, through the
// plain Parquet sink. Reported: rows/s, rows per CPU second (per core),
// and for Iceberg the commit latency per epoch.
//
//	go test -run XXX -bench SinkBids -benchtime 10x ./sinks/iceberg/
func BenchmarkSinkBids(b *testing.B) {
	const batches, size = 64, 4096 // 262,144 rows per epoch
	data := bidBatches(batches, size)
	defer func() {
		for _, r := range data {
			r.Release()
		}
	}()
	ctx := context.Background()
	run := func(b *testing.B, sink arrowflow.Sink) {
		w, err := sink.Open(&arrowflow.TaskInfo{Job: "bench", Name: "sink", Parallelism: 1, FirstEpoch: 1, Allocator: memory.DefaultAllocator})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		var commit time.Duration
		cpu0 := cpuSeconds()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			epoch := uint64(i + 1)
			for _, r := range data {
				r.Retain()
				if err := w.Write(ctx, arrowflow.NewBatch(r)); err != nil {
					b.Fatal(err)
				}
			}
			commit += commitEpoch(b, w, sink, epoch)
		}
		b.StopTimer()
		rows := float64(b.N * batches * size)
		b.ReportMetric(rows/b.Elapsed().Seconds(), "rows/s")
		if cpu := cpuSeconds() - cpu0; cpu > 0 {
			b.ReportMetric(rows/cpu, "rows/cpu-s")
		}
		b.ReportMetric(float64(commit.Milliseconds())/float64(b.N), "commit-ms/epoch")
	}
	b.Run("iceberg", func(b *testing.B) {
		s, err := iceberg.New(ctx, iceberg.Options{Catalog: iceberg.CatalogOptions{Warehouse: b.TempDir()}, Table: "bench.bids"}, bidSchema)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		run(b, s)
	})
	b.Run("parquet", func(b *testing.B) {
		s, err := parquet.New(parquet.Options{Path: filepath.Join(b.TempDir(), "bids")})
		if err != nil {
			b.Fatal(err)
		}
		run(b, s)
	})
}

// commitEpoch pre-commits w's epoch and commits it through sink, and
// returns how long the commit took.
func commitEpoch(b *testing.B, w arrowflow.SinkWriter, sink arrowflow.Sink, epoch uint64) time.Duration {
	ctx := context.Background()
	p, err := w.PreCommit(ctx, epoch)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if err := sink.Commit(ctx, epoch, [][]byte{p}); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}
