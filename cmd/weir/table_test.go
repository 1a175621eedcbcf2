package main

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/weirflow/weir/arrowflow"
	icebergsink "github.com/weirflow/weir/sinks/iceberg"
	"github.com/weirflow/weir/sinks/parquet"

	"github.com/weirflow/weir/internal/testutil"
)

// The `weir table` tests build real tables: an Iceberg table in the
// embedded SQL catalog, appended to in several commits as weir's sink
// would (one snapshot and one small file per epoch, weir.* summary
// properties, a weir.last-epoch table property), and a Parquet folder
// written through sinks/parquet. Outputs are checked against the rows
// written, and tables after maintenance against iceberg-go's own scan.

const (
	tableTestName   = "db.orders"
	tableTestJob    = "orders"
	tableTestEpochs = 6
	tableTestRows   = 5 // per epoch
	tableTestProp   = icebergsink.LastEpochPropertyPrefix + tableTestJob
)

var tableTestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// tableTestRow is row i of epoch e as `weir table head` prints its cells:
// ids are unique, every seventh name is null.
func tableTestRow(e, i int) []string {
	id := e*100 + i
	name := fmt.Sprintf("n%d", id)
	if id%7 == 0 {
		name = "null"
	}
	return []string{strconv.Itoa(id), name, strconv.FormatFloat(float64(id)/4, 'g', -1, 64)}
}

// tableTestRecord builds the rows of epoch e.
func tableTestRecord(mem memory.Allocator, e, rows int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, tableTestSchema)
	defer b.Release()
	for i := range rows {
		r := tableTestRow(e, i)
		id, _ := strconv.ParseInt(r[0], 10, 64)
		price, _ := strconv.ParseFloat(r[2], 64)
		b.Field(0).(*array.Int64Builder).Append(id)
		if r[1] == "null" {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(r[1])
		}
		b.Field(2).(*array.Float64Builder).Append(price)
	}
	return b.NewRecordBatch()
}

// tableTestWant is every row written in epochs 1..epochs, one string per
// row, sorted.
func tableTestWant(epochs int) []string {
	var rows []string
	for e := 1; e <= epochs; e++ {
		for i := range tableTestRows {
			rows = append(rows, strings.Join(tableTestRow(e, i), " "))
		}
	}
	slices.Sort(rows)
	return rows
}

// openTestCatalog opens the embedded catalog of warehouse wh.
func openTestCatalog(t *testing.T, wh string) catalog.Catalog {
	t.Helper()
	cat, err := icebergsink.OpenCatalog(context.Background(), icebergsink.CatalogOptions{Warehouse: wh})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.(catalog.Closer).Close() })
	return cat
}

// newTestIcebergTable creates db.orders in a new warehouse and appends
// tableTestEpochs epochs to it, one commit each, and returns the
// warehouse.
func newTestIcebergTable(t *testing.T) string {
	t.Helper()
	return newTestIcebergTableWith(t, nil)
}

// newTestIcebergTableWith is newTestIcebergTable with more table
// properties.
func newTestIcebergTableWith(t *testing.T, props iceberg.Properties) string {
	t.Helper()
	ctx := context.Background()
	wh := t.TempDir()
	cat := openTestCatalog(t, wh)
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	sc, err := table.ArrowSchemaToIcebergWithFreshIDs(tableTestSchema, false)
	if err != nil {
		t.Fatal(err)
	}
	all := iceberg.Properties{tableTestProp: strconv.Itoa(tableTestEpochs)}
	maps.Copy(all, props)
	tbl, err := cat.CreateTable(ctx, catalog.ToIdentifier(tableTestName), sc, catalog.WithProperties(all))
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	for e := 1; e <= tableTestEpochs; e++ {
		if tbl, err = appendEpoch(ctx, tbl, mem, e, tableTestRows); err != nil {
			t.Fatal(err)
		}
	}
	return wh
}

// appendEpoch appends the rows of epoch e in one commit, with the summary
// properties weir's sink writes.
func appendEpoch(ctx context.Context, tbl *table.Table, mem memory.Allocator, e, rows int) (*table.Table, error) {
	rec := tableTestRecord(mem, e, rows)
	defer rec.Release()
	rdr, err := array.NewRecordReader(tableTestSchema, []arrow.RecordBatch{rec})
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	return tbl.Append(ctx, rdr, iceberg.Properties{
		icebergsink.SummaryJobID: tableTestJob, icebergsink.SummaryEpoch: strconv.Itoa(e),
		icebergsink.SummaryCommitID: fmt.Sprintf("c-%d", e), icebergsink.SummarySourcePositions: tableTestPositions(e),
	})
}

// tableTestPositions is the source positions epoch e ends at, as the
// sink records them.
func tableTestPositions(e int) string {
	return fmt.Sprintf(`{"gen":{"0":"%d"}}`, e*tableTestRows)
}

// loadTestTable loads db.orders from the warehouse.
func loadTestTable(t *testing.T, wh string) *table.Table {
	t.Helper()
	tbl, err := openTestCatalog(t, wh).LoadTable(context.Background(), catalog.ToIdentifier(tableTestName))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// scanRows reads the current snapshot with iceberg-go's scan, one string
// per row, sorted.
func scanRows(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	scan := tbl.Scan()
	defer scan.Close()
	_, recs, err := scan.ToArrowRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for rec, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, recordRows(rec)...)
		rec.Release()
	}
	slices.Sort(rows)
	return rows
}

func recordRows(rec arrow.RecordBatch) []string {
	rows := make([]string, rec.NumRows())
	for i := range rows {
		cells := make([]string, rec.NumCols())
		for c, col := range rec.Columns() {
			cells[c] = "null"
			if col.IsValid(i) {
				cells[c] = col.ValueStr(i)
			}
		}
		rows[i] = strings.Join(cells, " ")
	}
	return rows
}

// dataFiles counts the data files of the current snapshot.
func dataFiles(t *testing.T, tbl *table.Table) int {
	t.Helper()
	scan := tbl.Scan()
	defer scan.Close()
	tasks, err := scan.PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(icebergsink.WholeFileTasks(tasks))
}

// headRows parses the rows of `weir table head` output (header, rows,
// "(N rows)"), one string per row with single spaces, sorted.
func headRows(t *testing.T, out string, header string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 2 || strings.Join(strings.Fields(lines[0]), " ") != header {
		t.Fatalf("head output does not start with the header %q:\n%s", header, out)
	}
	rows := lines[1 : len(lines)-1]
	if want := "(" + nOf(len(rows), "row") + ")"; lines[len(lines)-1] != want {
		t.Fatalf("head output ends with %q, want %q:\n%s", lines[len(lines)-1], want, out)
	}
	for i, r := range rows {
		rows[i] = strings.Join(strings.Fields(r), " ")
	}
	slices.Sort(rows)
	return rows
}

func tableCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runCLI(t, append([]string{"table"}, args...)...)
	if err != nil {
		t.Fatalf("weir table %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func TestTableInspectsIceberg(t *testing.T) {
	wh := newTestIcebergTable(t)
	target := []string{"--warehouse", wh, "--table", tableTestName}
	want := tableTestWant(tableTestEpochs)
	if got := scanRows(t, loadTestTable(t, wh)); !slices.Equal(got, want) {
		t.Fatalf("the table does not hold the rows written:\n%q\nwant\n%q", got, want)
	}

	out := tableCLI(t, append([]string{"count"}, target...)...)
	if strings.TrimSpace(out) != strconv.Itoa(len(want)) {
		t.Errorf("count printed %q, want %d", out, len(want))
	}

	out = tableCLI(t, append([]string{"head", "-n", "100"}, target...)...)
	if got := headRows(t, out, "id name price"); !slices.Equal(got, want) {
		t.Errorf("head -n 100 printed\n%q\nwant\n%q", got, want)
	}
	out = tableCLI(t, append([]string{"head", "-n", "3"}, target...)...)
	got := headRows(t, out, "id name price")
	if len(got) != 3 {
		t.Fatalf("head -n 3 printed %d rows:\n%s", len(got), out)
	}
	for _, r := range got {
		if _, ok := slices.BinarySearch(want, r); !ok {
			t.Errorf("head printed %q, which was not written", r)
		}
	}

	out = tableCLI(t, append([]string{"snapshots"}, target...)...)
	tbl := loadTestTable(t, wh)
	snaps := tbl.Metadata().Snapshots()
	if len(snaps) != tableTestEpochs {
		t.Fatalf("%d snapshots, want %d", len(snaps), tableTestEpochs)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != tableTestEpochs+2 {
		t.Fatalf("snapshots printed %d lines, want a header, %d snapshots and a total:\n%s", len(lines), tableTestEpochs, out)
	}
	parent := "-"
	for e := 1; e <= tableTestEpochs; e++ {
		f := strings.Fields(lines[e])
		current := f[0] == "*"
		if current {
			f = f[1:]
		}
		if current != (e == tableTestEpochs) {
			t.Errorf("snapshot of epoch %d marked current: %v\n%s", e, current, out)
		}
		// SNAPSHOT PARENT TIME OPERATION ADDED-ROWS TOTAL-ROWS ADDED-FILES TOTAL-FILES JOB EPOCH COMMIT OTHER
		wantFields := []string{strconv.FormatInt(snaps[e-1].SnapshotID, 10), parent,
			time.UnixMilli(snaps[e-1].TimestampMs).UTC().Format(time.RFC3339), "append",
			strconv.Itoa(tableTestRows), strconv.Itoa(e * tableTestRows), "1", strconv.Itoa(e),
			tableTestJob, strconv.Itoa(e), fmt.Sprintf("c-%d", e), icebergsink.SummarySourcePositions + "=" + tableTestPositions(e)}
		if !slices.Equal(f, wantFields) {
			t.Errorf("snapshot line of epoch %d:\n%q\nwant\n%q", e, f, wantFields)
		}
		parent = strconv.FormatInt(snaps[e-1].SnapshotID, 10)
	}

	out = tableCLI(t, append([]string{"schema"}, target...)...)
	for _, re := range []string{
		`(?m)^\s+1\s+id\s+long\s+required$`,
		`(?m)^\s+2\s+name\s+string\s+optional$`,
		`(?m)^\s+3\s+price\s+double\s+optional$`,
		`(?m)^partition spec 0: unpartitioned$`,
		`(?m)^sort order 0: unsorted$`,
		`(?m)^\s+` + regexp.QuoteMeta(tableTestProp) + ` = 6$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("schema output does not match %s:\n%s", re, out)
		}
	}
}

func TestTableCompactIceberg(t *testing.T) {
	wh := newTestIcebergTable(t)
	target := []string{"--warehouse", wh, "--table", tableTestName}
	before := loadTestTable(t, wh)
	rows := scanRows(t, before)
	if n := dataFiles(t, before); n != tableTestEpochs {
		t.Fatalf("%d data files before compaction, want %d", n, tableTestEpochs)
	}

	// Too few small files for the threshold: nothing happens.
	out := tableCLI(t, append([]string{"compact", "--min-input-files", "7"}, target...)...)
	if !strings.Contains(out, "nothing to compact") {
		t.Errorf("compact with --min-input-files 7 of 6 files did something:\n%s", out)
	}

	out = tableCLI(t, append([]string{"compact", "--target-file-size", "1048576", "--min-input-files", "2"}, target...)...)
	after := loadTestTable(t, wh)
	if n := dataFiles(t, after); n != 1 {
		t.Errorf("%d data files after compaction, want 1\n%s", n, out)
	}
	if !strings.Contains(out, fmt.Sprintf("before: %d data files", tableTestEpochs)) || !strings.Contains(out, "after: 1 data file (") {
		t.Errorf("compact does not say the files before and after:\n%s", out)
	}
	if got := scanRows(t, after); !slices.Equal(got, rows) {
		t.Fatalf("rows changed by compaction:\n%q\nwant\n%q", got, rows)
	}
	if got := tableCLI(t, append([]string{"count"}, target...)...); strings.TrimSpace(got) != strconv.Itoa(len(rows)) {
		t.Errorf("count after compaction: %q, want %d", got, len(rows))
	}
	if op := after.CurrentSnapshot().Summary.Operation; op != table.OpReplace {
		t.Errorf("compaction committed a %q snapshot, want replace", op)
	}
	// iceberg-go's rewrite adds schema.name-mapping.default when missing.
	for k, v := range before.Properties() {
		if after.Properties()[k] != v {
			t.Errorf("property %s is %q after compaction, was %q", k, after.Properties()[k], v)
		}
	}
}

// appendInBackground appends epochs first..last of the test rows to the
// table, one commit each, retrying on conflicts, while the returned
// function has not been called; the function waits for the appender and
// returns its error.
func appendInBackground(t *testing.T, wh string, first, last int) (wait func() error) {
	t.Helper()
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	cat, err := icebergsink.OpenCatalog(ctx, icebergsink.CatalogOptions{Warehouse: wh})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var appendErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for e := first; e <= last; e++ {
			for {
				tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier(tableTestName))
				if err != nil {
					appendErr = err
					return
				}
				if _, err = appendEpoch(ctx, tbl, mem, e, tableTestRows); err == nil {
					break
				} else if !tableCommitConflict(err) {
					appendErr = fmt.Errorf("append epoch %d: %w", e, err)
					return
				}
			}
		}
	}()
	return func() error {
		wg.Wait()
		_ = cat.(catalog.Closer).Close()
		mem.AssertSize(t, 0)
		return appendErr
	}
}

// Compaction next to a writer appending in its own commits: whichever
// commit loses retries, and the table ends with every row once.
func TestTableCompactNextToAppender(t *testing.T) {
	wh := newTestIcebergTable(t)
	const appends = 15
	wait := appendInBackground(t, wh, tableTestEpochs+1, tableTestEpochs+appends)
	out, err := runCLI(t, "table", "compact", "--warehouse", wh, "--table", tableTestName, "--min-input-files", "2", "--target-file-size", "1048576")
	if werr := wait(); werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.Fatalf("compact next to an appender: %v\n%s", err, out)
	}
	if got, want := scanRows(t, loadTestTable(t, wh)), tableTestWant(tableTestEpochs+appends); !slices.Equal(got, want) {
		t.Fatalf("after compaction next to an appender: %d rows, want %d\n%s", len(got), len(want), out)
	}
	t.Logf("compact next to an appender:\n%s", out)

	// The files of attempts that lost are gone: once the old snapshots
	// expire (deleting the files only they used), the folder holds the
	// current snapshot's files, and files of the appender's commits that
	// lost (it does not delete them), which have one epoch's rows each.
	time.Sleep(5 * time.Millisecond)
	tableCLI(t, "expire", "--warehouse", wh, "--table", tableTestName)
	tbl := loadTestTable(t, wh)
	scan := tbl.Scan()
	defer scan.Close()
	tasks, err := scan.PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for _, task := range tasks {
		live[strings.TrimPrefix(task.File.FilePath(), "file://")] = true
	}
	onDisk, err := filepath.Glob(filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data", "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range onDisk {
		if live[name] {
			delete(live, name)
			continue
		}
		pf, err := file.OpenParquetFile(name, false)
		if err != nil {
			t.Fatal(err)
		}
		if rows := pf.NumRows(); rows != tableTestRows {
			t.Errorf("%s is not part of the table, and has %d rows: a compaction's output left behind", name, rows)
		}
		pf.Close()
	}
	for name := range live {
		t.Errorf("data file %s of the table is not on disk", name)
	}
}

// Compaction next to a writer deleting rows of the files being
// rewritten (position deletes): a rewrite that read a file before a
// delete must not commit, or the deleted row would come back.
func TestTableCompactNextToDeleter(t *testing.T) {
	ctx := context.Background()
	wh := newTestIcebergTableWith(t, iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead})
	var deleted []int64
	for e := 1; e <= tableTestEpochs; e++ {
		deleted = append(deleted, int64(e*100+1), int64(e*100+3))
	}
	cat, err := icebergsink.OpenCatalog(ctx, icebergsink.CatalogOptions{Warehouse: wh})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.(catalog.Closer).Close()
	var wg sync.WaitGroup
	var deleteErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, id := range deleted {
			for {
				tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier(tableTestName))
				if err != nil {
					deleteErr = err
					return
				}
				if _, err = tbl.Delete(ctx, iceberg.EqualTo(iceberg.Reference("id"), id), nil); err == nil {
					break
				} else if !tableCommitConflict(err) {
					deleteErr = fmt.Errorf("delete id %d: %w", id, err)
					return
				}
			}
		}
	}()
	var outs strings.Builder
	for range 5 {
		out, err := runCLI(t, "table", "compact", "--warehouse", wh, "--table", tableTestName, "--min-input-files", "2")
		outs.WriteString(out)
		if err != nil {
			wg.Wait()
			t.Fatalf("compact next to a deleter: %v\n%s", err, outs.String())
		}
	}
	wg.Wait()
	if deleteErr != nil {
		t.Fatal(deleteErr)
	}
	want := slices.DeleteFunc(tableTestWant(tableTestEpochs), func(r string) bool {
		id, _ := strconv.ParseInt(strings.Fields(r)[0], 10, 64)
		return slices.Contains(deleted, id)
	})
	if got := scanRows(t, loadTestTable(t, wh)); !slices.Equal(got, want) {
		t.Fatalf("after compaction next to a deleter: %d rows, want %d\n%s", len(got), len(want), outs.String())
	}
	t.Logf("compact next to a deleter: %d rewrites again, %d commits again",
		strings.Count(outs.String(), "rewriting again"), strings.Count(outs.String(), "committing again"))
}

// Maintenance as a cron job would run it: append, compact, expire, again
// and again. Later expiries meet manifests listing files an earlier one
// deleted already; rows and files stay exact.
func TestTableCompactExpireCycles(t *testing.T) {
	ctx := context.Background()
	wh := newTestIcebergTable(t)
	target := []string{"--warehouse", wh, "--table", tableTestName}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	epochs := tableTestEpochs
	for cycle := range 3 {
		tableCLI(t, append([]string{"compact", "--min-input-files", "2"}, target...)...)
		time.Sleep(5 * time.Millisecond)
		if out, err := runCLI(t, append([]string{"table", "expire"}, target...)...); err != nil {
			t.Fatalf("cycle %d: expire: %v\n%s", cycle, err, out)
		}
		tbl := loadTestTable(t, wh)
		if got, want := scanRows(t, tbl), tableTestWant(epochs); !slices.Equal(got, want) {
			t.Fatalf("cycle %d: %d rows, want %d", cycle, len(got), len(want))
		}
		if n := len(tbl.Metadata().Snapshots()); n != 1 {
			t.Fatalf("cycle %d: %d snapshots after expiry, want 1", cycle, n)
		}
		for range 3 {
			epochs++
			var err error
			if tbl, err = appendEpoch(ctx, tbl, mem, epochs, tableTestRows); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Expiry, again and again, next to a writer: no row is lost, the
// property stays.
func TestTableExpireNextToAppender(t *testing.T) {
	wh := newTestIcebergTable(t)
	const appends = 15
	wait := appendInBackground(t, wh, tableTestEpochs+1, tableTestEpochs+appends)
	var outs strings.Builder
	for range 10 {
		time.Sleep(5 * time.Millisecond)
		out, err := runCLI(t, "table", "expire", "--warehouse", wh, "--table", tableTestName)
		outs.WriteString(out)
		if err != nil {
			_ = wait()
			t.Fatalf("expire next to an appender: %v\n%s", err, outs.String())
		}
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	tbl := loadTestTable(t, wh)
	if got, want := scanRows(t, tbl), tableTestWant(tableTestEpochs+appends); !slices.Equal(got, want) {
		t.Fatalf("after expiry next to an appender: %d rows, want %d\n%s", len(got), len(want), outs.String())
	}
	if tbl.Properties()[tableTestProp] != strconv.Itoa(tableTestEpochs) {
		t.Errorf("property %s lost: %v", tableTestProp, tbl.Properties())
	}
	t.Logf("expire next to an appender: %d retries", strings.Count(outs.String(), "trying again"))
}

func TestTableExpireIceberg(t *testing.T) {
	wh := newTestIcebergTable(t)
	target := []string{"--warehouse", wh, "--table", tableTestName}
	before := loadTestTable(t, wh)
	rows := scanRows(t, before)
	time.Sleep(5 * time.Millisecond) // every snapshot is older than now

	out := tableCLI(t, append([]string{"expire", "--retain-last", "1", "--older-than", "1h"}, target...)...)
	if !strings.Contains(out, "nothing to expire") {
		t.Errorf("expire --older-than 1h expired fresh snapshots:\n%s", out)
	}
	out = tableCLI(t, append([]string{"expire", "--retain-last", "3"}, target...)...)
	if n := len(loadTestTable(t, wh).Metadata().Snapshots()); n != 3 {
		t.Fatalf("%d snapshots after expire --retain-last 3, want 3:\n%s", n, out)
	}
	if !strings.Contains(out, fmt.Sprintf("expired %d snapshots", tableTestEpochs-3)) {
		t.Errorf("expire does not say what it expired:\n%s", out)
	}
	for e := 1; e <= tableTestEpochs-3; e++ {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^\s+%d\s+\S+\s+%s\s+%d$`, before.Metadata().Snapshots()[e-1].SnapshotID, tableTestJob, e)).MatchString(out) {
			t.Errorf("expire does not list the snapshot of epoch %d:\n%s", e, out)
		}
	}

	out = tableCLI(t, append([]string{"expire"}, target...)...) // --retain-last 1
	after := loadTestTable(t, wh)
	if n := len(after.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after expire --retain-last 1, want 1:\n%s", n, out)
	}
	if after.CurrentSnapshot().SnapshotID != before.CurrentSnapshot().SnapshotID {
		t.Errorf("expire changed the current snapshot")
	}
	if got := scanRows(t, after); !slices.Equal(got, rows) {
		t.Fatalf("rows changed by expire:\n%q\nwant\n%q", got, rows)
	}
	if !maps.Equal(after.Properties(), before.Properties()) || after.Properties()[tableTestProp] != strconv.Itoa(tableTestEpochs) {
		t.Errorf("properties changed by expire: %v, were %v", after.Properties(), before.Properties())
	}
	out = tableCLI(t, append([]string{"snapshots"}, target...)...)
	if !strings.Contains(out, "1 snapshot; current: "+strconv.FormatInt(after.CurrentSnapshot().SnapshotID, 10)) {
		t.Errorf("snapshots after expiry:\n%s", out)
	}
}

