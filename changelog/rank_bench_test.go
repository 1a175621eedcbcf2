package changelog

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/window"
)

// rankBenchSchema is the benchmarks' input: partition k, order value v,
// a unique increasing id and a payload string.
var rankBenchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "p", Type: arrow.BinaryTypes.String},
}, nil)

const (
	rankBenchRows       = 1 << 18
	rankBenchBatch      = 4096
	rankBenchFlushEvery = 8 // batches per epoch
)

// rankBenchData is the input of one benchmark: Go columns (for the
// reference) and the same rows as batches with their kinds.
type rankBenchData struct {
	k, v, id []int64
	p        []string
	del      []bool // the row retracts an earlier row (equal values)
	batches  []arrowflow.Batch
}

func (d *rankBenchData) release() {
	for _, b := range d.batches {
		b.Release()
	}
}

// rankBenchGen makes rankBenchRows rows over parts partitions; with
// retract, one row in four deletes a live row.
func rankBenchGen(parts int, retract bool) *rankBenchData {
	rng := rand.New(rand.NewPCG(1, 2))
	d := &rankBenchData{}
	type row struct {
		k, v, id int64
		p        string
	}
	var live []row
	for i := range rankBenchRows {
		r := row{k: int64(rng.IntN(parts)), v: rng.Int64N(1 << 40), id: int64(i), p: fmt.Sprintf("payload-%d", i%1000)}
		del := false
		if retract && len(live) > 0 && rng.IntN(4) == 0 {
			j := rng.IntN(len(live))
			r, live[j] = live[j], live[len(live)-1]
			live = live[:len(live)-1]
			del = true
		} else if retract {
			live = append(live, r)
		}
		d.k, d.v, d.id, d.p, d.del = append(d.k, r.k), append(d.v, r.v), append(d.id, r.id), append(d.p, r.p), append(d.del, del)
	}
	mem := memory.DefaultAllocator
	for start := 0; start < rankBenchRows; start += rankBenchBatch {
		end := start + rankBenchBatch
		b := array.NewRecordBuilder(mem, rankBenchSchema)
		b.Field(0).(*array.Int64Builder).AppendValues(d.k[start:end], nil)
		b.Field(1).(*array.Int64Builder).AppendValues(d.v[start:end], nil)
		b.Field(2).(*array.Int64Builder).AppendValues(d.id[start:end], nil)
		b.Field(3).(*array.StringBuilder).AppendValues(d.p[start:end], nil)
		var kinds []arrowflow.RowKind
		if retract {
			kinds = make([]arrowflow.RowKind, end-start)
			for i := range kinds {
				if d.del[start+i] {
					kinds[i] = arrowflow.Delete
				}
			}
		}
		d.batches = append(d.batches, arrowflow.NewChangeBatch(b.NewRecordBatch(), kinds))
		b.Release()
	}
	return d
}

// rankDiscard counts and drops what an operator emits.
type rankDiscard struct{ rows int }

func (d *rankDiscard) Emit(b arrowflow.Batch) error {
	d.rows += b.NumRows()
	b.Release()
	return nil
}

func (d *rankDiscard) EmitWatermark(arrowflow.EventTime) error { return nil }

var rankBenchCases = []struct {
	name    string
	cfg     Rank
	retract bool
}{
	{"top3", Rank{PartitionBy: []string{"k"}, OrderBy: []window.OrderKey{{Column: "v", Desc: true}}, N: 3}, false},
	{"top3-rownum", Rank{PartitionBy: []string{"k"}, OrderBy: []window.OrderKey{{Column: "v", Desc: true}}, N: 3, RankColumn: "rn"}, false},
	{"keeplast", Rank{PartitionBy: []string{"k"}, OrderBy: []window.OrderKey{{Column: "id", Desc: true}}, N: 1}, false},
	{"keepfirst", Rank{PartitionBy: []string{"k"}, N: 1}, false},
	{"retract-top3", Rank{PartitionBy: []string{"k"}, OrderBy: []window.OrderKey{{Column: "v", Desc: true}}, N: 3, Retracting: true}, true},
}

