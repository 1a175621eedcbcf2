package parquet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pq "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/sinks/parquet"
)

var ctx = context.Background()

// newMem is a checked allocator: the test fails if anything is left.
var newMem = testutil.CheckedAllocator

const job = "orders-v2" // a dash, so that file names are parsed from the right

// testSchema has the partition columns (region, day) between data
// columns, so that reading back must put them in place.
var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
}, nil)

var partitionBy = []string{"day", "region"}

// regions are the region values, with characters Hive escapes, UTF-8,
// an empty string (which goes to the null partition) and null ("<null>").
var regions = []string{"eu", "us/east", "a=b", "100%", "x:y?", "", "é", "ctrl\x01", "<null>"}

// testRow is one input row.
type testRow struct {
	id        int64
	region    string // "<null>" is null
	price     float64
	priceNull bool
	day       arrow.Date32
	name      string
	nameNull  bool
	ts        int64
}

// want is the row as it must read back: the values arrowflow.ValueAt
// gives. When region is a partition column, an empty region reads back
// as null (Hive's default partition).
func (r testRow) want(partitioned bool) []any {
	row := []any{r.id, r.region, r.price, r.day.ToTime(), r.name, time.UnixMilli(r.ts).UTC()}
	if r.region == "<null>" || r.region == "" && partitioned {
		row[1] = nil
	}
	if r.priceNull {
		row[2] = nil
	}
	if r.nameNull {
		row[4] = nil
	}
	return row
}

// gen makes rows with ids from first on.
type gen struct {
	rng  *rand.Rand
	next int64
}

func newGen(seed uint64) *gen { return &gen{rng: rand.New(rand.NewPCG(seed, 1))} }

func (g *gen) rows(n int) []testRow {
	out := make([]testRow, n)
	for i := range out {
		r := testRow{
			id:     g.next,
			region: regions[g.rng.IntN(len(regions))],
			price:  float64(g.rng.IntN(100000)) / 100,
			day:    arrow.Date32(20454 + g.rng.IntN(3)), // 2026-01-01 and the two days after
			name:   fmt.Sprintf("n%d", g.rng.IntN(50)),
			ts:     1767225600000 + g.next,
		}
		r.priceNull = g.rng.IntN(10) == 0
		r.nameNull = g.rng.IntN(10) == 0
		out[i] = r
		g.next++
	}
	return out
}

func record(mem memory.Allocator, rows []testRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		if r.region == "<null>" {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(r.region)
		}
		if r.priceNull {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Float64Builder).Append(r.price)
		}
		b.Field(3).(*array.Date32Builder).Append(r.day)
		if r.nameNull {
			b.Field(4).AppendNull()
		} else {
			b.Field(4).(*array.StringBuilder).Append(r.name)
		}
		b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts))
	}
	return b.NewRecordBatch()
}

// batch makes a batch of rows with a random selection (or none) and
// returns it with the selected rows.
func (g *gen) batch(mem memory.Allocator, n int) (arrowflow.Batch, []testRow) {
	rows := g.rows(n)
	b := arrowflow.NewBatch(record(mem, rows))
	switch g.rng.IntN(3) {
	case 0:
		return b, rows
	case 1: // a random subset
		b.Sel = []int32{}
		var sel []testRow
		for i, r := range rows {
			if g.rng.IntN(3) != 0 {
				b.Sel = append(b.Sel, int32(i))
				sel = append(sel, r)
			}
		}
		return b, sel
	default: // a consecutive range
		lo := g.rng.IntN(n)
		hi := lo + g.rng.IntN(n-lo) + 1
		b.Sel = []int32{}
		for i := lo; i < hi; i++ {
			b.Sel = append(b.Sel, int32(i))
		}
		return b, rows[lo:hi]
	}
}

