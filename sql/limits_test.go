package sql

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// limitsDDL declares a datagen source and a blackhole sink of one BIGINT
// column each, for the scripts of these tests.
const limitsDDL = "CREATE TABLE t (a BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '10');\n" +
	"CREATE TABLE o (x BIGINT) WITH ('connector' = 'blackhole');\n"

// chainScript is INSERT INTO o SELECT a op 1 op 1 ... FROM t with n
// operators.
func chainScript(n int, op string) string {
	var b strings.Builder
	b.WriteString(limitsDDL)
	b.WriteString("INSERT INTO o SELECT a")
	for range n {
		b.WriteString(" " + op + " 1")
	}
	b.WriteString(" FROM t;")
	return b.String()
}

// inChild runs the test called name in a child process when it is not
// the child already, so that a fatal error (a stack overflow is not a
// panic: it kills the process) fails this test instead of killing the
// whole test binary. It reports whether the caller is the child, which
// then does the test's work.
func inChild(t *testing.T, name string) bool {
	t.Helper()
	const env = "WEIR_SQL_LIMITS_CHILD"
	if os.Getenv(env) == name {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+name)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if len(out) > 4000 {
			out = out[:4000]
		}
		t.Fatalf("the child process failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "PASS") {
		t.Fatalf("the child process did not run the test:\n%s", out)
	}
	return false
}

// wantLimitError checks that err is an *Error at line:col whose message
// contains msg and whose hint says what to do.
func wantLimitError(t *testing.T, err error, line, col int, msg string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v (%T), want an *Error", err, err)
	}
	if e.Pos.Line != line || e.Pos.Col != col {
		t.Errorf("error at %s, want %d:%d: %v", e.Pos, line, col, e)
	}
	if !strings.Contains(e.Msg, msg) {
		t.Errorf("message %q does not contain %q", e.Msg, msg)
	}
	if e.Hint == "" {
		t.Errorf("no hint: %v", e)
	}
	if len(e.Error()) > 2000 {
		t.Errorf("the error is %d bytes long", len(e.Error()))
	}
}

// A chain of 500,000 terms (about 2 MB of SQL) used to overflow the
// stack of the recursive passes over its 500,000-deep tree: a fatal
// error, not a panic. It is an error at the start of the expression.
func TestHugeChainIsAnError(t *testing.T) {
	if !inChild(t, "TestHugeChainIsAnError") {
		return
	}
	src := chainScript(500_000, "+")
	_, err := Compile(context.Background(), src, Options{DryRun: true})
	wantLimitError(t, err, 3, 22, fmt.Sprintf("more than %d levels deep", maxExprDepth))
	_, err = Parse(src)
	wantLimitError(t, err, 3, 22, "too deep")
}

// A chain of 50,000 terms took about 7 s to plan (the kernels' String was
// quadratic); now it is rejected as too deep, quickly.
func TestLongChainIsAnError(t *testing.T) {
	_, err := Compile(context.Background(), chainScript(50_000, "*"), Options{DryRun: true})
	wantLimitError(t, err, 3, 22, "too deep")
}

// Chains within the limit compile: thousands of ANDs and ORs (generated
// filters) are ordinary SQL.
func TestChainsWithinTheLimitCompile(t *testing.T) {
	for _, op := range []string{"+", "||", "AND", "OR"} {
		n := maxExprDepth - 10
		src := chainScript(n, op)
		if op == "AND" || op == "OR" {
			var b strings.Builder
			b.WriteString(limitsDDL + "INSERT INTO o SELECT a FROM t WHERE a = 0")
			for i := range n {
				fmt.Fprintf(&b, " %s a = %d", op, i+1)
			}
			src = b.String()
		} else if op == "||" {
			src = strings.Replace(src, "SELECT a", "SELECT CHAR_LENGTH(CAST(a AS STRING)", 1)
			src = strings.Replace(src, "|| 1", "|| 'x'", -1)
			src = strings.Replace(src, " FROM t;", ") FROM t;", 1)
		}
		if _, err := Compile(context.Background(), src, Options{DryRun: true}); err != nil {
			t.Errorf("%s chain of %d: %.300v", op, n, err)
		}
	}
}

// Nesting is bounded before the parser's recursion runs out of stack:
// 100,000 parentheses are an error at the parenthesis past the limit.
func TestDeepParenthesesAreAnError(t *testing.T) {
	src := "SELECT " + strings.Repeat("(", 100_000) + "1" + strings.Repeat(")", 100_000) + " FROM t"
	_, err := Parse(src)
	wantLimitError(t, err, 1, 8+maxNesting, fmt.Sprintf("more than %d levels", maxNesting))
	_, err = Compile(context.Background(), limitsDDL+src, Options{DryRun: true})
	if err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Errorf("Compile: %.300v", err)
	}
}

