package files

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/parquet"
)

// regionOf is the partition value of event i in the table tests.
func regionOf(i int) any {
	return []any{"eu", "us/east", nil, "a=b"}[i%4]
}

// tableSchema is what the table tests write: the events and a region.
var tableSchema = arrow.NewSchema(append(eventSchema.Fields(),
	arrow.Field{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true}), nil)

func tableRecord(t testing.TB, from, to int) arrow.RecordBatch {
	t.Helper()
	ev := eventRecord(t, memory.DefaultAllocator, eventSchema, events(from, to))
	defer ev.Release()
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	for i := from; i < to; i++ {
		if r := regionOf(i); r == nil {
			b.AppendNull()
		} else {
			b.Append(r.(string))
		}
	}
	region := b.NewArray()
	defer region.Release()
	return array.NewRecordBatch(tableSchema, append(ev.Columns(), region), int64(to-from))
}

// A table written by sinks/parquet, partitioned by region: epoch 1 is
// committed by two subtasks; epoch 2 is pre-committed and one of its
// files put in its final place without a commit log entry (a crash in the
// middle of a commit); epoch 3 is aborted; a stray Parquet file lies in a
// partition folder. The source reads exactly epoch 1, with the partition
// column rebuilt from the folders.
func TestWeirTableReadsCommittedFiles(t *testing.T) {
	mem := newMem(t)
	table := filepath.Join(t.TempDir(), "orders")
	sink, err := parquet.New(parquet.Options{Path: table, PartitionBy: []string{"region"}, RowGroupSize: 30})
	if err != nil {
		t.Fatal(err)
	}
	writeEpoch := func(subtask int, epoch uint64, from, to int) []byte {
		w, err := sink.Open(&arrowflow.TaskInfo{Job: "writer", Subtask: subtask, Parallelism: 2, Allocator: memory.DefaultAllocator})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if err := w.Write(ctx, arrowflow.NewBatch(tableRecord(t, from, to))); err != nil {
			t.Fatal(err)
		}
		p, err := w.PreCommit(ctx, epoch)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := sink.Commit(ctx, 1, [][]byte{writeEpoch(0, 1, 0, 150), writeEpoch(1, 1, 150, 230)}); err != nil {
		t.Fatal(err)
	}
	// Epoch 2: pre-committed, and a file renamed into place as Commit
	// would, but no commit log entry.
	var staged struct {
		Files []struct{ Staged, Path string }
	}
	if err := json.Unmarshal(writeEpoch(0, 2, 1000, 1100), &staged); err != nil || len(staged.Files) == 0 {
		t.Fatalf("payload: %v, %+v", err, staged)
	}
	f := staged.Files[0]
	if err := os.Rename(filepath.Join(table, filepath.FromSlash(f.Staged)), filepath.Join(table, filepath.FromSlash(f.Path))); err != nil {
		t.Fatal(err)
	}
	if err := sink.Abort(ctx, 3, [][]byte{writeEpoch(1, 3, 2000, 2100)}); err != nil {
		t.Fatal(err)
	}
	writeParquet(t, filepath.Join(table, "region=eu", "stray.parquet"), eventSchema, events(3000, 3010), 10, true)

	declared := arrow.NewSchema([]arrow.Field{
		{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
		eventSchema.Field(0), eventSchema.Field(3), eventSchema.Field(1),
	}, nil)
	src := mustNew(t, Options{Path: table, Format: Parquet, Schema: declared, BatchSize: 25})
	committed, err := parquet.CommittedFiles(table)
	if err != nil {
		t.Fatal(err)
	}
	var wantSplits []string
	for _, cf := range committed {
		wantSplits = append(wantSplits, cf.Path)
	}
	slices.Sort(wantSplits)
	if got := mustSplits(t, src); !slices.Equal(got, wantSplits) || slices.Contains(got, f.Path) {
		t.Fatalf("splits %v, want the committed files %v (not %s)", got, wantSplits, f.Path)
	}
	out, err := runJob(t, src, 2, arrowflow.Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	var want [][]any
	for i, r := range events(0, 230) {
		want = append(want, []any{regionOf(i), r[0], r[3], r[1]})
	}
	sameRows(t, "rows", out.Rows(), want)

	// A text format cannot read the table.
	_, err = mustNew(t, Options{Path: table, Format: "json", Schema: declared}).Splits(ctx)
	wantErr(t, err, table, "written by weir", `Format "parquet"`)
}

// writeWeirTable commits events 0 to 50 (without region) to a new
// unpartitioned table at path through sinks/parquet.
func writeWeirTable(t *testing.T, path string) {
	t.Helper()
	sink, err := parquet.New(parquet.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	w, err := sink.Open(&arrowflow.TaskInfo{Job: "writer", Parallelism: 1, Allocator: memory.DefaultAllocator})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Write(ctx, arrowflow.NewBatch(eventRecord(t, memory.DefaultAllocator, eventSchema, events(0, 50)))); err != nil {
		t.Fatal(err)
	}
	p, err := w.PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Commit(ctx, 1, [][]byte{p}); err != nil {
		t.Fatal(err)
	}
}

// A partition folder of a weir table, a committed file of it, and a
// folder holding a weir table among other files are read through the
// table's commit log too: the uncommitted file in place is never read.
func TestWeirTableInsideAndAround(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "orders")
	sink, err := parquet.New(parquet.Options{Path: table, PartitionBy: []string{"region"}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := sink.Open(&arrowflow.TaskInfo{Job: "writer", Parallelism: 1, Allocator: memory.DefaultAllocator})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, arrowflow.NewBatch(tableRecord(t, 0, 40))); err != nil {
		t.Fatal(err)
	}
	p, err := w.PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Commit(ctx, 1, [][]byte{p}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// Not committed, in a partition folder.
	writeParquet(t, filepath.Join(table, "region=eu", "part-writer-00000000000000000002-00000-00000.parquet"), eventSchema, events(500, 510), 10, true)
	// A plain file beside the table.
	writeParquet(t, filepath.Join(dir, "region=x", "other.parquet"), eventSchema, events(900, 905), 10, true)

	declared := arrow.NewSchema([]arrow.Field{eventSchema.Field(0), {Name: "region", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	wantOf := func(keep func(region any) bool) [][]any {
		var want [][]any
		for i := range 40 {
			if keep(regionOf(i)) {
				want = append(want, []any{int64(i), regionOf(i)})
			}
		}
		return want
	}
	committed, err := parquet.CommittedFiles(table)
	if err != nil {
		t.Fatal(err)
	}
	var euFile string
	for _, cf := range committed {
		if strings.HasPrefix(cf.Path, "region=eu/") {
			euFile = cf.Path
		}
	}
	for _, tc := range []struct {
		name string
		path string
		want [][]any
	}{
		{"partition-folder", filepath.Join(table, "region=eu"), wantOf(func(r any) bool { return r == "eu" })},
		{"committed-file", filepath.Join(table, filepath.FromSlash(euFile)), wantOf(func(r any) bool { return r == "eu" })},
		{"around", dir, append(wantOf(func(any) bool { return true }),
			[]any{int64(900), "x"}, []any{int64(901), "x"}, []any{int64(902), "x"}, []any{int64(903), "x"}, []any{int64(904), "x"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := newMem(t)
			src := mustNew(t, Options{Path: tc.path, Format: Parquet, Schema: declared})
			out, err := runJob(t, src, 2, arrowflow.Options{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			sameRows(t, "rows", out.Rows(), tc.want)
		})
	}
	// The uncommitted file itself is refused.
	_, err = mustNew(t, Options{Path: filepath.Join(table, "region=eu", "part-writer-00000000000000000002-00000-00000.parquet"),
		Format: Parquet, Schema: declared}).Splits(ctx)
	wantErr(t, err, "is not a committed file of the weir Parquet table")
}
