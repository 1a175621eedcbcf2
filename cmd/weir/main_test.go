package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strconv"
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

// The demo prints the top keys and checks its own totals; here the
// printed top list is also checked for order and size.
func TestDemoRunsAndChecksItself(t *testing.T) {
	out, err := runCLI(t, "demo", "--rows", "200000", "--parallelism", "3", "--top", "5", "--checkpoint-interval", "10ms")
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		"task 1: generate -> drop-null-prices (parallelism 3)",
		"keyed by [key] over 128 key groups",
		"generated 200000 rows",
		"check: per-key counts and window counts each add up to the",
		"per-category-windows -> windows (parallelism 3)",
		"keyed by [category] over 128 key groups",
		"per-category results in one-second event-time windows",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	line := regexp.MustCompile(`(?m)^\+I\[(\d+), (\d+), [0-9.]+\]$`)
	rows := line.FindAllStringSubmatch(out, -1)
	if len(rows) != 5 {
		t.Fatalf("demo printed %d top rows, want 5:\n%s", len(rows), out)
	}
	for i := 1; i < len(rows); i++ {
		prev, _ := strconv.Atoi(rows[i-1][2])
		cur, _ := strconv.Atoi(rows[i][2])
		if cur > prev {
			t.Fatalf("top rows not ordered by count: %v then %v", rows[i-1][0], rows[i][0])
		}
	}
}

func TestDemoRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--rows", "0"},
		{"demo", "--parallelism", "0"},
		{"demo", "--parallelism", "500"},
		{"demo", "--top", "0"},
	} {
		if _, err := runCLI(t, args...); err == nil {
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
