package status_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/checkpoint"
	"github.com/weirflow/weir/internal/status"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/sinks/collect"
	"github.com/weirflow/weir/sources/datagen"
	"github.com/weirflow/weir/window"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testGraph is datagen (2 subtasks) -> keyed by key -> a count per key in
// tumbling 1 s event-time windows, chained with a check operator -> a
// collect sink. check sees every batch the windows emit and may fail.
func testGraph(t *testing.T, rows int64, rate float64, check ops.MapFunc) *arrowflow.Graph {
	t.Helper()
	src, err := datagen.New(datagen.Config{Seed: 1, Rows: rows, RowsPerSecond: rate, BatchSize: 256, Splits: 2})
	if err != nil {
		t.Fatal(err)
	}
	agg := window.Aggregate{
		Input: src.Schema(), Time: "ts", Window: window.Tumbling(time.Second), Keys: []string{"key"},
		Aggs: []window.Agg{{Func: kernels.AggCountStar, Name: "rows"}},
	}
	if err := agg.Validate(); err != nil {
		t.Fatal(err)
	}
	if check == nil {
		check = func(b arrowflow.Batch, _ memory.Allocator) (arrowflow.Batch, error) { return b, nil }
	}
	g := arrowflow.NewGraph("status-test")
	gen := g.Source("gen", src, 2)
	win := g.Operator("per-key", agg.Factory(), 2, arrowflow.KeyBy(gen, "key"))
	chk := g.Operator("check", ops.Map(check), 2, arrowflow.Forward(win))
	g.Sink("out", collect.New(), 2, arrowflow.Forward(chk))
	return g
}

// running is a job run in the background with its status server.
type running struct {
	srv  *status.Server
	url  string // http://127.0.0.1:port
	done chan error
}

// serve starts a server of cfg on 127.0.0.1:0 without a job, closed when
// the test ends.
func serve(t *testing.T, cfg status.Config) *running {
	t.Helper()
	srv, err := status.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return &running{srv: srv, url: "http://" + addr.String()}
}

