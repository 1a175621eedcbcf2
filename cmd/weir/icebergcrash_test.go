package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	iceberggo "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/failpoint"
	icebergsink "github.com/weirflow/weir/sinks/iceberg"
)

// The Iceberg crash tests: `weir job windowed --table` writes datagen ->
// per-key one-second windows -> an Iceberg table in a SQL catalog on
// SQLite, as a child process killed with SIGKILL. The table, read with
// iceberg-go's scan, must equal a crash-free run's row for row, and its
// snapshot history must show each epoch committed once.

const crashTableName = "db.windows"

var icebergJob = crashJob{name: "windowed", rows: 100_000, rate: 40_000, par: 2}

func icebergArgs(j crashJob, warehouse, cp string, extra ...string) []string {
	return append([]string{"job", j.name, "--rows", fmt.Sprint(j.rows), "--rate", fmt.Sprint(j.rate),
		"--parallelism", fmt.Sprint(j.par), "--table", crashTableName, "--warehouse", warehouse, "--checkpoint-dir", cp,
		"--checkpoint-interval", "50ms", "--target-file-size", "65536", "--seed", "7"}, extra...)
}

// loadIcebergTable opens the table in warehouse's embedded catalog.
func loadIcebergTable(t *testing.T, warehouse string) *table.Table {
	t.Helper()
	return loadTableNamed(t, warehouse, crashTableName)
}

// loadTableNamed opens table name in warehouse's embedded catalog.
func loadTableNamed(t *testing.T, warehouse, name string) *table.Table {
	t.Helper()
	ctx := context.Background()
	cat, err := icebergsink.OpenCatalog(ctx, icebergsink.CatalogOptions{Warehouse: warehouse})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, ok := cat.(interface{ Close() error }); ok {
			c.Close()
		}
	})
	ident, _ := icebergsink.ParseIdentifier(name)
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// icebergRows reads the table's current snapshot with iceberg-go's scan
// and returns its rows, sorted; it also checks that no epoch of job was
// committed twice in the snapshot history.
func icebergRows(t *testing.T, warehouse, job string) []string {
	t.Helper()
	return tableRowsChecked(t, loadIcebergTable(t, warehouse), job)
}

// tableRowsChecked is icebergRows for a loaded table.
func tableRowsChecked(t *testing.T, tbl *table.Table, job string) []string {
	t.Helper()
	seen := map[string]int64{}
	for _, snap := range tbl.Metadata().Snapshots() {
		if snap.Summary == nil || snap.Summary.Properties[icebergsink.SummaryJobID] != job {
			continue
		}
		e := snap.Summary.Properties[icebergsink.SummaryEpoch]
		if prev, dup := seen[e]; dup {
			t.Fatalf("epoch %s committed twice: snapshots %d and %d", e, prev, snap.SnapshotID)
		}
		seen[e] = snap.SnapshotID
	}
	if tbl.CurrentSnapshot() == nil {
		return nil
	}
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	rows := tableRows(at)
	slices.Sort(rows)
	return rows
}

// tableRows formats every row of at as "col=value col=value ".
func tableRows(at arrow.Table) []string {
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	var out []string
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			var b strings.Builder
			for c := 0; c < int(rec.NumCols()); c++ {
				fmt.Fprintf(&b, "%s=%v ", rec.ColumnName(c), arrowflow.ValueAt(rec.Column(c), i))
			}
			out = append(out, b.String())
		}
	}
	return out
}

// icebergReference is the crash-free run's table.
func icebergReference(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	wh := filepath.Join(dir, "wh")
	c := startWeir(t, nil, icebergArgs(icebergJob, wh, filepath.Join(dir, "cp"))...)
	if err := c.wait(t); err != nil {
		t.Fatalf("crash-free run failed: %v\n%s", err, c.out.String())
	}
	rows := icebergRows(t, wh, icebergJob.name)
	if len(rows) == 0 {
		t.Fatal("the crash-free run committed no rows")
	}
	return rows
}

func runIcebergToEnd(t *testing.T, wh, cp string) {
	t.Helper()
	c := startWeir(t, nil, icebergArgs(icebergJob, wh, cp)...)
	if err := c.wait(t); err != nil {
		t.Fatalf("restart failed: %v\n%s", err, c.out.String())
	}
}

