//go:build duckdb

package iceberg

// DuckDB as an independent reader of weir's Iceberg tables. It needs cgo
// and links DuckDB's static library, so it runs only with the duckdb
// build tag:
//
//	go test -tags duckdb ./...

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	_ "github.com/duckdb/duckdb-go/v2"
	icebergsink "github.com/weirflow/weir/sinks/iceberg"
	"github.com/weirflow/weir/sinks/parquet"
)

// The job: datagen -> per-key one-second tumbling windows (count, min
// and max of price) -> the table. At 60,000 rows a second its 300,000
// rows take five seconds, long enough for the kills to land mid-run.
const (
	tableName = "db.windows"
	jobRows   = 300_000
	jobRate   = 60_000
	jobSeed   = 7
	jobPar    = 2
)

// aggregates is what each reader computes over the table. Prices are
// float64 in cents (datagen's price: [1, 1000), two decimals, 1% nulls,
// so a window's min or max is null when all its prices are): their sums
// are taken over exact integer cents, round(price*100), which makes them
// independent of the order of the rows; the extremes are compared as
// floats, bit for bit, being order independent too. Timestamps are
// microseconds since the epoch (Iceberg's unit).
type aggregates struct {
	Rows         int64   // count(*)
	SumRows      int64   // sum(rows)
	SumMinCents  int64   // sum(min_price), in cents
	SumMaxCents  int64   // sum(max_price), in cents
	NonNullMin   int64   // count(min_price)
	NonNullMax   int64   // count(max_price)
	LowestPrice  float64 // min(min_price)
	HighestPrice float64 // max(max_price)
	Keys         int64   // count(DISTINCT key)
	FirstStart   int64   // min(window_start)
	LastEnd      int64   // max(window_end)
}

