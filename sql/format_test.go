package sql

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// diffIgnoringPos compares two syntax trees field by field, ignoring
// positions, and returns the path of the first difference ("" when
// equal). Nil and empty slices are equal.
func diffIgnoringPos(a, b any) string {
	var path []string // built only on a difference, innermost first
	if !diffValues(reflect.ValueOf(a), reflect.ValueOf(b), &path) {
		return ""
	}
	slices.Reverse(path)
	return strings.Join(path, "")
}

var posType = reflect.TypeOf(Pos{})

// diffValues reports whether a and b differ, appending to path the steps
// to the difference, from the innermost.
func diffValues(a, b reflect.Value, path *[]string) bool {
	if a.IsValid() != b.IsValid() {
		*path = append(*path, ": one side missing")
		return true
	}
	if !a.IsValid() {
		return false
	}
	if a.Type() != b.Type() {
		*path = append(*path, fmt.Sprintf(": %s vs %s", a.Type(), b.Type()))
		return true
	}
	if a.Type() == posType {
		return false
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				*path = append(*path, ": nil vs non-nil")
				return true
			}
			return false
		}
		return diffValues(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if diffValues(a.Field(i), b.Field(i), path) {
				*path = append(*path, "."+a.Type().Field(i).Name)
				return true
			}
		}
		return false
	case reflect.Slice:
		if a.Len() != b.Len() {
			*path = append(*path, fmt.Sprintf(": length %d vs %d", a.Len(), b.Len()))
			return true
		}
		for i := 0; i < a.Len(); i++ {
			if diffValues(a.Index(i), b.Index(i), path) {
				*path = append(*path, fmt.Sprintf("[%d]", i))
				return true
			}
		}
		return false
	case reflect.String:
		if a.String() != b.String() {
			*path = append(*path, fmt.Sprintf(": %q vs %q", a.String(), b.String()))
			return true
		}
		return false
	default:
		if a.Interface() != b.Interface() {
			*path = append(*path, fmt.Sprintf(": %v vs %v", a.Interface(), b.Interface()))
			return true
		}
		return false
	}
}

// roundTrip parses src, formats it, parses the canonical form again and
// checks that the tree and the canonical form are unchanged. It returns
// the first tree and its canonical form.
func roundTrip(t testing.TB, src string) (*Script, string) {
	t.Helper()
	s, err := Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	out := Format(s)
	s2, err := Parse(out)
	if err != nil {
		t.Fatalf("canonical form does not parse: %v\ninput:  %s\noutput: %s", err, src, out)
	}
	if d := diffIgnoringPos(s, s2); d != "" {
		t.Fatalf("tree changed by a round trip at %s\ninput:  %s\noutput: %s", d, src, out)
	}
	if out2 := Format(s2); out2 != out {
		t.Fatalf("canonical form not stable:\n%s\n%s", out, out2)
	}
	return s, out
}

// canon returns the canonical form of a one-statement script, without the
// trailing ";\n", after checking its round trip.
func canon(t testing.TB, src string) string {
	t.Helper()
	s, out := roundTrip(t, src)
	if len(s.Statements) != 1 {
		t.Fatalf("%q: %d statements, want 1", src, len(s.Statements))
	}
	return strings.TrimSuffix(out, ";\n")
}

func TestDiffIgnoringPos(t *testing.T) {
	a := &Ref{Pos: Pos{1, 1}, Parts: []*Ident{{Pos: Pos{1, 1}, Name: "a"}}}
	b := &Ref{Pos: Pos{2, 5}, Parts: []*Ident{{Pos: Pos{3, 3}, Name: "a"}}}
	if d := diffIgnoringPos(a, b); d != "" {
		t.Errorf("positions compared: %s", d)
	}
	c := &Ref{Parts: []*Ident{{Name: "a", Quoted: true}}}
	if d := diffIgnoringPos(a, c); d == "" {
		t.Error("Quoted not compared")
	}
}

// TestFormatCanonical checks the canonical form of constructs whose
// spelling Format normalises.
func TestFormatCanonical(t *testing.T) {
	for _, tt := range canonicalCases {
		if got := canon(t, tt.src); got != tt.want {
			t.Errorf("Format(Parse(%q))\n got %s\nwant %s", tt.src, got, tt.want)
		}
	}
}

