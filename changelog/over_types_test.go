package changelog

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/optest"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/window"
)

// MIN, MAX, SUM and AVG over the argument types the operator compares
// and adds itself, checked row by row against kernels' accumulators fed
// each row's frame (one group): the types and null and NaN rules of the
// window aggregates.
func TestOverAggregateTypesAgainstKernels(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "t2", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	}, nil)
	rng := rand.New(rand.NewPCG(5, 6))
	nullable := func(v any) any {
		if rng.IntN(5) == 0 {
			return nil
		}
		return v
	}
	const n = 400
	var rows [][]any
	for i := range n {
		f := float64(rng.IntN(20) - 10)
		if rng.IntN(10) == 0 {
			f = math.NaN()
		}
		rows = append(rows, []any{int64(rng.IntN(3)), time.UnixMilli(overTestBase + int64(i)*3).UTC(),
			nullable(int64(rng.IntN(100) - 50)), nullable(uint64(rng.IntN(1000))), nullable(f), nullable(rng.IntN(2) == 0),
			nullable(strings.Repeat("x", rng.IntN(3)) + string(rune('a'+rng.IntN(3)))),
			nullable(time.Date(2020, 1, 1+rng.IntN(60), 0, 0, 0, 0, time.UTC)),
			nullable(fmt.Sprintf("%d.%02d", rng.IntN(200)-100, rng.IntN(100))),
			nullable(time.UnixMicro(rng.Int64N(1e12)).UTC())})
	}
	var aggs []window.Agg
	for _, c := range []string{"i32", "u64", "f32", "b", "bin", "d", "dec", "t2"} {
		aggs = append(aggs, window.Agg{Func: kernels.AggMin, Args: []string{c}, Name: "min_" + c}, window.Agg{Func: kernels.AggMax, Args: []string{c}, Name: "max_" + c})
	}
	for _, c := range []string{"i32", "u64", "f32", "dec"} {
		aggs = append(aggs, window.Agg{Func: kernels.AggSum, Args: []string{c}, Name: "sum_" + c}, window.Agg{Func: kernels.AggAvg, Args: []string{c}, Name: "avg_" + c})
	}
	for _, fr := range []OverFrame{OverRows(4), OverRowsUnbounded(), OverRange(10 * time.Millisecond)} {
		t.Run(fr.String(), func(t *testing.T) {
			cfg := OverAggregate{Input: schema, PartitionBy: []string{"k"}, Time: "ts", Frame: fr, Aggs: aggs, compactMin: 4}
			var batches [][][]any
			var wms []int64
			for i := 0; i < n; i += 37 {
				batches = append(batches, rows[i:min(i+37, n)])
				wms = append(wms, overTestBase+int64(i)*3)
			}
			got, op := overRun(t, cfg, mem, batches, wms)
			defer op.Close()
			if len(got) != n {
				t.Fatalf("%d rows, want %d", len(got), n)
			}
			// The reference: each output row's frame, in the output's
			// order (per partition, time order: the input's).
			seen := map[int64][]int{} // partition -> input rows emitted so far
			for _, g := range got {
				// Every row has its own time: it names the input row.
				i := int((g[1].(time.Time).UnixMilli() - overTestBase) / 3)
				if !optest.ValuesEqual(g[2], rows[i][2]) || !optest.ValuesEqual(g[0], rows[i][0]) {
					t.Fatalf("output row %s is not input row %d %s", optest.FormatRow(g), i, optest.FormatRow(rows[i]))
				}
				k := rows[i][0].(int64)
				seen[k] = append(seen[k], i)
				part := seen[k]
				var frame []int
				switch {
				case fr.Unbounded:
					frame = part
				case fr.Range:
					for _, j := range part {
						if rows[j][1].(time.Time).UnixMilli() >= rows[i][1].(time.Time).UnixMilli()-10 {
							frame = append(frame, j)
						}
					}
				default:
					frame = part[max(0, len(part)-5):]
				}
				frameRows := make([][]any, len(frame))
				for x, j := range frame {
					frameRows[x] = rows[j]
				}
				rec, err := optest.BuildRecord(mem, schema, frameRows)
				if err != nil {
					t.Fatal(err)
				}
				for a, ag := range aggs {
					col := rec.Column(schema.FieldIndices(ag.Args[0])[0])
					acc, err := kernels.NewAccumulator(ag.Func, []arrow.DataType{col.DataType()})
					if err != nil {
						t.Fatal(err)
					}
					acc.Grow(1)
					if err := acc.Update([]arrow.Array{col}, nil, make([]uint32, col.Len())); err != nil {
						t.Fatal(err)
					}
					res := acc.Finish(memory.DefaultAllocator)
					want := optest.Value(res, 0)
					res.Release()
					if v := g[schema.NumFields()+a]; !optest.ValuesEqual(v, want) {
						t.Errorf("row %d %s: %v, want %v", i, ag.Name, v, want)
					}
				}
				rec.Release()
			}
		})
	}
}

