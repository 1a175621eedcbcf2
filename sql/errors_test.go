package sql

import (
	"errors"
	"strings"
	"testing"
)

// errorCases are malformed scripts with the position of their error, a
// part of its message and a part of its hint ("" for no hint expected).
var errorCases = []struct {
	name, src string
	pos       Pos
	msg, hint string
}{
	// Lexical errors point at the opening quote or comment.
	{"double-quoted string", `SELECT "name" FROM t`, Pos{1, 8}, `double quotes`, "single quotes for strings"},
	{"unterminated string", "SELECT a,\n  'abc FROM t", Pos{2, 3}, "unterminated string", "write '' for a '"},
	{"unterminated comment", "SELECT a /* comment FROM t", Pos{1, 10}, "unterminated comment", "*/"},
	{"unterminated quoted identifier", "SELECT `a FROM t", Pos{1, 8}, "unterminated quoted identifier", ""},
	{"unterminated hint", "SELECT * FROM t /*+ OPTIONS('a' = 'b')", Pos{1, 17}, "unterminated hint", "*/"},
	{"number glued to a name", "SELECT 1a FROM t", Pos{1, 8}, "malformed number 1a", "backticks"},
	{"tabs and wide runes count as one column", "SELECT\n\tä, \"x\" FROM t", Pos{2, 5}, "double quotes", ""},

	// Common mistakes with hints.
	{"missing comma between columns", "CREATE TABLE t (\n  a INT\n  b STRING\n) WITH ('connector' = 'x')", Pos{3, 3},
		`expected "," or ")", found "b"`, "comma missing"},
	{"unquoted option key", "CREATE TABLE t (a INT) WITH (connector = 'kafka')", Pos{1, 30}, "option key", "'connector' = 'kafka'"},
	{"unquoted option value", "CREATE TABLE t (a INT) WITH ('connector' = kafka)", Pos{1, 44}, "option value", "single quotes"},
	{"window function without TABLE()", "SELECT *\nFROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)", Pos{2, 6},
		"must be wrapped in TABLE(...)", "FROM TABLE(TUMBLE("},
	{"table function without TABLE()", "SELECT * FROM split(s)", Pos{1, 15}, "must be wrapped in TABLE(...)", "LATERAL TABLE(split(...))"},
	{"reserved word as column name", "CREATE TABLE t (from INT)", Pos{1, 17}, `found "from"`, "quote it with backticks: `from`"},
	{"reserved word in select", "SELECT order FROM t", Pos{1, 8}, "expected an expression", "`order`"},
	{"trailing comma in select", "SELECT a, FROM t", Pos{1, 11}, "expected an expression", "trailing comma"},
	{"trailing comma in columns", "CREATE TABLE t (a INT,)", Pos{1, 23}, "column definition", "trailing comma"},
	{"missing semicolon", "CREATE VIEW v AS SELECT 1\nINSERT INTO t SELECT 2", Pos{2, 1}, `expected ";"`, "semicolon"},
	{"typo in statement", "SELEC a FROM t", Pos{1, 1}, "expected a statement", "did you mean SELECT?"},
	{"== instead of =", "SELECT * FROM t WHERE a == 1", Pos{1, 25}, `"=="`, "single ="},
	{"string alias", "SELECT a AS 'x' FROM t", Pos{1, 13}, "expected alias", "backticks (`x`)"},
	{"unit inside the interval string", "SELECT INTERVAL '10 SECOND' FROM t", Pos{1, 29}, "expected a time unit", "INTERVAL '10' SECOND"},
	{"typo in type", "CREATE TABLE t (a BIGNT)", Pos{1, 19}, "unknown data type", "did you mean BIGINT?"},
	{"type of another dialect", "CREATE TABLE t (a TEXT)", Pos{1, 19}, "unknown data type", "use STRING"},
	{"primary key not enforced", "CREATE TABLE t (a INT, PRIMARY KEY (a))", Pos{1, 39}, "expected NOT ENFORCED", "PRIMARY KEY (a) NOT ENFORCED"},
	{"join without condition", "SELECT * FROM a JOIN b WHERE x", Pos{1, 24}, "expected ON or USING", "CROSS JOIN"},
	{"CAST with a comma", "SELECT CAST(a, INT) FROM t", Pos{1, 14}, "expected AS", "CAST(x AS type)"},
	{"CASE without END", "SELECT CASE WHEN a THEN b\nFROM t", Pos{2, 1}, "expected END", "starts at 1:8"},
	{"undefined named window", "SELECT COUNT(*) OVER w FROM t", Pos{1, 22}, `window w is not defined`, "WINDOW w AS ("},
	{"missing column separator", "SELECT a b c FROM t", Pos{1, 12}, `found "c"`, "missing"},

	// Unsupported statements, at the statement's start.
	{"create or replace function", "SET 'a' = 'b';\nCREATE OR REPLACE FUNCTION f AS 'com.x.F'", Pos{2, 1}, "CREATE OR REPLACE FUNCTION is not supported", "FUNCTION name AS 'identifier'"},
	{"create catalog", "CREATE CATALOG c WITH ('type' = 'iceberg')", Pos{1, 1}, "CREATE CATALOG is not supported", "no catalogs"},
	{"use catalog", "USE CATALOG c", Pos{1, 1}, "USE CATALOG is not supported", "no catalogs"},
	{"show", "SHOW TABLES", Pos{1, 1}, "SHOW TABLES is not supported", "remove it"},
	{"explain", "EXPLAIN SELECT 1", Pos{1, 1}, "EXPLAIN is not supported", ""},
	{"describe", "  DESCRIBE t", Pos{1, 3}, "DESCRIBE is not supported", ""},
	{"drop catalog", "SELECT a FROM t; DROP CATALOG c", Pos{1, 18}, "DROP CATALOG is not supported", ""},
	{"create table like", "CREATE TABLE t (a INT) WITH ('x' = 'y') LIKE u", Pos{1, 41}, "LIKE is not supported", "declare all columns"},
	{"create table as", "CREATE TABLE t WITH ('a' = 'b') AS SELECT 1", Pos{1, 33}, "AS SELECT is not supported", "INSERT INTO"},
	{"match_recognize", "SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY a)", Pos{1, 17}, "MATCH_RECOGNIZE is not supported", ""},
	{"window defined twice", "SELECT a FROM t GROUP BY a WINDOW w AS (PARTITION BY a), w AS ()", Pos{1, 58}, "window w is defined twice", ""},
	{"natural join", "SELECT * FROM t NATURAL JOIN u", Pos{1, 17}, "NATURAL JOIN", "USING"},
	{"timestamp with time zone", "CREATE TABLE t (a TIMESTAMP(3) WITH TIME ZONE)", Pos{1, 32}, "TIMESTAMP WITH TIME ZONE is not supported", "TIMESTAMP_LTZ"},
	{"unicode string", "SELECT U&'\\0041' FROM t", Pos{1, 8}, "Unicode escape strings", ""},
	{"parameter", "SELECT ? FROM t", Pos{1, 8}, "dynamic parameters", ""},

	// Other malformed input.
	{"unbalanced parenthesis", "SELECT (a + b FROM t", Pos{1, 15}, `expected ")", found "FROM"`, ""},
	{"unfinished insert", "INSERT INTO t", Pos{1, 14}, "found end of input", ""},
	{"unfinished subquery", "SELECT a FROM (SELECT b FROM u", Pos{1, 31}, `expected ")"`, ""},
	{"empty statement set", "BEGIN STATEMENT SET;\nEND;", Pos{1, 1}, "no INSERT statements", ""},
	{"select in statement set", "EXECUTE STATEMENT SET BEGIN SELECT 1; END", Pos{1, 29}, "expected INSERT or END", "INSERT statements only"},
	{"unclosed statement set", "EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1;", Pos{1, 52}, "found end of input", "END"},
	{"bad date", "SELECT DATE '2024-13-01'", Pos{1, 13}, "invalid DATE literal", "yyyy-mm-dd"},
	{"bad interval", "SELECT INTERVAL '1:70' MINUTE TO SECOND", Pos{1, 17}, "seconds must be below 60", ""},
	{"bad interval unit", "SELECT INTERVAL '1' SECOND TO MINUTE", Pos{1, 21}, "not a valid interval unit", "MINUTE TO SECOND"},
	{"bad descriptor", "SELECT * FROM TABLE(TUMBLE(TABLE t, ts, INTERVAL '1' MINUTE))", Pos{1, 37}, "DESCRIPTOR(column)", "TUMBLE(TABLE t"},
	{"missing window argument", "SELECT * FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))", Pos{1, 21}, "missing its SIZE", "slide, size"},
	{"unknown window parameter", "SELECT * FROM TABLE(TUMBLE(DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), SIZ => INTERVAL '1' MINUTE))",
		Pos{1, 72}, "no parameter SIZ", "DATA, TIMECOL, SIZE, OFFSET"},
	{"decimal precision", "CREATE TABLE t (a DECIMAL(40, 2))", Pos{1, 26}, "between 1 and 38", ""},
	{"two watermarks", "CREATE TABLE t (a INT, WATERMARK FOR a AS a, WATERMARK FOR a AS a)", Pos{1, 46}, "at most one WATERMARK", ""},
	{"empty IN list", "SELECT a FROM t WHERE a IN ()", Pos{1, 29}, "at least one value", ""},
	{"duplicate option", "CREATE TABLE t (a INT) WITH ('k' = '1', 'k' = '2')", Pos{1, 41}, "duplicate option 'k'", ""},
	{"adjacent strings", "SELECT 'x' 'y' FROM t", Pos{1, 12}, `found "'y'"`, "||"},
	{"limit after offset", "SELECT * FROM t LIMIT 10 OFFSET 5 LIMIT 3", Pos{1, 35}, "LIMIT must come before OFFSET", ""},
	{"set without value", "SET", Pos{1, 1}, "SET needs a key and a value", "SET 'key' = 'value'"},
	{"row value", "SELECT (a, b) FROM t", Pos{1, 10}, `found ","`, "ROW(a, b)"},
	{"bad hint", "SELECT * FROM t /*+ OPTIONS('a') */", Pos{1, 32}, `expected "=", found ")"`, ""},
	{"unclosed hint options", "SELECT * FROM t /*+ OPTIONS('a' = 'b' */", Pos{1, 39}, `found "*/"`, ""},
	{"hint without name", "INSERT INTO t /*+ ('a' = 'b') */ SELECT 1", Pos{1, 19}, "expected hint name", ""},
	{"end alone", "SELECT 1;\nEND;", Pos{2, 1}, "END without BEGIN STATEMENT SET", ""},
	{"execute plan", "EXECUTE PLAN '/tmp/plan.json'", Pos{1, 1}, "EXECUTE PLAN is not supported", "EXECUTE STATEMENT SET"},
	{"reset with value", "RESET a.b = 1", Pos{1, 11}, "RESET takes a key only", ""},
	{"qualify", "SELECT a FROM t QUALIFY ROW_NUMBER() OVER (ORDER BY a) = 1", Pos{1, 17}, "QUALIFY is not supported", "ROW_NUMBER()"},
	{"unknown type suggestion", "CREATE TABLE t (a VARCHR(3))", Pos{1, 19}, "unknown data type", "VARCHAR"},
}

