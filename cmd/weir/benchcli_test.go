package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `weir bench nexmark --json` runs each query in a child process and
// prints one JSON object per query with the documented fields; q0 passes
// every bid through (46 in 50 events).
func TestBenchNexmarkJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	report := t.TempDir()
	out, err := runCLI(t, "bench", "nexmark", "--query", "q0,q2", "--events", "50000", "--parallelism", "2",
		"--checkpoint-interval", "100ms", "--json", "--report", report)
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	var got []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q", sc.Text())
		}
		got = append(got, m)
	}
	if len(got) != 2 || got[0]["query"] != "q0" || got[1]["query"] != "q2" {
		t.Fatalf("results: %v", got)
	}
	for _, r := range got {
		for _, k := range []string{"events", "wall_s", "cpu_s", "events_per_s", "events_per_core_s", "peak_rss_bytes"} {
			if v, ok := r[k].(float64); !ok || v <= 0 {
				t.Fatalf("%s: field %s = %v, want a positive number", r["query"], k, r[k])
			}
		}
	}
	if rows := got[0]["output_rows"].(float64); rows != 50000*46/50 {
		t.Fatalf("q0 passed %v rows, want every bid (46000)", rows)
	}
	if epochs := got[0]["epochs"].(float64); epochs < 1 {
		t.Fatalf("q0 committed %v epochs", epochs)
	}
	md, err := os.ReadFile(filepath.Join(report, "nexmark.md"))
	if err != nil || !strings.Contains(string(md), "| q2 |") {
		t.Fatalf("report: %v\n%s", err, md)
	}
}
