package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirflow/weir/internal/status"
)

// unboundedScript writes a SQL job of paced generated rows into a
// blackhole sink, running until it is stopped, and returns its path.
func unboundedScript(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "forever.sql")
	script := `SET 'execution.checkpointing.interval' = '100 ms';
CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '2000', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0');
CREATE TABLE out1 (id BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out1 SELECT id FROM gen;
`
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// request sends method url with headers ("Host" sets the request's Host)
// and returns the status code and body.
func request(t *testing.T, method, url string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader("stop"))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
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
	return resp.StatusCode, string(body)
}

// A web page cannot stop `weir run`'s job: a cross-origin POST
// /savepoint?stop=true, or one without the token, is refused, and the job
// runs on. The token is in a 0600 file in the checkpoint folder, named
// (never shown) in the start line, and removed when the job ends; with
// it the job stops with a savepoint.
func TestRunStatusServerRefusesWebPagesAndNeedsTheToken(t *testing.T) {
	cp := filepath.Join(t.TempDir(), "cp")
	p := startInProcess(t, "run", "--checkpoint-dir", cp, "--http", "127.0.0.1:0", unboundedScript(t))
	url := p.statusURL(t)
	waitFor(t, "a committed epoch", func() bool {
		st := jobStatus(t, url)
		return st.State == status.Running && st.EpochsCompleted > 0
	})
	code, body := request(t, http.MethodPost, url+"/savepoint?stop=true", map[string]string{
		"Origin": "https://evil.example", "Content-Type": "text/plain",
	})
	if code != http.StatusForbidden || !strings.Contains(body, "Origin") {
		t.Fatalf("cross-origin POST /savepoint?stop=true: %d %s, want 403", code, body)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(url, "http://"))
	if code, body := request(t, http.MethodGet, url+"/status", map[string]string{"Host": "evil.example:" + port}); code != http.StatusForbidden {
		t.Fatalf("GET /status with Host evil.example (DNS rebinding): %d %s, want 403", code, body)
	}
	code, body = request(t, http.MethodPost, url+"/savepoint?stop=true", nil)
	if code != http.StatusUnauthorized || !strings.Contains(body, "Authorization: Bearer") || !strings.Contains(body, filepath.Join(cp, "http-token")) {
		t.Fatalf("POST /savepoint?stop=true without the token: %d %s, want 401 saying where the token is", code, body)
	}
	time.Sleep(300 * time.Millisecond)
	if st := jobStatus(t, url); st.State != status.Running || st.LastSavepoint != nil {
		t.Fatalf("after the refused POSTs: %+v", st)
	}

	tokenFile := filepath.Join(cp, "http-token")
	fi, err := os.Stat(tokenFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file %s: %v %v, want mode 0600", tokenFile, fi, err)
	}
	token, err := os.ReadFile(tokenFile)
	if err != nil || len(strings.TrimSpace(string(token))) < 32 {
		t.Fatalf("token file: %q %v", token, err)
	}
	tok := strings.TrimSpace(string(token))
	out := p.out.String()
	if strings.Contains(out, tok) || !strings.Contains(out, tokenFile) {
		t.Fatalf("the output shows the token or does not say where it is:\n%s", out)
	}
	code, body = request(t, http.MethodPost, url+"/savepoint?stop=true", map[string]string{"Authorization": "Bearer " + tok})
	var sp status.SavepointResponse
	if code != http.StatusOK || json.Unmarshal([]byte(body), &sp) != nil || !sp.Stopped {
		t.Fatalf("POST /savepoint?stop=true with the token: %d %s", code, body)
	}
	if err := p.wait(t); err != nil {
		t.Fatalf("the job ended with %v:\n%s", err, p.out.String())
	}
	if _, err := os.Stat(tokenFile); !os.IsNotExist(err) {
		t.Fatalf("the token file is left after a clean exit: %v", err)
	}
}

