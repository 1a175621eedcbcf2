package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weirflow/weir/internal/status"
)

// inProcess is a `weir` command run in this process, in the background.
type inProcess struct {
	out    syncBuffer
	done   chan error
	cancel context.CancelFunc
}

// startInProcess runs `weir args...` in the background; cleanup cancels
// it (Ctrl-C) and waits for it.
func startInProcess(t *testing.T, args ...string) *inProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &inProcess{done: make(chan error, 1), cancel: cancel}
	cmd := newRootCommand()
	cmd.SetOut(&p.out)
	cmd.SetErr(&p.out)
	cmd.SetArgs(args)
	go func() { p.done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-p.done:
			p.done <- err
		case <-time.After(30 * time.Second):
			t.Errorf("weir %v did not stop within 30 s of its cancellation", args)
		}
	})
	return p
}

// wait waits for the command to end, at most 30 s.
func (p *inProcess) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("the command did not end within 30 s:\n%s", p.out.String())
		return nil
	}
}

var statusLine = regexp.MustCompile(`status: (http://127\.0\.0\.1:\d+)/(?: \(POST /savepoint needs the token in [^)]+\))?\n`)

// statusURL waits for the "status: http://ADDR/" line and returns
// http://ADDR.
func (p *inProcess) statusURL(t *testing.T) string {
	t.Helper()
	var url string
	waitFor(t, "the status line", func() bool {
		m := statusLine.FindStringSubmatch(p.out.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	return url
}

func httpDo(t *testing.T, method, url string) (int, string) {
	t.Helper()
	return httpDoToken(t, method, url, "")
}

// httpDoToken is httpDo with the token as Authorization: Bearer, when
// not "".
func httpDoToken(t *testing.T, method, url, token string) (int, string) {
	t.Helper()
	var header map[string]string
	if token != "" {
		header = map[string]string{"Authorization": "Bearer " + token}
	}
	return request(t, method, url, header)
}

func jobStatus(t *testing.T, url string) status.Status {
	t.Helper()
	code, body := httpDo(t, http.MethodGet, url+"/status")
	var st status.Status
	if code != http.StatusOK {
		t.Fatalf("GET /status: %d %s", code, body)
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("GET /status: %v\n%s", err, body)
	}
	return st
}

// `weir job --http` serves the job's status, and POST /savepoint takes
// savepoints into the checkpoint folder, as `weir savepoint` does, and
// stops the job with ?stop=true.
func TestJobServesStatusAndSavepointsOverHTTP(t *testing.T) {
	dir := t.TempDir()
	cp := filepath.Join(dir, "cp")
	p := startInProcess(t, "job", "windowed", "--rows", "0", "--rate", "20000", "--parallelism", "2",
		"--out", filepath.Join(dir, "out"), "--checkpoint-dir", cp, "--checkpoint-interval", "100ms",
		"--http", "127.0.0.1:0")
	url := p.statusURL(t)
	var st status.Status
	waitFor(t, "rows through the job and a committed epoch", func() bool {
		st = jobStatus(t, url)
		return st.State == status.Running && st.SourceRecordsIn > 0 && st.EpochsCompleted > 0
	})
	if st.Job != "windowed" || len(st.Tasks) != 2 || !strings.HasPrefix(st.Tasks[1].Task, "per-key-windows") || st.LatestCheckpoint == nil {
		t.Fatalf("status %+v", st)
	}
	if code, body := httpDo(t, http.MethodGet, url+"/metrics"); code != http.StatusOK ||
		!strings.Contains(body, `weir_task_rows_out_total{task="per-key-windows -> parquet",subtask="1"} `) ||
		!strings.Contains(body, "# TYPE weir_epochs_completed_total counter") {
		t.Fatalf("GET /metrics: %d\n%s", code, body)
	}
	if code, body := httpDo(t, http.MethodGet, url+"/plan"); code != http.StatusOK || !strings.Contains(body, "per-key-windows") {
		t.Fatalf("GET /plan: %d\n%s", code, body)
	}
	if code, body := httpDo(t, http.MethodGet, url+"/savepoint"); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET /savepoint: %d %s", code, body)
	}

	tok, err := os.ReadFile(filepath.Join(cp, "http-token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	code, body := httpDoToken(t, http.MethodPost, url+"/savepoint", token)
	var sp status.SavepointResponse
	if code != http.StatusOK || json.Unmarshal([]byte(body), &sp) != nil || sp.Epoch == 0 || sp.Stopped {
		t.Fatalf("POST /savepoint: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(sp.Location, "manifest.json")); err != nil || !strings.HasPrefix(sp.Location, filepath.Join(cp, "savepoints")) {
		t.Fatalf("savepoint at %s, want a folder under %s/savepoints: %v", sp.Location, cp, err)
	}
	code, body = httpDoToken(t, http.MethodPost, url+"/savepoint?stop=true", token)
	var stop status.SavepointResponse
	if code != http.StatusOK || json.Unmarshal([]byte(body), &stop) != nil || stop.Epoch <= sp.Epoch || !stop.Stopped {
		t.Fatalf("POST /savepoint?stop=true: %d %s", code, body)
	}
	if err := p.wait(t); err != nil {
		t.Fatalf("the job stopped with %v:\n%s", err, p.out.String())
	}
	if !strings.Contains(p.out.String(), "job windowed: ") {
		t.Fatalf("output:\n%s", p.out.String())
	}
	// The server closed with the job.
	if _, err := http.Get(url + "/status"); err == nil {
		t.Fatal("the status server still answers after the job ended")
	}
	// The savepoint restores.
	out, err := runCLI(t, "job", "windowed", "--rows", "1000", "--parallelism", "1", "--out", filepath.Join(dir, "out2"),
		"--checkpoint-dir", filepath.Join(dir, "cp2"), "--from-savepoint", stop.Location)
	if err != nil || !strings.Contains(out, "restoring savepoint") {
		t.Fatalf("restoring the savepoint: %v\n%s", err, out)
	}
}

// Without --checkpoint-dir, POST /savepoint says what is missing; Ctrl-C
// still stops the job.
func TestJobWithoutCheckpointDirRefusesSavepoints(t *testing.T) {
	p := startInProcess(t, "job", "passthrough", "--rows", "0", "--rate", "5000", "--parallelism", "1",
		"--out", filepath.Join(t.TempDir(), "out"), "--checkpoint-interval", "100ms", "--http", "127.0.0.1:0")
	url := p.statusURL(t)
	waitFor(t, "the job running", func() bool { return jobStatus(t, url).State == status.Running })
	if code, body := httpDo(t, http.MethodPost, url+"/savepoint"); code != http.StatusConflict || !strings.Contains(body, "--checkpoint-dir") {
		t.Fatalf("POST /savepoint without --checkpoint-dir: %d %s", code, body)
	}
	p.cancel()
	if err := p.wait(t); err != nil || !strings.Contains(p.out.String(), "stopped after") {
		t.Fatalf("after Ctrl-C: %v\n%s", err, p.out.String())
	}
}

func TestJobRejectsBadHTTPAddress(t *testing.T) {
	out, err := runCLI(t, "job", "passthrough", "--rows", "10", "--out", filepath.Join(t.TempDir(), "out"), "--http", "nonsense")
	if err == nil || !strings.Contains(err.Error(), "--http nonsense") {
		t.Fatalf("want an error naming --http, got %v\n%s", err, out)
	}
}

// kafka-windowed reports its Kafka source's lag to the status server.
func TestKafkaJobRegistersItsLag(t *testing.T) {
	o := jobOptions{brokers: []string{"127.0.0.1:1"}, in: "events", out: "results", parallelism: 1}
	o.cp.lags = map[string]status.LagFunc{}
	g, err := builtinJob("kafka-windowed", o)
	if err != nil {
		t.Fatal(err)
	}
	defer closeSinks(g)
	if o.cp.lags["kafka-in"] == nil {
		t.Fatalf("lags %v, want kafka-in's", o.cp.lags)
	}
}
