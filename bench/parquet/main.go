// Command parquet compares the two Go Parquet libraries weir could write
// its Parquet sink with, arrow-go's pqarrow and parquet-go
// (github.com/parquet-go/parquet-go), on the batches weir moves.
//
// It generates -rows rows (default 1,000,000) as Arrow record batches of
// -batch rows (default 8192) with an int64 key, a float64 price (1% null),
// a string category (10 distinct values) and a millisecond timestamp, and
// writes them to a file with zstd compression and row groups of -rowgroup
// rows with each of:
//
//   - pqarrow, dictionary encoding on the string column only,
//     FileWriter.WriteBuffered per batch: what the sink does;
//   - pqarrow, dictionary on every column (the library's default; it falls
//     back to plain encoding once a column's dictionary passes 1 MiB);
//   - parquet-go, schema built at run time, each Arrow column converted to
//     parquet.Values and written with ColumnWriter.WriteRowValues: what a
//     sink on parquet-go would do, since its schema is known only at run
//     time;
//   - parquet-go, GenericWriter over a Go struct (the batches converted to
//     structs first): parquet-go's fastest path, which needs the schema at
//     compile time, shown as its upper bound;
//   - weir's Parquet sink (sinks/parquet, on pqarrow) as one subtask
//     committing one epoch, unpartitioned and partitioned by category: the
//     cost of the sink's protocol (staging, syncing, renaming) and of
//     splitting batches by partition, on top of pqarrow.
//
// Each is timed -reps times (default 3, the best counts), and the file is
// read back with the same library (pqarrow and parquet-go's column path
// into Arrow records, the struct path into structs). Every file is also
// read by both pqarrow and parquet-go's column reader, and all must give
// back exactly the generated rows (a fingerprint of sums); otherwise the
// command exits non-zero.
//
// It lives in its own Go module so that weir does not depend on the library
// it did not choose. Run it from this directory:
//
//	go run .
//
// The module's tests also read tables written by the sink with
// independent readers: parquet-go (go test .) and DuckDB, which needs cgo
// (go test -tags duckdb .).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// config holds the command's flags.
type config struct {
	rows     int64
	batch    int
	rowGroup int64
	reps     int
	seed     uint64
	dir      string           // where the files go; a temporary folder when empty
	mem      memory.Allocator // nil means memory.DefaultAllocator
}

// variant is one library and configuration.
type variant struct {
	name  string
	write func(d *dataset, path string, cfg config, mem memory.Allocator) error
	read  func(path string, mem memory.Allocator) (fingerprint, error)
	table bool // writes a table folder through weir's sink, not one file
}

var variants = []variant{
	{"pqarrow, dict category", func(d *dataset, p string, c config, mem memory.Allocator) error {
		return writePqarrow(d, p, c.rowGroup, false, mem)
	}, readPqarrow, false},
	{"pqarrow, dict all", func(d *dataset, p string, c config, mem memory.Allocator) error {
		return writePqarrow(d, p, c.rowGroup, true, mem)
	}, readPqarrow, false},
	{"parquet-go, columns", func(d *dataset, p string, c config, _ memory.Allocator) error {
		return writePqgoColumns(d, p, c.rowGroup)
	}, readPqgoColumns, false},
	{"parquet-go, struct", func(d *dataset, p string, c config, _ memory.Allocator) error {
		return writePqgoStruct(d, p, c.rowGroup)
	}, func(p string, _ memory.Allocator) (fingerprint, error) { return readPqgoStruct(p) }, false},
	{"weir sink", func(d *dataset, p string, c config, mem memory.Allocator) error {
		return writeSink(d, p, c.rowGroup, nil, mem)
	}, readSink, true},
	{"weir sink, by category", func(d *dataset, p string, c config, mem memory.Allocator) error {
		return writeSink(d, p, c.rowGroup, []string{"category"}, mem)
	}, readSink, true},
}

// result is one variant's measurements.
type result struct {
	name                  string
	write, read           time.Duration // best runs
	writeAlloc, readAlloc uint64        // Go heap bytes allocated by the best runs
	fileBytes             int64
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if _, err := run(cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("parquet", flag.ContinueOnError)
	fs.Int64Var(&cfg.rows, "rows", 1_000_000, "rows to write")
	fs.IntVar(&cfg.batch, "batch", 8192, "rows per Arrow record batch")
	fs.Int64Var(&cfg.rowGroup, "rowgroup", 131072, "rows per Parquet row group")
	fs.IntVar(&cfg.reps, "reps", 3, "timed runs per variant; the best counts")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the data generator")
	fs.StringVar(&cfg.dir, "dir", "", "folder for the files (default: a temporary folder, removed afterwards)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if cfg.rows <= 0 || cfg.batch <= 0 || cfg.rowGroup <= 0 || cfg.reps <= 0 {
		return cfg, fmt.Errorf("-rows, -batch, -rowgroup and -reps must be positive")
	}
	return cfg, nil
}

// timed runs fn after a garbage collection and returns its wall time and
// the bytes it allocated on the Go heap.
func timed(fn func() error) (time.Duration, uint64, error) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	err := fn()
	d := time.Since(start)
	runtime.ReadMemStats(&after)
	return d, after.TotalAlloc - before.TotalAlloc, err
}

