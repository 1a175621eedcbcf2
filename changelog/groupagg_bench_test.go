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

// aggBenchInput is a cycle of batches over (k int64, v int64): with
// retract, batch i inserts half its rows and deletes the rows batch i-1
// inserted, so that the state stays the same size cycle after cycle.
type aggBenchInput struct {
	schema *arrow.Schema
	recs   []arrow.RecordBatch
	kinds  [][]arrowflow.RowKind
	keys   [][]int64
	vals   [][]int64
}

const (
	aggBenchBatch   = 4096
	aggBenchBatches = 64
	aggBenchEpoch   = 16 // batches per epoch
)

func newAggBenchInput(keys int, retract bool) *aggBenchInput {
	in := &aggBenchInput{schema: arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)}
	rng := rand.New(rand.NewPCG(1, 2))
	ins := aggBenchBatch
	if retract {
		ins = aggBenchBatch / 2
	}
	inserted := make([][2][]int64, aggBenchBatches)
	for i := range inserted {
		for j := 0; j < ins; j++ {
			inserted[i][0] = append(inserted[i][0], int64(rng.IntN(keys)))
			inserted[i][1] = append(inserted[i][1], int64(rng.IntN(1000)))
		}
	}
	for i := 0; i < aggBenchBatches; i++ {
		ks, vs := append([]int64(nil), inserted[i][0]...), append([]int64(nil), inserted[i][1]...)
		var kinds []arrowflow.RowKind
		if retract {
			kinds = make([]arrowflow.RowKind, ins, aggBenchBatch)
			prev := inserted[(i+aggBenchBatches-1)%aggBenchBatches]
			ks, vs = append(ks, prev[0]...), append(vs, prev[1]...)
			for range prev[0] {
				kinds = append(kinds, arrowflow.Delete)
			}
		}
		kb, vb := array.NewInt64Builder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
		kb.AppendValues(ks, nil)
		vb.AppendValues(vs, nil)
		ka, va := kb.NewArray(), vb.NewArray()
		in.recs = append(in.recs, array.NewRecordBatch(in.schema, []arrow.Array{ka, va}, int64(len(ks))))
		in.kinds, in.keys, in.vals = append(in.kinds, kinds), append(in.keys, ks), append(in.vals, vs)
	}
	return in
}

type aggDiscard struct{ rows int }

func (d *aggDiscard) Emit(b arrowflow.Batch) error {
	d.rows += b.NumRows()
	b.Release()
	return nil
}

func (d *aggDiscard) EmitWatermark(arrowflow.EventTime) error { return nil }

// aggMapRef is the plain Go reference of the benchmark: a map from key to
// the group's state, boxed per group, with a value -> count map for MIN
// and MAX over a retracting input, and the same folding per epoch.
type aggMapRef struct {
	retract bool
	groups  map[int64]*aggMapGroup
	dirty   []int64
	out     [][5]int64
}

type aggMapGroup struct {
	rows, sum, min, max, nn int64
	vals                    map[int64]int64
	dirty, emitted          bool
	last                    [4]int64
}

func (m *aggMapRef) add(k, v int64, retract bool) {
	g := m.groups[k]
	if g == nil {
		if retract {
			return
		}
		g = &aggMapGroup{}
		if m.retract {
			g.vals = map[int64]int64{}
		}
		m.groups[k] = g
	}
	if !g.dirty {
		g.dirty = true
		m.dirty = append(m.dirty, k)
	}
	if retract {
		if g.rows == 0 {
			return
		}
		g.rows, g.sum, g.nn = g.rows-1, g.sum-v, g.nn-1
		if g.vals[v]--; g.vals[v] == 0 {
			delete(g.vals, v)
			if v == g.min || v == g.max {
				first := true
				for x := range g.vals {
					if first || x < g.min {
						g.min = x
					}
					if first || x > g.max {
						g.max = x
					}
					first = false
				}
			}
		}
		return
	}
	if g.nn == 0 || v < g.min {
		g.min = v
	}
	if g.nn == 0 || v > g.max {
		g.max = v
	}
	g.rows, g.sum, g.nn = g.rows+1, g.sum+v, g.nn+1
	if g.vals != nil {
		g.vals[v]++
	}
}

func (m *aggMapRef) flush() {
	for _, k := range m.dirty {
		g := m.groups[k]
		g.dirty = false
		cur := [4]int64{g.rows, g.sum, g.min, g.max}
		switch {
		case g.rows == 0:
			if g.emitted {
				m.out = append(m.out, [5]int64{k, g.last[0], g.last[1], g.last[2], g.last[3]})
			}
			delete(m.groups, k)
			continue
		case !g.emitted:
			m.out = append(m.out, [5]int64{k, cur[0], cur[1], cur[2], cur[3]})
		case cur != g.last:
			m.out = append(m.out, [5]int64{k, g.last[0], g.last[1], g.last[2], g.last[3]}, [5]int64{k, cur[0], cur[1], cur[2], cur[3]})
		}
		g.emitted, g.last = true, cur
	}
	m.dirty = m.dirty[:0]
	m.out = m.out[:0]
}

// BenchmarkGroupAggregate measures rows/s of COUNT(*), SUM, MIN and MAX
// by an int64 key, the operator against the plain Go map reference, over
// an append-only input and over one that retracts half its rows.
func BenchmarkGroupAggregate(b *testing.B) {
	for _, keys := range []int{1000, 100000} {
		for _, retract := range []bool{false, true} {
			in := newAggBenchInput(keys, retract)
			name := fmt.Sprintf("keys=%d/retract=%v", keys, retract)
			b.Run(name+"/impl=weir", func(b *testing.B) {
				cfg := GroupAggregate{Input: in.schema, Keys: []string{"k"}, Retracting: retract, Aggs: []window.Agg{
					{Func: kernels.AggCountStar, Name: "n"}, {Func: kernels.AggSum, Args: []string{"v"}, Name: "s"},
					{Func: kernels.AggMin, Args: []string{"v"}, Name: "mn"}, {Func: kernels.AggMax, Args: []string{"v"}, Name: "mx"}}}
				op := cfg.Factory()()
				if err := op.Open(&arrowflow.TaskInfo{Name: "bench", MaxParallelism: 128, KeyGroups: state.KeyGroupRange{End: 128}}); err != nil {
					b.Fatal(err)
				}
				defer op.Close()
				out := &aggDiscard{}
				b.ReportAllocs()
				b.ResetTimer()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					j := i % aggBenchBatches
					in.recs[j].Retain()
					if err := op.ProcessBatch(0, arrowflow.NewChangeBatch(in.recs[j], in.kinds[j]), out); err != nil {
						b.Fatal(err)
					}
					if i%aggBenchEpoch == aggBenchEpoch-1 {
						if err := op.(arrowflow.EpochFlusher).FlushEpoch(uint64(i), out); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.N*aggBenchBatch)/time.Since(start).Seconds(), "rows/s")
			})
			b.Run(name+"/impl=map", func(b *testing.B) {
				m := &aggMapRef{retract: retract, groups: map[int64]*aggMapGroup{}}
				b.ReportAllocs()
				b.ResetTimer()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					j := i % aggBenchBatches
					ks, vs, kinds := in.keys[j], in.vals[j], in.kinds[j]
					for r := range ks {
						m.add(ks[r], vs[r], kinds != nil && kinds[r].IsRetraction())
					}
					if i%aggBenchEpoch == aggBenchEpoch-1 {
						m.flush()
					}
				}
				b.ReportMetric(float64(b.N*aggBenchBatch)/time.Since(start).Seconds(), "rows/s")
			})
		}
	}
}
