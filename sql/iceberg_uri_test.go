package sql

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirflow/weir/sinks/collect"

	"github.com/weirflow/weir/internal/testutil"
)

// icebergURIScript is a bounded job writing a few generated rows into an
// iceberg table whose catalog 'uri' is uri.
func icebergURIScript(uri, warehouse string) string {
	return fmt.Sprintf(`
CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '9');
CREATE TABLE t (id BIGINT) WITH ('connector' = 'iceberg', 'uri' = '%s', 'warehouse' = '%s', 'catalog-database' = 'db');
INSERT INTO t SELECT id FROM gen;`, strings.ReplaceAll(uri, "'", "''"), warehouse)
}

// A key=value DSN as an iceberg sink's 'uri' is a PostgreSQL catalog:
// with the server unreachable the job fails to start, without making a
// SQLite file named after the DSN (password included) and without
// showing the password. The same holds for postgres:// URLs with the
// password in the user-info or the query.
func TestIcebergSinkDSNIsNeverASQLiteFile(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	wh := filepath.Join(t.TempDir(), "wh")
	port := testutil.FreeLoopbackPort(t)
	for _, c := range []struct{ uri, secret string }{
		{fmt.Sprintf("host=127.0.0.1 port=%d user=weir password=s3cr3tDSN dbname=cat sslmode=disable", port), "s3cr3tDSN"},
		{fmt.Sprintf("host=127.0.0.1 port=%d user=weir password='s3cr3t q' dbname=cat sslmode=disable", port), "s3cr3t"},
		{fmt.Sprintf("postgres://weir:s3cr3tUI@127.0.0.1:%d/cat?sslmode=disable", port), "s3cr3tUI"},
		{fmt.Sprintf("postgres://weir@127.0.0.1:%d/cat?sslmode=disable&password=s3cr3tQ", port), "s3cr3tQ"},
	} {
		job, err := Compile(context.Background(), icebergURIScript(c.uri, wh), Options{Parallelism: 1, ForceParallelism: true})
		if err == nil {
			runGraph(t, job.Graph, collect.New(), nil)
			t.Errorf("catalog %q: the job compiled and ran, want an error", c.uri)
		} else if strings.Contains(err.Error(), c.secret) {
			t.Errorf("catalog %q: the error shows the password: %v", c.uri, err)
		} else {
			t.Logf("%v", err)
		}
		if entries, _ := os.ReadDir(cwd); len(entries) != 0 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("catalog %q: files made in the current folder: %q", c.uri, names)
		}
	}
}

// --explain (DryRun) opens no catalog, creates nothing and shows no
// password of the iceberg connector's 'uri'.
func TestIcebergSinkExplainHidesTheURI(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	uri := "host=127.0.0.1 port=1 user=weir password=s3cr3t dbname=cat"
	job, err := Compile(context.Background(), icebergURIScript(uri, "wh"), Options{Parallelism: 1, ForceParallelism: true, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(job.Plan, "s3cr3t") {
		t.Errorf("the plan shows the password:\n%s", job.Plan)
	}
	if entries, _ := os.ReadDir(cwd); len(entries) != 0 {
		t.Errorf("--explain made files: %v", entries)
	}
}
