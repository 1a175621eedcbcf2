//go:build duckdb

package main

// DuckDB as an oracle for the tables the sink writes. It needs cgo and
// links DuckDB's static library (the first build takes about a minute),
// so it runs only with the duckdb build tag:
//
//	go test -tags duckdb -run DuckDB .

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	_ "github.com/duckdb/duckdb-go/v2"
)

// TestSinkTableReadByDuckDB writes a table through weir's Parquet sink
// (with a pre-committed, uncommitted epoch left in staging) and reads it
// with DuckDB's read_parquet('**/*.parquet', hive_partitioning = true):
// DuckDB must see exactly the committed rows, categories decoded from
// the escaped folder names.
func TestSinkTableReadByDuckDB(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	// Categories with characters Hive escapes.
	saved := categories
	categories = []string{"a/b", "x=y", "100%", "c:d", "é", "plain", "q?", "#1", "[x]", "sp ace"}
	defer func() { categories = saved }()
	catIndexSaved := catIndex
	catIndex = map[string]int64{}
	for i, c := range categories {
		catIndex[c] = int64(i)
	}
	defer func() { catIndex = catIndexSaved }()

	d := generate(mem, 12, 30_000, 1000)
	defer d.release()
	root := filepath.Join(t.TempDir(), "table")
	writeSinkTable(t, d, root, mem)

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var list []string
	for _, c := range categories {
		list = append(list, "'"+strings.ReplaceAll(c, "'", "''")+"'")
	}
	q := fmt.Sprintf(`SELECT count(*), sum(key)::BIGINT, count(*) FILTER (price IS NULL),
		sum(round(price * 100))::BIGINT, sum((coalesce(list_position([%s], category), -999)) * (key %% 7 + 1))::BIGINT,
		sum(epoch_ms(ts))::BIGINT
		FROM read_parquet('%s/**/*.parquet', hive_partitioning = true)`, strings.Join(list, ", "), root)
	var got fingerprint
	if err := db.QueryRow(q).Scan(&got.Rows, &got.KeySum, &got.PriceNulls, &got.PriceCents, &got.CatSum, &got.TSSum); err != nil {
		t.Fatal(err)
	}
	if got != d.want {
		t.Fatalf("DuckDB read %+v, want %+v", got, d.want)
	}
	var version string
	_ = db.QueryRow("SELECT version()").Scan(&version)
	t.Logf("DuckDB %s read %d rows, as written", version, got.Rows)
}
