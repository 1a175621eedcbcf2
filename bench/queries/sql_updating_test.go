package queries

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/nexmarkref"
	"github.com/weirflow/weir/sinks/collect"
	"github.com/weirflow/weir/sources/nexmark"
	"github.com/weirflow/weir/sql"
)

// The SQL-only queries (the suite's updating queries) as the benchmark
// runs them: compiled from SQL over the bench DDL at parallelism 2, with
// an epoch every 20 ms, their sink's committed changelog materialized into
// a table that must equal the plain Go answer (internal/nexmarkref).
// sql/nexmark_suite_updating_test.go tests the planning in depth; this
// checks the bench's files.
func TestSQLOnlyQueriesMaterializeTheAnswer(t *testing.T) {
	const events = 20_000
	tables := readTables(t, events)
	for _, q := range SQLOnly() {
		t.Run(q, func(t *testing.T) {
			got := runSQLTable(t, q, events, 2)
			if err := checkUpdating(q, tables, got); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		})
	}
}

// Every query has a Go API or a SQL version, and SQLNames holds each
// query of Names (all have a SQL version) and of SQLOnly, in number order.
func TestSQLNames(t *testing.T) {
	want := append(Names(), SQLOnly()...)
	slices.SortFunc(want, func(a, b string) int { return queryNumber(a) - queryNumber(b) })
	if got := SQLNames(); !slices.Equal(got, want) {
		t.Fatalf("SQLNames %v, want %v", got, want)
	}
	for _, q := range SQLOnly() {
		if _, ok := Lookup(q); ok {
			t.Errorf("%s is SQL-only but has a Go API version", q)
		}
		if _, ok := SQL(q, 1, 1, 0); !ok {
			t.Errorf("%s is SQL-only but has no SQL file", q)
		}
	}
}

// readTables reads the tables of the events the SQL versions' DDL
// generates (its source, taken from a compiled script).
func readTables(t *testing.T, events int64) nexmarkref.Tables {
	t.Helper()
	script, _ := SQL("q3", events, 4, 3)
	job, err := sql.Compile(context.Background(), script, sql.Options{Parallelism: 1, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range job.Sources {
		if src, ok := s.(*nexmark.Source); ok {
			tb, err := nexmarkref.ReadTables(src)
			if err != nil {
				t.Fatal(err)
			}
			return tb
		}
	}
	t.Fatal("no nexmark source in the compiled script")
	return nexmarkref.Tables{}
}

// runSQLTable runs SQL query q on events events of seed 3 in 4 splits and
// returns its sink's materialized table, one formatted row per string,
// sorted.
func runSQLTable(t *testing.T, q string, events int64, par int) []string {
	t.Helper()
	script, ok := SQL(q, events, 4, 3)
	if !ok {
		t.Fatalf("%s has no SQL version", q)
	}
	out := collect.New()
	job, err := sql.Compile(context.Background(), script, sql.Options{Parallelism: par, ForceParallelism: true,
		Sinks: map[string]arrowflow.Sink{SQLSink(q): out}})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	run, err := job.Graph.Plan(arrowflow.Options{Allocator: mem, CheckpointInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run.Run(ctx); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	table, err := out.Table()
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]string, len(table))
	for i, r := range table {
		rows[i] = formatRow(r...)
	}
	slices.Sort(rows)
	return rows
}

// formatRow formats values as sql's tests do: fmt.Sprint, NULL for nil,
// joined by " | ".
func formatRow(vals ...any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = "NULL"
		if v != nil {
			parts[i] = fmt.Sprint(v)
		}
	}
	return strings.Join(parts, " | ")
}

// checkUpdating compares the materialized rows of q with the answer:
// exactly, or for the ROW_NUMBER queries (q9, q18, q19, whose ties may be
// kept either way) by nexmarkref's checks.
func checkUpdating(q string, tb nexmarkref.Tables, got []string) error {
	var want []string
	add := func(vals []any) { want = append(want, formatRow(vals...)) }
	switch q {
	case "q3":
		for _, r := range nexmarkref.Q3(tb) {
			add(r.Values())
		}
	case "q4":
		for _, r := range nexmarkref.Q4(tb) {
			add(r.Values())
		}
	case "q15":
		for _, r := range nexmarkref.Q15(tb) {
			add(r.Values())
		}
	case "q16":
		for _, r := range nexmarkref.Q16(tb) {
			add(r.Values())
		}
	case "q17":
		for _, r := range nexmarkref.Q17(tb) {
			add(r.Values())
		}
	case "q20":
		for _, r := range nexmarkref.Q20(tb) {
			add(r.Values())
		}
	case "q9":
		return nexmarkref.CheckQ9(got, nexmarkref.Q9(tb), func(r nexmarkref.Q9Row) string { return formatRow(r.Values()...) })
	case "q18":
		return nexmarkref.CheckQ18(got, nexmarkref.Q18(tb), func(r nexmarkref.Q18Row) string { return formatRow(r.Values()...) })
	case "q19":
		return nexmarkref.CheckQ19(got, nexmarkref.Q19(tb), func(r nexmarkref.Q19Row) string { return formatRow(r.Values()...) })
	default:
		return fmt.Errorf("no answer for %s", q)
	}
	if len(want) == 0 {
		return fmt.Errorf("the answer is empty: the test checks nothing")
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		return fmt.Errorf("%d rows, the answer has %d; first difference at row %d: %q, answer %q", len(got), len(want), i, at(got, i), at(want, i))
	}
	return nil
}

func at(rows []string, i int) string {
	if i < len(rows) {
		return rows[i]
	}
	return "(none)"
}