// TestDuckDBReadsIcebergTable runs the job into an Iceberg table, killed
// with SIGKILL 2-3 times at random moments and once by a failpoint
// between an epoch's checkpoint manifest and its commit, and restarted on
// the same checkpoint folder until it completes; then the same job
// crash-free into a Parquet folder and into a second Iceberg table.
// DuckDB over the files of the table's current snapshot (as iceberg-go's
// PlanFiles lists them), DuckDB over the Parquet folder's committed files
// (as its commit log lists them), and iceberg-go's own scan must agree
// exactly. After each kill it also reads the killed run's table: DuckDB
// over the snapshot's files must agree with iceberg-go's scan, and the
// .parquet files on disk the snapshot does not list (uncommitted output)
// must change DuckDB's answer, or make it fail when torn: only the
// listing makes a table of the folder. A crash-free run leaves no such
// file.
func TestDuckDBReadsIcebergTable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	weir := buildWeir(t, dir)

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("SET TimeZone = 'UTC'"); err != nil {
		t.Fatal(err)
	}
	var version string
	if err := db.QueryRow("SELECT version()").Scan(&version); err != nil {
		t.Fatal(err)
	}

	// The Iceberg table, with crashes.
	wh, cp := filepath.Join(dir, "wh"), filepath.Join(dir, "cp")
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0x1ceb))
	target := 2 + rng.IntN(2)
	// One more run is killed by weir's failpoint right after the
	// checkpoint manifest of its n-th epoch with output is written, before
	// the epoch's snapshot is committed: its finished data files are on
	// disk, not in the table, which a kill at a random moment rarely
	// catches (an epoch's files are finished at its pre-commit and
	// committed a few milliseconds later). The restart commits them.
	fpRun, fpHit := rng.IntN(target+1), 1+rng.IntN(3)
	t.Logf("DuckDB %s; %d kills at random moments planned, and one at after-output-manifest@%d as run %d (kill timing seed %d)",
		version, target, fpHit, fpRun+1, seed)
	kills, leftByKills := 0, 0
	for attempt := 0; ; attempt++ {
		if attempt == 20 {
			t.Fatalf("the job did not complete within 20 runs (%d kills)", kills)
		}
		var env []string
		if attempt == fpRun {
			env = []string{fmt.Sprintf("WEIR_FAILPOINT=after-output-manifest@%d", fpHit)}
		}
		p := startWeir(t, env, weir, icebergArgs(wh, cp)...)
		if env == nil && kills < target+1 {
			p.waitStarted(t)
			delay := time.Duration(50+rng.IntN(950)) * time.Millisecond
			select {
			case <-p.done:
			case <-time.After(delay):
				_ = p.cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		err := p.wait(t, 2*time.Minute)
		if err == nil {
			t.Logf("run %d completed: %s", attempt+1, strings.TrimSpace(p.out.String()))
			break
		}
		if !errors.Is(err, errKilled) {
			t.Fatalf("run %d: %v\n%s", attempt+1, err, p.out.String())
		}
		kills++
		// What the kill left, before the restart's recovery commits or
		// deletes it.
		st := inspectIceberg(ctx, t, wh)
		leftByKills += len(st.extra)
		how := "at a random moment"
		if env != nil {
			how = "at " + strings.TrimPrefix(env[0], "WEIR_FAILPOINT=")
		}
		t.Logf("kill %d (run %d, %s): snapshot lists %d data files, %d .parquet files on disk: %d not in the snapshot (%d torn)",
			kills, attempt+1, how, len(st.listed), len(st.onDisk), len(st.extra), len(st.torn))
		if len(st.listed) > 0 {
			listed := duckAggregates(t, db, st.listed)
			if listed != st.scan {
				t.Fatalf("kill %d: DuckDB over the snapshot's files read\n%+v\niceberg-go's scan read\n%+v", kills, listed, st.scan)
			}
			checkListingMatters(t, db, fmt.Sprintf("kill %d", kills), st, listed)
		}
	}
	if kills < target+1 {
		t.Fatalf("the job completed after %d kills of %d planned: too short a run", kills, target+1)
	}

	// The same job crash-free, into a Parquet folder and, for the files
	// count, into a second Iceberg table.
	out := filepath.Join(dir, "out")
	p := startWeir(t, nil, weir, "job", "windowed", "--out", out, "--rows", fmt.Sprint(jobRows), "--rate", "0",
		"--seed", fmt.Sprint(jobSeed), "--parallelism", fmt.Sprint(jobPar), "--checkpoint-dir", filepath.Join(dir, "cp-parquet"),
		"--checkpoint-interval", "50ms", "--target-file-size", "65536")
	if err := p.wait(t, 2*time.Minute); err != nil {
		t.Fatalf("crash-free Parquet run: %v\n%s", err, p.out.String())
	}
	cleanWH := filepath.Join(dir, "wh-clean")
	p = startWeir(t, nil, weir, "job", "windowed", "--table", tableName, "--warehouse", cleanWH, "--rows", fmt.Sprint(jobRows),
		"--rate", "0", "--seed", fmt.Sprint(jobSeed), "--parallelism", fmt.Sprint(jobPar),
		"--checkpoint-dir", filepath.Join(dir, "cp-clean"), "--checkpoint-interval", "50ms", "--target-file-size", "65536")
	if err := p.wait(t, 2*time.Minute); err != nil {
		t.Fatalf("crash-free Iceberg run: %v\n%s", err, p.out.String())
	}

	// The Parquet folder's committed files, from its commit log.
	committed, err := parquet.CommittedFiles(out)
	if err != nil {
		t.Fatal(err)
	}
	var parquetFiles []string
	for _, f := range committed {
		parquetFiles = append(parquetFiles, filepath.Join(out, filepath.FromSlash(f.Path)))
	}
	if len(parquetFiles) == 0 {
		t.Fatal("the Parquet run committed no file")
	}
	if onDisk := parquetFilesIn(t, out); len(onDisk) != len(parquetFiles) {
		t.Errorf("the crash-free Parquet folder holds %d .parquet files, its commit log lists %d", len(onDisk), len(parquetFiles))
	}

	final := inspectIceberg(ctx, t, wh)
	clean := inspectIceberg(ctx, t, cleanWH)
	if len(clean.extra) != 0 {
		t.Errorf("the crash-free Iceberg table's folder holds %d .parquet files its snapshot does not list: %v", len(clean.extra), clean.extra)
	}
	t.Logf("after %d kills and a completed run: the snapshot lists %d data files, %d .parquet files on disk (%d not in the snapshot); the kills had left %d in all; crash-free: %d listed, %d on disk; Parquet folder: %d committed files",
		kills, len(final.listed), len(final.onDisk), len(final.extra), leftByKills, len(clean.listed), len(clean.onDisk), len(parquetFiles))

	icebergDuck := duckAggregates(t, db, final.listed)
	parquetDuck := duckAggregates(t, db, parquetFiles)
	cleanDuck := duckAggregates(t, db, clean.listed)
	t.Logf("DuckDB over the Iceberg snapshot's files: %+v", icebergDuck)
	if icebergDuck != final.scan {
		t.Errorf("DuckDB over the snapshot's files read\n%+v\niceberg-go's scan read\n%+v", icebergDuck, final.scan)
	}
	if icebergDuck != parquetDuck {
		t.Errorf("DuckDB over the Iceberg snapshot's files read\n%+v\nover the Parquet folder's committed files\n%+v", icebergDuck, parquetDuck)
	}
	if icebergDuck != cleanDuck || clean.scan != cleanDuck {
		t.Errorf("the crash-free Iceberg table: DuckDB read\n%+v\niceberg-go's scan\n%+v\nwant\n%+v", cleanDuck, clean.scan, icebergDuck)
	}
	if icebergDuck.SumRows != jobRows {
		t.Errorf("the windows count %d rows, the job generated %d", icebergDuck.SumRows, jobRows)
	}
	if len(final.extra) > 0 {
		checkListingMatters(t, db, "after the completed run", final, icebergDuck)
	} else {
		t.Logf("no uncommitted file remained after the completed run: the restarts' recovery committed (epochs whose checkpoint manifest was written) or deleted the %d the kills left", leftByKills)
	}
}

// checkListingMatters checks that reading every complete .parquet file
// of the table's folder, and not just the snapshot's, gives another
// answer, when the folder holds files the snapshot does not list.
func checkListingMatters(t *testing.T, db *sql.DB, when string, st icebergState, listed aggregates) {
	t.Helper()
	var complete []string
	for _, f := range st.extra {
		if !slices.Contains(st.torn, f) {
			complete = append(complete, f)
		}
	}
	if len(st.torn) > 0 {
		files := append(slices.Clone(st.listed), st.torn...)
		if _, err := tryDuckAggregates(db, files); err == nil {
			t.Fatalf("%s: DuckDB read %d torn files (no Parquet footer) without an error", when, len(st.torn))
		} else {
			t.Logf("%s: %d torn files not in the snapshot: DuckDB over the whole folder fails: %v", when, len(st.torn), firstLine(err))
		}
	}
	if len(complete) == 0 {
		return
	}
	all := duckAggregates(t, db, append(slices.Clone(st.listed), complete...))
	if all == listed {
		t.Fatalf("%s: DuckDB over the folder's %d complete files read what it read over the snapshot's %d: %+v",
			when, len(st.listed)+len(complete), len(st.listed), all)
	}
	t.Logf("%s: DuckDB over all %d complete files on disk reads %d windows (sum(rows) %d), over the snapshot's %d files %d (sum(rows) %d)",
		when, len(st.listed)+len(complete), all.Rows, all.SumRows, len(st.listed), listed.Rows, listed.SumRows)
}

func icebergArgs(wh, cp string) []string {
	return []string{"job", "windowed", "--table", tableName, "--warehouse", wh, "--rows", fmt.Sprint(jobRows),
		"--rate", fmt.Sprint(jobRate), "--seed", fmt.Sprint(jobSeed), "--parallelism", fmt.Sprint(jobPar),
		"--checkpoint-dir", cp, "--checkpoint-interval", "50ms", "--target-file-size", "65536"}
}

// buildWeir builds the weir binary of the replaced module into dir.
func buildWeir(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "weir")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/weirflow/weir/cmd/weir")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built weir in %v", time.Since(start).Round(time.Millisecond))
	return bin
}

