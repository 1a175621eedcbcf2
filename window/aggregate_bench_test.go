package window

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/sinks/blackhole"
	"github.com/weirflow/weir/state"
)

// benchStream is rows batches of 64Ki rows: key uniform in [0, keys), v
// random, event time advancing 10 µs per row (100k rows per second of
// event time), in order.
func benchStream(rows, keys int) []arrow.RecordBatch {
	const batch = 1 << 16
	rng := rand.New(rand.NewPCG(1, uint64(keys)))
	mem := memory.NewGoAllocator()
	var out []arrow.RecordBatch
	ts := int64(1_700_000_000_000_000) // µs
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "key", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	for done := 0; done < rows; done += batch {
		b := array.NewRecordBuilder(mem, schema)
		for i := 0; i < batch; i++ {
			b.Field(0).(*array.Int64Builder).Append(rng.Int64N(int64(keys)))
			b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(ts))
			b.Field(2).(*array.Int64Builder).Append(rng.Int64N(1_000_000))
			ts += 10
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return out
}

type discard struct{ rows int64 }

func (d *discard) Emit(b arrowflow.Batch) error {
	d.rows += int64(b.NumRows())
	b.Release()
	return nil
}
func (d *discard) EmitWatermark(arrowflow.EventTime) error { return nil }

// BenchmarkAggregate: count(*) and max(v) per key in tumbling 10 s,
// hopping 10 s / 2 s and cumulating 10 s / 2 s windows, one subtask,
// watermarks after every batch. Reports rows/s (one goroutine: rows/s
// per core) and the state's bytes per held group at its peak.
func BenchmarkAggregate(b *testing.B) {
	const rows = 4 << 20
	for _, keys := range []int{10_000, 1_000_000} {
		batches := benchStream(rows, keys)
		for _, spec := range []Spec{Tumbling(10 * time.Second), Hopping(10*time.Second, 2*time.Second), Cumulate(10*time.Second, 2*time.Second)} {
			b.Run(fmt.Sprintf("window=%s/keys=%d", spec.Kind, keys), func(b *testing.B) {
				benchAggregate(b, spec, batches, rows)
			})
		}
	}
}

// BenchmarkAggregateCumulate: as BenchmarkAggregate, over cumulating
// windows of K = 60 steps (6 s in steps of 100 ms: 7 periods over the
// stream's 42 s of event time), where building every window from all its
// panes would merge K(K+1)/2 = 1830 panes a period instead of K.
func BenchmarkAggregateCumulate(b *testing.B) {
	const rows = 4 << 20
	spec := Cumulate(6*time.Second, 100*time.Millisecond)
	for _, keys := range []int{10_000} {
		batches := benchStream(rows, keys)
		b.Run(fmt.Sprintf("steps=%d/keys=%d", spec.Size/spec.Slide, keys), func(b *testing.B) {
			benchAggregate(b, spec, batches, rows)
		})
	}
}

// benchAggregate runs count(*) and max(v) per key over spec's windows of
// batches (rows rows in all), one subtask, a watermark after every batch.
func benchAggregate(b *testing.B, spec Spec, batches []arrow.RecordBatch, rows int) {
	a := Aggregate{Input: batches[0].Schema(), Time: "ts", Window: spec, Keys: []string{"key"},
		Aggs: []Agg{{Func: kernels.AggCountStar, Name: "n"}, {Func: kernels.AggMax, Args: []string{"v"}, Name: "max_v"}}}
	b.ReportAllocs()
	var peakBytes, peakGroups int64
	for i := 0; i < b.N; i++ {
		op := a.Factory()()
		info := &arrowflow.TaskInfo{Name: "bench", Parallelism: 1, MaxParallelism: state.DefaultMaxParallelism,
			KeyGroups: state.RangeOf(0, state.DefaultMaxParallelism, 1), Allocator: memory.DefaultAllocator}
		if err := op.Open(info); err != nil {
			b.Fatal(err)
		}
		out := &discard{}
		for _, rec := range batches {
			rec.Retain()
			if err := op.ProcessBatch(0, arrowflow.NewBatch(rec), out); err != nil {
				b.Fatal(err)
			}
			last := rec.Column(1).(*array.Timestamp).Value(int(rec.NumRows()) - 1)
			if err := op.ProcessWatermark(arrowflow.EventTime(int64(last)*1000), out); err != nil {
				b.Fatal(err)
			}
			if i == 0 {
				st := op.(*aggOp)
				var groups int64
				for _, g := range st.panes {
					groups += int64(g.Groups())
				}
				if s := st.Stats().StateBytes; s > peakBytes {
					peakBytes, peakGroups = s, groups
				}
			}
		}
		if err := op.ProcessWatermark(arrowflow.MaxEventTime, out); err != nil {
			b.Fatal(err)
		}
		op.Close()
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	if peakGroups > 0 {
		b.ReportMetric(float64(peakBytes)/float64(peakGroups), "state-bytes/group")
	}
}

// BenchmarkAggregateSnapshot: snapshot (to FileStore files) and restore of
// a tumbling window's state holding 1e6 keys, with count(*) and max(v).
func BenchmarkAggregateSnapshot(b *testing.B) {
	const keys = 1_000_000
	batches := benchStream(4<<20, keys) // 4M rows in one 1 h window: about 980k distinct keys
	a := Aggregate{Input: batches[0].Schema(), Time: "ts", Window: Tumbling(time.Hour), Keys: []string{"key"},
		Aggs: []Agg{{Func: kernels.AggCountStar, Name: "n"}, {Func: kernels.AggMax, Args: []string{"v"}, Name: "max_v"}}}
	info := func() *arrowflow.TaskInfo {
		return &arrowflow.TaskInfo{Job: "bench", Name: "win", Parallelism: 1, MaxParallelism: state.DefaultMaxParallelism,
			KeyGroups: state.RangeOf(0, state.DefaultMaxParallelism, 1), Allocator: memory.DefaultAllocator}
	}
	op := a.Factory()()
	if err := op.Open(info()); err != nil {
		b.Fatal(err)
	}
	out := &discard{}
	for _, rec := range batches {
		rec.Retain()
		if err := op.ProcessBatch(0, arrowflow.NewBatch(rec), out); err != nil {
			b.Fatal(err)
		}
	}
	store, err := state.NewFileStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	var h state.Handle
	epoch := uint64(0) // a snapshot file is written once: every run takes a new epoch
	b.Run("snapshot", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			epoch++
			w, err := store.Create(state.SnapshotID{Job: "bench", Epoch: epoch, Operator: "win"}, state.RangeOf(0, state.DefaultMaxParallelism, 1))
			if err != nil {
				b.Fatal(err)
			}
			if err := op.SnapshotState(epoch, w); err != nil {
				b.Fatal(err)
			}
			if h, err = w.Finish(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(h.Bytes), "bytes")
		b.ReportMetric(float64(h.Bytes)/keys, "bytes/key")
	})
	b.Run("restore", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			r, err := store.Open(h, memory.DefaultAllocator)
			if err != nil {
				b.Fatal(err)
			}
			fresh := a.Factory()()
			if err := fresh.Open(info()); err != nil {
				b.Fatal(err)
			}
			if err := fresh.RestoreState(r); err != nil {
				b.Fatal(err)
			}
			r.Close()
			fresh.Close()
		}
	})
	op.Close()
}

