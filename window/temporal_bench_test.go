package window

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/state"
)

// temporalBenchBatches is a probe stream of rows rows in batches of batch
// rows, key uniform in [0, keys), v random, event time advancing 10 µs
// per row, and the version stream to go with it: right[k] holds the
// versions whose times fall in left[k]'s time range, one version of a
// uniformly chosen key every perVersion probe rows, at that probe row's
// time. right[0] also starts with one version of every key, 1 µs before
// the first probe row, so that every probe row of an inner join finds a
// version.
func temporalBenchBatches(rows, batch, keys, perVersion int) (left, right []arrow.RecordBatch) {
	rng := rand.New(rand.NewPCG(1, uint64(keys)))
	mem := memory.NewGoAllocator()
	ts := int64(1_700_000_000_000_000) // µs
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "key", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	appendRow := func(b *array.RecordBuilder, key, ts int64) {
		b.Field(0).(*array.Int64Builder).Append(key)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(ts))
		b.Field(2).(*array.Int64Builder).Append(rng.Int64N(1_000_000))
	}
	for done := 0; done < rows; done += batch {
		lb, rb := array.NewRecordBuilder(mem, schema), array.NewRecordBuilder(mem, schema)
		if done == 0 {
			for k := 0; k < keys; k++ {
				appendRow(rb, int64(k), ts-1)
			}
		}
		for i := done; i < done+batch; i++ {
			appendRow(lb, rng.Int64N(int64(keys)), ts)
			if i%perVersion == perVersion-1 {
				appendRow(rb, rng.Int64N(int64(keys)), ts)
			}
			ts += 10
		}
		left, right = append(left, lb.NewRecordBatch()), append(right, rb.NewRecordBatch())
		lb.Release()
		rb.Release()
	}
	return left, right
}

// BenchmarkTemporalJoin: an inner temporal join of a probe stream with a
// versioned table (left rows uniform over the keys, one new version per
// 100 probe rows), one subtask, left and right batches interleaved, a
// watermark (the left batch's last time) after every pair. Reports input
// rows/s (both sides; one goroutine: rows/s per core), output rows and
// the state's peak size.
func BenchmarkTemporalJoin(b *testing.B) {
	const rows, batch, keys, perVersion = 1 << 20, 4096, 1000, 100
	left, right := temporalBenchBatches(rows, batch, keys, perVersion)
	defer func() {
		for k := range left {
			left[k].Release()
			right[k].Release()
		}
	}()
	var inRows int64
	for k := range left {
		inRows += left[k].NumRows() + right[k].NumRows()
	}
	b.Run(fmt.Sprintf("keys=%d/batch=%d/probes-per-version=%d/kind=%s", keys, batch, perVersion, JoinInner), func(b *testing.B) {
		j := TemporalJoin{Left: left[0].Schema(), Right: right[0].Schema(), LeftTime: "ts", RightTime: "ts",
			LeftKeys: []string{"key"}, RightKeys: []string{"key"}, Kind: JoinInner,
			LeftColumns: []string{"key", "v"}, RightColumns: []string{"v"}, RightPrefix: "r_"}
		b.ReportAllocs()
		var outRows, peakBytes, peakRows int64
		for i := 0; i < b.N; i++ {
			op := j.Factory()()
			info := &arrowflow.TaskInfo{Name: "bench", Parallelism: 1, MaxParallelism: state.DefaultMaxParallelism,
				KeyGroups: state.RangeOf(0, state.DefaultMaxParallelism, 1), Allocator: memory.DefaultAllocator}
			if err := op.Open(info); err != nil {
				b.Fatal(err)
			}
			out := &discard{}
			for k := range left {
				for side, rec := range []arrow.RecordBatch{left[k], right[k]} {
					rec.Retain()
					if err := op.ProcessBatch(side, arrowflow.NewBatch(rec), out); err != nil {
						b.Fatal(err)
					}
				}
				last := left[k].Column(1).(*array.Timestamp).Value(int(left[k].NumRows()) - 1)
				if err := op.ProcessWatermark(arrowflow.EventTime(int64(last)*1000), out); err != nil {
					b.Fatal(err)
				}
				if i == 0 {
					st := op.(TemporalJoinStatsReporter).TemporalJoinStats()
					peakBytes = max(peakBytes, st.StateBytes)
					peakRows = max(peakRows, st.LeftStateRows+st.RightStateRows)
				}
			}
			if err := op.Finish(out); err != nil {
				b.Fatal(err)
			}
			op.Close()
			// Every probe row has a version from the seed on: the inner
			// join emits each once, after the watermark passes it.
			if out.rows != rows {
				b.Fatalf("%d output rows, want %d", out.rows, rows)
			}
			outRows = out.rows
		}
		b.ReportMetric(float64(inRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64(outRows), "out-rows")
		b.ReportMetric(float64(peakRows), "peak-state-rows")
		b.ReportMetric(float64(peakBytes)/float64(max(peakRows, 1)), "state-B/row")
	})
}
