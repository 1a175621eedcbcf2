package sql

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	icebergsink "github.com/weirflow/weir/sinks/iceberg"
)

// An updating query (a grouped count with a HAVING that rows leave: their
// -U passes, their +U does not, so the key is deleted) into an Iceberg
// upsert table at parallelism 1, 2 and 4 leaves exactly the reference's
// rows: iceberg-go's scan applies the equality deletes.
func TestIcebergUpsertFromAnUpdatingQuery(t *testing.T) {
	for _, par := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("p%d", par), func(t *testing.T) {
			wh := filepath.Join(t.TempDir(), "wh")
			script := fmt.Sprintf(`
CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '9999', 'rows-per-second' = '40000');
CREATE TABLE t (k BIGINT, n BIGINT, s BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'iceberg', 'warehouse' = '%s',
  'catalog-database' = 'db', 'write.upsert.enabled' = 'true', 'format-version' = '2', 'write.parquet.compression-codec' = 'snappy');
INSERT INTO t SELECT id %% 50, COUNT(*), SUM(id) FROM gen GROUP BY id %% 50 HAVING COUNT(*) <= 150 + (id %% 50 %% 2) * 100;`, wh)
			job, err := Compile(context.Background(), script, Options{Parallelism: par, ForceParallelism: true})
			if err != nil {
				t.Fatal(err)
			}
			runJob(t, job)
			var want []string
			for k := int64(0); k < 50; k++ {
				n, sum := int64(0), int64(0)
				for id := k; id < 10000; id += 50 {
					n, sum = n+1, sum+id
				}
				if n <= 150+(k%2)*100 {
					want = append(want, fmt.Sprintf("%d | %d | %d", k, n, sum))
				}
			}
			got := icebergRows(t, wh, "t")
			wantSorted := append([]string(nil), want...)
			sortStrings(wantSorted)
			if strings.Join(got, "\n") != strings.Join(wantSorted, "\n") {
				t.Fatalf("got %d rows %v\nwant %d rows %v", len(got), got, len(wantSorted), wantSorted)
			}
			props := icebergProps(t, wh, "t")
			if props["write.parquet.compression-codec"] != "snappy" || props["write.upsert.enabled"] != "true" {
				t.Fatalf("table properties %v: want the WITH clause's Iceberg properties", props)
			}
		})
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func icebergProps(t *testing.T, warehouse, name string) map[string]string {
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
	return tbl.Properties()
}

// Options outside Iceberg's table property namespaces are still unknown;
// 'format-version' = '1' cannot hold upserts.
func TestIcebergOptionsRefused(t *testing.T) {
	for _, c := range []struct{ with, want string }{
		{`'colour' = 'red'`, "option 'colour': the iceberg connector has no such option"},
		{`'format-version' = '7'`, "option 'format-version': \"7\": want 1, 2 or 3"},
		{`'write.upsert.enabled' = 'true', 'format-version' = '1'`, "upserts need format version 2"},
		{`'write.format.default' = 'orc'`, "weir writes Parquet data files only"},
		{`'flink-maintenance.expire-snapshots.enabled' = 'true'`, "weir runs only the compaction of Flink's sink maintenance"},
		{`'flink-maintenance.rewrite.partial-progress.enabled' = 'true'`, "weir's compaction does not have this option"},
		{`'flink-maintenance.rewrite.enabled' = 'true', 'flink-maintenance.rewrite.schedule.commit-count' = '0', 'flink-maintenance.rewrite.schedule.data-file-count' = '0', 'flink-maintenance.rewrite.schedule.interval-second' = '0'`, "no schedule"},
		{`'flink-maintenance.rewrite.min-input-files' = '0'`, "must be at least 1"},
		{`'flink-maintenance.rewrite.schedule.commit-count' = 'x'`, "flink-maintenance.rewrite.schedule.commit-count"},
	} {
		wh := filepath.Join(t.TempDir(), "wh")
		script := fmt.Sprintf(`
CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '10');
CREATE TABLE t (k BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'iceberg', 'warehouse' = '%s', 'catalog-database' = 'db', %s);
INSERT INTO t SELECT id FROM gen;`, wh, c.with)
		_, err := Compile(context.Background(), script, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.with, err, c.want)
		}
	}
}