// BenchmarkAggregateTwoPhase: count(*) and max(v) over all rows (no keys)
// per tumbling 10 s window, as a real job over 4Mi rows from two source
// splits of 2Mi (in order, 100k rows per second of event time each, so
// 3 windows), into a blackhole sink:
//
//   - plan=one-phase: the source at parallelism 2, a Rebalance edge, the
//     aggregate at parallelism 1 (every row through one subtask).
//   - plan=two-phase: the source at 2, the local phase chained to it at
//     2, a Rebalance edge, the final phase at 1 (merging 2 partials per
//     window).
//
// Reports rows/s over the whole job; on a machine with fewer idle cores
// than subtasks the two plans converge.
func BenchmarkAggregateTwoPhase(b *testing.B) {
	const rows, splits, batch = 4 << 20, 2, 1 << 16
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	in := make([][]arrow.RecordBatch, splits)
	for s := range in {
		for done := 0; done < rows/splits; done += batch {
			rb := array.NewRecordBuilder(mem, schema)
			for i := done; i < done+batch; i++ {
				rb.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000 + int64(i)/100))
				rb.Field(1).(*array.Int64Builder).Append(rng.Int64N(1_000_000))
			}
			in[s] = append(in[s], rb.NewRecordBatch())
			rb.Release()
		}
	}
	defer func() {
		for _, s := range in {
			for _, rec := range s {
				rec.Release()
			}
		}
	}()
	a := Aggregate{Input: schema, Time: "ts", Window: Tumbling(10 * time.Second),
		Aggs: []Agg{{Func: kernels.AggCountStar, Name: "n"}, {Func: kernels.AggMax, Args: []string{"v"}, Name: "max_v"}}}
	final, err := a.Final()
	if err != nil {
		b.Fatal(err)
	}
	for _, plan := range []string{"one-phase", "two-phase"} {
		b.Run("plan="+plan, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				g := arrowflow.NewGraph("bench")
				src := g.Source("src", &topNSource{schema: schema, splits: in, tsCol: 0}, splits)
				var agg *arrowflow.Node
				if plan == "one-phase" {
					agg = g.Operator("agg", a.Factory(), 1, arrowflow.Rebalance(src))
				} else {
					local := g.Operator("agg-local", a.Local().Factory(), splits, arrowflow.Forward(src))
					agg = g.Operator("agg", final.Factory(), 1, final.Edge(local))
				}
				sink := blackhole.New()
				g.Sink("out", sink, 1, arrowflow.Forward(agg))
				job, err := g.Plan(arrowflow.Options{Allocator: memory.DefaultAllocator})
				if err != nil {
					b.Fatal(err)
				}
				if err := job.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
				// Each split's 2Mi rows span 21 s of event time from a window
				// boundary: 3 windows, one result row each.
				if sink.Rows() != 3 {
					b.Fatalf("%d result rows, want 3", sink.Rows())
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
