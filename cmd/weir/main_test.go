package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The crash tests run this binary as `weir` in child processes.
	if os.Getenv("WEIR_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// The demo (embedded Kafka, Nexmark bids, per-auction windows into
// Iceberg) checks its own table: every bid counted exactly once.
func TestDemoRunsAndChecksItself(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	out, err := runCLI(t, "demo", "--dir", dir, "--events", "100000", "--rate", "0", "--checkpoint-interval", "100ms")
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out)
	}
	for _, want := range []string{"check: the windows count each of the 92000 bids exactly once", "busiest auction windows", "weir table snapshots --warehouse"} {
		if !strings.Contains(out, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out)
		}
	}
	// Run again: the topic and the table are complete; nothing changes.
	again, err := runCLI(t, "demo", "--dir", dir, "--events", "100000", "--rate", "0")
	if err != nil || !strings.Contains(again, "0 of the 92000 bids sent in this run") || !strings.Contains(again, "exactly once") {
		t.Fatalf("second run: %v\n%s", err, again)
	}
}

func TestDemoRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--events", "0"},
		{"demo", "--parallelism", "0"},
		{"demo", "--parallelism", "500"},
		{"demo", "--partitions", "0"},
		{"demo", "--rate", "-1"},
	} {
		if _, err := runCLI(t, append(args, "--dir", t.TempDir())...); err == nil {
			t.Errorf("weir %s succeeded", strings.Join(args, " "))
		}
	}
}

func TestVersion(t *testing.T) {
	out, err := runCLI(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "weir ") || !strings.Contains(out, "go go1.") {
		t.Fatalf("version output: %q", out)
	}
}
