package sql

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/collect"
	icebergsink "github.com/weirflow/weir/sinks/iceberg"
)

// runJob runs a compiled job to its end with checkpoints every 20 ms.
func runJob(t *testing.T, job *Job) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	j, err := job.Graph.Plan(arrowflow.Options{Allocator: mem, CheckpointInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := j.Run(ctx); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
}

// icebergRows reads the table db.name of the SQLite catalog in warehouse
// with iceberg-go's own scan (which applies equality deletes) and returns
// each row formatted as "v1 | v2 | ...", sorted.
func icebergRows(t *testing.T, warehouse, name string) []string {
	t.Helper()
	ctx := context.Background()
	cat, err := icebergsink.OpenCatalog(ctx, icebergsink.CatalogOptions{Type: "sql", Warehouse: warehouse})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"db", name})
	if err != nil {
		t.Fatal(err)
	}
	_, recs, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for rec, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			s := ""
			for c := 0; c < int(rec.NumCols()); c++ {
				if c > 0 {
					s += " | "
				}
				s += fmt.Sprint(arrowflow.ValueAt(rec.Column(c), i))
			}
			rows = append(rows, s)
		}
		rec.Release()
	}
	sort.Strings(rows)
	return rows
}

// A sink with a PRIMARY KEY receives all changes of a key on one subtask:
// 10,000 upserts of keys 1..3 into an Iceberg upsert table leave 3 rows at
// every parallelism (the sink was connected with a forward edge, so at
// parallelism 4 several subtasks upserted the same key and the table had
// 12 rows). The key column is nullable in the DDL: as in Flink, PRIMARY KEY
// columns are NOT NULL implicitly.
func TestUpsertSinkIsKeyedByThePrimaryKey(t *testing.T) {
	for _, par := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("p%d", par), func(t *testing.T) {
			wh := filepath.Join(t.TempDir(), "wh")
			script := fmt.Sprintf(`
CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '9999');
CREATE TABLE t (k BIGINT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'iceberg', 'warehouse' = '%s',
  'catalog-database' = 'db', 'write.upsert.enabled' = 'true');
INSERT INTO t SELECT id %% 3 + 1, id FROM gen;`, wh)
			job, err := Compile(context.Background(), script, Options{Parallelism: par, ForceParallelism: true})
			if err != nil {
				t.Fatal(err)
			}
			runJob(t, job)
			rows := icebergRows(t, wh, "t")
			if len(rows) != 3 {
				t.Fatalf("%d rows, want 3 (one per key): %v", len(rows), rows[:min(len(rows), 20)])
			}
			for i, r := range rows {
				var k, v int64
				if _, err := fmt.Sscanf(r, "%d | %d", &k, &v); err != nil || k != int64(i+1) || v%3+1 != k {
					t.Errorf("row %q: want key %d with a value of that key", r, i+1)
				}
			}
		})
	}
}

// A NULL written into a PRIMARY KEY column (NOT NULL, as in Flink) stops
// the job with an error naming the table and the column, as Flink's
// 'table.exec.sink.not-null-enforcer' = 'ERROR'.
func TestNullIntoPrimaryKeyIsAnError(t *testing.T) {
	script := `
CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '99');
CREATE TABLE t (k BIGINT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'blackhole');
INSERT INTO t SELECT CASE WHEN id = 57 THEN CAST(NULL AS BIGINT) ELSE id END, id FROM gen;`
	out := collect.New()
	job, err := Compile(context.Background(), script, Options{Parallelism: 2, ForceParallelism: true, Sinks: map[string]arrowflow.Sink{"t": out}})
	if err != nil {
		t.Fatal(err)
	}
	j, err := job.Graph.Plan(arrowflow.Options{CheckpointInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = j.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "table t: column k is NOT NULL, but the query wrote NULL") {
		t.Fatalf("error %v, want one naming table t and column k", err)
	}
}