// Rows deleted with position delete files (merge-on-read): count scans,
// head leaves the rows out, and compaction applies the deletes and drops
// the delete files it made useless.
func TestTableWithDeleteFiles(t *testing.T) {
	ctx := context.Background()
	wh := newTestIcebergTableWith(t, iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead})
	target := []string{"--warehouse", wh, "--table", tableTestName}
	tbl := loadTestTable(t, wh)
	deleted := []int64{101, 302, 303}
	if _, err := tbl.Delete(ctx, iceberg.IsIn(iceberg.Reference("id"), deleted...), nil); err != nil {
		t.Fatal(err)
	}
	tbl = loadTestTable(t, wh)
	scan := tbl.Scan()
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	deleteFiles := map[string]bool{}
	for _, task := range tasks {
		for _, df := range task.DeleteFiles {
			deleteFiles[df.FilePath()] = true
		}
	}
	if len(deleteFiles) == 0 {
		t.Fatalf("the delete wrote no position delete files: the test does not test them")
	}
	want := slices.DeleteFunc(tableTestWant(tableTestEpochs), func(r string) bool {
		return strings.HasPrefix(r, "101 ") || strings.HasPrefix(r, "302 ") || strings.HasPrefix(r, "303 ")
	})
	if got := scanRows(t, tbl); !slices.Equal(got, want) {
		t.Fatalf("iceberg-go's scan after the delete:\n%q\nwant\n%q", got, want)
	}
	for _, stage := range []string{"before compaction", "after compaction"} {
		if out := tableCLI(t, append([]string{"count"}, target...)...); strings.TrimSpace(out) != strconv.Itoa(len(want)) {
			t.Errorf("count %s printed %q, want %d", stage, out, len(want))
		}
		out := tableCLI(t, append([]string{"head", "-n", "100"}, target...)...)
		if got := headRows(t, out, "id name price"); !slices.Equal(got, want) {
			t.Errorf("head %s printed\n%q\nwant\n%q", stage, got, want)
		}
		if stage == "before compaction" {
			out := tableCLI(t, append([]string{"compact", "--min-input-files", "2"}, target...)...)
			if want := "removed " + nOf(len(deleteFiles), "delete file"); !strings.Contains(out, want) {
				t.Errorf("compact did not say %q:\n%s", want, out)
			}
		}
	}
	tbl = loadTestTable(t, wh)
	if got := scanRows(t, tbl); !slices.Equal(got, want) {
		t.Fatalf("iceberg-go's scan after compaction:\n%q\nwant\n%q", got, want)
	}
	if n := dataFiles(t, tbl); n != 1 {
		t.Errorf("%d data files after compaction, want 1", n)
	}
	if s := tbl.CurrentSnapshot().Summary.Properties; s["total-delete-files"] != "0" || s["total-position-deletes"] != "0" {
		t.Errorf("delete files left after compaction: %v", s)
	}
}

