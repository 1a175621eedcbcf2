package iceberg_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/iceberg"
)

// Change events per epoch of BenchmarkUpsertChanges, cut into batches of
// about changeBatchRows (an update's -U/+U pair stays in one batch).
const (
	changeEpochEvents = 200_000
	changeBatchRows   = 4096
)

// changeGen makes a Debezium-like changelog over keys [0, keys) of
// testSchema rows. Every key starts with a row (row{k, "v0", ts 0}) unless
// it is one of the tenth initially absent; the table is not loaded with
// these rows: upsert mode never reads the table (a retraction of a row not
// pending in the epoch becomes an equality delete on its key), so the
// write path costs the same. Each change draws a key uniformly: an absent
// key is inserted, a present one deleted with probability 1/9 or else
// updated (-U old, +U new). That mix is stationary at about 10% inserts,
// 10% deletes and 80% updates of the changes, i.e. 1.8 changelog rows a
// change.
type changeGen struct {
	rng  *rand.Rand
	keys int64
	cur  map[int64]genKey // keys changed so far
	seq  int64
}

type genKey struct {
	r       row
	present bool
}

func (g *changeGen) state(k int64) genKey {
	if s, ok := g.cur[k]; ok {
		return s
	}
	// splitmix64's finalizer: a fixed tenth of the keys starts absent.
	z := uint64(k) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return genKey{r: row{k: k, s: "v0", ok: true}, present: z%10 != 0}
}

// epoch makes one epoch's batches of at least events changelog rows and
// returns them with the exact row count.
func (g *changeGen) epoch(events int) ([]arrowflow.Batch, int) {
	var out []arrowflow.Batch
	var cs []change
	n := 0
	for n < events {
		k := g.rng.Int64N(g.keys)
		g.seq++
		fresh := row{k: k, s: fmt.Sprintf("v%d", g.seq), ok: true, ts: g.seq}
		switch s := g.state(k); {
		case !s.present:
			cs = append(cs, change{arrowflow.Insert, fresh})
			g.cur[k] = genKey{fresh, true}
		case g.rng.IntN(9) == 0:
			cs = append(cs, change{arrowflow.Delete, s.r})
			g.cur[k] = genKey{s.r, false}
		default:
			cs = append(cs, change{arrowflow.UpdateBefore, s.r}, change{arrowflow.UpdateAfter, fresh})
			g.cur[k] = genKey{fresh, true}
		}
		if len(cs) >= changeBatchRows || n+len(cs) >= events {
			out = append(out, changeBatch(memory.DefaultAllocator, cs, false))
			n += len(cs)
			cs = cs[:0]
		}
	}
	return out, n
}

// insertEpoch makes an epoch of events insert-only rows of testSchema
// (keys uniform in [0, 1e5)), in batches of changeBatchRows.
func insertEpoch(rng *rand.Rand, seq *int64, events int) []arrowflow.Batch {
	var out []arrowflow.Batch
	var cs []change
	for n := 0; n < events; n++ {
		*seq++
		cs = append(cs, change{arrowflow.Insert, row{k: rng.Int64N(100_000), s: fmt.Sprintf("v%d", *seq), ok: true, ts: *seq}})
		if len(cs) == changeBatchRows || n == events-1 {
			out = append(out, changeBatch(memory.DefaultAllocator, cs, false))
			cs = cs[:0]
		}
	}
	return out
}

// BenchmarkUpsertChanges writes epochs of change events through one sink
// subtask into an unpartitioned Iceberg table (SQL catalog on SQLite,
// local warehouse), pre-commits and commits each, in upsert mode on k at
// 1e3, 1e5 and 1e7 distinct keys and, in the same run, through the plain
// append path (no upsert keys, insert-only changelog batches of the same
// schema and size). An event is one changelog row: an update (-U and +U)
// is two events, an insert or a delete one. Each b.N iteration is one
// epoch of about 200,000 events in batches of about 4096 rows, generated
// before the timer starts (see changeGen for the mix). Reported: events/s,
// events per CPU second of the process (per core) and the commit latency
// per epoch, and the data rows and equality-delete rows the last epoch
// wrote.
//
//	go test -run XXX -bench UpsertChanges -benchtime 5x ./sinks/iceberg/
func BenchmarkUpsertChanges(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, o iceberg.Options, gen func() ([]arrowflow.Batch, int)) {
		o.Catalog = iceberg.CatalogOptions{Warehouse: b.TempDir()}
		o.Table = "bench.changes"
		sink, err := iceberg.New(ctx, o, testSchema)
		if err != nil {
			b.Fatal(err)
		}
		defer sink.Close()
		w, err := sink.Open(&arrowflow.TaskInfo{Job: "bench", Name: "sink", Parallelism: 1, FirstEpoch: 1, Allocator: memory.DefaultAllocator})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		epochs := make([][]arrowflow.Batch, b.N)
		events := 0
		for i := range epochs {
			var n int
			epochs[i], n = gen()
			events += n
		}
		var commit time.Duration
		cpu0 := cpuSeconds()
		b.ResetTimer()
		for i, data := range epochs {
			epoch := uint64(i + 1)
			for _, bt := range data {
				if err := w.Write(ctx, bt); err != nil {
					b.Fatal(err)
				}
			}
			epochs[i] = nil
			commit += commitEpoch(b, w, sink, epoch)
		}
		b.StopTimer()
		b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		if cpu := cpuSeconds() - cpu0; cpu > 0 {
			b.ReportMetric(float64(events)/cpu, "events/cpu-s")
		}
		b.ReportMetric(float64(commit.Microseconds())/1e3/float64(b.N), "commit-ms/epoch")
		// What the last epoch wrote: data rows and equality-delete rows.
		if snap := sink.Table().CurrentSnapshot(); snap != nil && snap.Summary != nil {
			for prop, unit := range map[string]string{"added-records": "data-rows/epoch", "added-equality-deletes": "eq-deletes/epoch"} {
				if n, err := strconv.Atoi(snap.Summary.Properties[prop]); err == nil {
					b.ReportMetric(float64(n), unit)
				}
			}
		}
	}
	b.Run("append", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(5, 6))
		var seq int64
		run(b, iceberg.Options{}, func() ([]arrowflow.Batch, int) {
			return insertEpoch(rng, &seq, changeEpochEvents), changeEpochEvents
		})
	})
	for _, keys := range []int64{1e3, 1e5, 1e7} {
		b.Run(fmt.Sprintf("upsert/keys=1e%d", len(fmt.Sprint(keys))-1), func(b *testing.B) {
			g := &changeGen{rng: rand.New(rand.NewPCG(7, uint64(keys))), keys: keys, cur: map[int64]genKey{}}
			run(b, iceberg.Options{UpsertKeys: []string{"k"}}, func() ([]arrowflow.Batch, int) {
				return g.epoch(changeEpochEvents)
			})
		})
	}
}
