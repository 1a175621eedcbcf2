package status_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirflow/weir/internal/status"
)

// Hundreds of idle connections, some that never send a request and some
// kept alive after one, neither starve the server nor stay open: a new
// request is answered, and the server closes the idle ones after its
// timeouts.
func TestIdleConnectionsNeitherStarveNorStay(t *testing.T) {
	r := serve(t, status.Config{Name: "idle", MaxConnections: 32,
		ReadHeaderTimeout: 200 * time.Millisecond, IdleTimeout: 200 * time.Millisecond})
	addr := strings.TrimPrefix(r.url, "http://")

	const silent, keptAlive = 300, 300
	conns := make([]net.Conn, 0, silent+keptAlive)
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	for range silent {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	// These send one request each and keep the connection; the server
	// answers them as it gets to them (at most MaxConnections at once).
	var wg sync.WaitGroup
	errs := make(chan error, keptAlive)
	for range keptAlive {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns), err)
		}
		conns = append(conns, c)
		wg.Go(func() {
			if _, err := fmt.Fprintf(c, "GET /status HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
				errs <- err
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(time.Minute))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				errs <- fmt.Errorf("keep-alive request: %w", err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Close {
				errs <- fmt.Errorf("keep-alive request: %d, close %v", resp.StatusCode, resp.Close)
			}
		})
	}

	// A new client is answered meanwhile.
	client := &http.Client{Timeout: time.Minute}
	resp, err := client.Get("http://" + addr + "/status")
	if err != nil {
		t.Fatalf("a new request with %d idle connections open: %v", len(conns), err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a new request: %d", resp.StatusCode)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Every idle connection is closed by the server (its read ends),
	// without the client doing anything.
	deadline := time.Now().Add(time.Minute)
	for i, c := range conns {
		_ = c.SetReadDeadline(deadline)
		buf := make([]byte, 512)
		for {
			_, err := c.Read(buf)
			if err == nil {
				continue // what is left of an answer
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("idle connection %d of %d still open after a minute", i, len(conns))
			}
			break // EOF or reset: closed by the server
		}
	}
}