// canonicalCases are statements and their canonical forms (also fuzzing
// seeds).
var canonicalCases = []struct{ src, want string }{
	{"select a,b from t", "SELECT a, b FROM t"},
	{"SELECT a x FROM t y", "SELECT a AS x FROM t AS y"},
	{"SELECT a FROM t WHERE a != 1", "SELECT a FROM t WHERE a <> 1"},
	{"SELECT * FROM t FETCH FIRST 5 ROWS ONLY", "SELECT * FROM t LIMIT 5"},
	{"SELECT * FROM t OFFSET 2 ROWS FETCH NEXT 3 ROWS ONLY", "SELECT * FROM t LIMIT 3 OFFSET 2"},
	{"SET table.exec.mini-batch.enabled = true", "SET 'table.exec.mini-batch.enabled' = 'true'"},
	{"SET 'a' = 'it''s'", "SET 'a' = 'it''s'"},
	{"SELECT CAST(a AS INTEGER), CAST(b AS NUMERIC(10,2)), CAST(c AS DOUBLE PRECISION) FROM t",
		"SELECT CAST(a AS INT), CAST(b AS DECIMAL(10, 2)), CAST(c AS DOUBLE) FROM t"},
	{"SELECT CAST(a AS TIMESTAMP(3) WITH LOCAL TIME ZONE), CAST(a AS TIMESTAMP WITHOUT TIME ZONE) FROM t",
		"SELECT CAST(a AS TIMESTAMP_LTZ(3)), CAST(a AS TIMESTAMP) FROM t"},
	{"SELECT SUBSTRING(s FROM 2 FOR 3), SUBSTRING(s FROM 2) FROM t", "SELECT SUBSTRING(s, 2, 3), SUBSTRING(s, 2) FROM t"},
	{"SELECT INTERVAL '10' SECONDS, INTERVAL 5 MINUTE FROM t", "SELECT INTERVAL '10' SECOND, INTERVAL '5' MINUTE FROM t"},
	{"SELECT * FROM TABLE(TUMBLE(DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL '10' MINUTES))",
		"SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' MINUTE))"},
	{"BEGIN STATEMENT SET; INSERT INTO a SELECT * FROM b; END", "EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT * FROM b; END"},
	{"SELECT a FROM t ORDER BY a ASC", "SELECT a FROM t ORDER BY a"},
	{"SELECT ALL a FROM t", "SELECT a FROM t"},
	{"SELECT a FROM t GROUP BY ()", "SELECT a FROM t GROUP BY GROUPING SETS (())"},
	{"SELECT - - 1, -(-1), - -a, +-+a FROM t", "SELECT - -1, - -1, - -a, + - +a FROM t"},
	{"SELECT (((a))) FROM ((t))", "SELECT a FROM t"},
	{"((SELECT a FROM t))", "SELECT a FROM t"},
	{"SELECT a FROM t a (x, y)", "SELECT a FROM t AS a (x, y)"},
	{"SELECT TRIM(BOTH FROM s), TRIM(s), TRIM(LEADING 'x' FROM s) FROM t", "SELECT TRIM(s), TRIM(s), TRIM(LEADING 'x' FROM s) FROM t"},
	{"SELECT a FROM t WHERE a BETWEEN ASYMMETRIC 1 AND 2", "SELECT a FROM t WHERE a BETWEEN 1 AND 2"},
	{"SELECT ROW(1, 2), ARRAY[1, 2], MAP['a', 1] FROM t", "SELECT ROW(1, 2), ARRAY[1, 2], MAP['a', 1] FROM t"},
	{"VALUES ROW(1, 'a'), (2, 'b')", "VALUES (1, 'a'), (2, 'b')"},
	{"CREATE TABLE t (a INT, b STRING ARRAY, c ROW(x INT, y STRING COMMENT 'why')) WITH ('connector' = 'x')",
		"CREATE TABLE t (a INT, b ARRAY<STRING>, c ROW<x INT, y STRING 'why'>) WITH ('connector' = 'x')"},
	{"CREATE TABLE t (id BIGINT PRIMARY KEY NOT ENFORCED, v STRING) WITH ('connector' = 'x')",
		"CREATE TABLE t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'x')"},
	{"INSERT INTO t (a, b) (SELECT a, b FROM u)", "INSERT INTO t (a, b) SELECT a, b FROM u"},
	{"SELECT (1).x, (1.5).y, ('a').z, (array)[1], `map`['k'], (t).a.b FROM t", "SELECT (1).x, (1.5).y, 'a'.z, (array)[1], `map`['k'], t.a.b FROM t"},
	{"SELECT date, date(x), timestamp, `select`, time FROM t", "SELECT date, date(x), timestamp, `select`, time FROM t"},
	{"SELECT a FROM (t) AS x JOIN (u) ON TRUE", "SELECT a FROM t AS x JOIN u ON TRUE"},
	{"SELECT a FROM t AS qualify", "SELECT a FROM t AS qualify"},
	{"SELECT /*+ */ a FROM t /*+*/", "SELECT a FROM t"},
	{"SELECT POSITION((a IN (1))), POSITION((CASE WHEN a IN (1) THEN 1 END)), POSITION((a IN (1)), b, c) OVER () FROM t",
		"SELECT POSITION((a IN (1))), POSITION(CASE WHEN a IN (1) THEN 1 END), POSITION((a IN (1)), b, c) OVER () FROM t"},
	{"SELECT SUBSTRING((a IS DISTINCT FROM b)), SUBSTRING(a IS DISTINCT FROM b FROM 2), FLOOR((INTERVAL '1 00:00:00' DAY TO SECOND)) FROM t",
		"SELECT SUBSTRING(a IS DISTINCT FROM b), SUBSTRING(a IS DISTINCT FROM b, 2), FLOOR(INTERVAL '1 00:00:00' DAY TO SECOND) FROM t"},
	{"SELECT SUBSTRING(SUBSTRING(s FROM 1) FROM 2), POSITION(a || b IN c), POSITION(x = 1), FLOOR(x, y), OVERLAY(s, t) FROM t",
		"SELECT SUBSTRING(SUBSTRING(s, 1), 2), POSITION(a || b IN c), POSITION(x = 1), FLOOR(x, y), OVERLAY(s, t) FROM t"},
	{"SELECT POSITION((x IN (1)) AND y), POSITION((NOT x)), POSITION(x NOT IN (1)), POSITION(a AND NOT b), POSITION((x IN (1)) = y) FROM t",
		"SELECT POSITION((x IN (1) AND y)), POSITION((NOT x)), POSITION(x NOT IN (1)), POSITION(a AND NOT b), POSITION((x IN (1) = y)) FROM t"},
	{"SELECT SUBSTRING(DISTINCT s), SUBSTRING(*), FLOOR(), POSITION(x => 1), FLOOR(TABLE t) FROM t",
		"SELECT SUBSTRING(DISTINCT s), SUBSTRING(*), FLOOR(), POSITION(x => 1), FLOOR(TABLE t) FROM t"},
	{"SELECT OVERLAY(x => 1, b, c), POSITION(a, TABLE t), POSITION(x => 1, b) FROM t",
		"SELECT OVERLAY(x => 1, b, c), POSITION(a, TABLE t), POSITION(x => 1, b) FROM t"},
	{"SELECT sum(a) OVER (ROWS BETWEEN (unbounded) PRECEDING AND (UNBOUNDED) FOLLOWING) FROM t",
		"SELECT sum(a) OVER (ROWS BETWEEN (unbounded) PRECEDING AND (UNBOUNDED) FOLLOWING) FROM t"},
	{"SELECT FLOOR((INTERVAL '1' DAY) TO HOUR), CEIL((x + INTERVAL '1' DAY) TO DAY), FLOOR((INTERVAL '1 2' DAY TO HOUR) TO DAY) FROM t",
		"SELECT FLOOR((INTERVAL '1' DAY) TO HOUR), CEIL((x + INTERVAL '1' DAY) TO DAY), FLOOR(INTERVAL '1 2' DAY TO HOUR TO DAY) FROM t"},
	{"SELECT TIMESTAMPADD((day), 1, ts), TIMESTAMPADD(DAY, 1, ts), TIMESTAMPDIFF(`second`, a, b), TIMESTAMPADD((day) % 2) FROM t",
		"SELECT TIMESTAMPADD((day), 1, ts), TIMESTAMPADD(DAY, 1, ts), TIMESTAMPDIFF(`second`, a, b), TIMESTAMPADD(day % 2) FROM t"},
	{"SELECT a FROM t GROUP BY (ROLLUP(a)), (cube()), GROUPING SETS ((rollup), (rollup(b))), (ROLLUP(a) + 1), (cube(a).x IS NULL), rollup",
		"SELECT a FROM t GROUP BY (ROLLUP(a)), (cube()), GROUPING SETS ((rollup), (rollup(b))), (ROLLUP(a) + 1), (cube(a).x IS NULL), rollup"},
	{"SELECT a FROM t WHERE (NOT a) IS NULL AND (a = b) = c AND NOT (a = b)", "SELECT a FROM t WHERE (NOT a) IS NULL AND a = b = c AND NOT a = b"},
	{"SELECT POSITION('a' IN s), OVERLAY(s PLACING 'x' FROM 2 FOR 3), EXTRACT(DAY FROM ts), FLOOR(ts TO HOUR), CEIL(x) FROM t",
		"SELECT POSITION('a' IN s), OVERLAY(s PLACING 'x' FROM 2 FOR 3), EXTRACT(DAY FROM ts), FLOOR(ts TO HOUR), CEIL(x) FROM t"},
}

