package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

func runCLI(t testing.TB, args ...string) (string, error) {
	t.Helper()
	return runCLIContext(context.Background(), args...)
}

// runCLIContext runs the weir command line with args under ctx and
// returns its output (stdout and stderr).
func runCLIContext(ctx context.Context, args ...string) (string, error) {
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

// The demo (embedded Kafka, Nexmark bids, per-auction windows into
// Iceberg, hot auctions into a second table) checks its own tables:
// every bid counted exactly once, the hot auctions equal to the top 3 of
// the windows read back. 150000 events span two windows of event time.
func TestDemoRunsAndChecksItself(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	out, err := runCLI(t, "demo", "--dir", dir, "--events", "150000", "--rate", "0", "--checkpoint-interval", "100ms")
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		"check: the windows count each of the 138000 bids exactly once", "busiest auction windows",
		"check: demo.hot_auctions holds exactly the top 3 auctions (ties kept) of each of the 2 windows", "hot auctions (top 3",
		"weir table snapshots --warehouse", "--table demo.auction_stats", "--table demo.hot_auctions",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out)
		}
	}
	// Run again: the topic and the tables are complete; nothing changes.
	again, err := runCLI(t, "demo", "--dir", dir, "--events", "150000", "--rate", "0")
	if err != nil || !strings.Contains(again, "0 of the 138000 bids sent in this run") || !strings.Contains(again, "check: demo.hot_auctions holds exactly") {
		t.Fatalf("second run: %v\n%s", err, again)
	}
}

// demoTopAuctions, the reference the demo checks demo.hot_auctions
// against, is RANK() <= 3 per window: tied rows share a rank, and the
// rank after a tie skips.
func TestDemoTopAuctionsIsRankPerWindow(t *testing.T) {
	w := func(sec int) time.Time { return time.Unix(int64(sec), 0).UTC() }
	row := func(start, auction, bids int64) demoRow {
		return demoRow{start: w(int(start)), end: w(int(start) + 10), auction: auction, bids: bids, maxPrice: auction * 7, avg: float64(bids) / 2}
	}
	ranked := func(r demoRow, rank int64) demoRow { r.rank = rank; return r }
	stats := []demoRow{
		// window 0: 10, 9, 9, 8 -> ranks 1, 2, 2, (4: out)
		row(0, 4, 8), row(0, 2, 9), row(0, 1, 10), row(0, 3, 9),
		// window 10: all tied -> all rank 1
		row(10, 7, 5), row(10, 5, 5), row(10, 6, 5), row(10, 8, 5),
		// window 20: 3, 2, 1, 1 -> ranks 1, 2, 3, 3
		row(20, 9, 1), row(20, 10, 3), row(20, 11, 2), row(20, 12, 1),
		// window 30: a single auction
		row(30, 13, 4),
	}
	want := []demoRow{
		ranked(row(0, 1, 10), 1), ranked(row(0, 2, 9), 2), ranked(row(0, 3, 9), 2),
		ranked(row(10, 5, 5), 1), ranked(row(10, 6, 5), 1), ranked(row(10, 7, 5), 1), ranked(row(10, 8, 5), 1),
		ranked(row(20, 10, 3), 1), ranked(row(20, 11, 2), 2), ranked(row(20, 9, 1), 3), ranked(row(20, 12, 1), 3),
		ranked(row(30, 13, 4), 1),
	}
	got := demoTopAuctions(stats, 3)
	if err := demoCompareHot(got, want); err != nil {
		t.Fatal(err)
	}
	// The comparison the demo's self-check makes notices a missing row,
	// an extra one and a wrong rank.
	for name, bad := range map[string][]demoRow{
		"missing": want[1:],
		"extra":   append(slices.Clone(want), ranked(row(30, 14, 4), 1)),
		"rank":    append([]demoRow{ranked(want[0], 2)}, want[1:]...),
	} {
		if demoCompareHot(bad, want) == nil {
			t.Errorf("%s: no difference reported", name)
		}
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