// runJob starts the server on 127.0.0.1:0, then plans and runs g in the
// background, on a checkpoint folder when cpDir is set (savepoints on),
// as cmd/weir does. Cleanup cancels the job and closes the server.
func runJob(t *testing.T, g *arrowflow.Graph, cpDir string) *running {
	t.Helper()
	mem := testutil.CheckedAllocator(t)
	ctx, cancel := context.WithCancel(context.Background())
	var job atomic.Pointer[arrowflow.Job]
	cfg := status.Config{Graph: g, NoSavepointReason: "no --checkpoint-dir",
		Lag: map[string]status.LagFunc{
			"gen":    func(context.Context) (int64, error) { return 42, nil },
			"broken": func(context.Context) (int64, error) { return 0, errors.New("broker down") },
		}}
	if cpDir != "" {
		cfg.Savepoint = func(ctx context.Context, stop bool) (uint64, string, error) {
			sp, err := job.Load().TriggerSavepoint(ctx, stop)
			if err != nil {
				return 0, "", err
			}
			return sp.Checkpoint.Epoch, sp.Location, nil
		}
	}
	srv, err := status.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &running{srv: srv, url: "http://" + addr.String(), done: make(chan error, 1)}
	opts := arrowflow.Options{Allocator: mem, CheckpointInterval: 20 * time.Millisecond}
	var folder *checkpoint.Folder
	if cpDir != "" {
		folder, err = checkpoint.Open(cpDir, checkpoint.Options{})
		if err != nil {
			t.Fatal(err)
		}
		resumed, err := folder.Resume(ctx, g, "")
		if err != nil {
			t.Fatal(err)
		}
		opts = resumed.Options(folder, opts)
	}
	opts.Recorder = srv.Recorder(opts.Recorder)
	j, err := g.Plan(opts)
	if err != nil {
		t.Fatal(err)
	}
	job.Store(j)
	srv.SetJob(j)
	go func() {
		err := j.Run(ctx)
		srv.Done(err)
		r.done <- err
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Error("the job did not stop within 10 s of its cancellation")
		}
		if folder != nil {
			_ = folder.Close()
		}
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// get fetches path and returns the status code, content type and body.
func get(t *testing.T, method, url string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodHead && len(body) != 0 {
		t.Fatalf("HEAD %s returned a body", url)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

// post sends POST url with the server's token and returns the status
// code, content type and body.
func post(t *testing.T, r *running, url string) (int, string, string) {
	t.Helper()
	code, hdr, body := do(t, http.MethodPost, url, map[string]string{"Authorization": "Bearer " + r.srv.Token()})
	return code, hdr.Get("Content-Type"), body
}

func getStatus(t *testing.T, r *running) status.Status {
	t.Helper()
	code, ctype, body := get(t, http.MethodGet, r.url+"/status")
	if code != http.StatusOK || ctype != "application/json" {
		t.Fatalf("GET /status: %d %s\n%s", code, ctype, body)
	}
	var st status.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("GET /status: %v\n%s", err, body)
	}
	checkStatus(t, st)
	return st
}

// checkStatus checks what holds in every status: task totals are the sums
// of their subtasks, subtasks are numbered 0..parallelism-1.
func checkStatus(t *testing.T, st status.Status) {
	t.Helper()
	for _, task := range st.Tasks {
		var sum status.SubtaskStatus
		if len(task.Subtasks) != task.Parallelism {
			t.Fatalf("task %s: %d subtasks, parallelism %d", task.Task, len(task.Subtasks), task.Parallelism)
		}
		for i, s := range task.Subtasks {
			if s.Subtask != i {
				t.Fatalf("task %s: subtask %d listed at %d", task.Task, s.Subtask, i)
			}
			sum.BatchesIn += s.BatchesIn
			sum.RowsIn += s.RowsIn
			sum.BatchesOut += s.BatchesOut
			sum.RowsOut += s.RowsOut
		}
		if sum.BatchesIn != task.BatchesIn || sum.RowsIn != task.RowsIn || sum.BatchesOut != task.BatchesOut || sum.RowsOut != task.RowsOut {
			t.Fatalf("task %s: totals %+v, subtasks sum to %+v", task.Task, task, sum)
		}
	}
}

// waitStatus polls /status until cond holds, at most 20 s.
func waitStatus(t *testing.T, r *running, what string, cond func(status.Status) bool) status.Status {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := getStatus(t, r)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last status: %+v", what, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func task(st status.Status, prefix string) *status.TaskStatus {
	for i := range st.Tasks {
		if strings.HasPrefix(st.Tasks[i].Task, prefix) {
			return &st.Tasks[i]
		}
	}
	return nil
}

func TestRunningJobStatusMetricsAndSavepoints(t *testing.T) {
	cp := t.TempDir()
	r := runJob(t, testGraph(t, 0, 50_000, nil), cp)

	st := waitStatus(t, r, "rows through the windows and a checkpoint", func(st status.Status) bool {
		w := task(st, "per-key")
		return st.State == status.Running && st.SourceRecordsIn > 0 && w != nil && w.RowsOut > 0 && st.LatestCheckpoint != nil
	})
	if st.Job != "status-test" || st.Error != "" || st.UptimeSeconds <= 0 || st.StartTime.IsZero() || st.EndTime != nil {
		t.Fatalf("status header: %+v", st)
	}
	if len(st.Tasks) != 2 || task(st, "gen") == nil || task(st, "per-key -> check -> out") == nil {
		t.Fatalf("tasks %+v, want gen and per-key -> check -> out", st.Tasks)
	}
	if gen := task(st, "gen"); st.SourceRecordsIn < gen.RowsIn || gen.Queued != 0 {
		// Read one after the other: the total may only be behind.
		t.Fatalf("source records in %d, gen task %+v", st.SourceRecordsIn, gen)
	}
	if st.LatestCheckpoint.Time == nil || st.LatestCheckpoint.Epoch == 0 {
		t.Fatalf("latest checkpoint %+v: want an epoch and the time the recorder saw it", st.LatestCheckpoint)
	}
	if st.EpochsCompleted < 1 {
		t.Fatalf("epochs completed %d", st.EpochsCompleted)
	}
	if st.WatermarkMillis == nil {
		st = waitStatus(t, r, "a finite watermark", func(st status.Status) bool { return st.WatermarkMillis != nil })
	}
	if _, err := time.Parse(time.RFC3339, st.Watermark); err != nil {
		t.Fatalf("watermark %q: %v", st.Watermark, err)
	}
	if st.StateBytes <= 0 || len(st.StateUsage) == 0 || st.StateUsage[0].Operator != "per-key" {
		t.Fatalf("state: %d bytes, %+v", st.StateBytes, st.StateUsage)
	}
	if len(st.SourceLag) != 2 || st.SourceLag[0].Source != "broken" || st.SourceLag[0].Error != "broker down" ||
		st.SourceLag[1].Source != "gen" || st.SourceLag[1].Records == nil || *st.SourceLag[1].Records != 42 {
		t.Fatalf("source lag %+v", st.SourceLag)
	}

	// Two scrapes: well-formed, counters never go down.
	first := scrape(t, r)
	second := scrape(t, r)
	for key, v := range first.values {
		if first.types[key.name] == "counter" && second.values[key] < v {
			t.Fatalf("counter %s%s went down: %v -> %v", key.name, key.labels, v, second.values[key])
		}
	}
	for _, want := range []string{
		"weir_job_up", "weir_job_state", "weir_epochs_completed_total", "weir_latest_checkpoint_epoch",
		"weir_latest_checkpoint_time_seconds", "weir_watermark_milliseconds", "weir_source_records_in_total",
		"weir_task_rows_in_total", "weir_task_rows_out_total", "weir_task_batches_in_total", "weir_task_batches_out_total",
		"weir_task_watermark_milliseconds", "weir_task_queued", "weir_state_bytes", "weir_source_lag_records",
		"weir_operator_late_rows_total",
	} {
		if second.types[want] == "" {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if v := second.value(t, "weir_job_up", ""); v != 1 {
		t.Fatalf("weir_job_up %v while running", v)
	}
	if v := second.value(t, "weir_job_state", `{state="running"}`); v != 1 {
		t.Fatalf(`weir_job_state{state="running"} %v`, v)
	}
	if v := second.value(t, "weir_source_lag_records", `{source="gen"}`); v != 42 {
		t.Fatalf("lag of gen %v", v)
	}

	code, ctype, plan := get(t, http.MethodGet, r.url+"/plan")
	if code != http.StatusOK || !strings.HasPrefix(ctype, "text/plain") || !strings.Contains(plan, "per-key") || !strings.Contains(plan, "gen") {
		t.Fatalf("GET /plan: %d %s\n%s", code, ctype, plan)
	}
	code, ctype, overview := get(t, http.MethodGet, r.url+"/")
	if code != http.StatusOK || !strings.HasPrefix(ctype, "text/html") || !strings.Contains(overview, `href="/metrics"`) || !strings.Contains(overview, "running") {
		t.Fatalf("GET /: %d %s\n%s", code, ctype, overview)
	}
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodGet, "/savepoint", "POST"},
		{http.MethodPost, "/status", "GET, HEAD"},
		{http.MethodDelete, "/metrics", "GET, HEAD"},
		{http.MethodPut, "/plan", "GET, HEAD"},
	} {
		if code, _, body := get(t, c.method, r.url+c.path); code != http.StatusMethodNotAllowed || !strings.Contains(body, c.allow) {
			t.Fatalf("%s %s: %d %s, want 405 naming %s", c.method, c.path, code, body, c.allow)
		}
	}
	if code, _, _ := get(t, http.MethodHead, r.url+"/status"); code != http.StatusOK {
		t.Fatalf("HEAD /status: %d", code)
	}
	if code, _, _ := get(t, http.MethodGet, r.url+"/nope"); code != http.StatusNotFound {
		t.Fatalf("GET /nope: %d", code)
	}
	if code, _, body := post(t, r, r.url+"/savepoint?stop=maybe"); code != http.StatusBadRequest {
		t.Fatalf("POST /savepoint?stop=maybe: %d %s", code, body)
	}

	// A savepoint, then one that stops the job.
	sp := postSavepoint(t, r, "")
	if sp.Stopped || sp.Epoch == 0 {
		t.Fatalf("savepoint %+v", sp)
	}
	if _, err := os.Stat(filepath.Join(sp.Location, "manifest.json")); err != nil || !strings.HasPrefix(sp.Location, cp) {
		t.Fatalf("savepoint folder %s (under %s?): %v", sp.Location, cp, err)
	}
	st = getStatus(t, r)
	if st.LastSavepoint == nil || st.LastSavepoint.Epoch != sp.Epoch || st.LastSavepoint.Location != sp.Location {
		t.Fatalf("last savepoint %+v, want %+v", st.LastSavepoint, sp)
	}
	stop := postSavepoint(t, r, "?stop=true")
	if !stop.Stopped || stop.Epoch <= sp.Epoch {
		t.Fatalf("stop-with-savepoint %+v after %+v", stop, sp)
	}
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("the job stopped with %v after its savepoint", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the job did not stop after its stop-with-savepoint")
	}
	r.done <- nil // for the cleanup

	st = getStatus(t, r)
	if st.State != status.Finished || st.EndTime == nil || st.LatestCheckpoint.Epoch != stop.Epoch || !st.LatestCheckpoint.Savepoint {
		t.Fatalf("after stop-with-savepoint: %+v", st)
	}
	code, _, body := post(t, r, r.url+"/savepoint")
	if code != http.StatusConflict || !strings.Contains(body, "finished") {
		t.Fatalf("POST /savepoint after the job finished: %d %s", code, body)
	}
	// The job stands still now: /metrics and /status agree exactly.
	m := scrape(t, r)
	sameCounters(t, m, st)
	if v := m.value(t, "weir_job_up", ""); v != 0 {
		t.Fatalf("weir_job_up %v after the end", v)
	}
}

func postSavepoint(t *testing.T, r *running, query string) status.SavepointResponse {
	t.Helper()
	code, ctype, body := post(t, r, r.url+"/savepoint"+query)
	if code != http.StatusOK || ctype != "application/json" {
		t.Fatalf("POST /savepoint%s: %d %s\n%s", query, code, ctype, body)
	}
	var sp status.SavepointResponse
	if err := json.Unmarshal([]byte(body), &sp); err != nil {
		t.Fatal(err)
	}
	return sp
}

// sameCounters checks that the per-subtask counters of m equal those of
// st, and their per-task totals st's task totals.
func sameCounters(t *testing.T, m metricsPage, st status.Status) {
	t.Helper()
	if got := m.value(t, "weir_source_records_in_total", ""); got != float64(st.SourceRecordsIn) {
		t.Fatalf("weir_source_records_in_total %v, status %d", got, st.SourceRecordsIn)
	}
	if got := m.value(t, "weir_epochs_completed_total", ""); got != float64(st.EpochsCompleted) {
		t.Fatalf("weir_epochs_completed_total %v, status %d", got, st.EpochsCompleted)
	}
	var late int64
	for _, l := range st.LateRows {
		labels := fmt.Sprintf(`{operator=%q,subtask="%d"}`, l.Operator, l.Subtask)
		if got := m.value(t, "weir_operator_late_rows_total", labels); got != float64(l.Rows) {
			t.Fatalf("weir_operator_late_rows_total%s %v, status %d", labels, got, l.Rows)
		}
		late += l.Rows
	}
	if late != st.LateRowsTotal {
		t.Fatalf("late rows %+v sum to %d, status total %d", st.LateRows, late, st.LateRowsTotal)
	}
	for _, task := range st.Tasks {
		var rowsOut, rowsIn float64
		for _, s := range task.Subtasks {
			labels := fmt.Sprintf(`{task=%q,subtask="%d"}`, task.Task, s.Subtask)
			out := m.value(t, "weir_task_rows_out_total", labels)
			in := m.value(t, "weir_task_rows_in_total", labels)
			if out != float64(s.RowsOut) || in != float64(s.RowsIn) ||
				m.value(t, "weir_task_batches_out_total", labels) != float64(s.BatchesOut) ||
				m.value(t, "weir_task_batches_in_total", labels) != float64(s.BatchesIn) {
				t.Fatalf("subtask %s: metrics and status differ: %+v", labels, s)
			}
			rowsOut += out
			rowsIn += in
		}
		if rowsOut != float64(task.RowsOut) || rowsIn != float64(task.RowsIn) {
			t.Fatalf("task %s: metrics sum to %v rows out, %v in; status says %d, %d", task.Task, rowsOut, rowsIn, task.RowsOut, task.RowsIn)
		}
	}
}

// A bounded job ends Finished: its final counters are consistent and its
// watermark is +inf.
func TestBoundedJobFinishes(t *testing.T) {
	const rows = 20_000
	r := runJob(t, testGraph(t, rows, 0, nil), "")
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatal(err)
		}
		r.done <- nil
	case <-time.After(20 * time.Second):
		t.Fatal("the bounded job did not end")
	}
	st := getStatus(t, r)
	if st.State != status.Finished || st.Error != "" || st.EndTime == nil {
		t.Fatalf("after the end: %+v", st)
	}
	if st.SourceRecordsIn != rows || task(st, "per-key").RowsIn != rows {
		t.Fatalf("%d source records in, windows read %d; want %d", st.SourceRecordsIn, task(st, "per-key").RowsIn, rows)
	}
	if st.Watermark != "+inf" || st.WatermarkMillis != nil {
		t.Fatalf("watermark %q (%v) after the end", st.Watermark, st.WatermarkMillis)
	}
	m := scrape(t, r)
	sameCounters(t, m, st)
	if v := m.value(t, "weir_watermark_milliseconds", ""); !math.IsInf(v, 1) {
		t.Fatalf("weir_watermark_milliseconds %v, want +Inf", v)
	}
	if v := m.value(t, "weir_job_state", `{state="finished"}`); v != 1 {
		t.Fatalf(`weir_job_state{state="finished"} %v`, v)
	}
	// Without a checkpoint folder, no savepoints.
	code, _, body := post(t, r, r.url+"/savepoint")
	if code != http.StatusConflict || !strings.Contains(body, "no --checkpoint-dir") {
		t.Fatalf("POST /savepoint without a folder: %d %s", code, body)
	}
	// Uptime stops at the end.
	again := getStatus(t, r)
	if again.UptimeSeconds != st.UptimeSeconds {
		t.Fatalf("uptime moved after the end: %v -> %v", st.UptimeSeconds, again.UptimeSeconds)
	}
}

