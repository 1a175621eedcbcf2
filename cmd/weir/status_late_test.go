package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirflow/weir/internal/status"
)

// Late-row test input: rows every 500 ms of event time, one in five
// thrown back by up to 20 s, behind a 2 s watermark bound, into tumbling
// 10 s windows. Event times are whole multiples of 100 ms, so that
// whether the source's watermark is max - bound or max - bound - 1 ns
// never decides a row's fate.
const (
	lateRowsBound  = 2 * time.Second
	lateRowsWindow = 10 * time.Second
)

// writeOutOfOrder writes n JSON lines {"k", "ts"} to path, with bad
// malformed lines among them, and returns the good lines' event times in
// file order.
func writeOutOfOrder(t *testing.T, path string, n, bad int) []time.Time {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 11))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var (
		b   strings.Builder
		tss []time.Time
	)
	for i := range n {
		off := time.Duration(i) * 500 * time.Millisecond
		if rng.IntN(5) == 0 {
			off -= time.Duration(rng.IntN(201)) * 100 * time.Millisecond
		}
		ts := base.Add(max(off, 0))
		tss = append(tss, ts)
		fmt.Fprintf(&b, "{\"k\": %d, \"ts\": %q}\n", i%3, ts.Format("2006-01-02 15:04:05.000"))
		if bad > 0 && i%50 == 25 {
			fmt.Fprintf(&b, "{\"k\": %d, \"ts\": \n", i)
			bad--
		}
	}
	if bad != 0 {
		t.Fatalf("n %d leaves no room for the bad lines", n)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return tss
}

// replayLateRows counts the rows a tumbling-window aggregate drops from
// rows read one at a time (one row per batch) by a source whose
// watermark, after each row, is the largest event time so far minus the
// bound: a row is late when the watermark before it reached the last
// millisecond of its window (end - 1 ms, as in Flink).
func replayLateRows(tss []time.Time, bound, size time.Duration) int64 {
	wm := int64(math.MinInt64)
	var late int64
	for _, ts := range tss {
		ms := ts.UnixMilli()
		end := ms - ms%size.Milliseconds() + size.Milliseconds()
		if wm >= end-1 {
			late++
		}
		wm = max(wm, ms-bound.Milliseconds())
	}
	return late
}

