package changelog

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/window"
)

var (
	joinBenchLeft = arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "t", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String},
	}, nil)
	joinBenchRight = arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "t", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
)

// joinBenchRecords makes a left or right record of n rows with keys in
// [0, keys).
func joinBenchRecord(mem memory.Allocator, schema *arrow.Schema, rng *rand.Rand, n, keys int, seq bool) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range n {
		k := int64(rng.IntN(keys))
		if seq {
			k = int64(i % keys)
		}
		b.Field(0).(*array.Int64Builder).Append(k)
		b.Field(1).(*array.Int64Builder).Append(int64(rng.IntN(100)))
		switch f := b.Field(2).(type) {
		case *array.StringBuilder:
			f.Append(fmt.Sprint("name", i%1000))
		case *array.Float64Builder:
			f.Append(float64(i))
		}
	}
	return b.NewRecordBatch()
}

// joinBenchRestart is the number of left batches after which the
// benchmarked operator starts over.
const joinBenchRestart = 64

type joinDiscard struct{ rows int }

func (d *joinDiscard) Emit(b arrowflow.Batch) error {
	d.rows += b.NumRows()
	b.Release()
	return nil
}

func (*joinDiscard) EmitWatermark(arrowflow.EventTime) error { return nil }

// BenchmarkJoin measures the regular join probing stored right rows with
// batches of left inserts (which it stores too), against a plain Go
// map-based hash join (map from key to right rows, output gathered with
// kernels.Take) over the same data. Each left row has `matches` right
// rows of its key.
func BenchmarkJoin(b *testing.B) {
	const rightRows, batch = 1 << 17, 4096
	for _, matches := range []int{1, 4} {
		for _, residual := range []bool{false, true} {
			keys := rightRows / matches
			name := fmt.Sprintf("matches=%d/residual=%v", matches, residual)
			b.Run("op/"+name, func(b *testing.B) {
				mem := memory.NewGoAllocator()
				rng := rand.New(rand.NewPCG(1, 2))
				j := Join{Left: joinBenchLeft, Right: joinBenchRight, LeftKeys: []string{"k"}, RightKeys: []string{"k"},
					Kind: window.JoinInner, LeftPrefix: "l_", RightPrefix: "r_"}
				if residual {
					j.Residual = kernels.LessEq(kernels.Col("l_t"), kernels.Add(kernels.Col("r_t"), kernels.Lit(int64(100))))
				}
				info := &arrowflow.TaskInfo{Name: "join", MaxParallelism: 128, KeyGroups: state.KeyGroupRange{Start: 0, End: 128}, Allocator: mem}
				out := &joinDiscard{}
				right := joinBenchRecord(mem, joinBenchRight, rng, rightRows, keys, true)
				defer right.Release()
				var op arrowflow.Operator
				// start opens a new instance holding the right rows: the
				// state of a regular join over append-only input grows
				// without bound, so the benchmark restarts it every
				// joinBenchRestart batches, untimed.
				start := func() {
					if op != nil {
						op.Close()
					}
					op = j.Factory()()
					if err := op.Open(info); err != nil {
						b.Fatal(err)
					}
					// The right rows come in batches of 1024, as a
					// stream's would: the row store holds them in
					// many chunks.
					for lo := int64(0); lo < right.NumRows(); lo += 1024 {
						part := right.NewSlice(lo, min(lo+1024, right.NumRows()))
						if err := op.ProcessBatch(joinRight, arrowflow.NewBatch(part), out); err != nil {
							b.Fatal(err)
						}
					}
				}
				start()
				defer func() { op.Close() }()
				lefts := make([]arrow.RecordBatch, 16)
				for i := range lefts {
					lefts[i] = joinBenchRecord(mem, joinBenchLeft, rng, batch, keys, false)
					defer lefts[i].Release()
				}
				out.rows = 0
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					if i > 0 && i%joinBenchRestart == 0 {
						b.StopTimer()
						rows := out.rows
						start()
						out.rows = rows
						b.StartTimer()
					}
					rec := lefts[i%len(lefts)]
					rec.Retain()
					if err := op.ProcessBatch(joinLeft, arrowflow.NewBatch(rec), out); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric(float64(out.rows)/float64(b.N*batch), "out/row")
			})
			b.Run("gomap/"+name, func(b *testing.B) {
				mem := memory.NewGoAllocator()
				rng := rand.New(rand.NewPCG(1, 2))
				right := joinBenchRecord(mem, joinBenchRight, rng, rightRows, keys, true)
				defer right.Release()
				index := map[int64][]int32{}
				rk, rt := right.Column(0).(*array.Int64), right.Column(1).(*array.Int64)
				for i := range rightRows {
					index[rk.Value(i)] = append(index[rk.Value(i)], int32(i))
				}
				lefts := make([]arrow.RecordBatch, 16)
				for i := range lefts {
					lefts[i] = joinBenchRecord(mem, joinBenchLeft, rng, batch, keys, false)
					defer lefts[i].Release()
				}
				var li, ri []int32
				rows := 0
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					rec := lefts[i%len(lefts)]
					lk, lt := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
					li, ri = li[:0], ri[:0]
					for r := range batch {
						for _, m := range index[lk.Value(r)] {
							if residual && lt.Value(r) > rt.Value(int(m))+100 {
								continue
							}
							li, ri = append(li, int32(r)), append(ri, m)
						}
					}
					for c := range 3 {
						for _, side := range []struct {
							rec arrow.RecordBatch
							idx []int32
						}{{rec, li}, {right, ri}} {
							col, err := kernels.Take(mem, side.rec.Column(c), side.idx)
							if err != nil {
								b.Fatal(err)
							}
							col.Release()
						}
					}
					rows += len(li)
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric(float64(rows)/float64(b.N*batch), "out/row")
			})
		}
	}
}