// A table without snapshots, of nested types: every subcommand says
// so instead of failing; schema shows the nested fields with their ids.
func TestTableEmptyNestedIceberg(t *testing.T) {
	ctx := context.Background()
	wh := t.TempDir()
	cat := openTestCatalog(t, wh)
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 3, Name: "tags", Type: &iceberg.ListType{ElementID: 4, Element: iceberg.PrimitiveTypes.String}},
		iceberg.NestedField{ID: 5, Name: "point", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 6, Name: "x", Type: iceberg.PrimitiveTypes.Float64, Required: true},
			{ID: 7, Name: "y", Type: iceberg.PrimitiveTypes.Float64},
		}}},
	)
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "ts_day", Transform: iceberg.DayTransform{}})
	order, err := table.NewSortOrder(1, []table.SortField{
		{SourceIDs: []int{1}, Transform: iceberg.IdentityTransform{}, Direction: table.SortDESC, NullOrder: table.NullsLast},
		{SourceIDs: []int{2}, Transform: iceberg.HourTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateTable(ctx, catalog.ToIdentifier(tableTestName), sc, catalog.WithPartitionSpec(&spec), catalog.WithSortOrder(order)); err != nil {
		t.Fatal(err)
	}
	target := []string{"--warehouse", wh, "--table", tableTestName}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"count"}, []string{`^0\n$`}},
		{[]string{"head"}, []string{`^id\s+ts\s+tags\s+point\n\(0 rows\)\n$`}},
		{[]string{"snapshots"}, []string{`has no snapshots`}},
		{[]string{"compact"}, []string{`nothing to compact`}},
		{[]string{"expire"}, []string{`nothing to expire: 0 snapshots kept`}},
		{[]string{"schema"}, []string{
			`(?m)^\s+1\s+id\s+long\s+required$`,
			`(?m)^\s+2\s+ts\s+timestamptz\s+required$`,
			`(?m)^\s+3\s+tags\s+list\s+optional$`,
			`(?m)^\s+4\s+tags\.element\s+string\s+optional$`,
			`(?m)^\s+5\s+point\s+struct\s+optional$`,
			`(?m)^\s+6\s+point\.x\s+double\s+required$`,
			`(?m)^\s+7\s+point\.y\s+double\s+optional$`,
			`(?m)^\s+identifier fields: id$`,
			`(?m)^\s+1000: ts_day = day\(ts\)$`,
			`(?m)^sort order 1:\n\s+id desc nulls-last\n\s+hour\(ts\) asc nulls-first$`,
		}},
	} {
		out := tableCLI(t, append(c.args, target...)...)
		for _, re := range c.want {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("weir table %s: output does not match %s:\n%s", c.args[0], re, out)
			}
		}
	}
}

