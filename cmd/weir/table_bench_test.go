package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/weirflow/weir/arrowflow"
	icebergsink "github.com/weirflow/weir/sinks/iceberg"
)

// The tables of BenchmarkReadAfterUpserts: readBenchEpochs commits of
// readBenchRows changelog rows each, from 2 sink subtasks (key k on
// subtask k%2).
const (
	readBenchEpochs = 100
	readBenchRows   = 2000
	readBenchKeys   = 10_000
)

// BenchmarkReadAfterUpserts is the cost of reading an Iceberg table that
// weir's sink wrote in 100 epochs, before and after `weir table compact`.
// The upsert table (db.t, upsert key k, upsertTestSchema) gets 2000
// changelog rows an epoch over 10,000 keys: an absent key is inserted, a
// present one deleted with probability 1/9 or else updated (-U/+U), so
// each epoch commits data files and equality-delete files; the append
// table gets 2000 new rows an epoch through the plain sink. The tables are
// written once per sub-benchmark pair (not timed); then
// before-compaction scans them, `weir table compact --min-input-files 2`
// runs, and after-compaction scans again. Each b.N iteration is one full
// scan with iceberg-go (plan, read, apply deletes) counting the rows.
// The rows read must equal the reference the writer kept, before and
// after compaction. Reported: ms/scan, rows, and the data and delete
// files of the snapshot scanned.
//
//	go test -run XXX -bench ReadAfterUpserts -benchtime 3x ./cmd/weir/
func BenchmarkReadAfterUpserts(b *testing.B) {
	ctx := context.Background()
	for _, upsert := range []bool{true, false} {
		name := "append"
		if upsert {
			name = "upsert"
		}
		b.Run(name, func(b *testing.B) {
			wh := filepath.Join(b.TempDir(), "wh")
			t0 := time.Now()
			ref, err := writeReadBenchTable(ctx, wh, upsert)
			if err != nil {
				b.Fatal(err)
			}
			check := func(when string) {
				got, err := readBenchState(ctx, wh)
				if err != nil {
					b.Fatal(err)
				}
				if !maps.Equal(got, ref) {
					b.Fatalf("%s: the table holds %d rows, the reference %d (or other values)", when, len(got), len(ref))
				}
			}
			check("before compaction")
			b.Logf("%s: wrote %d epochs in %v", name, readBenchEpochs, time.Since(t0).Round(time.Millisecond))
			b.Run("before-compaction", func(b *testing.B) { benchReadScan(b, wh, len(ref)) })
			t0 = time.Now()
			out, err := runCLIContext(ctx, "table", "compact", "--warehouse", wh, "--table", "db.t", "--min-input-files", "2")
			if err != nil {
				b.Fatalf("weir table compact: %v\n%s", err, out)
			}
			b.Logf("%s: compact in %v:\n%s", name, time.Since(t0).Round(time.Millisecond), out)
			check("after compaction")
			b.Run("after-compaction", func(b *testing.B) { benchReadScan(b, wh, len(ref)) })
		})
	}
}

