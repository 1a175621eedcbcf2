// Command duckdb benchmarks weir's hash group-by against DuckDB's, side by
// side on the same generated data, and prints rows per second for each.
//
// For each key cardinality K it generates int64 keys uniform in [0, K) and
// int64 values, as Arrow record batches, and times
//
//	SELECT k, sum(v) AS s, count(*) AS c FROM t GROUP BY k
//
// in DuckDB (in memory, SET threads=1, the table loaded beforehand, the
// result reduced inside DuckDB) and the same group-by in weir
// (kernels.NewGroupBy, Update over every batch, Finish) on one goroutine,
// best of -reps runs each. Both engines' number of groups, total of sums
// and total of counts must agree with each other and with the generator;
// the command exits non-zero when they do not.
//
// It lives in its own Go module so that DuckDB, which needs cgo, stays out
// of the weir module's import graph. Run it from this directory:
//
//	go run .
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// config holds the command's flags.
type config struct {
	rows    int64    // rows per key cardinality
	keys    []int64  // key cardinalities to run
	layouts []string // "dense" (keys in [0,K)) and/or "sparse" (the same K keys scattered over int64)
	batch   int      // rows per Arrow record batch
	reps    int      // timed runs per engine; the best counts
	seed    uint64   // generator seed
	json    bool     // print one JSON object per key cardinality
	explain bool     // print DuckDB's plan for the timed query

	mem memory.Allocator // allocator for weir's side; nil means memory.DefaultAllocator
}

// totals is what the cross-check compares: the number of groups, the total
// of the per-group sums and the total of the per-group counts.
type totals struct {
	groups, sum, count int64
}

// timing is one engine's best run.
type timing struct {
	wall time.Duration // wall-clock time of the best run
	cpu  time.Duration // process CPU time during that run; -1 if unknown
}

// rowsPerSec returns the rows per second of t over rows rows.
func (t timing) rowsPerSec(rows int64) float64 { return float64(rows) / t.wall.Seconds() }

