package parquet_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/parquet"
)

var benchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.PrimitiveTypes.Int64},
	{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "part", Type: arrow.PrimitiveTypes.Int32},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
}, nil)

// benchBatches makes batches of 8192 rows whose part column takes
// partitions distinct values at random.
func benchBatches(mem memory.Allocator, n, partitions int) []arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(1, 2))
	b := array.NewRecordBuilder(mem, benchSchema)
	defer b.Release()
	out := make([]arrow.RecordBatch, n)
	for i := range out {
		for r := range 8192 {
			b.Field(0).(*array.Int64Builder).Append(rng.Int64N(1e9))
			if rng.IntN(100) == 0 {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.Float64Builder).Append(float64(rng.IntN(100000)) / 100)
			}
			b.Field(2).(*array.Int32Builder).Append(int32(rng.IntN(partitions)))
			b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(1767225600000 + int64(i*8192+r)))
		}
		out[i] = b.NewRecordBatch()
	}
	return out
}

// BenchmarkWrite measures one writer: batches of 8192 rows split by a
// partition column with the given number of values, pre-committed and
// committed every 32 batches (files synced), zstd.
func BenchmarkWrite(b *testing.B) {
	for _, partitions := range []int{0, 1, 10, 100} {
		b.Run(fmt.Sprintf("partitions=%d", partitions), func(b *testing.B) {
			mem := memory.NewGoAllocator()
			batches := benchBatches(mem, 32, max(partitions, 1))
			defer func() {
				for _, r := range batches {
					r.Release()
				}
			}()
			var partitionBy []string
			if partitions > 0 {
				partitionBy = []string{"part"}
			}
			s, err := parquet.New(parquet.Options{Path: filepath.Join(b.TempDir(), "t"), PartitionBy: partitionBy})
			if err != nil {
				b.Fatal(err)
			}
			w, err := s.Open(&arrowflow.TaskInfo{Job: "bench", Parallelism: 1, Allocator: mem})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			b.ReportAllocs()
			b.SetBytes(8192 * (8 + 8 + 4 + 8))
			epoch := uint64(0)
			for i := 0; b.Loop(); i++ {
				rec := batches[i%len(batches)]
				rec.Retain()
				if err := w.Write(ctx, arrowflow.NewBatch(rec)); err != nil {
					b.Fatal(err)
				}
				if i%len(batches) == len(batches)-1 {
					epoch++
					p, err := w.PreCommit(ctx, epoch)
					if err != nil {
						b.Fatal(err)
					}
					if err := s.Commit(ctx, epoch, [][]byte{p}); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