// TestFormatNodes formats nodes other than scripts.
func TestFormatNodes(t *testing.T) {
	e, err := ParseExpr("a+b*c")
	if err != nil {
		t.Fatal(err)
	}
	if got := Format(e); got != "a + b * c" {
		t.Errorf("expr: %s", got)
	}
	s := mustParseScript(t, "CREATE TABLE t (a INT NOT NULL COMMENT 'x', ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('k' = 'v')")
	ct := s.Statements[0].(*CreateTable)
	for _, tt := range []struct {
		n    Node
		want string
	}{
		{ct.Columns[0], "a INT NOT NULL COMMENT 'x'"},
		{ct.Columns[0].Type, "INT NOT NULL"},
		{ct.Watermark, "WATERMARK FOR ts AS ts"},
		{ct.Options[0], "'k' = 'v'"},
		{ct.Name, "t"},
		{s.Statements[0], "CREATE TABLE t (a INT NOT NULL COMMENT 'x', ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('k' = 'v')"},
	} {
		if got := Format(tt.n); got != tt.want {
			t.Errorf("Format(%T) = %q, want %q", tt.n, got, tt.want)
		}
	}
	if got := Format(s); got != Format(s.Statements[0])+";\n" {
		t.Errorf("script: %q", got)
	}
	if got := Format(&Script{}); got != "" {
		t.Errorf("empty script: %q", got)
	}
}