// icebergState is what a warehouse holds: the data files of the table's
// current snapshot, the .parquet files on disk, those of them the
// snapshot does not list and, of these, the torn ones; and what
// iceberg-go's scan of the snapshot reads.
type icebergState struct {
	listed, onDisk, extra, torn []string
	scan                        aggregates
}

func inspectIceberg(ctx context.Context, t *testing.T, wh string) icebergState {
	t.Helper()
	cat, err := icebergsink.OpenCatalog(ctx, icebergsink.CatalogOptions{Warehouse: wh})
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := cat.(interface{ Close() error }); ok {
		defer c.Close()
	}
	ident, err := icebergsink.ParseIdentifier(tableName)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	var st icebergState
	if tbl.CurrentSnapshot() != nil {
		tasks, err := tbl.Scan().PlanFiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			if n := len(task.DeleteFiles) + len(task.EqualityDeleteFiles) + len(task.DeletionVectorFiles); n > 0 {
				t.Fatalf("%s: %d delete files: the table is append-only", task.File.FilePath(), n)
			}
			st.listed = append(st.listed, localPath(t, task.File.FilePath()))
		}
		at, err := tbl.Scan().ToArrowTable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st.scan = arrowAggregates(t, at)
		at.Release()
	}
	st.onDisk = parquetFilesIn(t, wh)
	for _, f := range st.listed {
		if !slices.Contains(st.onDisk, f) {
			t.Fatalf("the snapshot lists %s, which is not on disk", f)
		}
	}
	for _, f := range st.onDisk {
		if slices.Contains(st.listed, f) {
			continue
		}
		st.extra = append(st.extra, f)
		if !completeParquet(t, f) {
			st.torn = append(st.torn, f)
		}
	}
	return st
}

