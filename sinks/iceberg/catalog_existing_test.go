package iceberg_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/weirflow/weir/sinks/iceberg"
)

// With Existing set (weir table), a SQLite catalog or a warehouse that
// does not exist is not created: OpenCatalog fails saying the catalog
// does not exist. An existing one opens.
func TestCatalogExistingCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(t.TempDir())
	ctx := context.Background()
	missingWH := filepath.Join(dir, "nowhere")
	for _, o := range []iceberg.CatalogOptions{
		{Warehouse: missingWH},
		{Warehouse: "warehouse"},
		{URI: filepath.Join(dir, "none", "catalog.db"), Warehouse: missingWH},
		{URI: "sqlite:" + filepath.Join(dir, "none.db"), Warehouse: missingWH},
		{URI: "file://" + filepath.Join(dir, "none.db"), Warehouse: "file://" + missingWH},
		{URI: "none.db", Warehouse: "warehouse"},
	} {
		o.Existing = true
		cat, err := iceberg.OpenCatalog(ctx, o)
		if err == nil {
			closeCat(cat)
			t.Errorf("%+v: opened, want an error", o)
		} else if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "no catalog at") {
			t.Errorf("%+v: %v, want an error saying there is no catalog", o, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("%+v: made %v", o, entries)
		}
		if names := cwdEntries(t); len(names) != 0 {
			t.Fatalf("%+v: files made in the current folder: %q", o, names)
		}
	}

	// The catalog exists: it opens, and the missing table is missing.
	wh := filepath.Join(dir, "wh")
	cat, err := iceberg.OpenCatalog(ctx, iceberg.CatalogOptions{Warehouse: wh})
	if err != nil {
		t.Fatal(err)
	}
	closeCat(cat)
	cat, err = iceberg.OpenCatalog(ctx, iceberg.CatalogOptions{Warehouse: wh, Existing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeCat(cat)
	if _, err := cat.LoadTable(ctx, table.Identifier{"db", "t"}); err == nil {
		t.Fatal("loaded a table that does not exist")
	}
}
