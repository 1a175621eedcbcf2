package main

import (
	"bufio"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/weirflow/weir/bench/queries"
	"github.com/weirflow/weir/sources/nexmark"
)

// `weir bench nexmark --json` runs each query in a child process and
// prints one JSON object per query with the documented fields; q0 passes
// every bid through (46 in 50 events).
func TestBenchNexmarkJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	report := t.TempDir()
	out, err := runCLI(t, "bench", "nexmark", "--query", "q0,q2", "--events", "50000", "--parallelism", "2",
		"--checkpoint-interval", "100ms", "--json", "--report", report)
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	var got []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q", sc.Text())
		}
		got = append(got, m)
	}
	if len(got) != 2 || got[0]["query"] != "q0" || got[1]["query"] != "q2" {
		t.Fatalf("results: %v", got)
	}
	for _, r := range got {
		for _, k := range []string{"events", "wall_s", "cpu_s", "events_per_s", "events_per_core_s", "peak_rss_bytes"} {
			if v, ok := r[k].(float64); !ok || v <= 0 {
				t.Fatalf("%s: field %s = %v, want a positive number", r["query"], k, r[k])
			}
		}
	}
	if rows := got[0]["output_rows"].(float64); rows != 50000*46/50 {
		t.Fatalf("q0 passed %v rows, want every bid (46000)", rows)
	}
	if epochs := got[0]["epochs"].(float64); epochs < 1 {
		t.Fatalf("q0 committed %v epochs", epochs)
	}
	md, err := os.ReadFile(filepath.Join(report, "nexmark.md"))
	if err != nil || !strings.Contains(string(md), "| q2 |") {
		t.Fatalf("report: %v\n%s", err, md)
	}
	f, err := os.Open(filepath.Join(report, "nexmark.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if img, err := png.Decode(f); err != nil || img.Bounds().Dx() < 400 {
		t.Fatalf("chart: %v", err)
	}
}

// The Parquet file DuckDB reads holds exactly the bids of the benchmark's
// events, and a DuckDB result with another row count than weir's run
// fails the comparison. (The real DuckDB comparison is tested in
// bench/duckdb, a cgo module.)
func TestVsDuckDBWritesTheBidsAndChecksTheRows(t *testing.T) {
	dir := t.TempDir()
	runner := filepath.Join(dir, "fake-runner")
	script := "#!/bin/sh\necho '{\"version\":\"fake\",\"threads\":1,\"seconds\":0.5,\"cpu_s\":0.5,\"columns\":[\"n\"],\"rows\":[[\"7\"]]}'\n"
	if err := os.WriteFile(runner, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d := &duckdbBench{runner: runner, dir: dir}
	const events = 5000
	r := benchResult{Query: "q5", Events: events, WallS: 1, OutputRows: 7}
	if err := d.run(context.Background(), "q5", 1, &r); err != nil {
		t.Fatal(err)
	}
	if r.DuckDBRows != 7 || r.VsDuckDB != 0.5 || r.DuckDBVersion != "fake" || r.DuckDBEventsPerCoreS != events/0.5 {
		t.Fatalf("result %+v", r)
	}
	f, err := os.Open(d.parquet)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pf.NumRows(), nexmark.CountOf(nexmark.BidEvent, events); got != want {
		t.Fatalf("bids.parquet holds %d rows, want the %d bids of %d events", got, want, events)
	}
	r = benchResult{Query: "q7", Events: events, WallS: 1, OutputRows: 8}
	if err := d.run(context.Background(), "q7", 1, &r); err == nil || !strings.Contains(err.Error(), "results differ") {
		t.Fatalf("a different row count: err %v", err)
	}
	r = benchResult{Query: "q0", Events: events, WallS: 1, OutputRows: 8}
	if err := d.run(context.Background(), "q0", 1, &r); err != nil || r.DuckDBS != 0 {
		t.Fatalf("q0 has no DuckDB equivalent: err %v, result %+v", err, r)
	}
}

// The SQL-only queries (q3, q4, q9, q15-q20) ask for --api sql, and each
// has Flink's published per-core figure.
func TestBenchNexmarkSQLOnlyQueries(t *testing.T) {
	out, err := runCLI(t, "bench", "nexmark", "--query", "q0,q15", "--events", "1000")
	if err == nil || !strings.Contains(err.Error(), "q15 has no Go-API version; use --api sql") {
		t.Fatalf("--api go q15: err %v\n%s", err, out)
	}
	if _, err := runCLI(t, "bench", "nexmark", "--query", "q99", "--api", "sql"); err == nil || !strings.Contains(err.Error(), `no query "q99"`) {
		t.Fatalf("q99: err %v", err)
	}
	for _, q := range queries.SQLOnly() {
		if _, ok := flinkPerCore[q]; !ok {
			t.Errorf("%s: no Flink per-core figure", q)
		}
	}
}

// A group aggregation's run counts the sink's changelog by kind and the
// rows one change per bid would have emitted: 2 * bids - groups, where
// the groups are the sink's inserts less its deletes.
func TestBenchNexmarkCountsTheChangelog(t *testing.T) {
	const events = 20_000
	r, err := runNexmarkQuery(context.Background(), "q17", benchOptions{events: events, parallelism: 2, interval: 50 * time.Millisecond, api: "sql"})
	if err != nil {
		t.Fatal(err)
	}
	c := r.Changelog
	if c == nil {
		t.Fatalf("q17: no changelog counts: %+v", r)
	}
	if c.Inserts+c.UpdateBefores+c.UpdateAfters+c.Deletes != r.OutputRows || c.UpdateBefores != c.UpdateAfters || c.Inserts == 0 {
		t.Fatalf("q17: changelog %+v, %d output rows", *c, r.OutputRows)
	}
	if want := 2*nexmark.CountOf(nexmark.BidEvent, events) - (c.Inserts - c.Deletes); r.PerRowOutputRows != want || r.OutputRows >= want {
		t.Fatalf("q17: per-row output %d, want %d (more than the %d rows emitted)", r.PerRowOutputRows, want, r.OutputRows)
	}
	r, err = runNexmarkQuery(context.Background(), "q3", benchOptions{events: events, parallelism: 2, interval: 50 * time.Millisecond, api: "sql"})
	if err != nil || r.OutputRows == 0 || r.Changelog != nil || r.PerRowOutputRows != 0 {
		t.Fatalf("q3 (an inner join of append-only inputs: inserts only): %+v, %v", r, err)
	}
}