// BenchmarkJoinUpdates measures the retraction path: each batch updates
// 2048 left rows (-U of a stored row, +U of its new version) of 16 keys,
// each key holding thousands of stored left rows and one right row.
func BenchmarkJoinUpdates(b *testing.B) {
	const keys, stored, batch = 16, 1 << 16, 4096
	mem := memory.NewGoAllocator()
	for _, kind := range []window.JoinKind{window.JoinInner, window.JoinFullOuter} {
		b.Run(kind.String(), func(b *testing.B) {
			j := Join{Left: joinBenchLeft, Right: joinBenchRight, LeftKeys: []string{"k"}, RightKeys: []string{"k"},
				Kind: kind, LeftPrefix: "l_", RightPrefix: "r_"}
			op := j.Factory()()
			info := &arrowflow.TaskInfo{Name: "join", MaxParallelism: 128, KeyGroups: state.KeyGroupRange{Start: 0, End: 128}, Allocator: mem}
			if err := op.Open(info); err != nil {
				b.Fatal(err)
			}
			defer op.Close()
			out := &joinDiscard{}
			rng := rand.New(rand.NewPCG(5, 6))
			right := joinBenchRecord(mem, joinBenchRight, rng, keys, keys, true)
			if err := op.ProcessBatch(joinRight, arrowflow.NewBatch(right), out); err != nil {
				b.Fatal(err)
			}
			// Left rows: t distinguishes versions; row i holds version v[i].
			lb := array.NewRecordBuilder(mem, joinBenchLeft)
			defer lb.Release()
			row := func(i, v int) {
				lb.Field(0).(*array.Int64Builder).Append(int64(i % keys))
				lb.Field(1).(*array.Int64Builder).Append(int64(v))
				lb.Field(2).(*array.StringBuilder).Append(fmt.Sprint("name", i))
			}
			for i := range stored {
				row(i, 0)
			}
			if err := op.ProcessBatch(joinLeft, arrowflow.NewBatch(lb.NewRecordBatch()), out); err != nil {
				b.Fatal(err)
			}
			version := make([]int, stored)
			kinds := make([]arrowflow.RowKind, batch)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				for k := 0; k < batch; k += 2 {
					i := rng.IntN(stored)
					row(i, version[i])
					version[i]++
					row(i, version[i])
					kinds[k], kinds[k+1] = arrowflow.UpdateBefore, arrowflow.UpdateAfter
				}
				rec := lb.NewRecordBatch()
				b.StartTimer()
				if err := op.ProcessBatch(joinLeft, arrowflow.NewChangeBatch(rec, kinds), out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
			if s := op.(JoinStatsReporter).JoinStats(); s.UnknownRetractions != 0 {
				b.Fatalf("%d unknown retractions", s.UnknownRetractions)
			}
		})
	}
}
