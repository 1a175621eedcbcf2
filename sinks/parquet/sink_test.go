package parquet_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/parquet"
)

var finalName = regexp.MustCompile(`^part-orders-v2-(\d{20})-(\d{5})-(\d{5})\.parquet$`)

// Several epochs of three subtasks, partitioned and with files rolling
// over: what both readers see must be exactly the rows written, and
// nothing may be visible before its epoch commits.
func TestCommittedRowsMatchInput(t *testing.T) {
	mem := newMem(t)
	s := newSink(t, parquet.Options{TargetFileSize: 1000, RowGroupSize: 10})
	root := s.Options().Path
	ws := openWriters(t, s, mem, 3)
	g := newGen(1)
	var all [][]any
	for epoch := uint64(1); epoch <= 3; epoch++ {
		payloads, rows := writeEpoch(t, g, mem, epoch, ws, 4)
		if vis := visibleFiles(t, root); len(vis) != 0 && epoch == 1 {
			t.Fatalf("files visible before the first commit: %v", vis)
		}
		checkTable(t, root, mem, all) // pre-committed rows are not visible
		if err := s.Commit(ctx, epoch, payloads); err != nil {
			t.Fatal(err)
		}
		all = append(all, wantRows(rows)...)
		checkTable(t, root, mem, all)
		if last, err := s.LastCommittedEpoch(ctx, job); err != nil || last != epoch {
			t.Fatalf("LastCommittedEpoch = %d, %v; want %d", last, err, epoch)
		}
	}

	files, err := parquet.CommittedFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	// A partition's files of one epoch and subtask: more than one means
	// the first rolled over.
	perPartition := map[string]int{}
	rolled := 0
	for _, f := range files {
		m := finalName.FindStringSubmatch(filepath.Base(f.Path))
		if m == nil {
			t.Fatalf("file name %s does not follow part-<job>-<epoch>-<subtask>-<seq>.parquet", f.Path)
		}
		key := filepath.Dir(f.Path) + " " + m[1] + " " + m[2]
		if perPartition[key]++; perPartition[key] == 2 {
			rolled++
		}
		if len(f.Partition) != 2 || f.Partition[0].Column != "day" || f.Partition[1].Column != "region" {
			t.Fatalf("%s: partition values %+v", f.Path, f.Partition)
		}
		st, err := os.Stat(filepath.Join(root, filepath.FromSlash(f.Path)))
		if err != nil || st.Size() != f.Bytes {
			t.Fatalf("%s: stat %v, %v; the log says %d bytes", f.Path, st, err, f.Bytes)
		}
	}
	if rolled == 0 {
		t.Fatalf("no partition rolled over to a second file in %d files; the test needs rolling", len(files))
	}
	// Nothing is left in staging once every epoch committed.
	if left := listAll(t, filepath.Join(root, "_weir", "staging")); len(left) != 0 {
		t.Fatalf("staging not empty after commits: %v", left)
	}
}

// Rolling must keep files near the target size and row groups at most
// RowGroupSize rows.
func TestRollingAndRowGroups(t *testing.T) {
	mem := newMem(t)
	const target, rowGroup = 20000, 100
	s := newSink(t, parquet.Options{PartitionBy: []string{}, TargetFileSize: target, RowGroupSize: rowGroup})
	ws := openWriters(t, s, mem, 1)
	g := newGen(2)
	var rows []testRow
	for range 40 {
		batch := g.rows(250)
		if err := ws[0].Write(ctx, arrowflow.NewBatch(record(mem, batch))); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, batch...)
	}
	p, err := ws[0].PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 1, [][]byte{p}); err != nil {
		t.Fatal(err)
	}
	checkTable(t, s.Options().Path, mem, want(false, rows))
	files, err := parquet.CommittedFiles(s.Options().Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("%d files, want several of about %d bytes", len(files), target)
	}
	for i, f := range files {
		pf, err := file.OpenParquetFile(filepath.Join(s.Options().Path, f.Path), false)
		if err != nil {
			t.Fatal(err)
		}
		md := pf.MetaData()
		// The target counts the data written; the footer comes on top. A
		// file ends after the batch that took it past the target: at
		// most one batch (250 rows, about 4 kB here) and the page index
		// more.
		if data := f.Bytes - int64(md.Size()); data > target+8000 || i < len(files)-1 && data < target {
			t.Errorf("%s: %d bytes of data and %d of footer, target %d", f.Path, data, md.Size(), target)
		}
		for rg := 0; rg < md.NumRowGroups(); rg++ {
			if n := md.RowGroup(rg).NumRows(); n > rowGroup {
				t.Errorf("%s: row group %d has %d rows, more than %d", f.Path, rg, n, rowGroup)
			}
		}
		if md.NumRows != f.Rows {
			t.Errorf("%s: %d rows, the log says %d", f.Path, md.NumRows, f.Rows)
		}
		pf.Close()
	}
}

