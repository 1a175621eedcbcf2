package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sources/nexmark"
)

// duckdbQueries are the batch SQL equivalents of the Nexmark queries that
// `weir bench nexmark --vs duckdb` compares, over a table bid(auction,
// bidder, price, channel, url, dateTime, extra) holding the bids of the
// same generated events. Each reduces its result to one row inside
// DuckDB (so no time goes into handing rows over), whose first column is
// the number of result rows: it must equal the rows weir's run emitted.
//
// The SQL follows weir's semantics where they differ from the Nexmark
// suite's SQL (docs/nexmark.md): q7's bids count in their own tumbling
// window only.
var duckdbQueries = map[string]string{
	// q5: bids per auction in 10 s windows sliding by 2 s (each bid falls
	// into the 5 windows starting at its 2 s boundary and the 4 before);
	// per window, the auctions with the most bids, ties kept.
	"q5": `SELECT count(*) AS result_rows, sum(auction) AS sum_auction, sum(num) AS sum_num FROM (
  SELECT auction, num FROM (
    SELECT auction, num, max(num) OVER (PARTITION BY ws) AS top FROM (
      SELECT (epoch_ms(dateTime) // 2000 - k) * 2000 AS ws, auction, count(*) AS num
      FROM bid CROSS JOIN range(5) AS r(k)
      GROUP BY ws, auction))
  WHERE num = top)`,
	// q7: per 10 s tumbling window, the bids with the window's highest
	// price, ties kept.
	"q7": `SELECT count(*) AS result_rows, sum(auction) AS sum_auction, sum(price) AS sum_price FROM (
  SELECT auction, price, bidder, dateTime, extra FROM (
    SELECT *, max(price) OVER (PARTITION BY epoch_ms(dateTime) // 10000) AS top FROM bid)
  WHERE price = top)`,
}

// duckdbResult is what the weir-duckdb runner prints.
type duckdbResult struct {
	Version string      `json:"version"`
	Threads int         `json:"threads"`
	Seconds float64     `json:"seconds"`
	CPUS    float64     `json:"cpu_s"`
	Columns []string    `json:"columns"`
	Rows    [][]*string `json:"rows"`
}

// duckdbBench runs DuckDB's side of `--vs duckdb`: the bids of the
// benchmark's events, written once to a Parquet file and loaded into an
// in-memory table (not timed), and per query the timed SQL.
type duckdbBench struct {
	runner  string // the weir-duckdb binary
	dir     string // scratch folder
	parquet string // the bids, once written
}

func newDuckDBBench(ctx context.Context, out io.Writer, runner string) (*duckdbBench, error) {
	if runner == "" {
		var err error
		if runner, err = findDuckDBRunner(ctx, out); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "weir-bench-duckdb-")
	if err != nil {
		return nil, err
	}
	return &duckdbBench{runner: runner, dir: dir}, nil
}

func (d *duckdbBench) close() { os.RemoveAll(d.dir) }

// findDuckDBRunner finds weir-duckdb on the PATH or, inside a weir source
// tree, builds it from bench/duckdb (a separate module: DuckDB needs
// cgo).
func findDuckDBRunner(ctx context.Context, out io.Writer) (string, error) {
	if p, err := exec.LookPath("weir-duckdb"); err == nil {
		return p, nil
	}
	mod, err := findBenchDuckDBModule()
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	bin := filepath.Join(cache, "weir", "weir-duckdb")
	fmt.Fprintf(out, "building the DuckDB runner from %s (cgo) ...\n", mod)
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./weir-duckdb")
	build.Dir = mod
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if msg, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("--vs duckdb: building the DuckDB runner in %s failed (it needs Go and a C compiler): %w\n%s", mod, err, msg)
	}
	return bin, nil
}

// findBenchDuckDBModule looks for bench/duckdb from the working folder
// up.
func findBenchDuckDBModule() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "bench", "duckdb")
		if _, err := os.Stat(filepath.Join(p, "weir-duckdb", "main.go")); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("--vs duckdb needs the DuckDB runner: put weir-duckdb on the PATH, pass --duckdb PATH, " +
				"or run from a weir source tree (it is built from bench/duckdb: cd bench/duckdb && go build ./weir-duckdb)")
		}
		dir = parent
	}
}