// Each construct that nests can nest maxNesting levels and not one more:
// the limit counts levels as the user writes them, and the error points
// at the token that opens the level past the limit.
func TestNestingLimitIsExact(t *testing.T) {
	type form struct {
		name        string
		pre, post   string // around the levels
		open, close string // one level
		at          int    // the offset in open of the token that opens the level
		inner       string
	}
	forms := []form{
		{name: "parentheses", pre: "SELECT ", open: "(", inner: "1", close: ")"},
		{name: "calls", pre: "SELECT ", open: "ABS(", inner: "1", close: ")"},
		{name: "special calls", pre: "SELECT ", open: "SUBSTRING(", inner: "'x'", close: " FROM 1)"},
		{name: "CASE", pre: "SELECT ", open: "CASE WHEN a THEN ", inner: "1", close: " END"},
		{name: "CAST", pre: "SELECT ", open: "CAST(", inner: "1", close: " AS INT)"},
		{name: "NOT", pre: "SELECT ", open: "NOT ", inner: "a"},
		{name: "minus", pre: "SELECT ", open: "- ", inner: "1"},
		{name: "index", pre: "SELECT ", open: "a[", at: 1, inner: "1", close: "]"},
		{name: "ROW", pre: "SELECT ", open: "ROW(", inner: "1", close: ")"},
		{name: "scalar subqueries", pre: "SELECT ", open: "(SELECT ", inner: "1", close: ")"},
		{name: "IN subqueries", pre: "SELECT * FROM t WHERE ", open: "a IN (SELECT a FROM t WHERE ", at: 2, inner: "a", close: ")"},
		{name: "IN lists", pre: "SELECT ", open: "a IN (", at: 2, inner: "1", close: ")"},
		{name: "derived tables", pre: "SELECT * FROM ", open: "(SELECT * FROM ", inner: "t", close: ")"},
		{name: "parenthesised joins", pre: "SELECT * FROM ", open: "(", inner: "t", close: ")"},
		{name: "parenthesised queries", open: "(", inner: "SELECT 1", close: ")"},
		{name: "WITH", open: "WITH w AS (", at: 10, inner: "SELECT 1", close: ") SELECT * FROM w"},
		{name: "types", pre: "CREATE TABLE c (a ", open: "ARRAY<", inner: "INT", close: ">", post: ")"},
		{name: "row types", pre: "CREATE TABLE c (a ", open: "ROW<f ", at: 0, inner: "INT", close: ">", post: ")"},
		// INT ARRAY ARRAY counts its innermost type first, so the error
		// points at the last level within the limit, a word early.
		{name: "postfix types", pre: "CREATE TABLE c (a INT", open: " ARRAY", at: 1 - len(" ARRAY"), post: ")"},
	}
	for _, f := range forms {
		script := func(n int) string {
			return f.pre + strings.Repeat(f.open, n) + f.inner + strings.Repeat(f.close, n) + f.post
		}
		if _, err := Parse(script(maxNesting)); err != nil {
			t.Errorf("%s: %d levels: %.300v", f.name, maxNesting, err)
		}
		_, err := Parse(script(maxNesting + 1))
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(e.Msg, "nested too deeply") {
			t.Errorf("%s: %d levels: %.300v", f.name, maxNesting+1, err)
			continue
		}
		if col := len(f.pre) + maxNesting*len(f.open) + f.at + 1; e.Pos.Line != 1 || e.Pos.Col != col {
			t.Errorf("%s: the error is at %s, want 1:%d", f.name, e.Pos, col)
		}
	}
}

// The statement-level chains are bounded as expressions are: a UNION ALL
// of many queries and a FROM clause of many joins.
func TestLongQueryChainsAreAnError(t *testing.T) {
	for _, c := range []struct{ name, first, each string }{
		{"union", "SELECT 1", " UNION ALL SELECT 1"},
		{"joins", "SELECT * FROM t", " CROSS JOIN t"},
	} {
		src := c.first + strings.Repeat(c.each, maxExprDepth+1)
		_, err := Parse(src)
		if err == nil || !strings.Contains(err.Error(), "too deep") {
			t.Errorf("%s: %.300v", c.name, err)
		}
		if _, err := Parse(c.first + strings.Repeat(c.each, 1000)); err != nil {
			t.Errorf("%s of 1000: %.300v", c.name, err)
		}
	}
}

// Long flat lists are not nesting: an IN list of 100,000 values, a CASE
// of 10,000 WHENs and a call with 10,000 arguments compile.
func TestLongListsCompile(t *testing.T) {
	var in, cs, args strings.Builder
	for i := range 100_000 {
		if i > 0 {
			in.WriteString(", ")
		}
		fmt.Fprint(&in, i)
	}
	for i := range 10_000 {
		fmt.Fprintf(&cs, " WHEN a = %d THEN %d", i, i)
		fmt.Fprintf(&args, ", %d", i)
	}
	for _, q := range []string{
		"SELECT a FROM t WHERE a IN (" + in.String() + ")",
		"SELECT CASE" + cs.String() + " END FROM t",
		"SELECT COALESCE(a" + args.String() + ") FROM t",
	} {
		if _, err := Compile(context.Background(), limitsDDL+"INSERT INTO o "+q+";", Options{DryRun: true}); err != nil {
			t.Errorf("%.60s...: %.300v", q, err)
		}
	}
}

// ParseExpr applies the same limits.
func TestParseExprLimits(t *testing.T) {
	_, err := ParseExpr("a" + strings.Repeat(" + 1", maxExprDepth+1))
	wantLimitError(t, err, 1, 1, "too deep")
	_, err = ParseExpr(strings.Repeat("(", maxNesting+1) + "1" + strings.Repeat(")", maxNesting+1))
	wantLimitError(t, err, 1, maxNesting+1, "nested too deeply")
}

// Inspect does not recurse: it walks a tree deeper than any parser output
// (built by hand) without running out of stack, in source order.
func TestInspectDeepTree(t *testing.T) {
	var e Expr = &Ref{Parts: []*Ident{{Name: "a"}}}
	const n = 1_000_000
	for range n {
		e = &Binary{Op: OpAdd, Left: e, Right: &Literal{Kind: LitInteger, Value: "1"}}
	}
	nodes, first := 0, ""
	Inspect(e, func(x Node) bool {
		nodes++
		if id, ok := x.(*Ident); ok && first == "" {
			first = id.Name
		}
		return true
	})
	if nodes != 2*n+2 || first != "a" {
		t.Errorf("visited %d nodes (want %d), first identifier %q", nodes, 2*n+2, first)
	}
}