// lateRowsScript is a job that counts the rows of the folder in in
// tumbling windows (one row per batch, so that the watermark moves after
// each), and, when ticks is set, a second INSERT from an unbounded
// generator that keeps the job running once the file is read.
func lateRowsScript(t *testing.T, dir, in string, ticks bool) string {
	t.Helper()
	script := fmt.Sprintf(`SET 'execution.checkpointing.interval' = '100 ms';
CREATE TABLE events (k BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '%d' SECOND) WITH (
  'connector' = 'filesystem', 'path' = '%s', 'format' = 'json', 'json.ignore-parse-errors' = 'true', 'weir.batch-size' = '1');
CREATE TABLE counts (k BIGINT, window_start TIMESTAMP(3), n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO counts SELECT k, window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '%d' SECOND))
  GROUP BY k, window_start, window_end;
`, int(lateRowsBound/time.Second), in, int(lateRowsWindow/time.Second))
	if ticks {
		script += `CREATE TABLE ticks (n BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '50');
CREATE TABLE ticked (n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO ticked SELECT n FROM ticks;
`
	}
	path := filepath.Join(dir, "late.sql")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A windowed GROUP BY over rows out of order beyond the watermark bound
// drops some as late: /status and /metrics show how many per operator
// subtask (weir_operator_late_rows_total), exactly as many as replaying
// the watermark rule over the input says, and the line weir run prints
// when it stops names them, next to the source's skipped records.
func TestRunShowsLateRowsInStatusMetricsAndStopLine(t *testing.T) {
	dir := t.TempDir()
	const skipped = 3
	tss := writeOutOfOrder(t, filepath.Join(dir, "in", "events.jsonl"), 400, skipped)
	want := replayLateRows(tss, lateRowsBound, lateRowsWindow)
	if want == 0 || want > int64(len(tss))/4 {
		t.Fatalf("the input has %d late rows of %d; want some, not most", want, len(tss))
	}
	path := lateRowsScript(t, dir, filepath.Join(dir, "in"), true)
	p := startInProcess(t, "run", "--parallelism", "1", "--checkpoint-dir", filepath.Join(dir, "cp"), "--http", "127.0.0.1:0", path)
	url := p.statusURL(t)
	var st status.Status
	waitFor(t, "the file read to its end and its windows fired", func() bool {
		st = jobStatus(t, url)
		for _, task := range st.Tasks {
			if strings.HasPrefix(task.Task, "window-aggregate") && task.Watermark == "+inf" {
				return st.State == status.Running
			}
		}
		return false
	})
	if len(st.LateRows) != 1 || st.LateRows[0].Operator != "window-aggregate" || st.LateRows[0].Subtask != 0 {
		t.Fatalf("late_rows %+v, want window-aggregate's one subtask", st.LateRows)
	}
	if got := st.LateRows[0].Rows; got != want || st.LateRowsTotal != want {
		t.Fatalf("late_rows %+v, total %d; replaying the watermark rule over the input gives %d", st.LateRows, st.LateRowsTotal, want)
	}
	code, body := request(t, http.MethodGet, url+"/metrics", nil)
	for _, w := range []string{
		fmt.Sprintf("weir_operator_late_rows_total{operator=\"window-aggregate\",subtask=\"0\"} %d\n", want),
		"# TYPE weir_operator_late_rows_total counter\n",
		fmt.Sprintf("weir_source_records_skipped_total{source=\"events\"} %d\n", skipped),
	} {
		if code != http.StatusOK || !strings.Contains(body, w) {
			t.Fatalf("GET /metrics: %d, lacks %q:\n%s", code, w, body)
		}
	}
	p.cancel() // Ctrl-C
	if err := p.wait(t); err != nil {
		t.Fatalf("after Ctrl-C: %v\n%s", err, p.out.String())
	}
	var end string
	for _, l := range strings.Split(p.out.String(), "\n") {
		if strings.Contains(l, " stopped after ") {
			end = l
		}
	}
	for _, w := range []string{
		fmt.Sprintf("events: %d records skipped, 0 dead-lettered", skipped),
		fmt.Sprintf(", late rows dropped: window-aggregate %d;", want),
	} {
		if !strings.Contains(end, w) {
			t.Fatalf("the stop line %q lacks %q:\n%s", end, w, p.out.String())
		}
	}
}

// A bounded job prints the late rows it dropped on its end line, and
// says nothing of late rows when it dropped none.
func TestRunPrintsLateRowsWhenFinished(t *testing.T) {
	dir := t.TempDir()
	tss := writeOutOfOrder(t, filepath.Join(dir, "in", "events.jsonl"), 200, 0)
	want := replayLateRows(tss, lateRowsBound, lateRowsWindow)
	out, err := runCLI(t, "run", "--http", "off", "--parallelism", "1", "--checkpoint-dir", filepath.Join(dir, "cp"),
		lateRowsScript(t, dir, filepath.Join(dir, "in"), false))
	if err != nil {
		t.Fatalf("weir run: %v\n%s", err, out)
	}
	if w := fmt.Sprintf(" epochs committed, late rows dropped: window-aggregate %d\n", want); want == 0 || !strings.Contains(out, w) {
		t.Fatalf("%d late rows; the output lacks %q:\n%s", want, w, out)
	}

	// In order: no late rows, and the end line does not mention them.
	inOrder := filepath.Join(dir, "sorted")
	if err := os.MkdirAll(inOrder, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inOrder, "events.jsonl"), []byte("{\"k\": 1, \"ts\": \"2026-01-01 00:00:01.000\"}\n{\"k\": 1, \"ts\": \"2026-01-01 00:00:30.000\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runCLI(t, "run", "--http", "off", "--parallelism", "1", "--checkpoint-dir", filepath.Join(dir, "cp2"),
		lateRowsScript(t, dir, inOrder, false))
	if err != nil {
		t.Fatalf("weir run: %v\n%s", err, out)
	}
	if !strings.Contains(out, " finished: ") || strings.Contains(out, "late rows") {
		t.Fatalf("a job without late rows mentions them:\n%s", out)
	}
}