func TestCompressionCodecs(t *testing.T) {
	for name, want := range map[string]compress.Compression{"": compress.Codecs.Zstd, "zstd": compress.Codecs.Zstd, "snappy": compress.Codecs.Snappy, "none": compress.Codecs.Uncompressed} {
		t.Run("compression="+name, func(t *testing.T) {
			mem := newMem(t)
			s, err := parquet.New(parquet.Options{Path: t.TempDir(), PartitionBy: partitionBy, Compression: name})
			if err != nil {
				t.Fatal(err)
			}
			ws := openWriters(t, s, mem, 1)
			payloads, rows := writeEpoch(t, newGen(3), mem, 7, ws, 3)
			if err := s.Commit(ctx, 7, payloads); err != nil {
				t.Fatal(err)
			}
			checkTable(t, s.Options().Path, mem, wantRows(rows))
			files, _ := parquet.CommittedFiles(s.Options().Path)
			pf, err := file.OpenParquetFile(filepath.Join(s.Options().Path, files[0].Path), false)
			if err != nil {
				t.Fatal(err)
			}
			defer pf.Close()
			cc, err := pf.MetaData().RowGroup(0).ColumnChunk(0)
			if err != nil {
				t.Fatal(err)
			}
			if got := cc.Compression(); got != want {
				t.Fatalf("codec %s, want %s", got, want)
			}
		})
	}
}

func TestCommitIsIdempotent(t *testing.T) {
	mem := newMem(t)
	s := newSink(t, parquet.Options{TargetFileSize: 4000})
	root := s.Options().Path
	ws := openWriters(t, s, mem, 2)
	g := newGen(4)
	p1, rows1 := writeEpoch(t, g, mem, 1, ws, 3)
	p2, rows2 := writeEpoch(t, g, mem, 2, ws, 3)
	for range 2 {
		if err := s.Commit(ctx, 1, p1); err != nil {
			t.Fatal(err)
		}
	}
	logPath := filepath.Join(root, "_weir", "commits", job, "00000000000000000001.json")
	entry, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 2, p2); err != nil {
		t.Fatal(err)
	}
	// Recovery commits the restored epoch again, possibly in a new
	// process: a new Sink on the same folder.
	s2 := newSink(t, parquet.Options{Path: root})
	for _, e := range []struct {
		epoch    uint64
		payloads [][]byte
	}{{1, p1}, {2, p2}, {1, p1}} {
		if err := s2.Commit(ctx, e.epoch, e.payloads); err != nil {
			t.Fatalf("commit epoch %d again: %v", e.epoch, err)
		}
	}
	checkTable(t, root, mem, wantRows(rows1, rows2))
	if again, _ := os.ReadFile(logPath); !bytes.Equal(again, entry) {
		t.Fatalf("commit log entry rewritten:\n%s\nwas\n%s", again, entry)
	}
}