// BenchmarkRank measures the operator over rankBenchRows rows in batches
// of rankBenchBatch, flushing every rankBenchFlushEvery batches.
func BenchmarkRank(b *testing.B) {
	for _, parts := range []int{1000, 100000} {
		for _, c := range rankBenchCases {
			b.Run(fmt.Sprintf("op=%s/parts=%d", c.name, parts), func(b *testing.B) {
				d := rankBenchGen(parts, c.retract)
				defer d.release()
				cfg := c.cfg
				cfg.Input = rankBenchSchema
				factory := cfg.Factory()
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					op := factory()
					info := &arrowflow.TaskInfo{Name: "rank", Parallelism: 1, MaxParallelism: 128,
						KeyGroups: state.KeyGroupRange{Start: 0, End: 128}, Allocator: memory.DefaultAllocator}
					if err := op.Open(info); err != nil {
						b.Fatal(err)
					}
					out := &rankDiscard{}
					for i, batch := range d.batches {
						if err := op.ProcessBatch(0, batch.Share(), out); err != nil {
							b.Fatal(err)
						}
						if f, ok := op.(arrowflow.EpochFlusher); ok && (i+1)%rankBenchFlushEvery == 0 {
							if err := f.FlushEpoch(uint64(i), out); err != nil {
								b.Fatal(err)
							}
						}
					}
					if err := op.Finish(out); err != nil {
						b.Fatal(err)
					}
					_ = op.Close()
				}
				b.ReportMetric(float64(rankBenchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}

// BenchmarkRankReference is a plain Go reference of the same cases: per
// partition a sorted slice of row indices (all rows when retracting, else
// the top N), and per epoch the difference between the emitted and the
// current top N of every changed partition.
func BenchmarkRankReference(b *testing.B) {
	for _, parts := range []int{1000, 100000} {
		for _, c := range rankBenchCases {
			b.Run(fmt.Sprintf("op=%s/parts=%d", c.name, parts), func(b *testing.B) {
				d := rankBenchGen(parts, c.retract)
				defer d.release()
				n := int(c.cfg.N)
				col, desc := d.id, false // no ORDER BY: arrival order
				if len(c.cfg.OrderBy) > 0 {
					if c.cfg.OrderBy[0].Column == "v" {
						col = d.v
					}
					desc = c.cfg.OrderBy[0].Desc
				}
				// less: row i ranks before row j (ties by arrival: index).
				less := func(i, j int32) int {
					x := cmp.Compare(col[i], col[j])
					if desc {
						x = -x
					}
					return cmp.Or(x, cmp.Compare(i, j))
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					rows := map[int64][]int32{}
					shown := map[int64][]int32{}
					dirty := map[int64]bool{}
					emitted := 0
					flush := func() {
						for k := range dirty {
							top := rows[k][:min(n, len(rows[k]))]
							old := shown[k]
							for _, r := range old {
								if !slices.Contains(top, r) {
									emitted++
								}
							}
							for _, r := range top {
								if !slices.Contains(old, r) {
									emitted++
								}
							}
							shown[k] = append(old[:0], top...)
						}
						clear(dirty)
					}
					for i := range int32(rankBenchRows) {
						k := d.k[i]
						list := rows[k]
						if d.del[i] {
							// The retracted row is the live row with equal values.
							for j, r := range list {
								if d.id[r] == d.id[i] {
									list = slices.Delete(list, j, j+1)
									if j < n {
										dirty[k] = true
									}
									break
								}
							}
							rows[k] = list
						} else {
							p, _ := slices.BinarySearchFunc(list, i, less)
							if c.retract || p < n {
								list = slices.Insert(list, p, i)
								if !c.retract && len(list) > n {
									list = list[:n]
								}
								rows[k] = list
								if p < n {
									dirty[k] = true
								}
							}
						}
						if (int(i)+1)%(rankBenchBatch*rankBenchFlushEvery) == 0 {
							flush()
						}
					}
					flush()
					_ = emitted
				}
				b.ReportMetric(float64(rankBenchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}