func openWriters(t *testing.T, s *parquet.Sink, mem memory.Allocator, n int) []arrowflow.SinkWriter {
	t.Helper()
	ws := make([]arrowflow.SinkWriter, n)
	for i := range ws {
		w, err := s.Open(&arrowflow.TaskInfo{Job: job, Name: "out", Subtask: i, Parallelism: n, Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		ws[i] = w
		t.Cleanup(func() { _ = w.Close() })
	}
	return ws
}

// writeEpoch writes batches of random rows to every writer and
// pre-commits them; it returns the payloads and the rows written.
func writeEpoch(t *testing.T, g *gen, mem memory.Allocator, epoch uint64, ws []arrowflow.SinkWriter, batches int) ([][]byte, []testRow) {
	t.Helper()
	var rows []testRow
	for range batches {
		for _, w := range ws {
			b, sel := g.batch(mem, 1+g.rng.IntN(200))
			if err := w.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, sel...)
		}
	}
	payloads := make([][]byte, len(ws))
	for i, w := range ws {
		p, err := w.PreCommit(ctx, epoch)
		if err != nil {
			t.Fatal(err)
		}
		payloads[i] = p
	}
	return payloads, rows
}

func newSink(t *testing.T, opts parquet.Options) *parquet.Sink {
	t.Helper()
	if opts.Path == "" {
		opts.Path = filepath.Join(t.TempDir(), "table")
	}
	if opts.PartitionBy == nil {
		opts.PartitionBy = partitionBy
	}
	if opts.Compression == "" {
		// zstd (the default, tested by TestCompressionCodecs) makes the
		// tests 20x slower under the race detector: arrow-go takes its
		// encoders from a sync.Pool, which the race detector empties at
		// random, and each new encoder allocates megabytes.
		opts.Compression = "snappy"
	}
	s, err := parquet.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wantRows is what a table partitioned by region must read back.
func wantRows(groups ...[]testRow) [][]any { return want(true, groups...) }

func want(partitioned bool, groups ...[]testRow) [][]any {
	var out [][]any
	for _, g := range groups {
		for _, r := range g {
			out = append(out, r.want(partitioned))
		}
	}
	return out
}

// rowKey is a row's canonical text: %v of a float64 is its shortest
// exact form, of a time its instant and zone.
func rowKey(row []any) string { return fmt.Sprintf("%v", row) }

// sameRows compares two multisets of rows.
func sameRows(t *testing.T, what string, got, want [][]any) {
	t.Helper()
	gs, ws := make([]string, len(got)), make([]string, len(want))
	for i, r := range got {
		gs[i] = rowKey(r)
	}
	for i, r := range want {
		ws[i] = rowKey(r)
	}
	slices.Sort(gs)
	slices.Sort(ws)
	if len(gs) != len(ws) {
		t.Fatalf("%s: %d rows, want %d", what, len(gs), len(ws))
	}
	for i := range gs {
		if gs[i] != ws[i] {
			t.Fatalf("%s: row %d (sorted) is\n  %s\nwant\n  %s", what, i, gs[i], ws[i])
		}
	}
}

// visibleFiles lists the Parquet files a Hive-style reader sees: every
// file below root, skipping folders whose names start with "_" or ".".
func visibleFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), "_") || strings.HasPrefix(d.Name(), ".")) {
			return fs.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".parquet") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