// A commit that stopped after moving some files (and before the commit
// log entry) is completed by committing again.
func TestCommitCompletesAfterCrashBetweenRenames(t *testing.T) {
	mem := newMem(t)
	s := newSink(t, parquet.Options{TargetFileSize: 3000})
	root := s.Options().Path
	ws := openWriters(t, s, mem, 2)
	payloads, rows := writeEpoch(t, newGen(5), mem, 9, ws, 3)

	// The crash: half of the files moved into place, no log entry.
	moved := 0
	for _, p := range payloads {
		sp := decodeStaged(t, p)
		for i, f := range sp.Files {
			if i%2 == 1 {
				continue
			}
			final := filepath.Join(root, filepath.FromSlash(f.Path))
			if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(root, filepath.FromSlash(f.Staged)), final); err != nil {
				t.Fatal(err)
			}
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("nothing moved; the test needs several files")
	}
	if _, err := parquet.CommittedFiles(root); err != nil {
		t.Fatal(err)
	}
	if last, _ := s.LastCommittedEpoch(ctx, job); last != 0 {
		t.Fatalf("epoch %d committed before its log entry", last)
	}
	s2 := newSink(t, parquet.Options{Path: root})
	if err := s2.Commit(ctx, 9, payloads); err != nil {
		t.Fatal(err)
	}
	checkTable(t, root, mem, wantRows(rows))
	if last, _ := s2.LastCommittedEpoch(ctx, job); last != 9 {
		t.Fatalf("LastCommittedEpoch = %d, want 9", last)
	}
}

// A staged file that is gone while its final file does not exist is
// lost output: Commit must say so rather than commit an epoch without it.
func TestCommitOfLostFileFails(t *testing.T) {
	mem := newMem(t)
	s := newSink(t, parquet.Options{})
	ws := openWriters(t, s, mem, 1)
	payloads, _ := writeEpoch(t, newGen(6), mem, 3, ws, 2)
	sp := decodeStaged(t, payloads[0])
	if err := os.Remove(filepath.Join(s.Options().Path, filepath.FromSlash(sp.Files[0].Staged))); err != nil {
		t.Fatal(err)
	}
	err := s.Commit(ctx, 3, payloads)
	if err == nil || !strings.Contains(err.Error(), "lost") {
		t.Fatalf("commit with a lost file: %v", err)
	}
	if last, _ := s.LastCommittedEpoch(ctx, job); last != 0 {
		t.Fatalf("epoch %d committed", last)
	}
}

func TestAbortRemovesStagedFiles(t *testing.T) {
	mem := newMem(t)
	s := newSink(t, parquet.Options{})
	root := s.Options().Path
	ws := openWriters(t, s, mem, 2)
	g := newGen(7)
	p1, rows1 := writeEpoch(t, g, mem, 1, ws, 2)
	p2, _ := writeEpoch(t, g, mem, 2, ws, 2)
	if err := s.Commit(ctx, 1, p1); err != nil {
		t.Fatal(err)
	}
	if err := s.Abort(ctx, 2, p2); err != nil {
		t.Fatal(err)
	}
	if left := listAll(t, filepath.Join(root, "_weir", "staging")); len(left) != 0 {
		t.Fatalf("staged files left after abort: %v", left)
	}
	checkTable(t, root, mem, wantRows(rows1))
	if last, _ := s.LastCommittedEpoch(ctx, job); last != 1 {
		t.Fatalf("LastCommittedEpoch = %d, want 1", last)
	}
	if err := s.Commit(ctx, 2, p2); err == nil {
		t.Fatal("commit of an aborted epoch succeeded")
	}
	// Payloads of another epoch are refused.
	if err := s.Abort(ctx, 5, p1); err == nil || !strings.Contains(err.Error(), "epoch 1") {
		t.Fatalf("abort of epoch 5 with epoch 1's payloads: %v", err)
	}
}

// An epoch without rows has no payload and no commit log entry.
func TestEmptyEpoch(t *testing.T) {
	mem := newMem(t)
	s := newSink(t, parquet.Options{})
	ws := openWriters(t, s, mem, 2)
	b, _ := newGen(8).batch(mem, 10)
	b.Sel = []int32{} // nothing selected
	if err := ws[0].Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	payloads, _ := writeEpoch(t, newGen(8), mem, 4, ws, 0)
	for i, p := range payloads {
		if p != nil {
			t.Fatalf("subtask %d: payload %s for an epoch without rows", i, p)
		}
	}
	if err := s.Commit(ctx, 4, payloads); err != nil {
		t.Fatal(err)
	}
	if last, _ := s.LastCommittedEpoch(ctx, job); last != 0 {
		t.Fatalf("LastCommittedEpoch = %d after an empty epoch", last)
	}
	checkTable(t, s.Options().Path, mem, nil)
}

