package sql

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/collect"
)

// compileRun compiles script with the collecting sink named out, runs
// it, and returns the sink's rows.
func compileRun(t *testing.T, script string, par int, out string) []string {
	t.Helper()
	sink := collect.New()
	job, err := Compile(context.Background(), script, Options{Parallelism: par, ForceParallelism: true, Sinks: map[string]arrowflow.Sink{out: sink}})
	if err != nil {
		t.Fatal(err)
	}
	return runGraph(t, job.Graph, sink, nil)
}

// A table written by one SQL job (partitioned, committed per epoch;
// Parquet, CSV or JSON files) is read back by another through the
// filesystem source, through its commit log, its partition column from
// the folder names, windowed on a watermark.
func TestFilesystemSourceReadsWhatTheSinkWrote(t *testing.T) {
	for _, format := range []string{"parquet", "csv", "json"} {
		t.Run(format, func(t *testing.T) { testFilesystemSourceReadsWhatTheSinkWrote(t, format) })
	}
}

func testFilesystemSourceReadsWhatTheSinkWrote(t *testing.T, format string) {
	dir := t.TempDir()
	const rows = 6000
	write := fmt.Sprintf(`
CREATE TABLE gen (id BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH (
    'connector' = 'datagen', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%d',
    'fields.ts.start' = '2026-03-01 12:00:00', 'fields.ts.interval' = '10 ms', 'splits' = '3');
CREATE TABLE t (id BIGINT, v BIGINT, bucket INT, ts TIMESTAMP(3)) PARTITIONED BY (bucket)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = '%s');
INSERT INTO t SELECT id, id * 2, CAST(MOD(id, 3) AS INT), ts FROM gen;`, rows-1, filepath.Join(dir, "t"), format)
	job, err := Compile(context.Background(), write, Options{Parallelism: 2, ForceParallelism: true})
	if err != nil {
		t.Fatal(err)
	}
	runGraph(t, job.Graph, collect.New(), nil)

	type key struct {
		bucket int
		ws     time.Time
	}
	type acc struct{ n, sum int64 }
	accs := map[key]*acc{}
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for id := int64(0); id < rows; id++ {
		ts := start.Add(time.Duration(id) * 10 * time.Millisecond)
		k := key{int(id % 3), ts.Truncate(5 * time.Second)}
		if accs[k] == nil {
			accs[k] = &acc{}
		}
		accs[k].n++
		accs[k].sum += 2 * id
	}
	var want []string
	for k, a := range accs {
		want = append(want, fmtRow(int32(k.bucket), k.ws, a.n, a.sum))
	}
	read := fmt.Sprintf(`
CREATE TABLE t (id BIGINT, v BIGINT, bucket INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
PARTITIONED BY (bucket)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = '%s');
CREATE TABLE sums (bucket INT, ws TIMESTAMP(3), n BIGINT, total BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO sums
SELECT bucket, window_start, COUNT(*), SUM(v)
FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '5' SECOND))
GROUP BY bucket, window_start, window_end;`, filepath.Join(dir, "t"), format)
	for _, par := range []int{1, 2} {
		compareRows(t, compileRun(t, read, par, "sums"), want)
	}
	other := map[string]string{"parquet": "csv", "csv": "json", "json": "parquet"}[format]
	job, err = Compile(context.Background(), strings.Replace(read, "'format' = '"+format+"'", "'format' = '"+other+"'", 1), Options{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range job.Sources {
		_, err = src.Splits(context.Background())
	}
	if err == nil || !strings.Contains(err.Error(), "read it with Format \""+format+"\"") {
		t.Fatalf("reading the %s table as %s: %v", format, other, err)
	}
}

// JSON lines with a malformed line: skipped with 'json.ignore-parse-errors',
// an error naming the file and line without it.
func TestFilesystemSourceJSONLines(t *testing.T) {
	dir := t.TempDir()
	lines := []string{`{"name": "a", "n": 1}`, `{"name": "b", "n": 2}`, `{"name": "c", "n": oops}`, `{"name": "d", "n": 4}`}
	if err := os.WriteFile(filepath.Join(dir, "part-0.json"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := func(opts string) string {
		return fmt.Sprintf(`
CREATE TABLE people (name STRING, n BIGINT) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json'%s);
CREATE TABLE out (name STRING, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out SELECT name, n * 10 FROM people;`, dir, opts)
	}
	compareRows(t, compileRun(t, script(", 'json.ignore-parse-errors' = 'true'"), 1, "out"), []string{"a | 10", "b | 20", "d | 40"})

	job, err := Compile(context.Background(), script(""), Options{Parallelism: 1, Sinks: map[string]arrowflow.Sink{"out": collect.New()}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := job.Graph.Plan(arrowflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = plan.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "part-0.json") || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("want an error naming the file and line 3, got %v", err)
	}
}