// writeReadBenchTable writes db.t in wh through weir's Iceberg sink, in
// upsert mode on k or appending, and returns the rows it should hold.
func writeReadBenchTable(ctx context.Context, wh string, upsert bool) (map[int64]string, error) {
	o := icebergsink.Options{Catalog: icebergsink.CatalogOptions{Warehouse: wh}, Table: "db.t"}
	if upsert {
		o.UpsertKeys = []string{"k"}
	}
	s, err := icebergsink.New(ctx, o, upsertTestSchema)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	const par = 2
	ws := make([]arrowflow.SinkWriter, par)
	for i := range ws {
		w, err := s.Open(&arrowflow.TaskInfo{Job: "upserts", Name: "sink", Subtask: i, Parallelism: par, FirstEpoch: 1, Allocator: memory.DefaultAllocator})
		if err != nil {
			return nil, err
		}
		defer w.Close()
		ws[i] = w
	}
	rng := rand.New(rand.NewPCG(21, 1))
	cur := map[int64]string{}
	for e := 1; e <= readBenchEpochs; e++ {
		per := make([][]kvChange, par)
		for n, i := 0, 0; n < readBenchRows; i++ {
			v := fmt.Sprintf("e%d-%d", e, i)
			if !upsert {
				k := int64(e*readBenchRows + i)
				per[k%par] = append(per[k%par], kvChange{arrowflow.Insert, k, v})
				cur[k] = v
				n++
				continue
			}
			k := rng.Int64N(readBenchKeys)
			sub := k % par
			old, ok := cur[k]
			switch {
			case !ok:
				per[sub] = append(per[sub], kvChange{arrowflow.Insert, k, v})
				cur[k] = v
				n++
			case rng.IntN(9) == 0:
				per[sub] = append(per[sub], kvChange{arrowflow.Delete, k, old})
				delete(cur, k)
				n++
			default:
				per[sub] = append(per[sub], kvChange{arrowflow.UpdateBefore, k, old}, kvChange{arrowflow.UpdateAfter, k, v})
				cur[k] = v
				n += 2
			}
		}
		if err := commitKVChanges(ctx, s, ws, uint64(e), per); err != nil {
			return nil, err
		}
	}
	return cur, nil
}

// loadReadBenchTable loads db.t from wh; done closes its catalog.
func loadReadBenchTable(ctx context.Context, wh string) (tbl *table.Table, done func(), err error) {
	cat, err := icebergsink.OpenCatalog(ctx, icebergsink.CatalogOptions{Warehouse: wh})
	if err != nil {
		return nil, nil, err
	}
	done = func() { closeCatalogIfCloser(cat) }
	if tbl, err = cat.LoadTable(ctx, catalog.ToIdentifier("db.t")); err != nil {
		done()
		return nil, nil, err
	}
	return tbl, done, nil
}

// scanReadBench reads tbl with iceberg-go's scan, calling row for each row
// (nil: only count), and returns the rows read.
func scanReadBench(ctx context.Context, tbl *table.Table, row func(k int64, v string) error) (int, error) {
	scan := tbl.Scan()
	defer scan.Close()
	_, recs, err := scan.ToArrowRecords(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for rec, err := range recs {
		if err != nil {
			return n, err
		}
		n += int(rec.NumRows())
		if row != nil {
			ks, vs := rec.Column(0).(*array.Int64), rec.Column(1).(*array.String)
			for i := range int(rec.NumRows()) {
				if err := row(ks.Value(i), vs.Value(i)); err != nil {
					rec.Release()
					return n, err
				}
			}
		}
		rec.Release()
	}
	return n, nil
}

// readBenchState reads db.t in wh into a map, refusing a key seen twice.
func readBenchState(ctx context.Context, wh string) (map[int64]string, error) {
	tbl, done, err := loadReadBenchTable(ctx, wh)
	if err != nil {
		return nil, err
	}
	defer done()
	rows := map[int64]string{}
	_, err = scanReadBench(ctx, tbl, func(k int64, v string) error {
		if old, dup := rows[k]; dup {
			return fmt.Errorf("key %d twice (%q and %q)", k, old, v)
		}
		rows[k] = v
		return nil
	})
	return rows, err
}

// benchReadScan times full scans of db.t in wh, which must read want rows.
func benchReadScan(b *testing.B, wh string, want int) {
	ctx := context.Background()
	tbl, done, err := loadReadBenchTable(ctx, wh)
	if err != nil {
		b.Fatal(err)
	}
	defer done()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n, err := scanReadBench(ctx, tbl, nil)
		if err != nil {
			b.Fatal(err)
		}
		if n != want {
			b.Fatalf("the scan read %d rows, want %d", n, want)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/scan")
	b.ReportMetric(float64(want), "rows")
	if snap := tbl.CurrentSnapshot(); snap != nil && snap.Summary != nil {
		for prop, unit := range map[string]string{"total-data-files": "data-files", "total-delete-files": "delete-files"} {
			if n, err := strconv.Atoi(snap.Summary.Properties[prop]); err == nil {
				b.ReportMetric(float64(n), unit)
			}
		}
	}
}