// localPath turns a data file's file:// URL into a path.
func localPath(t *testing.T, loc string) string {
	t.Helper()
	if !strings.HasPrefix(loc, "file:") {
		if filepath.IsAbs(loc) {
			return filepath.Clean(loc)
		}
		t.Fatalf("data file %q: not a local file", loc)
	}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Clean(filepath.FromSlash(u.Path))
}

// parquetFilesIn lists the .parquet files below root.
func parquetFilesIn(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".parquet") {
			files = append(files, filepath.Clean(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// completeParquet reports whether the file starts and ends with Parquet's
// magic, as a file whose footer was written does.
func completeParquet(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	magic := []byte("PAR1")
	return len(b) >= 12 && bytes.HasPrefix(b, magic) && bytes.HasSuffix(b, magic)
}

// duckAggregates has DuckDB compute the aggregates over the files.
func duckAggregates(t *testing.T, db *sql.DB, files []string) aggregates {
	t.Helper()
	if len(files) == 0 {
		t.Fatal("no file to read")
	}
	a, err := tryDuckAggregates(db, files)
	if err != nil {
		t.Fatalf("DuckDB over %d files: %v", len(files), err)
	}
	return a
}

func tryDuckAggregates(db *sql.DB, files []string) (aggregates, error) {
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = "'" + strings.ReplaceAll(f, "'", "''") + "'"
	}
	q := `SELECT count(*), coalesce(sum(rows), 0)::BIGINT,
		coalesce(sum(round(min_price * 100)::BIGINT), 0)::BIGINT, coalesce(sum(round(max_price * 100)::BIGINT), 0)::BIGINT,
		count(min_price), count(max_price), coalesce(min(min_price), 0), coalesce(max(max_price), 0),
		count(DISTINCT key), coalesce(epoch_us(min(window_start)), 0), coalesce(epoch_us(max(window_end)), 0)
		FROM read_parquet([` + strings.Join(quoted, ", ") + `])`
	var a aggregates
	err := db.QueryRow(q).Scan(&a.Rows, &a.SumRows, &a.SumMinCents, &a.SumMaxCents, &a.NonNullMin, &a.NonNullMax,
		&a.LowestPrice, &a.HighestPrice, &a.Keys, &a.FirstStart, &a.LastEnd)
	return a, err
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// arrowAggregates computes the aggregates over an Arrow table in Go.
func arrowAggregates(t *testing.T, at arrow.Table) aggregates {
	t.Helper()
	sc := at.Schema()
	col := func(name string) int {
		idx := sc.FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("iceberg-go's scan: no single column %q in %v", name, sc)
		}
		return idx[0]
	}
	cStart, cEnd, cKey, cRows, cMin, cMax := col("window_start"), col("window_end"), col("key"), col("rows"), col("min_price"), col("max_price")
	var a aggregates
	keys := map[int64]bool{}
	lowest, highest := math.Inf(1), math.Inf(-1)
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			a.Rows++
			if v, ok := intAt(t, rec.Column(cRows), i); ok {
				a.SumRows += v
			}
			if v, ok := intAt(t, rec.Column(cKey), i); ok {
				keys[v] = true
			}
			if v, ok := floatAt(t, rec.Column(cMin), i); ok {
				a.NonNullMin++
				a.SumMinCents += int64(math.Round(v * 100))
				lowest = math.Min(lowest, v)
			}
			if v, ok := floatAt(t, rec.Column(cMax), i); ok {
				a.NonNullMax++
				a.SumMaxCents += int64(math.Round(v * 100))
				highest = math.Max(highest, v)
			}
			if v, ok := microsAt(t, rec.Column(cStart), i); ok {
				first = min(first, v)
			}
			if v, ok := microsAt(t, rec.Column(cEnd), i); ok {
				last = max(last, v)
			}
		}
	}
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	a.Keys = int64(len(keys))
	if a.NonNullMin > 0 {
		a.LowestPrice = lowest
	}
	if a.NonNullMax > 0 {
		a.HighestPrice = highest
	}
	if first != math.MaxInt64 {
		a.FirstStart = first
	}
	if last != math.MinInt64 {
		a.LastEnd = last
	}
	return a
}

