package status_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/status"
	"github.com/weirflow/weir/internal/testutil"
)

// do sends method url with the given headers ("Host" sets the request's
// Host) and returns the status code, the headers and the body.
func do(t *testing.T, method, url string, header map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// A web page's cross-origin POST (a "simple" request: text/plain, no
// preflight) cannot take a savepoint, let alone stop the job.
func TestCrossOriginPostCannotStopTheJob(t *testing.T) {
	r := runJob(t, testGraph(t, 0, 20_000, nil), t.TempDir())
	waitStatus(t, r, "a checkpoint", func(st status.Status) bool { return st.State == status.Running && st.LatestCheckpoint != nil })
	code, _, body := do(t, http.MethodPost, r.url+"/savepoint?stop=true", map[string]string{
		"Origin": "https://evil.example", "Content-Type": "text/plain",
	})
	if code != http.StatusForbidden || !strings.Contains(body, "evil.example") {
		t.Fatalf("cross-origin POST /savepoint?stop=true: %d %s, want 403 naming the origin", code, body)
	}
	// Also with the token: the browser would not send it, but a page that
	// somehow had it is still not the operator.
	code, _, body = do(t, http.MethodPost, r.url+"/savepoint?stop=true", map[string]string{
		"Origin": "https://evil.example", "Authorization": "Bearer " + r.srv.Token(),
	})
	if code != http.StatusForbidden {
		t.Fatalf("cross-origin POST with the token: %d %s, want 403", code, body)
	}
	time.Sleep(100 * time.Millisecond)
	if st := getStatus(t, r); st.State != status.Running || st.LastSavepoint != nil {
		t.Fatalf("after the cross-origin POSTs: %+v", st)
	}
	// A same-origin page of the server itself (its own address, or
	// localhost) is not refused for its origin.
	host := strings.TrimPrefix(r.url, "http://")
	for _, origin := range []string{r.url, "http://localhost:1234", "http://[::1]:99"} {
		if code, _, body := do(t, http.MethodGet, r.url+"/status", map[string]string{"Origin": origin}); code != http.StatusOK {
			t.Fatalf("GET /status with Origin %s (host %s): %d %s", origin, host, code, body)
		}
	}
	if code, _, body := do(t, http.MethodGet, r.url+"/status", map[string]string{"Origin": "null"}); code != http.StatusForbidden {
		t.Fatalf("GET /status with Origin null: %d %s", code, body)
	}
}

// DNS rebinding: a page of evil.example whose name now resolves to
// 127.0.0.1 reaches the server with Host: evil.example. No endpoint
// answers it; loopback names and addresses are answered.
func TestForeignHostIsRefused(t *testing.T) {
	r := runJob(t, testGraph(t, 0, 20_000, nil), "")
	waitStatus(t, r, "the job running", func(st status.Status) bool { return st.State == status.Running })
	_, port, _ := strings.Cut(strings.TrimPrefix(r.url, "http://"), ":")
	for _, path := range []string{"/", "/status", "/plan", "/metrics", "/savepoint"} {
		method := http.MethodGet
		if path == "/savepoint" {
			method = http.MethodPost
		}
		for _, host := range []string{"evil.example:" + port, "evil.example", "localhost.evil.example:" + port, "127.0.0.1.nip.io:" + port} {
			code, _, body := do(t, method, r.url+path, map[string]string{"Host": host})
			if code != http.StatusForbidden || !strings.Contains(body, "Host") {
				t.Fatalf("%s %s with Host %s: %d %s, want 403 about the Host", method, path, host, code, body)
			}
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST", "127.0.0.2:" + port, "[::1]:" + port, "[::1]"} {
		if code, _, body := do(t, http.MethodGet, r.url+"/status", map[string]string{"Host": host}); code != http.StatusOK {
			t.Fatalf("GET /status with Host %s: %d %s", host, code, body)
		}
	}
}

// Every mutation needs the server's token, as Authorization: Bearer.
func TestSavepointNeedsTheToken(t *testing.T) {
	r := runJob(t, testGraph(t, 0, 20_000, nil), t.TempDir())
	waitStatus(t, r, "a checkpoint", func(st status.Status) bool { return st.State == status.Running && st.LatestCheckpoint != nil })
	for _, auth := range []string{"", "Bearer", "Bearer wrong", "Basic " + r.srv.Token(), "Bearer " + r.srv.Token() + "x"} {
		h := map[string]string{}
		if auth != "" {
			h["Authorization"] = auth
		}
		code, hdr, body := do(t, http.MethodPost, r.url+"/savepoint?stop=true", h)
		if code != http.StatusUnauthorized || !strings.Contains(body, "Authorization: Bearer") || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("POST /savepoint with Authorization %q: %d %v %s, want 401 saying what to send", auth, code, hdr, body)
		}
	}
	if st := getStatus(t, r); st.State != status.Running || st.LastSavepoint != nil {
		t.Fatalf("after the POSTs without the token: %+v", st)
	}
	code, _, body := do(t, http.MethodPost, r.url+"/savepoint", map[string]string{"Authorization": "bearer " + r.srv.Token()})
	if code != http.StatusOK {
		t.Fatalf("POST /savepoint with the token: %d %s", code, body)
	}
}

// The token file is written (mode 0600) once the job is handed over, and
// removed on Close; a token too short is refused.
func TestTokenFile(t *testing.T) {
	if _, err := status.New(status.Config{Token: "short"}); err == nil {
		t.Fatal("a 5-byte token was accepted")
	}
	path := filepath.Join(t.TempDir(), "cp", "http-token")
	srv, err := status.New(status.Config{TokenFile: path})
	if err != nil {
		t.Fatal(err)
	}
	if len(srv.Token()) != 64 {
		t.Fatalf("generated token %q, want 32 random bytes in hex", srv.Token())
	}
	if other, _ := status.New(status.Config{}); other.Token() == srv.Token() {
		t.Fatal("two servers made the same token")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("token file before SetJob: %v", err)
	}
	g := testGraph(t, 10, 0, nil)
	j, err := g.Plan(arrowflow.Options{Allocator: testutil.CheckedAllocator(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetJob(j)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file after SetJob: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(path); strings.TrimSpace(string(b)) != srv.Token() {
		t.Fatalf("token file holds %q, want the token", b)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("token file after Close: %v", err)
	}
	if err := j.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Rejected records show per source in /status and /metrics.
func TestRejectedRecords(t *testing.T) {
	var skipped atomic.Int64
	r := serve(t, status.Config{Name: "rejects", Rejected: map[string]status.RejectedFunc{
		"lax":     func() status.RejectedCounts { return status.RejectedCounts{Skipped: skipped.Load()} },
		"careful": func() status.RejectedCounts { return status.RejectedCounts{DeadLettered: 3} },
	}})
	skipped.Store(5)
	st := getStatus(t, r)
	want := []status.SourceRejected{{Source: "careful", DeadLettered: 3}, {Source: "lax", Skipped: 5}}
	if !slices.Equal(st.SourceRejected, want) {
		t.Fatalf("source_rejected %+v, want %+v", st.SourceRejected, want)
	}
	skipped.Store(8)
	m := scrape(t, r)
	if m.types["weir_source_records_skipped_total"] != "counter" || m.types["weir_source_records_dead_lettered_total"] != "counter" {
		t.Fatalf("types %v", m.types)
	}
	for _, c := range []struct {
		name, labels string
		want         float64
	}{
		{"weir_source_records_skipped_total", `{source="lax"}`, 8},
		{"weir_source_records_skipped_total", `{source="careful"}`, 0},
		{"weir_source_records_dead_lettered_total", `{source="careful"}`, 3},
		{"weir_source_records_dead_lettered_total", `{source="lax"}`, 0},
	} {
		if v := m.value(t, c.name, c.labels); v != c.want {
			t.Fatalf("%s%s %v, want %v", c.name, c.labels, v, c.want)
		}
	}
}
