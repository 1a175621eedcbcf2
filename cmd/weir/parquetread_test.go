package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/weirflow/weir/sinks/parquet"
)

// committedRows reads a Parquet sink folder's committed rows, sorted, one
// string per row with its partition folder. It takes the file list from
// the commit log but reads every file with the plain Parquet reader, not
// the sink's code; it also checks that no other Parquet file is visible
// to a Hive-style reader.
func committedRows(t *testing.T, dir string) []string {
	t.Helper()
	files, err := parquet.CommittedFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	committed := map[string]bool{}
	var rows []string
	for _, f := range files {
		if committed[f.Path] {
			t.Fatalf("file %s committed twice", f.Path)
		}
		committed[f.Path] = true
		part := filepath.ToSlash(filepath.Dir(f.Path))
		n := 0
		for _, r := range readParquetFile(t, filepath.Join(dir, filepath.FromSlash(f.Path))) {
			rows = append(rows, part+" "+r)
			n++
		}
		if int64(n) != f.Rows {
			t.Fatalf("%s: %d rows, the commit log says %d", f.Path, n, f.Rows)
		}
	}
	// Nothing else visible: a folder listing shows exactly the log's files.
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), "_") || strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			rel, _ := filepath.Rel(dir, p)
			if !committed[filepath.ToSlash(rel)] {
				t.Errorf("visible file %s is not in the commit log", rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(rows)
	return rows
}

func readParquetFile(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 4096}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer tbl.Release()
	return tableRows(tbl)
}
