package main

import (
	"context"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	pq "github.com/parquet-go/parquet-go"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/parquet"
)

// TestSinkTableReadByParquetGo writes a table through weir's Parquet sink
// (two subtasks, two epochs, partitioned by category, files rolling over)
// and reads it back with parquet-go, an implementation independent of
// the arrow-go library the sink writes with: the folder names give the
// category, the files the other columns, and together they must be
// exactly the generated rows.
func TestSinkTableReadByParquetGo(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d := generate(mem, 11, 40_000, 1000)
	defer d.release()

	root := filepath.Join(t.TempDir(), "table")
	writeSinkTable(t, d, root, mem)

	// The files a Hive-style reader sees are the committed ones.
	files, err := parquet.CommittedFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	var committed, visible []string
	for _, f := range files {
		committed = append(committed, f.Path)
	}
	err = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && strings.HasPrefix(e.Name(), "_") {
			return fs.SkipDir
		}
		if !e.IsDir() {
			rel, _ := filepath.Rel(root, path)
			visible = append(visible, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(committed)
	slices.Sort(visible)
	if !slices.Equal(committed, visible) {
		t.Fatalf("visible files %v, committed %v", visible, committed)
	}
	if len(files) <= 2*10 {
		t.Fatalf("%d files: no partition rolled over", len(files))
	}

	var got fingerprint
	for _, rel := range visible {
		dir, _, _ := strings.Cut(rel, "/")
		v, ok := strings.CutPrefix(dir, "category=")
		if !ok {
			t.Fatalf("%s: not in a category= folder", rel)
		}
		cat, err := url.PathUnescape(v)
		if err != nil {
			t.Fatal(err)
		}
		readByParquetGo(t, filepath.Join(root, filepath.FromSlash(rel)), cat, &got)
	}
	if got != d.want {
		t.Fatalf("parquet-go read %+v, want %+v", got, d.want)
	}
}

// readByParquetGo adds the rows of one file to fp, with category cat.
func readByParquetGo(t *testing.T, path, cat string, fp *fingerprint) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := pq.OpenFile(f, st.Size())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if _, ok := pf.Schema().Lookup("category"); ok {
		t.Fatalf("%s: the partition column is in the file too", path)
	}
	buf := make([]pq.Value, 1000)
	for _, rg := range pf.RowGroups() {
		cols := map[string][]pq.Value{}
		for _, name := range []string{"key", "price", "ts"} {
			leaf, ok := pf.Schema().Lookup(name)
			if !ok {
				t.Fatalf("%s: no column %s", path, name)
			}
			pages := rg.ColumnChunks()[leaf.ColumnIndex].Pages()
			err := readPages(pages, buf, func(vals []pq.Value) {
				for _, v := range vals {
					cols[name] = append(cols[name], v.Clone())
				}
			})
			pages.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
		n := int(rg.NumRows())
		if len(cols["key"]) != n || len(cols["price"]) != n || len(cols["ts"]) != n {
			t.Fatalf("%s: %d rows, columns of %d, %d, %d values", path, n, len(cols["key"]), len(cols["price"]), len(cols["ts"]))
		}
		for i := range n {
			p := cols["price"][i]
			fp.add(cols["key"][i].Int64(), p.Double(), p.IsNull(), cat, cols["ts"][i].Int64())
		}
	}
}

// writeSinkTable writes d into a table at root through weir's Parquet
// sink: two subtasks, two epochs, partitioned by category, files rolling
// over; and leaves a third epoch pre-committed but not committed, whose
// rows no reader may see.
func writeSinkTable(t *testing.T, d *dataset, root string, mem memory.Allocator) {
	t.Helper()
	ctx := context.Background()
	s, err := parquet.New(parquet.Options{Path: root, PartitionBy: []string{"category"}, TargetFileSize: 16 << 10, RowGroupSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	ws := make([]arrowflow.SinkWriter, 2)
	for i := range ws {
		if ws[i], err = s.Open(&arrowflow.TaskInfo{Job: "bench-test", Subtask: i, Parallelism: 2, Allocator: mem}); err != nil {
			t.Fatal(err)
		}
		defer ws[i].Close()
	}
	half := len(d.batches) / 2
	for epoch, batches := range [][]int{{0, half}, {half, len(d.batches)}} {
		for b := batches[0]; b < batches[1]; b++ {
			d.batches[b].Retain()
			if err := ws[b%2].Write(ctx, arrowflow.NewBatch(d.batches[b])); err != nil {
				t.Fatal(err)
			}
		}
		var payloads [][]byte
		for _, w := range ws {
			p, err := w.PreCommit(ctx, uint64(epoch+1))
			if err != nil {
				t.Fatal(err)
			}
			payloads = append(payloads, p)
		}
		if err := s.Commit(ctx, uint64(epoch+1), payloads); err != nil {
			t.Fatal(err)
		}
	}

	for i, w := range ws {
		d.batches[i].Retain()
		if err := w.Write(ctx, arrowflow.NewBatch(d.batches[i])); err != nil {
			t.Fatal(err)
		}
		if _, err := w.PreCommit(ctx, 3); err != nil {
			t.Fatal(err)
		}
	}
}