// run measures every variant and writes the report to w. It fails when a
// file does not read back as the generated rows.
func run(cfg config, w io.Writer) ([]result, error) {
	mem := cfg.mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	dir := cfg.dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "weir-parquet-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	d := generate(mem, cfg.seed, cfg.rows, cfg.batch)
	defer d.release()

	var results []result
	for i, v := range variants {
		path := filepath.Join(dir, fmt.Sprintf("v%d.parquet", i))
		if v.table {
			path = filepath.Join(dir, fmt.Sprintf("table%d", i))
		}
		res := result{name: v.name}
		for rep := 0; rep < cfg.reps; rep++ {
			if err := os.RemoveAll(path); err != nil { // a table keeps its epochs
				return results, err
			}
			wt, wa, err := timed(func() error { return v.write(d, path, cfg, mem) })
			if err != nil {
				return results, fmt.Errorf("%s: write: %w", v.name, err)
			}
			var got fingerprint
			rt, ra, err := timed(func() (err error) { got, err = v.read(path, mem); return err })
			if err != nil {
				return results, fmt.Errorf("%s: read: %w", v.name, err)
			}
			if got != d.want {
				return results, fmt.Errorf("%s: own reader got %+v, want %+v", v.name, got, d.want)
			}
			if rep == 0 || wt < res.write {
				res.write, res.writeAlloc = wt, wa
			}
			if rep == 0 || rt < res.read {
				res.read, res.readAlloc = rt, ra
			}
		}
		if v.table {
			n, err := tableBytes(path)
			if err != nil {
				return results, err
			}
			res.fileBytes = n
			results = append(results, res)
			continue // its files are checked by TestSinkTableReadByParquetGo
		}
		st, err := os.Stat(path)
		if err != nil {
			return results, err
		}
		res.fileBytes = st.Size()
		// Cross-check: both libraries must read every file back exactly.
		for _, r := range []struct {
			name string
			read func(string, memory.Allocator) (fingerprint, error)
		}{{"pqarrow", readPqarrow}, {"parquet-go", readPqgoColumns}} {
			got, err := r.read(path, mem)
			if err != nil {
				return results, fmt.Errorf("%s: read by %s: %w", v.name, r.name, err)
			}
			if got != d.want {
				return results, fmt.Errorf("%s: read by %s: got %+v, want %+v", v.name, r.name, got, d.want)
			}
		}
		results = append(results, res)
	}

	fmt.Fprintf(w, "Parquet write/read of %d rows (int64 key, float64 price 1%% null, string category of 10, timestamp ms)\n", cfg.rows)
	fmt.Fprintf(w, "Arrow batches of %d rows (%.1f MB of Arrow buffers), zstd, row groups of %d rows, best of %d, GOMAXPROCS=%d, %s\n\n",
		cfg.batch, float64(d.bytes)/1e6, cfg.rowGroup, cfg.reps, runtime.GOMAXPROCS(0), runtime.Version())
	fmt.Fprintf(w, "%-24s %8s %10s %9s | %9s | %8s %10s %9s\n",
		"library", "write s", "rows/s", "alloc MB", "file MB", "read s", "rows/s", "alloc MB")
	for _, r := range results {
		fmt.Fprintf(w, "%-24s %8.3f %10s %9.1f | %9.2f | %8.3f %10s %9.1f\n",
			r.name, r.write.Seconds(), human(float64(cfg.rows)/r.write.Seconds()), float64(r.writeAlloc)/1e6,
			float64(r.fileBytes)/1e6, r.read.Seconds(), human(float64(cfg.rows)/r.read.Seconds()), float64(r.readAlloc)/1e6)
	}
	fmt.Fprintf(w, "\ncross-check ok: every file reads back as the generated rows with pqarrow and with parquet-go\n")
	fmt.Fprintf(w, "weir sink: one subtask, one epoch, through the sink's protocol (files and folders synced); read with parquet.ReadCommitted\n")
	base := results[0]
	for _, r := range results[2:] {
		fmt.Fprintf(w, "%s over %s: write speed x%.2f, read speed x%.2f, file size x%.2f\n", r.name, base.name,
			base.write.Seconds()/r.write.Seconds(), base.read.Seconds()/r.read.Seconds(), float64(r.fileBytes)/float64(base.fileBytes))
	}
	return results, nil
}

// human formats a rate with a k/M suffix.
func human(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}
