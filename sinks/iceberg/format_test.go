package iceberg_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/iceberg"
)

// Upsert tables are format version 2: created so, a version 1 one refused
// unless 'format-version' = '2' asks to upgrade it. Tables write Parquet,
// and an upsert table is partitioned by key columns only (as Flink).
func TestUpsertTableFormatAndPartitioning(t *testing.T) {
	ctx := context.Background()
	wh := t.TempDir()
	opts := func(mut func(*iceberg.Options)) iceberg.Options {
		o := iceberg.Options{Catalog: iceberg.CatalogOptions{Warehouse: wh}, Table: "db.events"}
		mut(&o)
		return o
	}
	newErr := func(o iceberg.Options, want string) {
		t.Helper()
		s, err := iceberg.New(ctx, o, testSchema)
		if err == nil {
			s.Close()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want %q", err, want)
		}
	}
	newErr(opts(func(o *iceberg.Options) {
		o.UpsertKeys = []string{"k"}
		o.Properties = map[string]string{"format-version": "1"}
	}), "upserts need format version 2")
	newErr(opts(func(o *iceberg.Options) { o.Properties = map[string]string{"write.format.default": "avro"} }), "Parquet data files only")
	newErr(opts(func(o *iceberg.Options) { o.UpsertKeys = []string{"k"}; o.PartitionBy = []string{"day(ts)"} }), "partition ts_day is on ts")

	// A version 1 append table.
	v1 := newSink(t, wh, func(o *iceberg.Options) { o.Properties = map[string]string{"format-version": "1"}; o.PartitionBy = nil })
	if v := v1.Table().Metadata().Version(); v != 1 {
		t.Fatalf("created version %d, want 1", v)
	}
	ws := openWriters(t, v1, "job", 1, 1)
	p := writeEpoch(t, ws, 1, 0, 10)
	if err := v1.Commit(ctx, 1, p); err != nil {
		t.Fatal(err)
	}
	newErr(opts(func(o *iceberg.Options) { o.UpsertKeys = []string{"k"} }), "is format version 1; upserts need version 2")
	up := newSink(t, wh, func(o *iceberg.Options) {
		o.UpsertKeys = []string{"k"}
		o.PartitionBy = nil
		o.Properties = map[string]string{"format-version": "2"}
	})
	if v := up.Table().Metadata().Version(); v != 2 {
		t.Fatalf("upgraded to version %d, want 2", v)
	}
	// Upserts on the upgraded table replace the version 1 rows.
	w := openWriters(t, up, "job", 1, 2)[0]
	if err := w.Write(ctx, changeBatch(memory.DefaultAllocator, []change{{arrowflow.Delete, row{k: 3}}, {arrowflow.UpdateAfter, row{k: 4, s: "new", ok: true}}}, false)); err != nil {
		t.Fatal(err)
	}
	p2, err := w.PreCommit(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Commit(ctx, 2, [][]byte{p2}); err != nil {
		t.Fatal(err)
	}
	got := scanRows(t, wh)
	if _, ok := got[3]; ok || len(got) != 9 || got[4].s != "new" {
		t.Fatalf("after upserts on the upgraded table: %v", got)
	}
}