// readIndependently reads the table at root the way a Hive-style reader
// does, without the sink's reader: it lists the visible files, decodes
// the partition values from the folder names with net/url, reads each
// file with pqarrow.ReadTable and puts the rows together in sc's order.
// Partition columns may be strings or date32.
func readIndependently(t *testing.T, root string, sc *arrow.Schema, mem memory.Allocator) [][]any {
	t.Helper()
	var out [][]any
	for _, rel := range visibleFiles(t, root) {
		part := map[string]any{}
		segs := strings.Split(rel, "/")
		for _, seg := range segs[:len(segs)-1] {
			k, v, ok := strings.Cut(seg, "=")
			if !ok {
				t.Fatalf("%s: folder %q is not col=value", rel, seg)
			}
			col, err := url.PathUnescape(k)
			if err != nil {
				t.Fatal(err)
			}
			if v == "__HIVE_DEFAULT_PARTITION__" {
				part[col] = nil
				continue
			}
			val, err := url.PathUnescape(v)
			if err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
			idx := sc.FieldIndices(col)
			if len(idx) != 1 {
				t.Fatalf("%s: unknown partition column %q", rel, col)
			}
			switch dt := sc.Field(idx[0]).Type; dt.ID() {
			case arrow.STRING:
				part[col] = val
			case arrow.DATE32:
				d, err := time.Parse("2006-01-02", val)
				if err != nil {
					t.Fatalf("%s: %v", rel, err)
				}
				part[col] = d
			default:
				t.Fatalf("%s: partition column %q of type %s", rel, col, dt)
			}
		}
		f, err := os.Open(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := pqarrow.ReadTable(ctx, f, pq.NewReaderProperties(mem), pqarrow.ArrowReadProperties{}, mem)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		tr := array.NewTableReader(tbl, 1000)
		for tr.Next() {
			rec := tr.RecordBatch()
			for i := 0; i < int(rec.NumRows()); i++ {
				row := make([]any, sc.NumFields())
				for c, fld := range sc.Fields() {
					if v, ok := part[fld.Name]; ok {
						row[c] = v
						continue
					}
					idx := rec.Schema().FieldIndices(fld.Name)
					if len(idx) != 1 {
						t.Fatalf("%s: %d columns %q", rel, len(idx), fld.Name)
					}
					row[c] = arrowflow.ValueAt(rec.Column(idx[0]), i)
				}
				if len(part)+int(rec.NumCols()) != sc.NumFields() {
					t.Fatalf("%s: %d file columns and %d partition columns, want %d in all", rel, rec.NumCols(), len(part), sc.NumFields())
				}
				out = append(out, row)
			}
		}
		tr.Release()
		tbl.Release()
	}
	return out
}

// readCommitted reads the committed rows with the sink's reader and
// checks that the records have schema sc.
func readCommitted(t *testing.T, root string, sc *arrow.Schema, mem memory.Allocator) [][]any {
	t.Helper()
	tbl, err := parquet.ReadCommitted(root, mem)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]any
	for rec, err := range tbl.Records(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if !sameFields(rec.Schema(), sc) {
			t.Fatalf("read schema %s, want %s", rec.Schema(), sc)
		}
		b := arrowflow.NewBatch(rec)
		for k := 0; k < b.NumRows(); k++ {
			out = append(out, b.RowValues(k))
		}
		b.Release()
	}
	if int64(len(out)) != tbl.Rows() {
		t.Fatalf("read %d rows, the commit log lists %d", len(out), tbl.Rows())
	}
	return out
}

func sameFields(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i, f := range a.Fields() {
		g := b.Field(i)
		if f.Name != g.Name || !arrow.TypeEqual(f.Type, g.Type) || f.Nullable != g.Nullable {
			return false
		}
	}
	return true
}

// checkTable checks that the visible files are exactly the committed
// ones and that both readers give back want, for a table of testSchema.
func checkTable(t *testing.T, root string, mem memory.Allocator, want [][]any) {
	t.Helper()
	checkTableOf(t, root, testSchema, mem, want)
}

// checkTableOf is checkTable for a table of schema sc.
func checkTableOf(t *testing.T, root string, sc *arrow.Schema, mem memory.Allocator, want [][]any) {
	t.Helper()
	files, err := parquet.CommittedFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	var committed []string
	for _, f := range files {
		committed = append(committed, f.Path)
	}
	slices.Sort(committed)
	if visible := visibleFiles(t, root); !slices.Equal(visible, committed) {
		t.Fatalf("visible files\n  %v\ncommitted files\n  %v", visible, committed)
	}
	// A reader that globs **/*.parquet without skipping "_" folders sees
	// the same files: staged ones have another suffix.
	var globbed []string
	for _, f := range listAll(t, root) {
		if strings.HasSuffix(f, ".parquet") {
			globbed = append(globbed, f)
		}
	}
	slices.Sort(globbed)
	if !slices.Equal(globbed, committed) {
		t.Fatalf("files matching **/*.parquet\n  %v\ncommitted files\n  %v", globbed, committed)
	}
	sameRows(t, "independent read", readIndependently(t, root, sc, mem), want)
	sameRows(t, "ReadCommitted", readCommitted(t, root, sc, mem), want)
}

// stagedPayload is the part of a payload the tests look into.
type stagedPayload struct {
	Staging string `json:"staging"`
	Files   []struct {
		Staged string `json:"staged"`
		Path   string `json:"path"`
	} `json:"files"`
}

func decodeStaged(t *testing.T, p []byte) stagedPayload {
	t.Helper()
	var sp stagedPayload
	if err := json.Unmarshal(p, &sp); err != nil {
		t.Fatal(err)
	}
	return sp
}

// listAll lists every file below root (relative, slash-separated).
func listAll(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	if _, err := os.Stat(root); os.IsNotExist(err) {
		return nil
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, path)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