// result is the outcome for one key cardinality; it is also the -json
// record.
type result struct {
	Keys          int64   `json:"keys"`
	Layout        string  `json:"layout"`
	Rows          int64   `json:"rows"`
	Batch         int     `json:"batch"`
	Reps          int     `json:"reps"`
	Seed          uint64  `json:"seed"`
	Groups        int64   `json:"groups"`
	SumTotal      int64   `json:"sum_total"`
	CountTotal    int64   `json:"count_total"`
	DuckDBSeconds float64 `json:"duckdb_seconds"`
	WeirSeconds   float64 `json:"weir_seconds"`
	DuckDBRowsSec float64 `json:"duckdb_rows_per_sec"`
	WeirRowsSec   float64 `json:"weir_rows_per_sec"`
	Ratio         float64 `json:"ratio_weir_over_duckdb"`
	DuckDBCPUSec  float64 `json:"duckdb_cpu_seconds"`
	WeirCPUSec    float64 `json:"weir_cpu_seconds"`
	DuckDBVersion string  `json:"duckdb_version"`
	DriverVersion string  `json:"duckdb_go_version"`
	GoMaxProcs    int     `json:"gomaxprocs"`
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if _, err := run(context.Background(), cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// parseFlags parses the command line into a config.
func parseFlags(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("duckdb", flag.ContinueOnError)
	fs.Int64Var(&cfg.rows, "rows", 10_000_000, "rows to aggregate per key cardinality")
	keys := fs.String("keys", "1000,1000000", "comma-separated key cardinalities K (keys uniform in [0,K))")
	layouts := fs.String("layouts", "dense,sparse", "comma-separated key layouts: dense (keys in [0,K), which lets an engine index an array by key) and sparse (the same K keys scattered over the whole int64 range, which needs a real hash table)")
	fs.IntVar(&cfg.batch, "batch", 65536, "rows per Arrow record batch")
	fs.IntVar(&cfg.reps, "reps", 3, "timed runs per engine; the best one counts")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the data generator")
	fs.BoolVar(&cfg.json, "json", false, "print one JSON object per key cardinality")
	fs.BoolVar(&cfg.explain, "explain", false, "print DuckDB's plan for the timed query")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	for _, s := range strings.Split(*keys, ",") {
		k, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || k <= 0 {
			return cfg, fmt.Errorf("-keys: %q is not a positive integer", s)
		}
		cfg.keys = append(cfg.keys, k)
	}
	for _, l := range strings.Split(*layouts, ",") {
		l = strings.TrimSpace(l)
		if l != "dense" && l != "sparse" {
			return cfg, fmt.Errorf("-layouts: %q is neither dense nor sparse", l)
		}
		cfg.layouts = append(cfg.layouts, l)
	}
	switch {
	case cfg.rows <= 0:
		return cfg, fmt.Errorf("-rows must be positive")
	case cfg.batch <= 0:
		return cfg, fmt.Errorf("-batch must be positive")
	case cfg.reps <= 0:
		return cfg, fmt.Errorf("-reps must be positive")
	}
	return cfg, nil
}

// run benchmarks every key cardinality of cfg, writing the report to w,
// and returns the results. It fails when the engines' totals disagree.
func run(ctx context.Context, cfg config, w io.Writer) ([]result, error) {
	mem := cfg.mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	driver := driverVersion()
	var results []result
	i := -1
	for _, k := range cfg.keys {
		for _, layout := range cfg.layouts {
			i++
			data := generate(mem, cfg.seed, k, cfg.rows, cfg.batch, layout == "sparse")
			res, err := runOne(ctx, cfg, mem, data, k, w)
			data.release()
			if err != nil {
				return results, fmt.Errorf("keys=%d layout=%s: %w", k, layout, err)
			}
			res.Layout = layout
			res.DriverVersion = driver
			results = append(results, res)
			if cfg.json {
				if err := json.NewEncoder(w).Encode(res); err != nil {
					return results, err
				}
				continue
			}
			if i == 0 {
				fmt.Fprintf(w, "weir group-by vs DuckDB %s (duckdb-go %s), DuckDB threads=1, weir one goroutine, GOMAXPROCS=%d\n",
					res.DuckDBVersion, driver, res.GoMaxProcs)
				fmt.Fprintf(w, "query: SELECT k, sum(v) AS s, count(*) AS c FROM t GROUP BY k   (K distinct int64 k drawn uniformly, int64 v)\n")
				fmt.Fprintf(w, "layout: dense = k in [0,K); sparse = the same K keys scattered over the int64 range\n")
				fmt.Fprintf(w, "rows=%d batch=%d reps=%d (best counts) seed=%d\n\n", cfg.rows, cfg.batch, cfg.reps, cfg.seed)
				fmt.Fprintf(w, "%9s %6s %10s %9s | %8s %8s %7s | %8s %8s %7s | %11s\n",
					"keys", "layout", "rows", "groups", "duckdb s", "cpu s", "rows/s", "weir s", "cpu s", "rows/s", "weir/duckdb")
			}
			fmt.Fprintf(w, "%9d %6s %10d %9d | %8.3f %8s %7s | %8.3f %8s %7s | %11.2f\n",
				res.Keys, res.Layout, res.Rows, res.Groups,
				res.DuckDBSeconds, cpuString(res.DuckDBCPUSec), human(res.DuckDBRowsSec),
				res.WeirSeconds, cpuString(res.WeirCPUSec), human(res.WeirRowsSec), res.Ratio)
		}
	}
	if !cfg.json && len(results) > 0 {
		fmt.Fprintf(w, "\ncross-check ok: both engines agree on groups, total of sums and total of counts for every K\n")
		fmt.Fprintf(w, "s = wall seconds of the best run; cpu s = process CPU seconds during it (all threads);\n")
		fmt.Fprintf(w, "weir/duckdb = weir rows/s over DuckDB rows/s: above 1 weir is faster, below 1 DuckDB is\n")
	}
	return results, nil
}

// runOne benchmarks both engines on data, whose keys are in [0, keys).
func runOne(ctx context.Context, cfg config, mem memory.Allocator, data *dataset, keys int64, w io.Writer) (result, error) {
	res := result{Keys: keys, Rows: data.rows, Batch: cfg.batch, Reps: cfg.reps, Seed: cfg.seed, GoMaxProcs: runtime.GOMAXPROCS(0)}
	want := totals{sum: data.sum, count: data.rows}

	// DuckDB: load (not timed), then the best of reps group-bys.
	db, err := openDuck(ctx)
	if err != nil {
		return res, err
	}
	defer db.close()
	if res.DuckDBVersion, err = db.version(ctx); err != nil {
		return res, fmt.Errorf("duckdb: version: %w", err)
	}
	if err := db.load(ctx, data); err != nil {
		return res, err
	}
	if cfg.explain {
		plan, err := db.explain(ctx)
		if err != nil {
			return res, fmt.Errorf("duckdb: explain: %w", err)
		}
		fmt.Fprintf(w, "DuckDB plan for keys=%d:\n%s\n", keys, plan)
	}
	var duckGot totals
	duckT, err := best(cfg.reps, func() error {
		var err error
		duckGot, err = db.groupBy(ctx)
		return err
	})
	if err != nil {
		return res, err
	}
	if err := db.close(); err != nil {
		return res, fmt.Errorf("duckdb: close: %w", err)
	}

	// weir: the best of reps fresh group-bys on this goroutine.
	var weirGot totals
	var totErr error
	weirT, err := best(cfg.reps, func() error {
		out, err := weirGroupBy(mem, data)
		if err != nil {
			return err
		}
		// The reduction to totals is timed too, as it is on DuckDB's
		// side (the outer query); it is one pass over the groups.
		weirGot, totErr = weirTotals(out)
		out.Release()
		return nil
	})
	if err != nil {
		return res, err
	}
	if totErr != nil {
		return res, totErr
	}

	if err := crossCheck(duckGot, weirGot, want, keys); err != nil {
		return res, err
	}
	res.Groups, res.SumTotal, res.CountTotal = duckGot.groups, duckGot.sum, duckGot.count
	res.DuckDBSeconds, res.WeirSeconds = duckT.wall.Seconds(), weirT.wall.Seconds()
	res.DuckDBRowsSec, res.WeirRowsSec = duckT.rowsPerSec(data.rows), weirT.rowsPerSec(data.rows)
	res.Ratio = res.WeirRowsSec / res.DuckDBRowsSec
	res.DuckDBCPUSec, res.WeirCPUSec = duckT.cpu.Seconds(), weirT.cpu.Seconds()
	return res, nil
}

// best runs fn reps times, each after a garbage collection, and returns
// the fastest run's wall-clock and process CPU time.
func best(reps int, fn func() error) (timing, error) {
	var b timing
	for i := range reps {
		runtime.GC()
		cpu0, t0 := processCPU(), time.Now()
		if err := fn(); err != nil {
			return b, err
		}
		wall, cpu1 := time.Since(t0), processCPU()
		if i == 0 || wall < b.wall {
			b.wall, b.cpu = wall, cpu1-cpu0
			if cpu0 < 0 || cpu1 < 0 {
				b.cpu = -1
			}
		}
	}
	return b, nil
}

// crossCheck reports an error unless DuckDB's and weir's totals agree with
// each other and with the generator's (want.sum, want.count), and the
// number of groups is possible for keys distinct keys.
func crossCheck(duck, weir, want totals, keys int64) error {
	if duck != weir {
		return fmt.Errorf("cross-check failed: duckdb %+v, weir %+v", duck, weir)
	}
	if duck.sum != want.sum || duck.count != want.count {
		return fmt.Errorf("cross-check failed: engines gave sum %d count %d, generator made sum %d count %d",
			duck.sum, duck.count, want.sum, want.count)
	}
	if duck.groups <= 0 || duck.groups > min(keys, want.count) {
		return fmt.Errorf("cross-check failed: %d groups from %d rows with %d possible keys", duck.groups, want.count, keys)
	}
	return nil
}

// driverVersion returns the version of the DuckDB Go driver module this
// binary was built with.
func driverVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/duckdb/duckdb-go/v2" {
				return m.Version
			}
		}
	}
	return "unknown"
}

// human formats a rate with a k, M or G suffix.
func human(x float64) string {
	switch {
	case x >= 1e9:
		return fmt.Sprintf("%.2fG", x/1e9)
	case x >= 1e6:
		return fmt.Sprintf("%.1fM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// cpuString formats CPU seconds, or "-" when they are unknown.
func cpuString(cpu float64) string {
	if cpu < 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", cpu)
}