// A failing job ends Failed, with its error.
func TestFailedJobReportsItsError(t *testing.T) {
	var seen atomic.Int64
	r := runJob(t, testGraph(t, 0, 100_000, func(b arrowflow.Batch, _ memory.Allocator) (arrowflow.Batch, error) {
		if seen.Add(int64(b.NumRows())) > 500 {
			b.Release()
			return arrowflow.Batch{}, errors.New("injected failure")
		}
		return b, nil
	}), "")
	select {
	case err := <-r.done:
		if err == nil {
			t.Fatal("the job did not fail")
		}
		r.done <- err
	case <-time.After(20 * time.Second):
		t.Fatal("the job did not fail")
	}
	st := getStatus(t, r)
	if st.State != status.Failed || !strings.Contains(st.Error, "injected failure") || !strings.Contains(st.Error, "check") {
		t.Fatalf("after the failure: state %s, error %q", st.State, st.Error)
	}
	m := scrape(t, r)
	if v := m.value(t, "weir_job_state", `{state="failed"}`); v != 1 {
		t.Fatalf(`weir_job_state{state="failed"} %v`, v)
	}
	if code, _, body := get(t, http.MethodGet, r.url+"/"); code != http.StatusOK || !strings.Contains(body, "injected failure") {
		t.Fatalf("GET / after the failure: %d\n%s", code, body)
	}
}