func TestTableInspectsParquetFolder(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "orders")
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	sink, err := parquet.New(parquet.Options{Path: dir, PartitionBy: []string{"name"}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := sink.Open(&arrowflow.TaskInfo{Job: tableTestJob, Subtask: 0, Parallelism: 1, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const epochs = 3
	var files []int
	for e := uint64(1); e <= epochs; e++ {
		rec := tableTestRecord(mem, int(e), tableTestRows)
		err := w.Write(ctx, arrowflow.NewBatch(rec))
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		payload, err := w.PreCommit(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if err := sink.Commit(ctx, e, [][]byte{payload}); err != nil {
			t.Fatal(err)
		}
		committed, err := parquet.CommittedFiles(dir)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, len(committed)-sum(files))
	}
	// An epoch pre-committed but not committed is not part of the table.
	rec := tableTestRecord(mem, epochs+1, tableTestRows)
	err = w.Write(ctx, arrowflow.NewBatch(rec))
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.PreCommit(ctx, epochs+1); err != nil {
		t.Fatal(err)
	}

	want := tableTestWant(epochs)
	out := tableCLI(t, "count", "--path", dir)
	if strings.TrimSpace(out) != strconv.Itoa(len(want)) {
		t.Errorf("count printed %q, want %d", out, len(want))
	}
	out = tableCLI(t, "head", "--path", dir, "-n", "1000")
	if got := headRows(t, out, "id name price"); !slices.Equal(got, want) {
		t.Errorf("head printed\n%q\nwant\n%q", got, want)
	}
	out = tableCLI(t, "snapshots", "--path", dir)
	for e := 1; e <= epochs; e++ {
		re := fmt.Sprintf(`(?m)^%s\s+%d\s+%d\s+%d\s+\d+$`, tableTestJob, e, files[e-1], tableTestRows)
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("snapshots does not show epoch %d with %d files and %d rows:\n%s", e, files[e-1], tableTestRows, out)
		}
	}
	if !strings.Contains(out, fmt.Sprintf("%d committed epochs, %d files, %d rows", epochs, sum(files), len(want))) {
		t.Errorf("snapshots total:\n%s", out)
	}
	out = tableCLI(t, "schema", "--path", dir)
	for _, re := range []string{
		`(?m)^\s+id\s+int64\s+not null$`,
		`(?m)^\s+name\s+utf8\s+nullable\s+partition column`,
		`(?m)^\s+price\s+float64\s+nullable$`,
		`(?m)^\s+required int64 field_id=-1 id\b`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("schema output does not match %s:\n%s", re, out)
		}
	}
}

func sum(s []int) int {
	n := 0
	for _, v := range s {
		n += v
	}
	return n
}

func TestTableRejectsBadFlags(t *testing.T) {
	wh := newTestIcebergTable(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"count"}, "--table namespace.name (Iceberg) or --path DIR (Parquet folder) is required"},
		{[]string{"count", "--table", "db.t", "--path", "x"}, "not both"},
		{[]string{"count", "--path", "x", "--warehouse", wh}, "--warehouse applies to Iceberg tables"},
		{[]string{"count", "--table", "orders", "--warehouse", wh}, `--table "orders": want namespace.name`},
		{[]string{"count", "--table", tableTestName, "--warehouse", wh, "--catalog-type", "hive"}, `--catalog-type "hive"`},
		{[]string{"count", "--table", tableTestName, "--warehouse", wh, "--catalog-prop", "novalue"}, `--catalog-prop "novalue": want key=value`},
		{[]string{"count", "--table", "db.missing", "--warehouse", wh}, `table db.missing in the sql catalog "weir" in warehouse ` + wh + `: no such table`},
		{[]string{"count", "--table", "nodb.missing", "--warehouse", wh}, "table nodb.missing in the sql catalog"},
		{[]string{"count", "--table", tableTestName, "--warehouse", filepath.Join(wh, "nowhere")}, "no catalog at " + filepath.Join(wh, "nowhere", "catalog.db")},
		{[]string{"count", "--path", filepath.Join(wh, "nowhere")}, "nowhere"},
		{[]string{"expire", "--path", wh}, "table expire: works on Iceberg tables only"},
		{[]string{"compact", "--path", wh}, "table compact: works on Iceberg tables only"},
		{[]string{"expire", "--table", tableTestName, "--warehouse", wh, "--retain-last", "0"}, "--retain-last must be at least 1"},
		{[]string{"expire", "--table", tableTestName, "--warehouse", wh, "--older-than", "-1h"}, "--older-than must not be negative"},
		{[]string{"compact", "--table", tableTestName, "--warehouse", wh, "--min-input-files", "0"}, "--min-input-files must be at least 1"},
		{[]string{"compact", "--table", tableTestName, "--warehouse", wh, "--interval", "1s"}, "table compact: --interval applies only with --watch"},
		{[]string{"compact", "--table", tableTestName, "--warehouse", wh, "--max-rounds", "3"}, "table compact: --max-rounds applies only with --watch"},
		{[]string{"compact", "--table", tableTestName, "--warehouse", wh, "--watch", "--interval", "0"}, "--interval must be positive with --watch, got 0s"},
		{[]string{"compact", "--table", tableTestName, "--warehouse", wh, "--watch", "--interval", "-1m"}, "--interval must be positive with --watch"},
		{[]string{"compact", "--table", tableTestName, "--warehouse", wh, "--watch", "--interval", "soon"}, `invalid argument "soon" for "--interval"`},
		{[]string{"compact", "--table", tableTestName, "--warehouse", wh, "--watch", "--max-rounds", "-1"}, "--max-rounds must not be negative"},
		{[]string{"compact", "--table", tableTestName, "--warehouse", wh, "--watch", "--min-input-files", "0"}, "--min-input-files must be at least 1"},
		{[]string{"compact", "--table", "db.missing", "--warehouse", wh, "--watch", "--max-rounds", "1"}, "table db.missing in the sql catalog"},
		{[]string{"head", "--table", tableTestName, "--warehouse", wh, "-n", "-1"}, "-n must be at least 0"},
	} {
		out, err := runCLI(t, append([]string{"table"}, c.args...)...)
		if err == nil {
			t.Errorf("weir table %s succeeded:\n%s", strings.Join(c.args, " "), out)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("weir table %s: %v, want an error saying %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

// listTree lists every file and folder under dir, relative to it.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir {
			rel, _ := filepath.Rel(dir, path)
			names = append(names, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// `weir table` with a PostgreSQL catalog it cannot reach, given as a
// key=value DSN or as URLs with the password in the user-info and in the
// query: it fails, creates no file or folder anywhere (the current
// folder, where the default warehouse would be, stays empty), and
// neither the error nor the output shows the password.
func TestTableUnreachablePostgresCreatesNothingAndHidesPasswords(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	port := testutil.FreeLoopbackPort(t)
	for _, c := range []struct{ uri, secret string }{
		{fmt.Sprintf("host=127.0.0.1 port=%d user=weir password=s3cr3tDSN dbname=cat sslmode=disable", port), "s3cr3tDSN"},
		{fmt.Sprintf("postgres://weir:s3cr3tUI@127.0.0.1:%d/cat?sslmode=disable", port), "s3cr3tUI"},
		{fmt.Sprintf("postgres://weir@127.0.0.1:%d/cat?sslmode=disable&password=s3cr3tQ", port), "s3cr3tQ"},
		{fmt.Sprintf("postgres://weir@127.0.0.1:%d/cat?sslpassword=s3cr3tSSL&sslmode=disable", port), "s3cr3tSSL"},
	} {
		for _, sub := range []string{"count", "snapshots", "schema", "head", "expire", "compact"} {
			out, err := runCLI(t, "table", sub, "--table", tableTestName, "--catalog-uri", c.uri)
			if err == nil {
				t.Errorf("weir table %s with catalog %q succeeded:\n%s", sub, c.uri, out)
			} else if strings.Contains(err.Error(), c.secret) {
				t.Errorf("weir table %s: the error shows the password: %v", sub, err)
			}
			if strings.Contains(out, c.secret) {
				t.Errorf("weir table %s: the output shows the password:\n%s", sub, out)
			}
			if made := listTree(t, cwd); len(made) != 0 {
				t.Fatalf("weir table %s with catalog %q made %q in the current folder", sub, c.uri, made)
			}
		}
	}
}

// `weir table` never creates a SQLite catalog or a warehouse that does
// not exist: it fails saying there is no catalog there.
func TestTableMissingSQLiteCatalogCreatesNothing(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	dir := t.TempDir()
	for _, flags := range [][]string{
		{"--warehouse", filepath.Join(dir, "wh")},
		{}, // ./warehouse
		{"--warehouse", filepath.Join(dir, "wh"), "--catalog-uri", filepath.Join(dir, "cat", "catalog.db")},
		{"--warehouse", filepath.Join(dir, "wh"), "--catalog-uri", "sqlite:" + filepath.Join(dir, "catalog.db")},
		{"--warehouse", "file://" + filepath.Join(dir, "wh"), "--catalog-uri", "file://" + filepath.Join(dir, "catalog.db")},
		{"--catalog-uri", "catalog.db"},
	} {
		for _, sub := range []string{"count", "snapshots", "expire"} {
			args := append([]string{"table", sub, "--table", tableTestName}, flags...)
			out, err := runCLI(t, args...)
			if err == nil {
				t.Errorf("weir %s succeeded:\n%s", strings.Join(args, " "), out)
			} else if !strings.Contains(err.Error(), "no catalog at") {
				t.Errorf("weir %s: %v, want an error saying there is no catalog", strings.Join(args, " "), err)
			}
			for _, d := range []string{cwd, dir} {
				if made := listTree(t, d); len(made) != 0 {
					t.Fatalf("weir %s made %q in %s", strings.Join(args, " "), made, d)
				}
			}
		}
	}
}

// The catalog's description in `weir table` messages and output hides
// every password form of the catalog URI.
func TestTableCatalogDescriptionHidesPasswords(t *testing.T) {
	for _, c := range []struct{ typ, uri, secret string }{
		{"sql", "postgres://weir:s3cr3t@db:5432/cat", "s3cr3t"},
		{"sql", "postgres://weir@db/cat?password=s3cr3t&sslmode=disable", "s3cr3t"},
		{"sql", "postgres://weir@db/cat?sslpassword=s3cr3t", "s3cr3t"},
		{"sql", "host=db user=weir password=s3cr3t dbname=cat", "s3cr3t"},
		{"sql", "host=db user=weir password='s3 cr3t' dbname=cat", "cr3t"},
		{"rest", "https://weir:s3cr3t@catalog.example/api?token=s3cr3t", "s3cr3t"},
	} {
		tt := &tableTarget{ice: icebergFlags{table: tableTestName, catalogType: c.typ, catalogName: "weir", catalogURI: c.uri}}
		if got := tt.catalogDescription(); strings.Contains(got, c.secret) {
			t.Errorf("catalog %q is described as %q", c.uri, got)
		}
	}
}

// upsertTestSchema is the upsert job's table: key k, value v.
var upsertTestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String},
}, nil)

// upsertJob drives weir's Iceberg sink in upsert mode as a job would: 2
// subtasks (key k on subtask k%2), epochs of random inserts, updates
// (-U/+U) and deletes over 100 keys, one commit per epoch. refs[e] is
// the table after epoch e.
type upsertJob struct {
	sink *icebergsink.Sink
	ws   []arrowflow.SinkWriter
	mu   sync.Mutex
	refs []map[int64]string
}

// ref is the reference after epoch e, if the job got that far.
func (j *upsertJob) ref(e int) (map[int64]string, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if e >= len(j.refs) {
		return nil, false
	}
	return j.refs[e], true
}

func newUpsertJob(t *testing.T, wh string) *upsertJob {
	t.Helper()
	s, err := icebergsink.New(context.Background(), icebergsink.Options{Catalog: icebergsink.CatalogOptions{Warehouse: wh}, Table: "db.t", UpsertKeys: []string{"k"}}, upsertTestSchema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	j := &upsertJob{sink: s, refs: []map[int64]string{{}}}
	for i := range 2 {
		w, err := s.Open(&arrowflow.TaskInfo{Job: "upserts", Name: "sink", Subtask: i, Parallelism: 2, FirstEpoch: 1, Allocator: memory.DefaultAllocator})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		j.ws = append(j.ws, w)
	}
	return j
}

// kvChange is a changelog row of upsertTestSchema.
type kvChange struct {
	kind arrowflow.RowKind
	k    int64
	v    string
}

// commitKVChanges writes per[i] through ws[i] as one change batch,
// pre-commits every writer and commits the epoch through s.
func commitKVChanges(ctx context.Context, s arrowflow.Sink, ws []arrowflow.SinkWriter, epoch uint64, per [][]kvChange) error {
	payloads := make([][]byte, len(ws))
	for i, w := range ws {
		b := array.NewRecordBuilder(memory.DefaultAllocator, upsertTestSchema)
		kinds := make([]arrowflow.RowKind, 0, len(per[i]))
		for _, c := range per[i] {
			b.Field(0).(*array.Int64Builder).Append(c.k)
			b.Field(1).(*array.StringBuilder).Append(c.v)
			kinds = append(kinds, c.kind)
		}
		rec := b.NewRecordBatch()
		b.Release()
		if err := w.Write(ctx, arrowflow.NewChangeBatch(rec, kinds)); err != nil {
			return err
		}
		p, err := w.PreCommit(ctx, epoch)
		if err != nil {
			return err
		}
		payloads[i] = p
	}
	return s.Commit(ctx, epoch, payloads)
}

// epoch writes and commits the next epoch.
func (j *upsertJob) epoch(ctx context.Context, seed uint64) error {
	j.mu.Lock()
	e := len(j.refs)
	cur := maps.Clone(j.refs[e-1])
	j.mu.Unlock()
	rng := rand.New(rand.NewPCG(seed, uint64(e)))
	per := make([][]kvChange, len(j.ws))
	for i := range 30 {
		k := rng.Int64N(100)
		v := fmt.Sprintf("e%d-%d", e, i)
		sub := k % 2
		old, ok := cur[k]
		switch {
		case !ok:
			per[sub] = append(per[sub], kvChange{arrowflow.Insert, k, v})
			cur[k] = v
		case rng.IntN(3) == 0:
			per[sub] = append(per[sub], kvChange{arrowflow.Delete, k, old})
			delete(cur, k)
		default:
			per[sub] = append(per[sub], kvChange{arrowflow.UpdateBefore, k, old}, kvChange{arrowflow.UpdateAfter, k, v})
			cur[k] = v
		}
	}
	if err := commitKVChanges(ctx, j.sink, j.ws, uint64(e), per); err != nil {
		return err
	}
	j.mu.Lock()
	j.refs = append(j.refs, cur)
	j.mu.Unlock()
	return nil
}

// upsertTableState reads db.t with iceberg-go's scan (which applies the
// equality deletes) and returns its rows, the epoch the job last
// committed to that snapshot, and its delete files.
func upsertTableState(t *testing.T, wh string) (rows map[int64]string, epoch int, deleteFiles int) {
	t.Helper()
	ctx := context.Background()
	cat := openTestCatalog(t, wh)
	tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier("db.t"))
	if err != nil {
		t.Fatal(err)
	}
	epoch, _ = strconv.Atoi(tbl.Properties()[icebergsink.LastEpochPropertyPrefix+"upserts"])
	rows = map[int64]string{}
	if tbl.CurrentSnapshot() == nil {
		return rows, epoch, 0
	}
	deleteFiles, _ = strconv.Atoi(tbl.CurrentSnapshot().Summary.Properties["total-delete-files"])
	_, recs, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		ks, vs := rec.Column(0).(*array.Int64), rec.Column(1).(*array.String)
		for i := range int(rec.NumRows()) {
			if old, dup := rows[ks.Value(i)]; dup {
				t.Fatalf("key %d twice (%q and %q) at epoch %d", ks.Value(i), old, vs.Value(i), epoch)
			}
			rows[ks.Value(i)] = vs.Value(i)
		}
		rec.Release()
	}
	return rows, epoch, deleteFiles
}

