package sql

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/bench/queries"
	"github.com/weirflow/weir/sinks/collect"
	"github.com/weirflow/weir/sources/nexmark"
)

const testEvents = 40_000

// nexmarkScript is query q in Flink SQL (bench/queries/sql) on
// testEvents events in 4 splits of seed 3, as bench/queries' tests run.
func nexmarkScript(t *testing.T, q string) string {
	t.Helper()
	s, ok := queries.SQL(q, testEvents, 4, 3)
	if !ok {
		t.Fatalf("no SQL version of %s", q)
	}
	return s
}

// runGraph runs g to the end with checkpoints and returns the collected
// rows, each formatted, sorted.
func runGraph(t *testing.T, g *arrowflow.Graph, out *collect.Sink, perm []int) []string {
	t.Helper()
	rows, _ := runGraphLate(t, g, out, perm)
	return rows
}

// runGraphLate is runGraph that also returns the late rows the job's
// operators dropped, over all operators.
func runGraphLate(t *testing.T, g *arrowflow.Graph, out *collect.Sink, perm []int) ([]string, int64) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	job, err := g.Plan(arrowflow.Options{Allocator: mem, CheckpointInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	var late int64
	for _, c := range job.OperatorCounts() {
		late += c.LateRows
	}
	// The sink's table: the committed changelog materialized (for an
	// append-only query, every row).
	table, err := out.Table()
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range table {
		if perm != nil {
			p := make([]any, len(perm))
			for i, j := range perm {
				p[i] = r[j]
			}
			r = p
		}
		parts := make([]string, len(r))
		for i, v := range r {
			parts[i] = fmt.Sprint(v)
			if v == nil {
				parts[i] = "NULL"
			}
		}
		rows = append(rows, strings.Join(parts, " | "))
	}
	sort.Strings(rows)
	return rows, late
}

// runSQL compiles and runs the Nexmark query q written in SQL.
func runSQL(t *testing.T, q string, par int) []string {
	t.Helper()
	out := collect.New()
	job, err := Compile(context.Background(), nexmarkScript(t, q), Options{Parallelism: par, ForceParallelism: true,
		Sinks: map[string]arrowflow.Sink{"nexmark_" + q: out}})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return runGraph(t, job.Graph, out, nil)
}

// runGo runs the Go-API version of q (bench/queries) on the same events;
// perm reorders its columns as the SQL version's.
func runGo(t *testing.T, q string, par int, perm []int) []string {
	t.Helper()
	src, err := nexmark.New(nexmark.Config{Seed: 3, Events: testEvents, Splits: 4, BatchSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := collect.New()
	g, err := queries.Build(q, queries.Config{Source: src, Parallelism: par, Sink: out})
	if err != nil {
		t.Fatal(err)
	}
	return runGraph(t, g, out, perm)
}

// The Nexmark queries written in Flink SQL (sql/testdata/weir) give the
// same rows as their Go-API versions (bench/queries, which are checked
// against plain Go references), at parallelism 1 and 2.
func TestNexmarkSQLMatchesGoAPI(t *testing.T) {
	cases := []struct {
		q    string
		perm []int // the Go version's columns in the SQL version's order
	}{
		{"q0", nil}, {"q1", nil}, {"q2", nil}, {"q5", nil}, {"q7", nil}, {"q8", nil},
		{"q11", []int{2, 3, 0, 1}}, {"q14", nil}, {"q21", nil}, {"q22", nil},
	}
	for _, c := range cases {
		for _, par := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/p%d", c.q, par), func(t *testing.T) {
				got := runSQL(t, c.q, par)
				want := runGo(t, c.q, par, c.perm)
				if len(want) == 0 {
					t.Fatal("the Go version has no rows: nothing is compared")
				}
				if len(got) != len(want) {
					t.Fatalf("%d rows, the Go API version has %d\nfirst: %q\nwant:  %q", len(got), len(want), first(got), first(want))
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("row %d: %q, want %q", i, got[i], want[i])
					}
				}
			})
		}
	}
}

// q12 counts on processing time, so its windows differ from run to run;
// every bid must be counted exactly once per bidder.
func TestNexmarkSQLQ12CountsEveryBidOnce(t *testing.T) {
	want := map[string]int64{}
	for _, r := range runGo(t, "q0", 1, nil) {
		want[strings.Split(r, " | ")[1]]++
	}
	for _, par := range []int{1, 2} {
		got := map[string]int64{}
		for _, r := range runSQL(t, "q12", par) {
			f := strings.Split(r, " | ")
			var n int64
			fmt.Sscan(f[1], &n)
			got[f[0]] += n
		}
		if len(got) != len(want) {
			t.Fatalf("p%d: %d bidders, want %d", par, len(got), len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("p%d: bidder %s counted %d times, has %d bids", par, k, got[k], v)
			}
		}
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