func TestErrors(t *testing.T) {
	for _, tt := range errorCases {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.src)
			if err == nil {
				t.Fatalf("Parse(%q) succeeded", tt.src)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not an *Error", err)
			}
			if e.Pos != tt.pos {
				t.Errorf("at %v, want %v: %v", e.Pos, tt.pos, err)
			}
			if !strings.Contains(e.Msg, tt.msg) {
				t.Errorf("message %q does not contain %q", e.Msg, tt.msg)
			}
			if tt.hint != "" && !strings.Contains(e.Hint, tt.hint) {
				t.Errorf("hint %q does not contain %q", e.Hint, tt.hint)
			}
			if want := sourceLineOf(tt.src, tt.pos.Line); e.Src != want {
				t.Errorf("Src %q, want %q", e.Src, want)
			}
		})
	}
}

func sourceLineOf(src string, n int) string {
	return strings.Split(src, "\n")[n-1]
}

func TestErrorFormat(t *testing.T) {
	_, err := Parse("CREATE TABLE t (\n\tid BIGINT,, name STRING\n)")
	want := "line 2:12: expected column name, found \",\"\n" +
		"\tid BIGINT,, name STRING\n" +
		"\t          ^\n" +
		"hint: remove the extra comma"
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}

	_, err = Parse(`SELECT "x"`)
	want = "line 1:8: double quotes are not used in Flink SQL: found \"x\"\n" +
		"SELECT \"x\"\n" +
		"       ^\n" +
		"hint: use single quotes for strings ('text') and backticks for identifiers (`name`)"
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}

	// A long line is shown around the column.
	long := "SELECT " + strings.Repeat("a + ", 100) + "FROM"
	_, err = Parse(long)
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 || len([]rune(lines[1])) > maxShownLine+6 || !strings.HasPrefix(lines[1], "...") {
		t.Fatalf("long line: %q", lines)
	}
	caret := strings.Index(lines[2], "^")
	if lines[1][caret:caret+4] != "FROM" {
		t.Errorf("caret under %q", lines[1][caret:])
	}

	// The planner's errors have no source line yet.
	e := &Error{Pos: Pos{3, 4}, Msg: "unknown table x", Hint: "create it first"}
	if got := e.Error(); got != "line 3:4: unknown table x\nhint: create it first" {
		t.Errorf("without source: %q", got)
	}
}