func TestLastCommittedEpoch(t *testing.T) {
	mem := newMem(t)
	s := newSink(t, parquet.Options{})
	if last, err := s.LastCommittedEpoch(ctx, job); err != nil || last != 0 {
		t.Fatalf("fresh table: LastCommittedEpoch = %d, %v", last, err)
	}
	ws := openWriters(t, s, mem, 1)
	g := newGen(9)
	for _, epoch := range []uint64{2, 5, 11} {
		p, _ := writeEpoch(t, g, mem, epoch, ws, 1)
		if err := s.Commit(ctx, epoch, p); err != nil {
			t.Fatal(err)
		}
	}
	if last, err := s.LastCommittedEpoch(ctx, job); err != nil || last != 11 {
		t.Fatalf("LastCommittedEpoch = %d, %v; want 11", last, err)
	}
	if last, err := s.LastCommittedEpoch(ctx, "another-job"); err != nil || last != 0 {
		t.Fatalf("another job: LastCommittedEpoch = %d, %v; want 0", last, err)
	}
}

// Recover removes what a crashed run left: files being written, staged
// epochs, and files of a commit that stopped before its log entry; it
// keeps committed files and other jobs' files.
func TestRecoverRemovesUncommittedOutput(t *testing.T) {
	mem := newMem(t)
	s := newSink(t, parquet.Options{TargetFileSize: 3000})
	root := s.Options().Path
	ws := openWriters(t, s, mem, 2)
	g := newGen(10)
	p1, rows1 := writeEpoch(t, g, mem, 1, ws, 2)
	if err := s.Commit(ctx, 1, p1); err != nil {
		t.Fatal(err)
	}
	p2, _ := writeEpoch(t, g, mem, 2, ws, 2) // pre-committed, never committed
	p3, _ := writeEpoch(t, g, mem, 3, ws, 2) // commit stops after some renames
	for _, p := range p3 {
		sp := decodeStaged(t, p)
		f := sp.Files[0]
		final := filepath.Join(root, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(root, filepath.FromSlash(f.Staged)), final); err != nil {
			t.Fatal(err)
		}
	}
	// Files of the open epoch 4, written but not pre-committed.
	for _, w := range ws {
		b, _ := g.batch(mem, 50)
		if err := w.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	// Another job's committed and half-committed files stay.
	other := openOther(t, s, mem)
	po, rowsOther := writeEpoch(t, g, mem, 1, other, 1)
	if err := s.Commit(ctx, 1, po); err != nil {
		t.Fatal(err)
	}
	po2, _ := writeEpoch(t, g, mem, 2, other, 1)
	spo := decodeStaged(t, po2[0])
	otherFinal := filepath.Join(root, filepath.FromSlash(spo.Files[0].Path))
	if err := os.Rename(filepath.Join(root, filepath.FromSlash(spo.Files[0].Staged)), otherFinal); err != nil {
		t.Fatal(err)
	}

	// The crash: a new process, no writer of the job runs.
	s2 := newSink(t, parquet.Options{Path: root})
	if err := s2.Recover(ctx, job, 1); err != nil {
		t.Fatal(err)
	}
	if left := listAll(t, filepath.Join(root, "_weir", "staging", job)); len(left) != 0 {
		t.Fatalf("staged files left: %v", left)
	}
	if _, err := os.Stat(otherFinal); err != nil {
		t.Fatalf("another job's file removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(spo.Files[0].Staged))); !os.IsNotExist(err) {
		t.Fatalf("another job's staging touched? %v", err)
	}
	if err := os.Remove(otherFinal); err != nil { // not committed: a recovery of that job would remove it
		t.Fatal(err)
	}
	checkTable(t, root, mem, wantRows(rows1, rowsOther))
	if last, _ := s2.LastCommittedEpoch(ctx, job); last != 1 {
		t.Fatalf("LastCommittedEpoch = %d, want 1", last)
	}
	if err := s2.Commit(ctx, 2, p2); err == nil {
		t.Fatal("epoch 2 committed after recovery removed its staged files")
	}
	// The writers of the crashed run close without effect on the table.
	for _, w := range ws {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	checkTable(t, root, mem, wantRows(rows1, rowsOther))
}

func openOther(t *testing.T, s *parquet.Sink, mem memory.Allocator) []arrowflow.SinkWriter {
	w, err := s.Open(&arrowflow.TaskInfo{Job: "orders", Subtask: 0, Parallelism: 1, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return []arrowflow.SinkWriter{w}
}

func TestCloseDiscardsRowsNotPreCommitted(t *testing.T) {
	mem := newMem(t)
	s := newSink(t, parquet.Options{})
	root := s.Options().Path
	ws := openWriters(t, s, mem, 1)
	g := newGen(11)
	p, rows := writeEpoch(t, g, mem, 1, ws, 2)
	b, _ := g.batch(mem, 30)
	if err := ws[0].Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := ws[0].Close(); err != nil {
		t.Fatal(err)
	}
	staged := listAll(t, filepath.Join(root, "_weir", "staging"))
	for _, f := range staged {
		if strings.Contains(f, "inprogress-") {
			t.Fatalf("file of the open epoch left after Close: %s", f)
		}
	}
	if len(staged) == 0 {
		t.Fatal("Close removed pre-committed files")
	}
	if _, err := ws[0].PreCommit(ctx, 2); err == nil {
		t.Fatal("PreCommit after Close succeeded")
	}
	b, _ = g.batch(mem, 3)
	if err := ws[0].Write(ctx, b); err == nil {
		t.Fatal("Write after Close succeeded")
	}
	if err := s.Commit(ctx, 1, [][]byte{p[0]}); err != nil {
		t.Fatal(err)
	}
	checkTable(t, root, mem, wantRows(rows))
}

// Without PartitionBy the files go straight into the table's folder.
func TestUnpartitioned(t *testing.T) {
	mem := newMem(t)
	s := newSink(t, parquet.Options{PartitionBy: []string{}})
	ws := openWriters(t, s, mem, 2)
	payloads, rows := writeEpoch(t, newGen(12), mem, 1, ws, 3)
	if err := s.Commit(ctx, 1, payloads); err != nil {
		t.Fatal(err)
	}
	for _, f := range visibleFiles(t, s.Options().Path) {
		if strings.Contains(f, "/") {
			t.Fatalf("file %s in a folder without PartitionBy", f)
		}
	}
	checkTable(t, s.Options().Path, mem, want(false, rows))
}

func TestOptionErrors(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts parquet.Options
		want string
	}{
		{"no path", parquet.Options{}, "Path is empty"},
		{"negative target", parquet.Options{Path: dir, TargetFileSize: -1}, "TargetFileSize -1"},
		{"negative row group", parquet.Options{Path: dir, RowGroupSize: -5}, "RowGroupSize -5"},
		{"codec", parquet.Options{Path: dir, Compression: "lzo"}, `Compression "lzo"`},
		{"twice", parquet.Options{Path: dir, PartitionBy: []string{"a", "a"}}, `column "a" twice`},
		{"empty column", parquet.Options{Path: dir, PartitionBy: []string{""}}, "empty column name"},
		{"unwritable path", parquet.Options{Path: filepath.Join(notDir, "table")}, "not a directory"},
		{"path is a file", parquet.Options{Path: notDir}, "not a directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parquet.New(c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New(%+v) = %v, want an error containing %q", c.opts, err, c.want)
			}
		})
	}
	s, err := parquet.New(parquet.Options{Path: dir})
	if err != nil {
		t.Fatal(err)
	}
	if o := s.Options(); o.TargetFileSize != parquet.DefaultTargetFileSize || o.RowGroupSize != parquet.DefaultRowGroupSize || o.Compression != "zstd" {
		t.Fatalf("defaults: %+v", o)
	}
	if _, err := s.Open(&arrowflow.TaskInfo{Subtask: 0, Parallelism: 1}); err == nil {
		t.Fatal("Open without a job name succeeded")
	}
}

func TestWriteErrors(t *testing.T) {
	floatSchema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Float64}, {Name: "y", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for _, c := range []struct {
		name        string
		partitionBy []string
		schema      *arrow.Schema
		want        string
	}{
		{"unknown partition column", []string{"region", "country"}, testSchema, `partition column "country" is not among the batches' columns ("id", "region", "price", "day", "name", "ts")`},
		{"float partition column", []string{"x"}, floatSchema, `partition column "x": type float64 cannot name partitions`},
		{"every column", []string{"y", "x"}, arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int8}, {Name: "y", Type: arrow.PrimitiveTypes.Int64}}, nil), "every column is a partition column"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := newMem(t)
			s := newSink(t, parquet.Options{PartitionBy: c.partitionBy})
			ws := openWriters(t, s, mem, 1)
			rec := emptyRecord(mem, c.schema, 3)
			err := ws[0].Write(ctx, arrowflow.NewBatch(rec))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Write = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// emptyRecord makes n rows of zero values (nulls where nullable).
func emptyRecord(mem memory.Allocator, sc *arrow.Schema, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	for _, fb := range b.Fields() {
		for range n {
			fb.AppendEmptyValue()
		}
	}
	return b.NewRecordBatch()
}

func TestSchemaChangeIsAnError(t *testing.T) {
	mem := newMem(t)
	s := newSink(t, parquet.Options{})
	ws := openWriters(t, s, mem, 1)
	b, _ := newGen(13).batch(mem, 10)
	if err := ws[0].Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	fields := slices.Clone(testSchema.Fields())
	fields[2].Type = arrow.PrimitiveTypes.Float32 // price
	fields[4].Name = "label"                      // name
	changed := arrow.NewSchema(fields, nil)
	err := ws[0].Write(ctx, arrowflow.NewBatch(emptyRecord(mem, changed, 2)))
	for _, want := range []string{`column "price" is float32, was float64`, `column "name" is missing`, `column "label" (utf8) is new`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Write with a changed schema = %v, want an error containing %q", err, want)
		}
	}
	// The same columns with other metadata are the same schema.
	md := arrow.NewMetadata([]string{"k"}, []string{"v"})
	same := arrow.NewSchema(testSchema.Fields(), &md)
	rec := record(mem, newGen(14).rows(3))
	defer rec.Release()
	relabeled := array.NewRecordBatch(same, rec.Columns(), rec.NumRows())
	if err := ws[0].Write(ctx, arrowflow.NewBatch(relabeled)); err != nil {
		t.Fatal(err)
	}
}