// Compaction next to a job committing upserts and deletes: the rewrite
// applies the equality deletes and drops those no file needs any more,
// and the job's deletes committed after it planned still apply to the
// rewritten files (they keep the read snapshot's sequence number). After
// every compaction and at the end the table equals the reference at the
// epoch it holds: no row lost, none resurrected.
func TestTableCompactNextToUpsertJob(t *testing.T) {
	ctx := context.Background()
	wh := filepath.Join(t.TempDir(), "wh")
	j := newUpsertJob(t, wh)
	const epochs = 50
	for range 5 {
		if err := j.epoch(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		for e := 6; e <= epochs; e++ {
			if err := j.epoch(ctx, 1); err != nil {
				done <- err
				return
			}
			time.Sleep(40 * time.Millisecond) // a job's checkpoint interval
		}
		done <- nil
	}()
	var outs strings.Builder
	compactions, checked := 0, 0
	var jobErr error
	for running := true; running; {
		select {
		case jobErr = <-done:
			running = false
		default:
		}
		start := time.Now()
		out, err := runCLI(t, "table", "compact", "--warehouse", wh, "--table", "db.t", "--min-input-files", "2")
		fmt.Fprintf(&outs, "%s(%v)\n", out, time.Since(start).Round(time.Millisecond))
		if err != nil {
			<-done
			t.Fatalf("compact next to an upsert job: %v\n%s", err, outs.String())
		}
		if strings.Contains(out, "rewrote") {
			compactions++
		}
		rows, e, _ := upsertTableState(t, wh)
		ref, ok := j.ref(e)
		if !ok {
			continue // the epoch's reference is not appended yet
		}
		if !maps.Equal(rows, ref) {
			<-done
			t.Fatalf("after a compaction, at epoch %d: %d rows, the reference %d\n%s", e, len(rows), len(ref), outs.String())
		}
		checked++
	}
	if jobErr != nil {
		t.Fatalf("the job next to compactions: %v", jobErr)
	}
	out := tableCLI(t, "compact", "--warehouse", wh, "--table", "db.t", "--min-input-files", "2")
	rows, e, deletes := upsertTableState(t, wh)
	if ref, _ := j.ref(epochs); e != epochs || !maps.Equal(rows, ref) {
		t.Fatalf("at the end, epoch %d: %d rows, the reference %d\n%s", e, len(rows), len(j.refs[epochs]), out)
	}
	if deletes != 0 {
		t.Errorf("%d delete files after the last compaction rewrote every file, want 0\n%s", deletes, out)
	}
	if compactions < 2 {
		t.Errorf("%d compactions committed next to the job, want several\n%s", compactions, outs.String())
	}
	t.Logf("%d compactions next to %d epochs (%d states checked), %d commits again, %d rewrites again", compactions, epochs, checked,
		strings.Count(outs.String(), "committing again"), strings.Count(outs.String(), "rewriting again"))
}

// `weir table compact --watch` next to a job committing upserts and
// deletes every 40 ms: its rounds (every 50 ms) compact again and again
// as the job goes, a round beaten by the job is no error, and after the
// job ended and a round compacted its last files, Ctrl-C stops the watch
// with no error. The table then equals the reference of the last epoch,
// in a few files.
func TestTableCompactWatchNextToUpsertJob(t *testing.T) {
	ctx := context.Background()
	wh := filepath.Join(t.TempDir(), "wh")
	j := newUpsertJob(t, wh)
	const epochs = 40
	for range 3 {
		if err := j.epoch(ctx, 2); err != nil {
			t.Fatal(err)
		}
	}
	p := startInProcess(t, "table", "compact", "--watch", "--interval", "50ms", "--max-rounds", "100000", "--min-input-files", "2",
		"--warehouse", wh, "--table", "db.t")
	done := make(chan error, 1)
	go func() {
		for e := 4; e <= epochs; e++ {
			if err := j.epoch(ctx, 2); err != nil {
				done <- err
				return
			}
			time.Sleep(40 * time.Millisecond) // a job's checkpoint interval
		}
		done <- nil
	}()
	var jobErr error
	select {
	case jobErr = <-done:
	case err := <-p.done:
		<-done
		t.Fatalf("the watch ended while the job ran: %v\n%s", err, p.out.String())
	}
	if jobErr != nil {
		t.Fatalf("the job next to the watch: %v\n%s", jobErr, p.out.String())
	}
	// The job's last files are compacted by a round that planned after
	// its last commit.
	cat := openTestCatalog(t, wh)
	waitFor(t, "a round compacting the job's last epoch", func() bool {
		tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier("db.t"))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(tbl.CurrentSnapshot().Summary.Properties["total-data-files"])
		return tbl.CurrentSnapshot().Summary.Operation == table.OpReplace && n <= 2
	})
	p.cancel()
	if err := p.wait(t); err != nil {
		t.Fatalf("the watch stopped with %v, want no error\n%s", err, p.out.String())
	}
	out := p.out.String()
	rows, e, _ := upsertTableState(t, wh)
	if ref, _ := j.ref(epochs); e != epochs || !maps.Equal(rows, ref) {
		t.Fatalf("after the watch, epoch %d: %d rows, the reference %d\n%s", e, len(rows), len(ref), out)
	}
	rounds := strings.Count(out, "rewrote")
	if rounds < 3 {
		t.Errorf("%d rounds compacted next to %d epochs, want several\n%s", rounds, epochs, out)
	}
	tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier("db.t"))
	if err != nil {
		t.Fatal(err)
	}
	if files := dataFiles(t, tbl); files > 2 {
		t.Errorf("%d data files after the watch, want a few (the job wrote up to %d)\n%s", files, 2*epochs, out)
	}
	if !strings.Contains(out, "watching table db.t in the sql catalog") || !regexp.MustCompile(`stopped after \d+ rounds: \d+ compacted`).MatchString(out) {
		t.Errorf("the watch did not announce its start or its stop:\n%s", out)
	}
	beaten := strings.Count(out, "the next round tries again")
	if n := strings.Count(out, "nothing to compact"); n > rounds+beaten+1 {
		t.Errorf("%d rounds said nothing to compact, with %d compacting and %d beaten: want at most one after each\n%s", n, rounds, beaten, out)
	}
	t.Logf("%d compacting rounds next to %d epochs, %d beaten:\n%s", rounds, epochs, beaten, out)
}