func TestIcebergCrashAtRandomMomentsIsExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: runs child processes")
	}
	want := icebergReference(t)
	rng := rand.New(rand.NewPCG(23, 5))
	kills, rounds, recovered := 0, 0, false
	for kills < *chaosKills {
		rounds++
		dir := t.TempDir()
		wh, cp := filepath.Join(dir, "wh"), filepath.Join(dir, "cp")
		r := killRound(t, rng, icebergArgs(icebergJob, wh, cp), killRoundOptions{})
		kills += r.kills
		recovered = recovered || r.recovered
		sameRows(t, fmt.Sprintf("round %d, after %d kills in all", rounds, kills), icebergRows(t, wh, icebergJob.name), want)
	}
	if !recovered {
		t.Fatal("no restart recovered from a checkpoint: the kills came too early to test recovery")
	}
	t.Logf("%d kills in %d rounds", kills, rounds)
}

// A kill at each named point; mid-commit is after the catalog accepted
// the epoch's snapshot and before the job learned it.
func TestIcebergCrashAtEachProtocolPointIsExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: runs child processes")
	}
	want := icebergReference(t)
	for _, point := range []string{failpoint.AfterSnapshot, failpoint.AfterPreCommit, failpoint.AfterManifest, failpoint.MidCommit} {
		dir := t.TempDir()
		wh, cp := filepath.Join(dir, "wh"), filepath.Join(dir, "cp")
		c := startWeir(t, []string{"WEIR_FAILPOINT=" + point + "@3"}, icebergArgs(icebergJob, wh, cp)...)
		if err := c.wait(t); !errors.Is(err, errKilled) {
			t.Fatalf("%s: the job was not killed at the failpoint: %v\n%s", point, err, c.out.String())
		}
		runIcebergToEnd(t, wh, cp)
		sameRows(t, "killed at "+point, icebergRows(t, wh, icebergJob.name), want)
	}
}

// Snapshot expiry between a crash (after the catalog committed an epoch,
// before the job recorded that) and the restart removes the snapshots
// that carried weir.epoch: the restart must still not commit an epoch
// twice.
func TestIcebergExpireBetweenCrashAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: runs child processes")
	}
	want := icebergReference(t)
	dir := t.TempDir()
	wh, cp := filepath.Join(dir, "wh"), filepath.Join(dir, "cp")
	c := startWeir(t, []string{"WEIR_FAILPOINT=" + failpoint.MidCommit + "@4"}, icebergArgs(icebergJob, wh, cp)...)
	if err := c.wait(t); !errors.Is(err, errKilled) {
		t.Fatalf("the job was not killed at the failpoint: %v\n%s", err, c.out.String())
	}
	expireAllButNewest(t, wh)
	if n := len(loadIcebergTable(t, wh).Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after expiry, want 1", n)
	}
	runIcebergToEnd(t, wh, cp)
	sameRows(t, "expired between crash and restart", icebergRows(t, wh, icebergJob.name), want)
}

func expireAllButNewest(t *testing.T, wh string) {
	t.Helper()
	out, err := runCLI(t, "table", "expire", "--warehouse", wh, "--table", crashTableName, "--retain-last", "1")
	if err != nil {
		t.Fatalf("weir table expire: %v\n%s", err, out)
	}
}

// Another writer appends to the same table while the job runs (and is
// killed and restarted): weir's commits retry on conflicts, and the table
// ends with every row of both writers.
func TestIcebergConcurrentWriterLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: runs child processes")
	}
	want := icebergReference(t)
	dir := t.TempDir()
	wh, cp := filepath.Join(dir, "wh"), filepath.Join(dir, "cp")
	c := startWeir(t, nil, icebergArgs(icebergJob, wh, cp)...)
	c.waitStarted(t)
	waitFor(t, "the table to exist", func() bool {
		cat, err := icebergsink.OpenCatalog(context.Background(), icebergsink.CatalogOptions{Warehouse: wh})
		if err != nil {
			return false
		}
		defer cat.(interface{ Close() error }).Close()
		ident, _ := icebergsink.ParseIdentifier(crashTableName)
		_, err = cat.LoadTable(context.Background(), ident)
		return err == nil
	})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var other []string
	var otherErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		other, otherErr = appendConcurrently(wh, stop)
	}()
	time.Sleep(300 * time.Millisecond)
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	_ = c.wait(t)
	c = startWeir(t, nil, icebergArgs(icebergJob, wh, cp)...)
	err := c.wait(t)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("the job failed next to another writer: %v\n%s", err, c.out.String())
	}
	if otherErr != nil {
		t.Fatal(otherErr)
	}
	if len(other) < 3 {
		t.Fatalf("the other writer committed only %d rows: no concurrency tested", len(other))
	}
	otherSet := map[string]bool{}
	for _, r := range other {
		otherSet[r] = true
	}
	var mine, theirs []string
	for _, r := range icebergRows(t, wh, icebergJob.name) {
		if otherSet[r] {
			theirs = append(theirs, r)
		} else {
			mine = append(mine, r)
		}
	}
	sameRows(t, "weir's rows next to another writer", mine, want)
	slices.Sort(other)
	sameRows(t, "the other writer's rows", theirs, other)
	if !strings.Contains(c.out.String(), "epochs committed") {
		t.Fatalf("unexpected output:\n%s", c.out.String())
	}
}

