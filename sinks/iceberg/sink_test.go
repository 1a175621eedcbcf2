package iceberg_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	iceberggo "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/iceberg"
)

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
}, nil)

// batch makes rows k in [from, to) with s = "s<k%5>" and ts one second apart
// from 2026-01-01, every other day.
func batch(mem memory.Allocator, from, to int64) arrowflow.Batch {
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for k := from; k < to; k++ {
		b.Field(0).(*array.Int64Builder).Append(k)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("s%d", k%5))
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(base.Add(time.Duration(k%3) * 48 * time.Hour).UnixMicro()))
	}
	return arrowflow.NewBatch(b.NewRecordBatch())
}

func newSink(t *testing.T, warehouse string, mutate ...func(*iceberg.Options)) *iceberg.Sink {
	t.Helper()
	o := iceberg.Options{Catalog: iceberg.CatalogOptions{Warehouse: warehouse}, Table: "db.events", PartitionBy: []string{"day(ts)"}}
	for _, m := range mutate {
		m(&o)
	}
	s, err := iceberg.New(context.Background(), o, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openWriters(t *testing.T, s *iceberg.Sink, job string, n int, first uint64) []arrowflow.SinkWriter {
	t.Helper()
	ws := make([]arrowflow.SinkWriter, n)
	for i := range ws {
		w, err := s.Open(&arrowflow.TaskInfo{Job: job, Name: "sink", Subtask: i, Parallelism: n, FirstEpoch: first, Allocator: memory.DefaultAllocator})
		if err != nil {
			t.Fatal(err)
		}
		ws[i] = w
		t.Cleanup(func() { w.Close() })
	}
	return ws
}

// writeEpoch writes rows [from, to) split across the writers and
// pre-commits epoch.
func writeEpoch(t *testing.T, ws []arrowflow.SinkWriter, epoch uint64, from, to int64) [][]byte {
	t.Helper()
	ctx := context.Background()
	n := int64(len(ws))
	step := (to - from + n - 1) / n
	payloads := make([][]byte, len(ws))
	for i, w := range ws {
		lo, hi := from+int64(i)*step, min(from+int64(i+1)*step, to)
		if lo < hi {
			if err := w.Write(ctx, batch(memory.DefaultAllocator, lo, hi)); err != nil {
				t.Fatal(err)
			}
		}
		p, err := w.PreCommit(ctx, epoch)
		if err != nil {
			t.Fatal(err)
		}
		payloads[i] = p
	}
	return payloads
}

// scanKeys reads the table's current snapshot with iceberg-go's scan (an
// independent reader) and returns the sorted keys.
func scanKeys(t *testing.T, warehouse string) []int64 {
	t.Helper()
	ctx := context.Background()
	cat, err := iceberg.OpenCatalog(ctx, iceberg.CatalogOptions{Warehouse: warehouse})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.CurrentSnapshot() == nil {
		return nil
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var keys []int64
	rdr := array.NewTableReader(at, 1024)
	defer rdr.Release()
	for rdr.Next() {
		col := rdr.RecordBatch().Column(0).(*array.Int64)
		keys = append(keys, col.Int64Values()...)
	}
	slices.Sort(keys)
	return keys
}

func keyRange(from, to int64) []int64 {
	var out []int64
	for k := from; k < to; k++ {
		out = append(out, k)
	}
	return out
}

func weirSnapshots(t *testing.T, s *iceberg.Sink, job string) []string {
	t.Helper()
	if _, err := s.LastCommittedEpoch(context.Background(), job); err != nil { // refreshes
		t.Fatal(err)
	}
	var out []string
	for _, snap := range s.Table().Metadata().Snapshots() {
		if snap.Summary != nil && snap.Summary.Properties[iceberg.SummaryJobID] == job {
			out = append(out, snap.Summary.Properties[iceberg.SummaryEpoch])
		}
	}
	return out
}

func dataFiles(t *testing.T, warehouse string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(warehouse, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".parquet") {
			out = append(out, path)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func TestEpochsCommitOnceAndUncommittedFilesAreCleanedUp(t *testing.T) {
	ctx := context.Background()
	wh := t.TempDir()
	s := newSink(t, wh)
	ws := openWriters(t, s, "job", 2, 1)

	p1 := writeEpoch(t, ws, 1, 0, 1000)
	if got := scanKeys(t, wh); len(got) != 0 {
		t.Fatalf("pre-committed rows are visible: %d", len(got))
	}
	s.EpochPositions(1, map[string][]arrowflow.SplitState{"in": {{Split: "0", Position: []byte("42")}, {Split: "1", Position: []byte{0xff, 1}}}})
	if err := s.Commit(ctx, 1, p1); err != nil {
		t.Fatal(err)
	}
	if got := s.Table().CurrentSnapshot().Summary.Properties[iceberg.SummarySourcePositions]; got != `{"in":{"0":"42","1":"base64:/wE="}}` {
		t.Fatalf("source positions in the summary: %s", got)
	}
	if err := s.Commit(ctx, 1, p1); err != nil { // a recovery commits again
		t.Fatal(err)
	}
	if got := scanKeys(t, wh); !slices.Equal(got, keyRange(0, 1000)) {
		t.Fatalf("after epoch 1: %d keys, want 0..999", len(got))
	}
	if got := weirSnapshots(t, s, "job"); !slices.Equal(got, []string{"1"}) {
		t.Fatalf("weir snapshots %v, want one of epoch 1", got)
	}
	spec := s.Table().Spec()
	if spec.NumFields() != 1 || spec.Field(0).Name != "ts_day" {
		t.Fatalf("partition spec %v, want day(ts)", spec)
	}

	// Epoch 2 is pre-committed, epoch 3 half written: the process dies.
	p2 := writeEpoch(t, ws, 2, 1000, 2000)
	if err := ws[0].Write(ctx, batch(memory.DefaultAllocator, 2000, 2100)); err != nil {
		t.Fatal(err)
	}
	filesBefore := len(dataFiles(t, wh))

	again := newSink(t, wh)
	if last, err := again.LastCommittedEpoch(ctx, "job"); err != nil || last != 1 {
		t.Fatalf("last committed epoch %d (%v), want 1", last, err)
	}
	if err := again.Recover(ctx, "job", 1); err != nil {
		t.Fatal(err)
	}
	if got := scanKeys(t, wh); !slices.Equal(got, keyRange(0, 1000)) {
		t.Fatalf("after recovery: %d keys, want epoch 1's 1000", len(got))
	}
	if after := len(dataFiles(t, wh)); after >= filesBefore || after == 0 {
		t.Fatalf("recovery left %d of %d data files", after, filesBefore)
	}
	if err := again.Commit(ctx, 2, p2); err == nil || !strings.Contains(err.Error(), "is gone") {
		t.Fatalf("committing epoch 2 after its files were recovered away: %v, want an error saying the manifest is gone", err)
	}
	// The files of another job in the same table are not touched.
	other := openWriters(t, again, "other", 1, 1)
	po := writeEpoch(t, other, 1, 5000, 5010)
	if err := again.Recover(ctx, "job", 1); err != nil {
		t.Fatal(err)
	}
	if err := again.Commit(ctx, 1, po); err != nil {
		t.Fatalf("another job's epoch after this job's recovery: %v", err)
	}
	if got := scanKeys(t, wh); len(got) != 1010 {
		t.Fatalf("%d keys, want 1010", len(got))
	}
}

// Snapshot expiry removes the snapshots that carried weir.epoch: the
// table property still says which epochs the job committed.
func TestIdempotencySurvivesSnapshotExpiry(t *testing.T) {
	ctx := context.Background()
	wh := t.TempDir()
	s := newSink(t, wh)
	ws := openWriters(t, s, "job", 1, 1)
	var p [][][]byte
	for e := uint64(1); e <= 3; e++ {
		p = append(p, writeEpoch(t, ws, e, int64(e)*100, int64(e)*100+100))
		if err := s.Commit(ctx, e, p[e-1]); err != nil {
			t.Fatal(err)
		}
	}
	// Another writer appends after weir's last commit, then the history
	// is expired down to that writer's snapshot.
	tbl := s.Table()
	cat, err := iceberg.OpenCatalog(ctx, iceberg.CatalogOptions{Warehouse: wh})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err = cat.LoadTable(ctx, tbl.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	rec := batch(memory.DefaultAllocator, 9000, 9001).Record
	rdr, err := array.NewRecordReader(testSchema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err = tbl.Append(ctx, rdr, iceberggo.Properties{})
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(1), table.WithOlderThan(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := weirSnapshots(t, s, "job"); len(got) != 0 {
		t.Fatalf("weir snapshots left after expiry: %v", got)
	}
	if last, err := s.LastCommittedEpoch(ctx, "job"); err != nil || last != 3 {
		t.Fatalf("last committed epoch after expiry: %d (%v), want 3", last, err)
	}
	if err := s.Commit(ctx, 3, p[2]); err != nil {
		t.Fatal(err)
	}
	if got := scanKeys(t, wh); len(got) != 301 {
		t.Fatalf("%d rows after committing epoch 3 again, want 301 (no duplicate)", len(got))
	}
}

func TestExistingTableSchemaIsCheckedAndEvolved(t *testing.T) {
	wh := t.TempDir()
	narrow := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	o := iceberg.Options{Catalog: iceberg.CatalogOptions{Warehouse: wh}, Table: "db.events"}
	s, err := iceberg.New(context.Background(), o, narrow)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := iceberg.New(context.Background(), o, testSchema); err == nil || !strings.Contains(err.Error(), "no column s, ts") {
		t.Fatalf("new columns without evolution: %v, want an error naming them", err)
	}
	o.SchemaEvolution = true
	s = newSink(t, wh, func(x *iceberg.Options) { *x = o })
	if got := len(s.Table().Schema().Fields()); got != 3 {
		t.Fatalf("evolved schema has %d fields, want 3", got)
	}
	wrong := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.BinaryTypes.String}}, nil)
	if _, err := iceberg.New(context.Background(), o, wrong); err == nil || !strings.Contains(err.Error(), "column k is long") {
		t.Fatalf("incompatible type: %v, want an error naming column k", err)
	}
	if _, err := iceberg.New(context.Background(), iceberg.Options{Catalog: o.Catalog, Table: "db.other", PartitionBy: []string{"bucket(x, k)"}}, testSchema); err == nil || !strings.Contains(err.Error(), "positive number") {
		t.Fatalf("bad partition spec: %v", err)
	}
}

// Upsert mode: each row replaces the table's row of its key, across
// epochs (equality deletes) and within one (the last row wins); a
// recovery's repeated commit changes nothing. Read by iceberg-go's scan,
// which applies the deletes.
func TestUpsertKeepsTheLatestRowPerKey(t *testing.T) {
	ctx := context.Background()
	wh := t.TempDir()
	s := newSink(t, wh, func(o *iceberg.Options) { o.UpsertKeys = []string{"k"}; o.PartitionBy = nil })
	ws := openWriters(t, s, "job", 1, 1)
	w := ws[0]
	mem := memory.DefaultAllocator
	// batch gives key k the string s<k%5>; these rows overwrite it.
	upsert := func(keys []int64, val string) arrowflow.Batch {
		b := array.NewRecordBuilder(mem, testSchema)
		defer b.Release()
		for _, k := range keys {
			b.Field(0).(*array.Int64Builder).Append(k)
			b.Field(1).(*array.StringBuilder).Append(val)
			b.Field(2).(*array.TimestampBuilder).Append(0)
		}
		return arrowflow.NewBatch(b.NewRecordBatch())
	}
	if err := w.Write(ctx, batch(mem, 0, 100)); err != nil {
		t.Fatal(err)
	}
	p1, err := w.PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 1, [][]byte{p1}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []arrowflow.Batch{upsert([]int64{50, 60, 150}, "first"), upsert([]int64{60, 70}, "second")} {
		if err := w.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	p2, err := w.PreCommit(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Commit(ctx, 2, [][]byte{p2}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[int64]string{}
	tbl := s.Table()
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	rdr := array.NewTableReader(at, 0)
	defer rdr.Release()
	rows := 0
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			k := rec.Column(0).(*array.Int64).Value(i)
			if _, dup := got[k]; dup {
				t.Fatalf("key %d twice", k)
			}
			got[k] = rec.Column(1).(*array.String).Value(i)
			rows++
		}
	}
	want := map[int64]string{}
	for k := int64(0); k < 100; k++ {
		want[k] = fmt.Sprintf("s%d", k%5)
	}
	want[50], want[60], want[150], want[70] = "first", "second", "first", "second"
	if rows != len(want) {
		t.Fatalf("%d rows, want %d", rows, len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %d = %q, want %q", k, got[k], v)
		}
	}
	if ids := tbl.Schema().IdentifierFieldIDs; len(ids) != 1 {
		t.Fatalf("identifier fields %v, want the key", ids)
	}
}