// A staging folder that cannot be created fails the write with the path.
func TestUnwritableStaging(t *testing.T) {
	mem := newMem(t)
	s := newSink(t, parquet.Options{})
	root := s.Options().Path
	if err := os.WriteFile(filepath.Join(root, "_weir", "staging"), []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := openWriters(t, s, mem, 1)
	b, _ := newGen(15).batch(mem, 10)
	err := ws[0].Write(ctx, b)
	if err == nil || !strings.Contains(err.Error(), "staging") {
		t.Fatalf("Write with staging in the way = %v", err)
	}
}

func TestMalformedPayloads(t *testing.T) {
	mem := newMem(t)
	s := newSink(t, parquet.Options{})
	ws := openWriters(t, s, mem, 1)
	payloads, _ := writeEpoch(t, newGen(16), mem, 2, ws, 1)
	escaping := bytes.Replace(payloads[0], []byte(`"path":"`), []byte(`"path":"../../`), 1)
	for _, c := range []struct {
		name  string
		epoch uint64
		p     []byte
		want  string
	}{
		{"garbage", 2, []byte("{"), "malformed payload"},
		{"other epoch", 3, payloads[0], "payload of epoch 2 given for epoch 3"},
		{"path outside the table", 2, escaping, "not a relative path inside the table"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := s.Commit(ctx, c.epoch, [][]byte{c.p})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Commit = %v, want an error containing %q", err, c.want)
			}
		})
	}
	if err := s.Commit(ctx, 2, payloads); err != nil {
		t.Fatal(err)
	}
}