// appendConcurrently appends one row at a time, in its own commits, to
// the table until stop closes, and returns the rows as icebergRows
// formats them. Its numbers are negative, so no row of weir's equals one.
func appendConcurrently(wh string, stop <-chan struct{}) ([]string, error) {
	ctx := context.Background()
	cat, err := icebergsink.OpenCatalog(ctx, icebergsink.CatalogOptions{Warehouse: wh})
	if err != nil {
		return nil, err
	}
	defer cat.(interface{ Close() error }).Close()
	ident, _ := icebergsink.ParseIdentifier(crashTableName)
	var rows []string
	for i := 0; ; i++ {
		select {
		case <-stop:
			return rows, nil
		case <-time.After(50 * time.Millisecond):
		}
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return rows, err
		}
		sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
		if err != nil {
			return rows, err
		}
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for f := range sc.Fields() {
			switch fb := b.Field(f).(type) {
			case *array.StringBuilder:
				fb.Append("other-" + strconv.Itoa(i))
			case *array.Int64Builder: // negative: no window of weir's has such values
				fb.Append(-int64(i) - 1)
			case *array.Int32Builder:
				fb.Append(-int32(i) - 1)
			case *array.Float64Builder:
				fb.Append(-float64(i) - 1)
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(-i - 1))
			default:
				fb.AppendNull()
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
		rows = append(rows, tableRows(at)...)
		rec.Release()
		for attempt := 0; ; attempt++ {
			_, err = tbl.AppendTable(ctx, at, 1024, iceberggo.Properties{"writer": "other"})
			// iceberg-go's SQL catalog reports a conflict as a failed
			// requirement, not as table.ErrCommitFailed.
			conflict := err != nil && (errors.Is(err, table.ErrCommitFailed) || strings.Contains(err.Error(), "requirement failed"))
			if !conflict || attempt == 20 {
				break
			}
			time.Sleep(time.Duration(attempt+1) * 10 * time.Millisecond)
			if tbl, err = cat.LoadTable(ctx, ident); err != nil {
				break
			}
		}
		at.Release()
		if err != nil {
			return rows, fmt.Errorf("the other writer's append %d: %w", i, err)
		}
	}
}

// The demo killed with SIGKILL at random moments (its embedded broker
// with it), then run to completion, ends with exactly the tables of an
// uninterrupted run: demo.auction_stats and demo.hot_auctions, row for
// row, each epoch committed once to each.
func TestDemoCrashIsExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: runs child processes")
	}
	args := func(dir string) []string {
		return []string{"demo", "--dir", dir, "--events", "200000", "--rate", "80000", "--checkpoint-interval", "200ms"}
	}
	tables := func(dir string) map[string][]string {
		wh := filepath.Join(dir, "warehouse")
		m := map[string][]string{}
		for _, name := range []string{demoStatsTable, demoHotTable} {
			m[name] = tableRowsChecked(t, loadTableNamed(t, wh, name), "weir-demo")
		}
		return m
	}
	ref := filepath.Join(t.TempDir(), "demo")
	c := startWeir(t, nil, append(args(ref), "--rate", "0")...)
	if err := c.wait(t); err != nil {
		t.Fatalf("uninterrupted demo: %v\n%s", err, c.out.String())
	}
	want := tables(ref)
	for name, rows := range want {
		if len(rows) == 0 {
			t.Fatalf("the uninterrupted demo left %s empty", name)
		}
	}
	dir := filepath.Join(t.TempDir(), "demo")
	rng := rand.New(rand.NewPCG(5, 8))
	r := killRound(t, rng, args(dir), killRoundOptions{})
	if r.kills == 0 {
		t.Fatal("the demo was never killed: nothing tested")
	}
	got := tables(dir)
	for _, name := range []string{demoStatsTable, demoHotTable} {
		sameRows(t, fmt.Sprintf("demo's %s after %d kills", name, r.kills), got[name], want[name])
	}
	t.Logf("%d kills; %d and %d rows", r.kills, len(want[demoStatsTable]), len(want[demoHotTable]))
}
