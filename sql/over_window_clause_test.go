package sql

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/weirflow/weir/bench/queries"
)

// The WINDOW clause and OVER name round-trip through the formatter, and
// the parser resolves each reference to its named window.
func TestWindowClauseRoundTrip(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"select a, SUM(b) over w as s from t window w as (partition by a order by ts rows between 10 preceding and current row)",
			"SELECT a, SUM(b) OVER w AS s FROM t WINDOW w AS (PARTITION BY a ORDER BY ts ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)"},
		{"SELECT COUNT(*) OVER w1, MAX(b) OVER (ORDER BY ts), MIN(b) OVER `w 2` FROM t WHERE a > 1 GROUP BY a, b, ts HAVING a < 5 WINDOW w1 AS (ORDER BY ts), `w 2` AS () ORDER BY a",
			"SELECT COUNT(*) OVER w1, MAX(b) OVER (ORDER BY ts), MIN(b) OVER `w 2` FROM t WHERE a > 1 GROUP BY a, b, ts HAVING a < 5 WINDOW w1 AS (ORDER BY ts), `w 2` AS () ORDER BY a"},
		// ORDER BY may use the window of the SELECT it orders.
		{"SELECT a FROM t WINDOW w AS (PARTITION BY a ORDER BY ts) ORDER BY COUNT(*) OVER w",
			"SELECT a FROM t WINDOW w AS (PARTITION BY a ORDER BY ts) ORDER BY COUNT(*) OVER w"},
		// A subquery has its own WINDOW clause, and an outer w is not
		// the inner one.
		{"SELECT x, COUNT(*) OVER w FROM (SELECT a AS x, ts, SUM(b) OVER w AS s FROM t WINDOW w AS (PARTITION BY a ORDER BY ts)) WINDOW w AS (ORDER BY ts)",
			"SELECT x, COUNT(*) OVER w FROM (SELECT a AS x, ts, SUM(b) OVER w AS s FROM t WINDOW w AS (PARTITION BY a ORDER BY ts)) WINDOW w AS (ORDER BY ts)"},
	} {
		if got := canon(t, tc.src); got != tc.want {
			t.Errorf("Format(Parse(%q))\n got %s\nwant %s", tc.src, got, tc.want)
		}
	}

	s, err := Parse("SELECT SUM(b) OVER W FROM (SELECT COUNT(*) OVER w AS n, b, ts FROM t WINDOW w AS (PARTITION BY b ORDER BY ts)) WINDOW w AS (ORDER BY ts ROWS 2 PRECEDING)")
	if err != nil {
		t.Fatal(err)
	}
	outer := s.Statements[0].(*Query).Body.(*Select)
	if len(outer.Windows) != 1 || outer.Windows[0].Name.Name != "w" {
		t.Fatalf("outer windows: %+v", outer.Windows)
	}
	ref := outer.Items[0].Expr.(*FuncCall).Over
	def := outer.Windows[0].Spec
	if ref.Name == nil || ref.Name.Name != "W" || ref.Frame != def.Frame || len(ref.OrderBy) != 1 || ref.OrderBy[0] != def.OrderBy[0] || ref.PartitionBy != nil {
		t.Errorf("outer OVER W not resolved to the outer WINDOW w: %s", Format(&WindowSpec{PartitionBy: ref.PartitionBy, OrderBy: ref.OrderBy, Frame: ref.Frame}))
	}
	inner := outer.From.(*DerivedTable).Query.Body.(*Select)
	iref := inner.Items[0].Expr.(*FuncCall).Over
	if len(iref.PartitionBy) != 1 || Format(iref.PartitionBy[0]) != "b" || iref.Frame != nil {
		t.Errorf("inner OVER w not resolved to the inner WINDOW w: %s", Format(&WindowSpec{PartitionBy: iref.PartitionBy, OrderBy: iref.OrderBy, Frame: iref.Frame}))
	}
	if got := Format(outer.Windows[0]); got != "w AS (ORDER BY ts ROWS 2 PRECEDING)" {
		t.Errorf("Format(NamedWindow) = %s", got)
	}
}