// Before the job is planned (recovery) the server answers, and says so;
// Done with a cancellation is Cancelled.
func TestStartingAndCancelled(t *testing.T) {
	r := serve(t, status.Config{Name: `odd "name"` + "\n", Savepoint: func(context.Context, bool) (uint64, string, error) {
		return 0, "", errors.New("BUG: called while starting")
	}})
	srv := r.srv
	st := getStatus(t, r)
	if st.State != status.Starting || len(st.Tasks) != 0 || st.LatestCheckpoint != nil || st.Watermark != "-inf" {
		t.Fatalf("starting: %+v", st)
	}
	if code, _, body := get(t, http.MethodGet, r.url+"/plan"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not planned yet") {
		t.Fatalf("GET /plan while starting: %d %s", code, body)
	}
	if code, _, body := post(t, r, r.url+"/savepoint"); code != http.StatusServiceUnavailable || !strings.Contains(body, "starting") {
		t.Fatalf("POST /savepoint while starting: %d %s", code, body)
	}
	m := scrape(t, r) // the odd job name is escaped
	if v := m.value(t, "weir_job_info", `{job_name="odd \"name\"\n"}`); v != 1 {
		t.Fatalf("weir_job_info %v", v)
	}
	if _, ok := m.types["weir_task_rows_in_total"]; ok {
		t.Fatal("task metrics before the job is planned")
	}
	srv.Done(fmt.Errorf("job: %w", context.Canceled))
	if st := getStatus(t, r); st.State != status.Cancelled {
		t.Fatalf("after a cancellation: %+v", st)
	}
	if _, err := srv.Start("127.0.0.1:0"); err == nil {
		t.Fatal("a second Start succeeded")
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(r.url + "/status"); err == nil {
		t.Fatal("the server still answers after Close")
	}
}

// metricsPage is a parsed /metrics page.
type metricsPage struct {
	types  map[string]string     // family name -> type
	values map[seriesKey]float64 // series -> value
}

type seriesKey struct{ name, labels string }

// value returns the sample of name with labels (as written, sorted as the
// server writes them: `{a="x",b="y"}`, or "" for none).
func (m metricsPage) value(t *testing.T, name, labels string) float64 {
	t.Helper()
	v, ok := m.values[seriesKey{name, labels}]
	if !ok {
		t.Fatalf("/metrics has no sample %s%s", name, labels)
	}
	return v
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// scrape fetches /metrics and parses it as the Prometheus text format
// 0.0.4, failing on anything malformed: every sample is `name{labels}
// value` of a family announced by HELP and TYPE lines before it, label
// values are escaped, no series is repeated.
func scrape(t *testing.T, r *running) metricsPage {
	t.Helper()
	code, ctype, body := get(t, http.MethodGet, r.url+"/metrics")
	if code != http.StatusOK || ctype != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("GET /metrics: %d %s", code, ctype)
	}
	m := metricsPage{types: map[string]string{}, values: map[seriesKey]float64{}}
	help := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("/metrics line %d %q: %s\n%s", n, line, fmt.Sprintf(format, args...), body)
		}
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, text, _ := strings.Cut(rest, " ")
			if !metricName.MatchString(name) || help[name] || text == "" {
				fail("bad or repeated HELP")
			}
			help[name] = true
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			if !help[name] || m.types[name] != "" {
				fail("TYPE without HELP before, or repeated")
			}
			switch typ {
			case "counter", "gauge":
			default:
				fail("type %q", typ)
			}
			m.types[name] = typ
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			fail("unexpected line")
		}
		name, labels, value := parseSample(t, line, fail)
		if m.types[name] == "" {
			fail("sample of %s before its HELP and TYPE", name)
		}
		if m.types[name] == "counter" && !strings.HasSuffix(name, "_total") {
			fail("counter without _total")
		}
		key := seriesKey{name, labels}
		if _, dup := m.values[key]; dup {
			fail("repeated series")
		}
		m.values[key] = value
	}
	return m
}

