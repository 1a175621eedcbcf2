package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/spf13/cobra"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/bench/chart"
	"github.com/weirflow/weir/bench/queries"
	"github.com/weirflow/weir/sinks/blackhole"
	"github.com/weirflow/weir/sources/nexmark"
	"github.com/weirflow/weir/sql"
)

// benchResult is one query's run, as `weir bench nexmark --json` prints
// it.
type benchResult struct {
	Query          string  `json:"query"`
	API            string  `json:"api"` // "go" (bench/queries) or "sql" (bench/queries/sql through the SQL planner)
	Events         int64   `json:"events"`
	Parallelism    int     `json:"parallelism"`
	WallS          float64 `json:"wall_s"`
	CPUS           float64 `json:"cpu_s"`
	EventsPerS     float64 `json:"events_per_s"`
	EventsPerCoreS float64 `json:"events_per_core_s"`
	PeakRSSBytes   int64   `json:"peak_rss_bytes"`
	Epochs         int64   `json:"epochs"`
	OutputRows     int64   `json:"output_rows"`

	// Changelog counts the sink's rows by kind when the query's output
	// updates (some row is not an insert), and for the SQL versions of
	// foldingQueries.
	Changelog *changelogCounts `json:"changelog,omitempty"`
	// PerRowOutputRows, for the group aggregations over the bids (q15,
	// q16, q17), is what an aggregate emitting one change per input row
	// would have emitted: +I for the bid that opens a group, -U and +U
	// for every other bid, i.e. 2 * bids - groups (groups = +I - -D at
	// the sink). OutputRows / PerRowOutputRows is what folding each
	// epoch's changes into one per group emits of it.
	PerRowOutputRows int64 `json:"per_row_output_rows,omitempty"`

	// With --vs duckdb, for the queries that have a batch SQL equivalent
	// (q5, q7): DuckDB's version, its query's wall and CPU seconds on the
	// same events' bids, events per CPU second, its result rows (equal to
	// OutputRows, or the run fails), and VsDuckDB = DuckDB's seconds /
	// weir's wall seconds (above 1: weir is faster).
	DuckDBVersion        string  `json:"duckdb_version,omitempty"`
	DuckDBS              float64 `json:"duckdb_s,omitempty"`
	DuckDBCPUS           float64 `json:"duckdb_cpu_s,omitempty"`
	DuckDBEventsPerCoreS float64 `json:"duckdb_events_per_core_s,omitempty"`
	DuckDBRows           int64   `json:"duckdb_rows,omitempty"`
	VsDuckDB             float64 `json:"vs_duckdb,omitempty"`
}

// flinkPerCore are the Nexmark suite's published per-core throughputs of
// Flink (2.0 runner), in events per second per core, as a reference.
var flinkPerCore = map[string]float64{
	"q0": 379_000, "q1": 395_000, "q2": 414_000, "q5": 75_000, "q7": 23_000, "q8": 162_000,
	"q11": 46_000, "q12": 194_000, "q14": 259_000, "q21": 147_000, "q22": 212_000,
	// The updating queries, which weir runs in SQL only.
	"q3": 219_000, "q4": 28_000, "q9": 14_000, "q15": 168_000, "q16": 45_000, "q17": 161_000,
	"q18": 65_000, "q19": 43_000, "q20": 18_000,
}

// foldingQueries are the group aggregations over the bids alone, whose
// per-row equivalent output (benchResult.PerRowOutputRows) follows from
// the bids and the groups.
var foldingQueries = map[string]bool{"q15": true, "q16": true, "q17": true}

type benchOptions struct {
	queries     []string
	events      int64
	parallelism int
	interval    time.Duration
	jsonOut     bool
	report      string
	vs          string
	duckdb      string
	api         string // go, sql or both
	cpuProfile  string // nexmark-run only
}

func newBenchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run benchmarks: the Nexmark queries",
	}
	o := benchOptions{}
	nx := &cobra.Command{
		Use:   "nexmark",
		Short: "Run Nexmark queries on generated events and report throughput per core",
		Long: `Runs each Nexmark query (bench/queries) on --events generated events
(sources/nexmark), with durable exactly-once checkpoints every
--checkpoint-interval into a blackhole sink that pre-commits and commits
each epoch. Each query runs in a child process of its own, so its CPU
time and peak memory are its own. Printed per query: events, wall
seconds, process CPU seconds, events/s, events/s per core (events / CPU
seconds) and peak RSS, next to Flink's published per-core figure.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchNexmark(cmd, o) },
	}
	f := nx.Flags()
	f.StringSliceVar(&o.queries, "query", []string{"q0"}, "queries to run, comma-separated ("+strings.Join(queries.SQLNames(), ",")+", or all; "+
		strings.Join(queries.SQLOnly(), ",")+" have a SQL version only)")
	f.Int64Var(&o.events, "events", 10_000_000, "events per query")
	f.IntVar(&o.parallelism, "parallelism", runtime.NumCPU(), "subtasks per operator")
	f.DurationVar(&o.interval, "checkpoint-interval", 10*time.Second, "how often an epoch closes, its checkpoint is written and its output commits")
	f.BoolVar(&o.jsonOut, "json", false, "print one JSON object per query")
	f.StringVar(&o.report, "report", "", "also write a markdown table and a PNG chart of the results into this folder")
	f.StringVar(&o.api, "api", "go", "which version of the queries: go (built with the Go API), sql (Flink SQL through weir's planner) or both (each query twice, with the SQL/Go per-core ratio; the SQL-only queries once)")
	f.StringVar(&o.vs, "vs", "", "also run the batch SQL equivalent of q5 and q7 in DuckDB on the same events (duckdb)")
	f.StringVar(&o.duckdb, "duckdb", "", "the weir-duckdb runner for --vs duckdb (default: on the PATH, or built from bench/duckdb)")
	run := &cobra.Command{
		Use:    "nexmark-run",
		Hidden: true, // the child process of `weir bench nexmark`
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(o.queries) != 1 {
				return errors.New("nexmark-run: one --query")
			}
			r, err := runNexmarkQuery(cmd.Context(), o.queries[0], o)
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(r)
		},
	}
	rf := run.Flags()
	rf.StringSliceVar(&o.queries, "query", nil, "query")
	rf.Int64Var(&o.events, "events", 10_000_000, "events")
	rf.IntVar(&o.parallelism, "parallelism", runtime.NumCPU(), "parallelism")
	rf.DurationVar(&o.interval, "checkpoint-interval", 10*time.Second, "checkpoint interval")
	rf.StringVar(&o.api, "api", "go", "go or sql")
	rf.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	cmd.AddCommand(nx, run)
	return cmd
}

func runBenchNexmark(cmd *cobra.Command, o benchOptions) error {
	apis := map[string][]string{"go": {"go"}, "sql": {"sql"}, "both": {"go", "sql"}}[o.api]
	if apis == nil {
		return fmt.Errorf("bench nexmark: --api %q: want go, sql or both", o.api)
	}
	names := o.queries
	if len(names) == 1 && names[0] == "all" {
		names = queries.Names()
		if o.api != "go" {
			names = queries.SQLNames()
		}
	}
	for _, n := range names {
		_, hasGo := queries.Lookup(n)
		_, hasSQL := queries.SQL(n, 1, 1, 0)
		switch {
		case !hasGo && !hasSQL:
			return fmt.Errorf("bench nexmark: no query %q (have %s)", n, strings.Join(queries.SQLNames(), ", "))
		case !hasGo && o.api == "go":
			return fmt.Errorf("bench nexmark: %s has no Go-API version; use --api sql", n)
		case !hasSQL && o.api != "go":
			return fmt.Errorf("bench nexmark: %s has no SQL version yet (--api %s)", n, o.api)
		}
	}
	if o.events <= 0 || o.parallelism < 1 {
		return errors.New("bench nexmark: --events and --parallelism must be positive")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	var duck *duckdbBench
	switch o.vs {
	case "":
	case "duckdb":
		if duck, err = newDuckDBBench(cmd.Context(), cmd.ErrOrStderr(), o.duckdb); err != nil {
			return err
		}
		defer duck.close()
	default:
		return fmt.Errorf("bench nexmark: --vs %q: the one engine to compare with is duckdb", o.vs)
	}
	var results []benchResult
	if !o.jsonOut {
		fmt.Fprintf(out, "%-8s %12s %8s %8s %12s %16s %10s %14s\n", "query", "events", "wall s", "cpu s", "events/s", "events/s/core", "peak RSS", "Flink/core")
	}
	type run struct{ name, api string }
	var runs []run
	for _, name := range names {
		for _, api := range apis {
			if _, hasGo := queries.Lookup(name); api == "go" && !hasGo {
				continue // --api both: the SQL-only queries run once
			}
			runs = append(runs, run{name, api})
		}
	}
	for _, rn := range runs {
		name := rn.name
		child := exec.CommandContext(cmd.Context(), exe, "bench", "nexmark-run", "--query", name, "--api", rn.api,
			"--events", fmt.Sprint(o.events), "--parallelism", fmt.Sprint(o.parallelism), "--checkpoint-interval", o.interval.String())
		child.Env = append(os.Environ(), "WEIR_RUN_MAIN=1") // test binaries run main in the child
		var stdout, stderr bytes.Buffer
		child.Stdout, child.Stderr = &stdout, &stderr
		if err := child.Run(); err != nil {
			return fmt.Errorf("bench nexmark %s: %w\n%s", name, err, stderr.String())
		}
		var r benchResult
		if err := json.Unmarshal(lastLine(stdout.Bytes()), &r); err != nil {
			return fmt.Errorf("bench nexmark %s: bad result %q: %w", name, stdout.String(), err)
		}
		if ru, ok := child.ProcessState.SysUsage().(*syscall.Rusage); ok && r.PeakRSSBytes == 0 {
			// Only without the child's own figure: Linux carries a
			// process's maxrss over fork and exec, so a child of a large
			// parent reports the parent's.
			r.PeakRSSBytes = ru.Maxrss * 1024 // kilobytes on Linux
		}
		if duck != nil && rn.api == "go" {
			if err := duck.run(cmd.Context(), name, o.parallelism, &r); err != nil {
				return err
			}
		}
		results = append(results, r)
		if o.jsonOut {
			if err := json.NewEncoder(out).Encode(r); err != nil {
				return err
			}
			continue
		}
		label := r.Query
		if o.api == "both" {
			label += "/" + r.API
		}
		fmt.Fprintf(out, "%-8s %12d %8.2f %8.2f %12.0f %16.0f %9.0fM %14s\n", label, r.Events, r.WallS, r.CPUS,
			r.EventsPerS, r.EventsPerCoreS, float64(r.PeakRSSBytes)/(1<<20), flinkFigure(r.Query))
		if prev := goResult(results, r); r.API == "sql" && prev != nil && prev.EventsPerCoreS > 0 {
			fmt.Fprintf(out, "      SQL/Go events per core: %.2f\n", r.EventsPerCoreS/prev.EventsPerCoreS)
		}
		if c := r.Changelog; c != nil {
			fmt.Fprintf(out, "      changelog: +I %d, -U %d, +U %d, -D %d, %d epochs", c.Inserts, c.UpdateBefores, c.UpdateAfters, c.Deletes, r.Epochs)
			if r.PerRowOutputRows > 0 {
				fmt.Fprintf(out, "; one change per bid would emit %d rows: folding emits %.2g%% of them (1 in %.0f)", r.PerRowOutputRows,
					100*float64(r.OutputRows)/float64(r.PerRowOutputRows), float64(r.PerRowOutputRows)/float64(max(r.OutputRows, 1)))
			}
			fmt.Fprintln(out)
		}
		if r.DuckDBS > 0 {
			fmt.Fprintf(out, "      DuckDB %s, %d threads, same events' bids in memory: %.2f s, %.2f CPU s, %.0f events/s/core; weir/DuckDB time ratio %.2f (%s)\n",
				r.DuckDBVersion, o.parallelism, r.DuckDBS, r.DuckDBCPUS, r.DuckDBEventsPerCoreS, 1/r.VsDuckDB, fasterSlower(r.VsDuckDB))
		}
	}
	if o.report != "" {
		return writeBenchReport(o.report, o, results)
	}
	return nil
}

// goResult finds the Go API run of r's query among results.
func goResult(results []benchResult, r benchResult) *benchResult {
	for i := range results {
		if results[i].Query == r.Query && results[i].API == "go" {
			return &results[i]
		}
	}
	return nil
}

// fasterSlower says how weir compares given DuckDB's time / weir's time.
func fasterSlower(vs float64) string {
	if vs >= 1 {
		return fmt.Sprintf("weir %.1f× faster", vs)
	}
	return fmt.Sprintf("weir %.1f× slower", 1/vs)
}

func flinkFigure(q string) string {
	if v, ok := flinkPerCore[q]; ok {
		return fmt.Sprintf("%.0fK", v/1000)
	}
	return "-"
}

func lastLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return lines[len(lines)-1]
}

// runNexmarkQuery runs one query in this process and measures it.
func runNexmarkQuery(ctx context.Context, name string, o benchOptions) (benchResult, error) {
	src, err := nexmark.New(nexmark.Config{Events: o.events, Splits: 4 * o.parallelism})
	if err != nil {
		return benchResult{}, err
	}
	sink := &kindCounter{Sink: blackhole.New()}
	var g *arrowflow.Graph
	if o.api == "sql" {
		script, ok := queries.SQL(name, o.events, 4*o.parallelism, 0)
		if !ok {
			return benchResult{}, fmt.Errorf("%s has no SQL version", name)
		}
		job, err := sql.Compile(ctx, script, sql.Options{Parallelism: o.parallelism, ForceParallelism: true, JobName: "nexmark-" + name,
			Sinks: map[string]arrowflow.Sink{queries.SQLSink(name): sink}})
		if err != nil {
			return benchResult{}, err
		}
		g = job.Graph
	} else if g, err = queries.Build(name, queries.Config{Source: src, Parallelism: o.parallelism, Sink: sink}); err != nil {
		return benchResult{}, err
	}
	dir, err := os.MkdirTemp("", "weir-bench-")
	if err != nil {
		return benchResult{}, err
	}
	defer os.RemoveAll(dir)
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return benchResult{}, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return benchResult{}, err
		}
		defer pprof.StopCPUProfile()
	}
	cpu0 := processCPU()
	start := time.Now()
	job, err := runWithCheckpoints(ctx, io.Discard, g, checkpointFlags{dir: filepath.Join(dir, "cp"), interval: o.interval, retain: 2},
		arrowflow.Options{Allocator: memory.DefaultAllocator})
	if err != nil {
		return benchResult{}, err
	}
	wall := time.Since(start).Seconds()
	cpu := processCPU() - cpu0
	api := o.api
	if api == "" {
		api = "go"
	}
	r := benchResult{Query: name, API: api, Events: o.events, Parallelism: o.parallelism, WallS: wall, CPUS: cpu,
		EventsPerS: float64(o.events) / wall, Epochs: job.EpochsCompleted(), OutputRows: sink.Rows()}
	if cpu > 0 {
		r.EventsPerCoreS = float64(o.events) / cpu
	}
	if c := sink.counts(); c.UpdateBefores+c.UpdateAfters+c.Deletes > 0 || foldingQueries[name] && api == "sql" {
		r.Changelog = &c
		if foldingQueries[name] && api == "sql" {
			r.PerRowOutputRows = 2*nexmark.CountOf(nexmark.BidEvent, o.events) - (c.Inserts - c.Deletes)
		}
	}
	r.PeakRSSBytes = peakRSS()
	return r, nil
}

// changelogCounts are a sink's rows by kind.
type changelogCounts struct {
	Inserts       int64 `json:"inserts"`
	UpdateBefores int64 `json:"update_befores"`
	UpdateAfters  int64 `json:"update_afters"`
	Deletes       int64 `json:"deletes"`
}

// kindCounter is a blackhole sink that also counts the rows it is given
// by kind (arrowflow.RowKind).
type kindCounter struct {
	*blackhole.Sink
	n [4]atomic.Int64 // by RowKind
}

func (s *kindCounter) Open(info *arrowflow.TaskInfo) (arrowflow.SinkWriter, error) {
	w, err := s.Sink.Open(info)
	if err != nil {
		return nil, err
	}
	return kindWriter{w, s}, nil
}

func (s *kindCounter) counts() changelogCounts {
	return changelogCounts{Inserts: s.n[arrowflow.Insert].Load(), UpdateBefores: s.n[arrowflow.UpdateBefore].Load(),
		UpdateAfters: s.n[arrowflow.UpdateAfter].Load(), Deletes: s.n[arrowflow.Delete].Load()}
}

type kindWriter struct {
	arrowflow.SinkWriter
	s *kindCounter
}

func (w kindWriter) Write(ctx context.Context, b arrowflow.Batch) error {
	if b.Kinds == nil {
		w.s.n[arrowflow.Insert].Add(int64(b.NumRows()))
	} else {
		var n [4]int64
		for k := range b.NumRows() {
			n[b.Kind(k)]++
		}
		for i, c := range n {
			if c > 0 {
				w.s.n[i].Add(c)
			}
		}
	}
	return w.SinkWriter.Write(ctx, b)
}

// peakRSS is this process's peak resident set size (VmHWM, which exec
// resets), or 0 where /proc does not say.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" && f[2] == "kB" {
			var kb int64
			fmt.Sscan(f[1], &kb)
			return kb * 1024
		}
	}
	return 0
}

// processCPU is this process's user and system CPU time in seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// writeBenchReport writes results as a markdown table into dir/nexmark.md.
func writeBenchReport(dir string, o benchOptions, results []benchResult) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Nexmark on weir\n\n%d events per query, parallelism %d, durable checkpoints every %s, blackhole sink; %d CPUs (%s/%s).\n\n",
		o.events, o.parallelism, o.interval, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	b.WriteString("| query | wall s | CPU s | events/s | events/s per core | Flink 2.0 per core | ratio | peak RSS MiB | output rows |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		ratio := "-"
		if f, ok := flinkPerCore[r.Query]; ok {
			ratio = fmt.Sprintf("%.1f×", r.EventsPerCoreS/f)
		}
		q := r.Query
		if r.API == "sql" {
			q += " (SQL)"
		}
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.0f | %.0f | %s | %s | %.0f | %d |\n", q, r.WallS, r.CPUS, r.EventsPerS,
			r.EventsPerCoreS, flinkFigure(r.Query), ratio, float64(r.PeakRSSBytes)/(1<<20), r.OutputRows)
	}
	var ratios []string
	for _, r := range results {
		if g := goResult(results, r); r.API == "sql" && g != nil && g.EventsPerCoreS > 0 {
			ratios = append(ratios, fmt.Sprintf("| %s | %.0f | %.0f | %.2f |", r.Query, g.EventsPerCoreS, r.EventsPerCoreS, r.EventsPerCoreS/g.EventsPerCoreS))
		}
	}
	if len(ratios) > 0 {
		b.WriteString("\nThe SQL versions (bench/queries/sql, through weir's SQL planner) next to the Go API versions, same run:\n\n| query | Go events/s per core | SQL events/s per core | SQL / Go |\n|---|---|---|---|\n")
		b.WriteString(strings.Join(ratios, "\n") + "\n")
	}
	var changes []string
	for _, r := range results {
		if c := r.Changelog; c != nil {
			perRow, share := "-", "-"
			if r.PerRowOutputRows > 0 {
				perRow = fmt.Sprint(r.PerRowOutputRows)
				share = fmt.Sprintf("%.2g%%", 100*float64(r.OutputRows)/float64(r.PerRowOutputRows))
			}
			changes = append(changes, fmt.Sprintf("| %s | %d | %d | %d | %d | %d | %s | %s |", r.Query, r.Epochs, c.Inserts, c.UpdateBefores, c.UpdateAfters, c.Deletes, perRow, share))
		}
	}
	if len(changes) > 0 {
		b.WriteString("\nThe updating queries' output changelog at the sink, by kind; for the group aggregations over the bids, the rows one change per bid would emit (2 × bids − groups) and the share of them that folding each epoch's changes emits:\n\n" +
			"| query | epochs | +I | -U | +U | -D | one change per bid | emitted / per bid |\n|---|---|---|---|---|---|---|---|\n")
		b.WriteString(strings.Join(changes, "\n") + "\n")
	}
	var duck []benchResult
	for _, r := range results {
		if r.DuckDBS > 0 {
			duck = append(duck, r)
		}
	}
	if len(duck) > 0 {
		fmt.Fprintf(&b, "\nDuckDB runs the batch SQL equivalent with %d threads over the bids of the same events, loaded into an in-memory table beforehand (not timed); weir's time includes generating every event and its checkpoints. Both return the same number of rows.\n\n", o.parallelism)
		b.WriteString("| query | DuckDB | DuckDB s | DuckDB CPU s | DuckDB events/s per core | weir wall s | weir events/s per core | DuckDB s / weir s |\n|---|---|---|---|---|---|---|---|\n")
		for _, r := range duck {
			fmt.Fprintf(&b, "| %s | %s | %.2f | %.2f | %.0f | %.2f | %.0f | %.2f |\n", r.Query, r.DuckDBVersion, r.DuckDBS, r.DuckDBCPUS,
				r.DuckDBEventsPerCoreS, r.WallS, r.EventsPerCoreS, r.VsDuckDB)
		}
	}
	b.WriteString("\n![events/s per core per query, weir next to Flink 2.0's published figures](nexmark.png)\n")
	if err := os.WriteFile(filepath.Join(dir, "nexmark.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return writeBenchChart(filepath.Join(dir, "nexmark.png"), o, results)
}

// writeBenchChart draws events/s per core per query, weir's next to
// Flink's published figures, as a PNG bar chart.
func writeBenchChart(path string, o benchOptions, results []benchResult) error {
	c := chart.Chart{
		Title:  fmt.Sprintf("Nexmark, events/s per core (%d events per query, parallelism %d, checkpoints every %s)", o.events, o.parallelism, o.interval),
		Unit:   "events/s per core (events / process CPU seconds)",
		Series: []string{"weir (this run)", "Flink 2.0 (nexmark suite, published)"},
	}
	// One group per query: weir's Go API and SQL versions (those run),
	// then Flink's published figure.
	apis := []string{}
	for _, api := range []string{"go", "sql"} {
		for _, r := range results {
			if r.API == api || r.API == "" && api == "go" {
				apis = append(apis, api)
				break
			}
		}
	}
	if len(apis) == 2 {
		c.Series = []string{"weir, Go API (this run)", "weir, SQL (this run)", "Flink 2.0 (nexmark suite, published)"}
	}
	var order []string
	byQuery := map[string]map[string]float64{}
	for _, r := range results {
		if byQuery[r.Query] == nil {
			byQuery[r.Query] = map[string]float64{}
			order = append(order, r.Query)
		}
		api := r.API
		if api == "" {
			api = "go"
		}
		byQuery[r.Query][api] = r.EventsPerCoreS
	}
	for _, q := range order {
		var vals []float64
		for _, api := range apis {
			v, ok := byQuery[q][api]
			if !ok {
				v = math.NaN()
			}
			vals = append(vals, v)
		}
		flink := math.NaN()
		if f, ok := flinkPerCore[q]; ok {
			flink = f
		}
		c.Groups = append(c.Groups, chart.Group{Label: q, Values: append(vals, flink)})
	}
	var buf bytes.Buffer
	if err := chart.Render(&buf, c); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