// Parse errors of the WINDOW clause and OVER name, at their position.
func TestWindowClauseParseErrors(t *testing.T) {
	for _, tc := range []struct {
		src       string
		pos       Pos
		msg, hint string
	}{
		{"SELECT COUNT(*) OVER v FROM t WINDOW w AS (ORDER BY ts)", Pos{1, 22}, "window v is not defined", "defines w"},
		{"SELECT a FROM t WINDOW w AS (ORDER BY ts) ORDER BY COUNT(*) OVER v", Pos{1, 66}, "window v is not defined", "defines w"},
		{"SELECT a FROM t ORDER BY COUNT(*) OVER v", Pos{1, 40}, "window v is not defined", "WINDOW v AS"},
		// The inner SELECT does not see the outer WINDOW clause.
		{"SELECT * FROM (SELECT COUNT(*) OVER w FROM t) WINDOW w AS (ORDER BY ts)", Pos{1, 37}, "window w is not defined", "WINDOW w AS"},
		{"SELECT a FROM t WINDOW w AS (ORDER BY ts), W AS ()", Pos{1, 44}, "window W is defined twice", ""},
		{"SELECT a FROM t WINDOW w (ORDER BY ts)", Pos{1, 26}, "expected AS", ""},
		{"SELECT a FROM t WINDOW w AS ts", Pos{1, 29}, `expected "("`, ""},
		{"SELECT a FROM t WINDOW AS (ORDER BY ts)", Pos{1, 24}, "window name", ""},
		{"SELECT a FROM t WINDOW w AS (v ROWS 2 PRECEDING)", Pos{1, 30}, `expected ")"`, "refining a named window"},
		{"SELECT a FROM t WINDOW w AS (ORDER BY ts) WHERE a > 1", Pos{1, 43}, "WHERE", ""},
		{"SELECT COUNT(*) OVER 1 FROM t", Pos{1, 22}, `after OVER`, ""},
	} {
		_, err := Parse(tc.src)
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("%s: err = %v, want a parse error", tc.src, err)
			continue
		}
		if pe.Pos != tc.pos || !strings.Contains(pe.Error(), tc.msg) || !strings.Contains(pe.Hint, tc.hint) {
			t.Errorf("%s:\n%v (at %v, hint %q)\nwant at %v, containing %q, hint containing %q", tc.src, err, pe.Pos, pe.Hint, tc.pos, tc.msg, tc.hint)
		}
	}
}

// OVER w plans as the inline window does: over the Nexmark bids, both
// give the rows of a plain Go reference (COUNT(*) over ROWS 10 PRECEDING,
// output without what tells peers of equal time apart; SUM and COUNT over
// a RANGE frame, where peers get the same results), at parallelism 1
// and 2.
func TestWindowClauseNexmark(t *testing.T) {
	bids, _ := readNexmark(t)
	byAuction := map[int64][]testBid{}
	for _, b := range bids {
		byAuction[b.auction] = append(byAuction[b.auction], b)
	}
	// COUNT(*) over ROWS 10 PRECEDING does not depend on the order of
	// peers when the output is (auction, time, count).
	var wantRows []string
	for _, bs := range byAuction {
		sort.SliceStable(bs, func(i, j int) bool { return bs[i].ts.Before(bs[j].ts) })
		for i, b := range bs {
			wantRows = append(wantRows, fmtRow(b.auction, b.ts.UTC(), int64(min(i+1, 11))))
		}
	}
	// SUM and COUNT over RANGE 2 seconds: peers get the same results.
	var wantRange []string
	for _, b := range bids {
		var n, s int64
		for _, x := range byAuction[b.auction] {
			if x.ts.After(b.ts) || x.ts.Before(b.ts.Add(-2e9)) {
				continue
			}
			n++
			s += x.price
		}
		wantRange = append(wantRange, fmtRow(b.auction, b.price, s, n))
	}
	for _, par := range []int{1, 2} {
		for _, q := range []string{
			`SELECT auction, dateTime, COUNT(*) OVER w AS n FROM bid
WINDOW w AS (PARTITION BY auction ORDER BY dateTime ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)`,
			`SELECT auction, dateTime, COUNT(*) OVER (PARTITION BY auction ORDER BY dateTime ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS n FROM bid`,
		} {
			got := runScript(t, `
CREATE TABLE wc_rows (auction BIGINT, dt TIMESTAMP(3), n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO wc_rows `+q+`;`, "wc_rows", par)
			compareRows(t, got, wantRows)
		}
		// Named and inline windows mixed, and two names for one window.
		for _, q := range []string{
			`SELECT auction, price, SUM(price) OVER w AS s, COUNT(*) OVER w AS n FROM bid
WINDOW w AS (PARTITION BY auction ORDER BY dateTime RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW)`,
			`SELECT auction, price, SUM(price) OVER w AS s,
    COUNT(*) OVER (PARTITION BY auction ORDER BY dateTime RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW) AS n
FROM bid
WINDOW w AS (PARTITION BY auction ORDER BY dateTime RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW)`,
			`SELECT auction, price, SUM(price) OVER w1 AS s, COUNT(*) OVER w2 AS n FROM bid
WINDOW w1 AS (PARTITION BY auction ORDER BY dateTime RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW),
    w2 AS (PARTITION BY auction ORDER BY dateTime RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW)`,
		} {
			got := runScript(t, `
CREATE TABLE wc_range (auction BIGINT, price BIGINT, s BIGINT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO wc_range `+q+`;`, "wc_range", par)
			compareRows(t, got, wantRange)
		}
	}
}