// --http-token (or WEIR_HTTP_TOKEN) sets the token; --http-allowed-hosts
// names more hosts the server answers to.
func TestStatusTokenAndAllowedHostsFlags(t *testing.T) {
	t.Setenv("WEIR_HTTP_TOKEN", "from-the-environment-0123456789")
	cp := filepath.Join(t.TempDir(), "cp")
	p := startInProcess(t, "job", "passthrough", "--rows", "0", "--rate", "2000", "--parallelism", "1",
		"--out", filepath.Join(t.TempDir(), "out"), "--checkpoint-dir", cp, "--checkpoint-interval", "100ms",
		"--http", "127.0.0.1:0", "--http-token", "from-the-flag-0123456789abcdef", "--http-allowed-hosts", "weir.internal, status.example:8081")
	url := p.statusURL(t)
	waitFor(t, "the job running", func() bool { return jobStatus(t, url).State == status.Running })
	for host, want := range map[string]int{"weir.internal": 200, "WEIR.internal:9": 200, "status.example": 200, "evil.example": 403, "localhost": 200} {
		if code, body := request(t, http.MethodGet, url+"/status", map[string]string{"Host": host}); code != want {
			t.Fatalf("GET /status with Host %s: %d %s, want %d", host, code, body, want)
		}
	}
	if code, body := request(t, http.MethodGet, url+"/status", map[string]string{"Origin": "https://weir.internal"}); code != http.StatusOK {
		t.Fatalf("GET /status from an allowed origin: %d %s", code, body)
	}
	if code, body := request(t, http.MethodPost, url+"/savepoint", map[string]string{"Authorization": "Bearer from-the-environment-0123456789"}); code != http.StatusUnauthorized {
		t.Fatalf("POST /savepoint with the environment's token, the flag's set: %d %s", code, body)
	}
	if code, body := request(t, http.MethodPost, url+"/savepoint", map[string]string{"Authorization": "Bearer from-the-flag-0123456789abcdef"}); code != http.StatusOK {
		t.Fatalf("POST /savepoint with the flag's token: %d %s", code, body)
	}
	if b, err := os.ReadFile(filepath.Join(cp, "http-token")); err != nil || strings.TrimSpace(string(b)) != "from-the-flag-0123456789abcdef" {
		t.Fatalf("token file: %q %v", b, err)
	}
}

// WEIR_HTTP_TOKEN sets the token when --http-token is not given.
func TestStatusTokenFromTheEnvironment(t *testing.T) {
	t.Setenv("WEIR_HTTP_TOKEN", "from-the-environment-0123456789")
	p := startInProcess(t, "job", "passthrough", "--rows", "0", "--rate", "2000", "--parallelism", "1",
		"--out", filepath.Join(t.TempDir(), "out"), "--checkpoint-dir", filepath.Join(t.TempDir(), "cp"),
		"--checkpoint-interval", "100ms", "--http", "127.0.0.1:0")
	url := p.statusURL(t)
	waitFor(t, "the job running", func() bool { return jobStatus(t, url).State == status.Running })
	if code, body := request(t, http.MethodPost, url+"/savepoint", map[string]string{"Authorization": "Bearer from-the-environment-0123456789"}); code != http.StatusOK {
		t.Fatalf("POST /savepoint with WEIR_HTTP_TOKEN's token: %d %s", code, body)
	}
}

func TestStatusTokenFlagRejectsAShortToken(t *testing.T) {
	out, err := runCLI(t, "job", "passthrough", "--rows", "10", "--out", filepath.Join(t.TempDir(), "out"),
		"--http", "127.0.0.1:0", "--http-token", "short")
	if err == nil || !strings.Contains(err.Error(), "--http-token") || !strings.Contains(err.Error(), "at least 16") {
		t.Fatalf("want an error naming --http-token and the shortest length, got %v\n%s", err, out)
	}
}