// parseSample splits a sample line into its name, its label set as
// written and its value, checking the label syntax and escapes.
func parseSample(t *testing.T, line string, fail func(string, ...any)) (string, string, float64) {
	t.Helper()
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		fail("no value")
	}
	name, rest := line[:i], line[i:]
	if !metricName.MatchString(name) {
		fail("metric name %q", name)
	}
	labels := ""
	if rest[0] == '{' {
		j := 1
		for {
			k := strings.Index(rest[j:], `="`)
			if k < 0 {
				fail("label without value")
			}
			if !labelName.MatchString(rest[j : j+k]) {
				fail("label name %q", rest[j:j+k])
			}
			j += k + 2
			for ; ; j++ {
				if j >= len(rest) {
					fail("unterminated label value")
				}
				if rest[j] == '\\' {
					j++
					if j >= len(rest) || !strings.ContainsRune(`\"n`, rune(rest[j])) {
						fail("bad escape")
					}
					continue
				}
				if rest[j] == '\n' {
					fail("raw line feed in a label value")
				}
				if rest[j] == '"' {
					break
				}
			}
			j++
			if j < len(rest) && rest[j] == ',' {
				j++
				continue
			}
			if j >= len(rest) || rest[j] != '}' {
				fail("label set not closed")
			}
			j++
			break
		}
		labels, rest = rest[:j], rest[j:]
	}
	if len(rest) < 2 || rest[0] != ' ' || strings.Contains(rest[1:], " ") {
		fail("want one space then the value")
	}
	v, err := strconv.ParseFloat(rest[1:], 64)
	if err != nil {
		fail("value: %v", err)
	}
	return name, labels, v
}