// --max-rounds ends the watch (no error) after that many rounds, the
// first one compacting and the next ones quiet; cancelling the context
// (Ctrl-C) during the pause ends it with no error too.
func TestTableCompactWatchMaxRoundsAndCancel(t *testing.T) {
	wh := newTestIcebergTable(t)
	out := tableCLI(t, "compact", "--table", tableTestName, "--warehouse", wh, "--min-input-files", "2", "--watch", "--interval", "10ms", "--max-rounds", "4")
	if strings.Count(out, "rewrote") != 1 || strings.Count(out, "nothing to compact") != 1 || !strings.Contains(out, "done after 4 rounds: 1 compacted, 0 beaten by concurrent commits") {
		t.Fatalf("4 rounds on a table of %d small files: want 1 compacting, 1 saying nothing to compact, then quiet:\n%s", tableTestEpochs, out)
	}
	if got := scanRows(t, loadTestTable(t, wh)); !slices.Equal(got, tableTestWant(tableTestEpochs)) {
		t.Fatalf("rows after the watch: %d, want %d", len(got), len(tableTestWant(tableTestEpochs)))
	}
	p := startInProcess(t, "table", "compact", "--table", tableTestName, "--warehouse", wh, "--watch", "--interval", "1h")
	waitFor(t, "the first round", func() bool { return strings.Contains(p.out.String(), "round 1 at") })
	start := time.Now()
	p.cancel()
	if err := p.wait(t); err != nil || time.Since(start) > 5*time.Second || !strings.Contains(p.out.String(), "stopped after 1 round: 0 compacted") {
		t.Fatalf("cancelled after its first round: %v after %v, want no error at once\n%s", err, time.Since(start), p.out.String())
	}
}