func intAt(t *testing.T, arr arrow.Array, i int) (int64, bool) {
	if arr.IsNull(i) {
		return 0, false
	}
	switch a := arr.(type) {
	case *array.Int64:
		return a.Value(i), true
	case *array.Int32:
		return int64(a.Value(i)), true
	}
	t.Fatalf("iceberg-go's scan: unexpected integer column type %s", arr.DataType())
	return 0, false
}

func floatAt(t *testing.T, arr arrow.Array, i int) (float64, bool) {
	if arr.IsNull(i) {
		return 0, false
	}
	if a, ok := arr.(*array.Float64); ok {
		return a.Value(i), true
	}
	t.Fatalf("iceberg-go's scan: unexpected price column type %s", arr.DataType())
	return 0, false
}

func microsAt(t *testing.T, arr arrow.Array, i int) (int64, bool) {
	if arr.IsNull(i) {
		return 0, false
	}
	if a, ok := arr.(*array.Timestamp); ok {
		return a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit).UnixMicro(), true
	}
	t.Fatalf("iceberg-go's scan: unexpected window column type %s", arr.DataType())
	return 0, false
}

// weirProc is a running weir process. Its output is read while it runs.
type weirProc struct {
	cmd  *exec.Cmd
	out  syncBuffer
	done chan struct{}
	err  error
}

var errKilled = errors.New("killed by SIGKILL")

// startWeir starts the weir binary; the process never outlives the test.
func startWeir(t *testing.T, env []string, bin string, args ...string) *weirProc {
	t.Helper()
	p := &weirProc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// waitStarted waits until the process printed how it starts (fresh, or
// recovering from a checkpoint), or ended, at most 30 s.
func (p *weirProc) waitStarted(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out := p.out.String()
		if strings.Contains(out, "checkpoints in") || strings.Contains(out, "recovering from") {
			return
		}
		select {
		case <-p.done:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatalf("weir did not start within 30 s:\n%s", p.out.String())
}

// wait waits for the process, at most d, and returns how it ended: nil
// for exit 0, errKilled for SIGKILL, or another error.
func (p *weirProc) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("weir %v did not end within %v:\n%s", p.cmd.Args[1:], d, p.out.String())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return errKilled
		}
	}
	return p.err
}

// syncBuffer is a bytes.Buffer safe to read while the process writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