// writeBids writes the bids of the first events events of the default
// generator (the events the benchmark's queries read) to a Parquet file.
func (d *duckdbBench) writeBids(ctx context.Context, events int64) (string, error) {
	if d.parquet != "" {
		return d.parquet, nil
	}
	src, err := nexmark.New(nexmark.Config{Events: events, Splits: 1})
	if err != nil {
		return "", err
	}
	splits, err := src.Splits(ctx)
	if err != nil {
		return "", err
	}
	states := make([]arrowflow.SplitState, len(splits))
	for i, s := range splits {
		states[i] = arrowflow.SplitState{Split: s}
	}
	mem := memory.DefaultAllocator
	rd, err := src.Open(&arrowflow.TaskInfo{Job: "bench-duckdb", Parallelism: 1, Allocator: mem}, states)
	if err != nil {
		return "", err
	}
	defer rd.Close()
	path := filepath.Join(d.dir, "bids.parquet")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fw, err := pqarrow.NewFileWriter(nexmark.BidSchema(), f,
		parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithAllocator(mem)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
	if err != nil {
		return "", err
	}
	for {
		b, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fw.Close()
			return "", err
		}
		if b.IsZero() {
			continue
		}
		rec, err := nexmark.Project(mem, b, nexmark.BidEvent)
		b.Release()
		if err != nil {
			fw.Close()
			return "", err
		}
		err = fw.WriteBuffered(rec)
		rec.Release()
		if err != nil {
			fw.Close()
			return "", err
		}
	}
	if err := fw.Close(); err != nil {
		return "", err
	}
	d.parquet = path
	return path, nil
}

// run runs query name's SQL with threads threads and fills r's DuckDB
// fields; it fails when DuckDB's result rows differ from weir's.
func (d *duckdbBench) run(ctx context.Context, name string, threads int, r *benchResult) error {
	q, ok := duckdbQueries[name]
	if !ok {
		return nil // no SQL equivalent: nothing to compare
	}
	path, err := d.writeBids(ctx, r.Events)
	if err != nil {
		return fmt.Errorf("--vs duckdb: writing the bids: %w", err)
	}
	setup := fmt.Sprintf("CREATE TABLE bid AS SELECT * FROM read_parquet('%s')", strings.ReplaceAll(path, "'", "''"))
	child := exec.CommandContext(ctx, d.runner, "-threads", strconv.Itoa(threads), "-setup", setup, "-sql", q)
	var stdout, stderr bytes.Buffer
	child.Stdout, child.Stderr = &stdout, &stderr
	if err := child.Run(); err != nil {
		return fmt.Errorf("--vs duckdb %s: %s: %w\n%s", name, d.runner, err, stderr.String())
	}
	var res duckdbResult
	if err := json.Unmarshal(lastLine(stdout.Bytes()), &res); err != nil {
		return fmt.Errorf("--vs duckdb %s: bad runner output %q: %w", name, stdout.String(), err)
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) == 0 || res.Rows[0][0] == nil {
		return fmt.Errorf("--vs duckdb %s: want one result row, got %v", name, res.Rows)
	}
	rows, err := strconv.ParseInt(*res.Rows[0][0], 10, 64)
	if err != nil {
		return fmt.Errorf("--vs duckdb %s: result row count %q: %w", name, *res.Rows[0][0], err)
	}
	if rows != r.OutputRows {
		return fmt.Errorf("--vs duckdb %s: DuckDB's SQL gives %d result rows, weir's run emitted %d: the results differ", name, rows, r.OutputRows)
	}
	r.DuckDBVersion = res.Version
	r.DuckDBS = res.Seconds
	r.DuckDBRows = rows
	if res.Seconds > 0 {
		r.VsDuckDB = res.Seconds / r.WallS
	}
	r.DuckDBCPUS = res.CPUS
	if res.CPUS > 0 {
		r.DuckDBEventsPerCoreS = float64(r.Events) / res.CPUS
	}
	return nil
}
