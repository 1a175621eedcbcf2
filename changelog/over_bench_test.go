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
	// The plain Go reference over the same rows: per partition a ring of
	// the frame's values (ROWS n), running aggregates (ROWS UNBOUNDED) or a
	// queue of the last second's rows (RANGE), one result row per input
	// row into reused slices. It holds no rows until a watermark and
	// copies nothing into Arrow: an upper bound.
	for _, fr := range []OverFrame{OverRows(10), OverRowsUnbounded(), OverRange(time.Second)} {
		b.Run(fmt.Sprintf("frame=%s/impl=go", fr), func(b *testing.B) {
			type part struct {
				vals, times []int64
				n, sum, max int64
			}
			parts := map[int64]*part{}
			var outN, outS, outM []int64
			rows := int64(0)
			b.SetBytes(batch * 24)
			for i := 0; b.Loop(); i++ {
				rec := recs[i%len(recs)]
				ks := rec.Column(0).(*array.Int64).Int64Values()
				ts := rec.Column(1).(*array.Timestamp).TimestampValues()
				vs := rec.Column(2).(*array.Int64).Int64Values()
				outN, outS, outM = outN[:0], outS[:0], outM[:0]
				for j, k := range ks {
					p := parts[k]
					if p == nil {
						p = &part{max: vs[j]}
						parts[k] = p
					}
					v, t := vs[j], int64(ts[j])+int64(i/len(recs))*int64(len(recs)*batch/4)
					var n, sum, mx int64
					switch {
					case fr.Unbounded:
						p.n, p.sum, p.max = p.n+1, p.sum+v, max(p.max, v)
						n, sum, mx = p.n, p.sum, p.max
					case fr.Range:
						p.vals, p.times = append(p.vals, v), append(p.times, t)
						drop := 0
						for drop < len(p.times) && p.times[drop] < t-1000 {
							drop++
						}
						p.vals, p.times = p.vals[drop:], p.times[drop:]
						fallthrough
					default:
						if !fr.Range {
							p.vals = append(p.vals, v)
							if int64(len(p.vals)) > fr.Rows+1 {
								p.vals = p.vals[1:]
							}
						}
						n, mx = int64(len(p.vals)), p.vals[0]
						for _, x := range p.vals {
							sum += x
							mx = max(mx, x)
						}
					}
					outN, outS, outM = append(outN, n), append(outS, sum), append(outM, mx)
				}
				rows += int64(len(outN))
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
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