// --explain names the window OVER w stands for.
func TestWindowClauseExplain(t *testing.T) {
	job, err := Compile(context.Background(), queries.SQLDDL(testEvents, 4, 3)+`
CREATE TABLE out (auction BIGINT, s BIGINT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out
SELECT auction, SUM(price) OVER w AS s, COUNT(*) OVER w AS n
FROM bid
WINDOW w AS (PARTITION BY auction ORDER BY dateTime ROWS BETWEEN 10 PRECEDING AND CURRENT ROW);`,
		Options{Parallelism: 2, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"over aggregate OVER w (PARTITION BY auction ORDER BY dateTime ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)", "keyed by auction"} {
		if !strings.Contains(job.Plan, want) {
			t.Errorf("the plan has no %q:\n%s", want, job.Plan)
		}
	}
}

// Planning errors with named windows: windows that differ follow the one
// window rule, and errors in a named window point into the WINDOW clause.
func TestWindowClausePlanErrors(t *testing.T) {
	const sink = "CREATE TABLE out (a BIGINT, s BIGINT, n BIGINT) WITH ('connector' = 'blackhole');\nINSERT INTO out "
	for _, tc := range []struct {
		query, want string
	}{
		{`SELECT auction, SUM(price) OVER w, COUNT(*) OVER v FROM bid WINDOW w AS (PARTITION BY auction ORDER BY dateTime ROWS BETWEEN 10 PRECEDING AND CURRENT ROW), v AS (PARTITION BY auction ORDER BY dateTime ROWS BETWEEN 5 PRECEDING AND CURRENT ROW)`,
			"OVER v (PARTITION BY auction ORDER BY dateTime ROWS BETWEEN 5 PRECEDING AND CURRENT ROW) differs from OVER w (PARTITION BY auction ORDER BY dateTime ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)"},
		{`SELECT auction, SUM(price) OVER w, COUNT(*) OVER (PARTITION BY bidder ORDER BY dateTime) FROM bid WINDOW w AS (PARTITION BY auction ORDER BY dateTime)`,
			"must use the same window"},
		{`SELECT auction, SUM(price) OVER w, 1 FROM bid WINDOW w AS (PARTITION BY auction ORDER BY price)`, "must be an event-time attribute"},
		{`SELECT auction, SUM(price) OVER w, 1 FROM bid WINDOW w AS (PARTITION BY auction ORDER BY dateTime ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)`,
			"must end at CURRENT ROW"},
	} {
		err := overCompileError(t, sink+tc.query+";")
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n%v\nwant an error containing %q", tc.query, err, tc.want)
		}
	}
}

// A hand-built tree whose OVER name the parser did not resolve: the
// planner resolves it against the SELECT's WINDOW clause, and refuses a
// name it does not define.
func TestWindowClausePlannerResolves(t *testing.T) {
	s, err := Parse(`SELECT auction, COUNT(*) OVER (PARTITION BY auction ORDER BY dateTime) AS n FROM bid`)
	if err != nil {
		t.Fatal(err)
	}
	sel := s.Statements[0].(*Query).Body.(*Select)
	call := sel.Items[1].Expr.(*FuncCall)
	inline := call.Over
	call.Over = &WindowSpec{Pos: inline.Pos, Name: &Ident{Name: "w"}}
	sel.Windows = []*NamedWindow{{Name: &Ident{Name: "w"}, Spec: inline}}
	if ws, err := overWindow(sel, call.Over); err != nil || ws != inline {
		t.Errorf("overWindow = %v, %v; want the named window", ws, err)
	}
	sel.Windows = nil
	if _, err := overWindow(sel, call.Over); err == nil || !strings.Contains(err.Error(), "window w is not defined") {
		t.Errorf("overWindow with no WINDOW clause: %v, want window w is not defined", err)
	}
}