// TestFormatParenthesizes checks that trees the parser cannot build from
// unparenthesised text, built by hand, print with the parentheses they
// need.
func TestFormatParenthesizes(t *testing.T) {
	ref := func(n string) *Ref { return &Ref{Parts: []*Ident{{Name: n}}} }
	num := func(v string) *Literal { return &Literal{Kind: LitInteger, Value: v} }
	tests := []struct {
		e    Expr
		want string
	}{
		{&Binary{Op: OpSub, Left: ref("a"), Right: &Binary{Op: OpSub, Left: ref("b"), Right: ref("c")}}, "a - (b - c)"},
		{&Binary{Op: OpMul, Left: &Binary{Op: OpAdd, Left: ref("a"), Right: ref("b")}, Right: ref("c")}, "(a + b) * c"},
		{&Unary{Op: OpNot, Expr: &Binary{Op: OpAnd, Left: ref("a"), Right: ref("b")}}, "NOT (a AND b)"},
		{&Unary{Op: OpNeg, Expr: &Unary{Op: OpNeg, Expr: num("1")}}, "- -1"},
		{&FieldAccess{Expr: num("1"), Field: &Ident{Name: "x"}}, "(1).x"},
		{&Index{Expr: ref("array"), Index: num("1")}, "(array)[1]"},
		{&Between{Expr: ref("x"), Low: &Binary{Op: OpAnd, Left: ref("a"), Right: ref("b")}, High: ref("c")}, "x BETWEEN (a AND b) AND c"},
		{&Binary{Op: OpEq, Left: ref("a"), Right: &Binary{Op: OpEq, Left: ref("b"), Right: ref("c")}}, "a = (b = c)"},
	}
	for _, tt := range tests {
		got := Format(tt.e)
		if got != tt.want {
			t.Errorf("Format = %s, want %s", got, tt.want)
			continue
		}
		back, err := ParseExpr(got)
		if err != nil {
			t.Errorf("%s: %v", got, err)
			continue
		}
		if d := diffIgnoringPos(tt.e, back); d != "" {
			t.Errorf("%s parses to another tree: %s", got, d)
		}
	}
}

func mustParseScript(t testing.TB, src string) *Script {
	t.Helper()
	s, err := Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return s
}