// `weir run --help` tells the truth about --http: on by default.
func TestRunHelpSaysTheStatusServerIsOnByDefault(t *testing.T) {
	out, err := runCLI(t, "run", "--help")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^\s*--http string.*$`).FindString(out)
	if line == "" || strings.Contains(line, "empty: off") || !strings.Contains(line, "127.0.0.1:8081") || !strings.Contains(line, "off") {
		t.Fatalf("weir run --help, the --http line: %q\n%s", line, out)
	}
	if strings.Contains(out, "no authentication") {
		t.Fatalf("weir run --help still says the server has no authentication:\n%s", out)
	}
	// weir job's server stays off by default, and its help says so.
	out, err = runCLI(t, "job", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if line := regexp.MustCompile(`(?m)^\s*--http string.*$`).FindString(out); !strings.Contains(line, "empty: off") {
		t.Fatalf("weir job --help, the --http line: %q", line)
	}
}

// `weir run --http off` serves nothing.
func TestRunHTTPOff(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bounded.sql")
	script := `CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '100');
CREATE TABLE out1 (id BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out1 SELECT id FROM gen;
`
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "run", "--http", "off", "--checkpoint-dir", filepath.Join(t.TempDir(), "cp"), path)
	if err != nil || strings.Contains(out, "status:") || !strings.Contains(out, "finished") {
		t.Fatalf("weir run --http off: %v\n%s", err, out)
	}
}

// Idle connections to the status server, more than the process has file
// descriptors for, do not kill the job: the server holds at most its
// connection cap, the job goes on committing, and once the connections
// are gone the server answers again. The job runs in a child process
// with a low descriptor limit (ulimit -n 400).
func TestIdleStatusConnectionsDoNotKillTheJob(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to set the child's descriptor limit")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cp := filepath.Join(dir, "cp")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := &child{cmd: exec.CommandContext(ctx, "sh", "-c", `ulimit -n 400 && exec "$0" "$@"`, exe,
		"job", "passthrough", "--rows", "0", "--rate", "2000", "--parallelism", "1", "--out", filepath.Join(dir, "out"),
		"--checkpoint-dir", cp, "--checkpoint-interval", "50ms", "--http", "127.0.0.1:0")}
	c.cmd.Env = append(os.Environ(), "WEIR_RUN_MAIN=1")
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-exited
	})
	var url string
	waitFor(t, "the status line", func() bool {
		m := statusLine.FindStringSubmatch(c.out.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	waitFor(t, "a committed epoch", func() bool { return jobStatus(t, url).EpochsCompleted > 0 })
	before := jobStatus(t, url).EpochsCompleted

	const idle = 600 // more than the child's 400 descriptors
	conns := make([]net.Conn, 0, idle)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range idle {
		conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v; the job's output:\n%s", len(conns), err, c.out.String())
		}
		conns = append(conns, conn)
	}
	// The job commits epochs meanwhile (manifests appear), and lives.
	// (Retention keeps a few manifests: the newest one's name is the
	// epoch.)
	manifests := func() int {
		es, _ := os.ReadDir(filepath.Join(cp, "manifests"))
		newest := 0
		for _, e := range es {
			var n int
			if _, err := fmt.Sscanf(e.Name(), "%d.json", &n); err == nil {
				newest = max(newest, n)
			}
		}
		return newest
	}
	epochsThen := manifests()
	deadline := time.Now().Add(30 * time.Second)
	for manifests() < epochsThen+20 {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the job died with %d idle status connections open: %v\n%s", idle, err, c.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no 20 epochs committed in 30 s with idle status connections open:\n%s", c.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, conn := range conns {
		_ = conn.Close()
	}
	conns = nil
	var st status.Status
	waitFor(t, "the status server answering again", func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the job died: %v\n%s", err, c.out.String())
		default:
		}
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(url + "/status")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&st) == nil
	})
	if st.State != status.Running || st.EpochsCompleted <= before {
		t.Fatalf("after the idle connections: %+v", st)
	}
	if err := c.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil || !strings.Contains(c.out.String(), "stopped after") {
			t.Fatalf("after SIGINT: %v\n%s", err, c.out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the job did not stop within 30 s of SIGINT:\n%s", c.out.String())
	}
}
