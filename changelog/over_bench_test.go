package changelog

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/window"
)

// BenchmarkOverAggregate runs batches of 4096 rows (keys uniform over
// 1000 partitions, times in order) through an OVER aggregation with
// COUNT(*), SUM and MAX, a watermark after every batch.
func BenchmarkOverAggregate(b *testing.B) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	const batch = 4096
	mem := memory.DefaultAllocator
	rng := rand.New(rand.NewPCG(1, 2))
	var recs []arrow.RecordBatch
	for i := range 16 {
		kb, tb, vb := array.NewInt64Builder(mem), array.NewTimestampBuilder(mem, schema.Field(1).Type.(*arrow.TimestampType)), array.NewInt64Builder(mem)
		for j := range batch {
			kb.Append(rng.Int64N(1000))
			tb.Append(arrow.Timestamp(int64(i*batch+j) / 4))
			vb.Append(rng.Int64N(1000))
		}
		recs = append(recs, array.NewRecordBatch(schema, []arrow.Array{kb.NewArray(), tb.NewArray(), vb.NewArray()}, batch))
	}
	aggs := []window.Agg{
		{Func: kernels.AggCountStar, Name: "n"},
		{Func: kernels.AggSum, Args: []string{"v"}, Name: "s"},
		{Func: kernels.AggMax, Args: []string{"v"}, Name: "m"},
	}
	for _, fr := range []OverFrame{OverRows(10), OverRowsUnbounded(), OverRange(time.Second)} {
		b.Run(fmt.Sprintf("frame=%s", fr), func(b *testing.B) {
			cfg := OverAggregate{Input: schema, PartitionBy: []string{"k"}, Time: "ts", Frame: fr, Aggs: aggs}
			op := cfg.Factory()()
			if err := op.Open(&arrowflow.TaskInfo{Name: "over", Parallelism: 1, MaxParallelism: 128, KeyGroups: state.KeyGroupRange{Start: 0, End: 128}, Allocator: mem}); err != nil {
				b.Fatal(err)
			}
			defer op.Close()
			em := &overDiscard{}
			b.ReportAllocs()
			b.SetBytes(batch * 24)
			shift := int64(0)
			for i := 0; b.Loop(); i++ {
				rec := recs[i%len(recs)]
				if i%len(recs) == 0 && i > 0 {
					shift += int64(len(recs) * batch / 4)
				}
				// Shift the times so that they keep increasing.
				tb := array.NewTimestampBuilder(mem, schema.Field(1).Type.(*arrow.TimestampType))
				ts := rec.Column(1).(*array.Timestamp)
				for j := range batch {
					tb.Append(ts.Value(j) + arrow.Timestamp(shift))
				}
				tcol := tb.NewArray()
				tb.Release()
				r2 := array.NewRecordBatch(schema, []arrow.Array{rec.Column(0), tcol, rec.Column(2)}, batch)
				tcol.Release()
				if err := op.ProcessBatch(0, arrowflow.Batch{Record: r2}, em); err != nil {
					b.Fatal(err)
				}
				last := int64(ts.Value(batch-1)) + shift
				if err := op.ProcessWatermark(arrowflow.EventTime((last-50)*int64(time.Millisecond)), em); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(em.rows)/b.Elapsed().Seconds(), "rows/s")
		})
	}
	for _, r := range recs {
		r.Release()
	}
}

type overDiscard struct{ rows int64 }

func (d *overDiscard) Emit(b arrowflow.Batch) error {
	d.rows += int64(b.NumRows())
	b.Release()
	return nil
}

func (d *overDiscard) EmitWatermark(arrowflow.EventTime) error { return nil }