// TestDeepNesting checks that deeply nested input is an error, not a
// stack overflow, and that nesting within the limit parses.
func TestDeepNesting(t *testing.T) {
	for _, src := range []string{
		"SELECT " + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000),
		"SELECT " + strings.Repeat("NOT ", 5000) + "a",
		"SELECT " + strings.Repeat("- ", 5000) + "1",
		"SELECT * FROM " + strings.Repeat("(", 5000) + "t",
		"SELECT " + strings.Repeat("f(", 5000) + "1",
		"SELECT CAST(a AS " + strings.Repeat("ARRAY<", 5000) + "INT",
		strings.Repeat("(", 5000) + "SELECT 1",
		"SELECT " + strings.Repeat("(SELECT ", 5000) + "1",
		"SELECT " + strings.Repeat("SUBSTRING(", 5000) + "s",
		"CREATE TABLE t (a INT" + strings.Repeat(" ARRAY", 5000) + ")",
	} {
		_, err := Parse(src)
		if err == nil || !strings.Contains(err.Error(), "nested too deeply") {
			t.Errorf("%.30q...: %.200v", src, err)
		}
	}
	src := "SELECT " + strings.Repeat("(", 50) + "1" + strings.Repeat(")", 50) + ", " + strings.Repeat("a + ", 3000) + "1"
	roundTrip(t, src)
}

// TestErrorsNeverPanic feeds prefixes of valid scripts, which end
// everywhere a statement can be cut, to the parser.
func TestErrorsNeverPanic(t *testing.T) {
	var srcs []string
	for _, s := range nexmarkScripts(t) {
		srcs = append(srcs, s)
	}
	for _, c := range statementCases {
		srcs = append(srcs, c.src)
	}
	for _, c := range queryCases {
		srcs = append(srcs, c.src)
	}
	for _, src := range srcs {
		toks, lerr := lex(src)
		if lerr != nil {
			t.Fatal(lerr)
		}
		for _, tok := range toks {
			prefix := src[:tok.off]
			if _, err := Parse(prefix); err != nil {
				var e *Error
				if !errors.As(err, &e) || !e.Pos.IsValid() {
					t.Fatalf("%q: %v", prefix, err)
				}
			}
		}
	}
}
