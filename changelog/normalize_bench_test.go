package changelog

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/state"
)

// BenchmarkNormalize measures changelog-normalize over rankBenchRows
// upserts of parts keys (one row in four a delete of a key), in batches of
// rankBenchBatch, flushing every rankBenchFlushEvery batches. Compare with
// BenchmarkNormalizeReference, the same fold over a Go map.
func BenchmarkNormalize(b *testing.B) {
	for _, parts := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("keys=%d", parts), func(b *testing.B) {
			d := rankBenchGen(parts, true)
			defer d.release()
			factory := Normalize{Input: rankBenchSchema, Key: []string{"k"}}.Factory()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				op := factory()
				info := &arrowflow.TaskInfo{Name: "normalize", Parallelism: 1, MaxParallelism: 128,
					KeyGroups: state.KeyGroupRange{Start: 0, End: 128}, Allocator: memory.DefaultAllocator}
				if err := op.Open(info); err != nil {
					b.Fatal(err)
				}
				out := &rankDiscard{}
				for i, batch := range d.batches {
					if err := op.ProcessBatch(0, batch.Share(), out); err != nil {
						b.Fatal(err)
					}
					if (i+1)%rankBenchFlushEvery == 0 {
						if err := op.(arrowflow.EpochFlusher).FlushEpoch(uint64(i), out); err != nil {
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

// BenchmarkNormalizeReference is a plain Go fold of the same input: a map
// from key to its row, the keys changed in the epoch, and per changed key
// at the flush the rows a retract changelog emits.
func BenchmarkNormalizeReference(b *testing.B) {
	type row struct {
		v, id int64
		p     string
	}
	for _, parts := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("keys=%d", parts), func(b *testing.B) {
			d := rankBenchGen(parts, true)
			defer d.release()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				shown := map[int64]row{}
				type pending struct {
					r   row
					del bool
				}
				dirty := map[int64]pending{}
				emitted := 0
				flush := func() {
					for k, p := range dirty {
						old, had := shown[k]
						switch {
						case p.del && had:
							emitted++
							delete(shown, k)
						case !p.del && !had:
							emitted++
							shown[k] = p.r
						case !p.del && old != p.r:
							emitted += 2
							shown[k] = p.r
						}
					}
					clear(dirty)
				}
				for i := range rankBenchRows {
					dirty[d.k[i]] = pending{r: row{d.v[i], d.id[i], d.p[i]}, del: d.del[i]}
					if (i+1)%(rankBenchBatch*rankBenchFlushEvery) == 0 {
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