// A SUM that leaves the int64 range is an error naming the aggregate.
func TestOverAggregateSumOverflow(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	cfg := OverAggregate{Input: overTestSchema, Time: "ts", Frame: OverRowsUnbounded(), Aggs: []window.Agg{{Func: kernels.AggSum, Args: []string{"v"}, Name: "big"}}}
	op := cfg.Factory()()
	if err := op.Open(&arrowflow.TaskInfo{Name: "over", Parallelism: 1, Allocator: mem}); err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	ts := time.UnixMilli(overTestBase).UTC()
	rec, err := optest.BuildRecord(mem, overTestSchema, [][]any{{1, ts, int64(math.MaxInt64), nil, nil}, {1, ts, int64(1), nil, nil}})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.ProcessBatch(0, arrowflow.Batch{Record: rec}, &overEmitter{}); err != nil {
		t.Fatal(err)
	}
	err = op.Finish(&overEmitter{})
	if err == nil || !strings.Contains(err.Error(), "big") || !strings.Contains(err.Error(), "int64 range") {
		t.Fatalf("Finish: %v, want an int64 range error naming big", err)
	}
}

// SUM and AVG over decimals through every optest configuration (restores
// included: an unbounded frame's 192-bit sums are snapshotted), against
// kernels' accumulators fed each row's frame.
func TestOverAggregateDecimalRestore(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 12, Scale: 3}, Nullable: true},
	}, nil)
	rng := rand.New(rand.NewPCG(9, 9))
	const n, epochs = 120, 4
	var rows []optest.Row
	for i := range n {
		var dec any = fmt.Sprintf("%d.%03d", rng.IntN(2000)-1000, rng.IntN(1000))
		if rng.IntN(6) == 0 {
			dec = nil
		}
		var k any = int64(rng.IntN(3))
		if rng.IntN(10) == 0 {
			k = nil
		}
		rows = append(rows, optest.Row{Values: []any{k, time.UnixMilli(overTestBase + int64(i)*10).UTC(), dec}, Epoch: i * epochs / n})
	}
	// The watermark of epoch e is the time of its last row: no row is late.
	wm := func(e int) int64 { return overTestBase + int64((e+1)*n/epochs-1)*10 }
	aggs := []window.Agg{{Func: kernels.AggSum, Args: []string{"dec"}, Name: "s"}, {Func: kernels.AggAvg, Args: []string{"dec"}, Name: "a"}}
	decType := schema.Field(2).Type
	oracle := func(f kernels.AggFunc, vals [][]any) any {
		rec, err := optest.BuildRecord(memory.DefaultAllocator, schema, vals)
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Release()
		acc, err := kernels.NewAccumulator(f, []arrow.DataType{decType})
		if err != nil {
			t.Fatal(err)
		}
		acc.Grow(1)
		if err := acc.Update([]arrow.Array{rec.Column(2)}, nil, make([]uint32, rec.NumRows())); err != nil {
			t.Fatal(err)
		}
		res := acc.Finish(memory.DefaultAllocator)
		defer res.Release()
		return optest.Value(res, 0)
	}
	for _, fr := range []OverFrame{OverRowsUnbounded(), OverRows(2)} {
		t.Run(fr.String(), func(t *testing.T) {
			cfg := OverAggregate{Input: schema, PartitionBy: []string{"k"}, Time: "ts", Frame: fr, Aggs: aggs, compactMin: 4}
			want := func(e int) [][]any {
				parts := map[any][][]any{}
				var out [][]any
				for _, r := range rows {
					if r.Epoch > e && e < epochs-1 {
						break
					}
					k := r.Values[0]
					parts[k] = append(parts[k], r.Values)
					frame := parts[k]
					if !fr.Unbounded {
						frame = frame[max(0, len(frame)-3):]
					}
					out = append(out, append(slices.Clone(r.Values), oracle(kernels.AggSum, frame), oracle(kernels.AggAvg, frame)))
				}
				return out
			}
			optest.Run(t, optest.Case{
				Name:       "decimal",
				Factory:    cfg.Factory(),
				Inputs:     []optest.Input{{Schema: schema, KeyBy: []string{"k"}, Rows: rows}},
				AppendOnly: true,
				Want:       want,
				Watermark: func(e int) (arrowflow.EventTime, bool) {
					return arrowflow.EventTime(wm(e) * int64(time.Millisecond)), true
				},
			})
		})
	}
}
