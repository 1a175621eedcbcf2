package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// build builds a Go command from dir (a folder of this repository) into
// out.
func build(t *testing.T, dir, pkg, out string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s in %s: %v\n%s", pkg, dir, err, msg)
	}
}

func runner(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "weir-duckdb")
	build(t, ".", ".", bin)
	return bin
}

func TestRunnerPrintsResultAndTime(t *testing.T) {
	bin := runner(t)
	out, err := exec.Command(bin, "-threads", "2", "-setup", "CREATE TABLE t AS SELECT range AS x FROM range(1000)",
		"-sql", "SELECT count(*) AS n, sum(x) AS s, NULL AS z FROM t").Output()
	if err != nil {
		t.Fatal(err)
	}
	var r result
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Threads != 2 || r.Seconds <= 0 || r.Version == "" || strings.Join(r.Columns, ",") != "n,s,z" {
		t.Fatalf("result %+v", r)
	}
	if len(r.Rows) != 1 || *r.Rows[0][0] != "1000" || *r.Rows[0][1] != "499500" || r.Rows[0][2] != nil {
		t.Fatalf("rows %s", out)
	}
}

func TestRunnerReportsBadSQL(t *testing.T) {
	bin := runner(t)
	for _, args := range [][]string{
		{"-sql", "SELEC 1"},
		{"-setup", "CREATE TABLE", "-sql", "SELECT 1"},
		{},
		{"-threads", "0", "-sql", "SELECT 1"},
	} {
		var stderr bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stderr = &stderr
		if err := cmd.Run(); err == nil {
			t.Errorf("%v: no error", args)
		} else if !strings.HasPrefix(stderr.String(), "weir-duckdb: ") {
			t.Errorf("%v: stderr %q", args, stderr.String())
		}
	}
}

// TestNexmarkVsDuckDB runs `weir bench nexmark --vs duckdb` for q5 and
// q7: DuckDB's batch SQL over the same events' bids must return as many
// rows as weir's streaming run emitted (weir fails the run otherwise),
// and the report must carry the comparison.
func TestNexmarkVsDuckDB(t *testing.T) {
	dir := t.TempDir()
	bin := runner(t)
	weir := filepath.Join(dir, "weir")
	build(t, filepath.Join("..", "..", ".."), "./cmd/weir", weir)
	report := filepath.Join(dir, "report")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, weir, "bench", "nexmark", "--query", "q5,q7", "--events", "300000", "--parallelism", "2",
		"--checkpoint-interval", "200ms", "--vs", "duckdb", "--duckdb", bin, "--json", "--report", report)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r struct {
			Query      string  `json:"query"`
			OutputRows int64   `json:"output_rows"`
			DuckDBRows int64   `json:"duckdb_rows"`
			DuckDBS    float64 `json:"duckdb_s"`
			VsDuckDB   float64 `json:"vs_duckdb"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		if r.OutputRows == 0 || r.DuckDBRows != r.OutputRows || r.DuckDBS <= 0 || r.VsDuckDB <= 0 {
			t.Errorf("%s: %s", r.Query, sc.Text())
		}
		seen[r.Query] = true
	}
	if !seen["q5"] || !seen["q7"] {
		t.Fatalf("queries seen %v in %s", seen, out)
	}
	md, err := os.ReadFile(filepath.Join(report, "nexmark.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(md, []byte("DuckDB s / weir s")) || !bytes.Contains(md, []byte("| q7 | v")) {
		t.Fatalf("report:\n%s", md)
	}
}
