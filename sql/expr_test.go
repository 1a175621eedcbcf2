package sql

import (
	"strings"
	"testing"
)

// sexpr renders an expression's structure as an S-expression, so that
// tests see the tree, not the canonical text's parentheses.
func sexpr(e Expr) string {
	list := func(head string, es ...Expr) string {
		parts := []string{head}
		for _, x := range es {
			if x == nil {
				continue
			}
			parts = append(parts, sexpr(x))
		}
		return "(" + strings.Join(parts, " ") + ")"
	}
	not := func(b bool) string {
		if b {
			return "NOT "
		}
		return ""
	}
	switch n := e.(type) {
	case *Ref:
		return Format(n)
	case *Literal:
		return Format(n)
	case *Unary:
		return list(n.Op.String(), n.Expr)
	case *Binary:
		return list(n.Op.String(), n.Left, n.Right)
	case *Is:
		return list("IS "+not(n.Not)+n.Test.String(), n.Expr)
	case *Between:
		head := not(n.Not) + "BETWEEN"
		if n.Symmetric {
			head += " SYMMETRIC"
		}
		return list(head, n.Expr, n.Low, n.High)
	case *In:
		if n.Query != nil {
			return list(not(n.Not)+"IN", n.Expr) + "[" + Format(n.Query) + "]"
		}
		return list(not(n.Not)+"IN", append([]Expr{n.Expr}, n.List...)...)
	case *Like:
		head := not(n.Not) + "LIKE"
		if n.Similar {
			head = not(n.Not) + "SIMILAR"
		}
		return list(head, n.Expr, n.Pattern, n.Escape)
	case *FuncCall:
		if n.NoParens {
			return n.Name.String()
		}
		head := "call " + n.Name.String()
		if n.Star {
			head += " *"
		}
		if n.Distinct {
			head += " DISTINCT"
		}
		s := list(head, n.Args...)
		if n.Filter != nil {
			s += " filter " + sexpr(n.Filter)
		}
		if n.Over != nil {
			s += " over " + Format(n.Over)
		}
		return s
	case *FieldAccess:
		return list("field ."+n.Field.Name, n.Expr)
	case *Index:
		return list("index", n.Expr, n.Index)
	case *Case:
		parts := []Expr{n.Operand}
		for _, w := range n.Whens {
			parts = append(parts, w.Cond, w.Result)
		}
		return list("case", append(parts, n.Else)...)
	case *Cast:
		if n.Try {
			return list("try_cast "+Format(n.Type), n.Expr)
		}
		return list("cast "+Format(n.Type), n.Expr)
	case *NamedArg:
		return list(n.Name.Name+" =>", n.Value)
	}
	return Format(e)
}

// exprCases are expressions with their structure (also fuzzing seeds).
var exprCases = []struct{ src, want string }{
	// Precedence: OR < AND < NOT < comparison < + - || < * / % < unary < member.
	{"a OR b AND NOT c = d", "(OR a (AND b (NOT (= c d))))"},
	{"a AND b OR c AND d", "(OR (AND a b) (AND c d))"},
	{"NOT a AND b", "(AND (NOT a) b)"},
	{"NOT NOT a", "(NOT (NOT a))"},
	{"(a OR b) AND c", "(AND (OR a b) c)"},
	{"a + b * c - d", "(- (+ a (* b c)) d)"},
	{"a - b - c", "(- (- a b) c)"},
	{"a - (b - c)", "(- a (- b c))"},
	{"a % b / c * d", "(* (/ (% a b) c) d)"},
	{"a || b + c", "(+ (|| a b) c)"},
	{"a || b * c", "(|| a (* b c))"},
	{"-a * b", "(* (- a) b)"},
	{"- - a", "(- (- a))"},
	{"+a - -b", "(- (+ a) (- b))"},
	{"-a.b[1].c", "(- (field .c (index a.b 1)))"},
	{"a < b = c", "(= (< a b) c)"},
	{"a + 1 >= b * 2", "(>= (+ a 1) (* b 2))"},
	{"a <> b AND a != c", "(AND (<> a b) (<> a c))"},
	{"a <= b OR a > c", "(OR (<= a b) (> a c))"},
	{"NOT a IS NULL", "(NOT (IS NULL a))"},
	{"a = b IS NOT NULL", "(IS NOT NULL (= a b))"},
	{"a IS TRUE OR b IS NOT FALSE OR c IS UNKNOWN", "(OR (OR (IS TRUE a) (IS NOT FALSE b)) (IS UNKNOWN c))"},
	{"a IS DISTINCT FROM b + 1", "(IS DISTINCT FROM a (+ b 1))"},
	{"a IS NOT DISTINCT FROM b", "(IS NOT DISTINCT FROM a b)"},
	{"x BETWEEN 1 AND 2 AND y", "(AND (BETWEEN x 1 2) y)"},
	{"x NOT BETWEEN a + 1 AND b * 2", "(NOT BETWEEN x (+ a 1) (* b 2))"},
	{"x BETWEEN SYMMETRIC 2 AND 1", "(BETWEEN SYMMETRIC x 2 1)"},
	{"x BETWEEN ASYMMETRIC 1 AND 2", "(BETWEEN x 1 2)"},
	{"a IN (1, 2) = TRUE", "(= (IN a 1 2) TRUE)"},
	{"a NOT IN ('x')", "(NOT IN a 'x')"},
	{"a IN (SELECT b FROM t)", "(IN a)[SELECT b FROM t]"},
	{"a NOT IN ((SELECT b FROM t))", "(NOT IN a)[SELECT b FROM t]"},
	{"a IN ((SELECT 1), 2)", "(IN a (SELECT 1) 2)"},
	{"s LIKE 'a%' ESCAPE '\\' OR s NOT LIKE 'b%'", "(OR (LIKE s 'a%' '\\') (NOT LIKE s 'b%'))"},
	{"s SIMILAR TO 'a|b' AND s NOT SIMILAR TO 'c'", "(AND (SIMILAR s 'a|b') (NOT SIMILAR s 'c'))"},
	{"s LIKE 'a' || '%'", "(LIKE s (|| 'a' '%'))"},
	{"NOT EXISTS (SELECT 1) AND EXISTS (SELECT 2)", "(AND (NOT EXISTS (SELECT 1)) EXISTS (SELECT 2))"},
	{"CASE WHEN a THEN b END || 'x'", "(|| (case a b) 'x')"},

	// Literals.
	{"1", "1"}, {"1.5", "1.5"}, {".5", ".5"}, {"1.", "1."}, {"1e3", "1e3"}, {"2.5E-2", "2.5E-2"},
	{"'it''s'", "'it''s'"}, {"''", "''"}, {"X'0aFF'", "X'0aFF'"}, {"N'text'", "'text'"},
	{"TRUE", "TRUE"}, {"false", "FALSE"}, {"NULL", "NULL"}, {"UNKNOWN", "UNKNOWN"},
	{"DATE '2024-01-01'", "DATE '2024-01-01'"}, {"TIME '12:30:00.5'", "TIME '12:30:00.5'"},
	{"TIMESTAMP '2024-01-01 00:00:00.000'", "TIMESTAMP '2024-01-01 00:00:00.000'"},
	{"INTERVAL '10' SECOND", "INTERVAL '10' SECOND"},
	{"INTERVAL '1:30' MINUTE TO SECOND", "INTERVAL '1:30' MINUTE TO SECOND"},
	{"INTERVAL '2' SECOND(3)", "INTERVAL '2' SECOND(3)"},
	{"INTERVAL '2.5' SECOND(2, 3)", "INTERVAL '2.5' SECOND(2, 3)"},
	{"INTERVAL '1 02:03:04.5' DAY(2) TO SECOND(3)", "INTERVAL '1 02:03:04.5' DAY(2) TO SECOND(3)"},
	{"INTERVAL '1-6' YEAR TO MONTH", "INTERVAL '1-6' YEAR TO MONTH"},
	{"INTERVAL -'3' DAYS", "INTERVAL -'3' DAY"},
	{"INTERVAL '5' HOURS + INTERVAL '1' MILLISECOND", "(+ INTERVAL '5' HOUR INTERVAL '1' MILLISECOND)"},
	{"ts - INTERVAL '1' DAY", "(- ts INTERVAL '1' DAY)"},

	// Names, fields, indexes.
	{"a", "a"}, {"t.a", "t.a"}, {"c.d.t.a.b", "c.d.t.a.b"}, {"`a b`.`c`", "`a b`.`c`"},
	{"t.order", "t.order"},
	{"(t).a", "t.a"},
	{"f(x).y", "(field .y (call f x))"},
	{"arr[1]", "(index arr 1)"},
	{"m['k'].v[2]", "(index (field .v (index m 'k')) 2)"},
	{"(CAST(r AS ROW<a INT>)).a", "(field .a (cast ROW<a INT> r))"},
	{"`array`[1]", "(index `array` 1)"},

	// Calls.
	{"f()", "(call f)"},
	{"COUNT(*)", "(call COUNT *)"},
	{"count(DISTINCT a, b)", "(call count DISTINCT a b)"},
	{"count(ALL a)", "(call count a)"},
	{"db.fn(1)", "(call db.fn 1)"},
	{"sum(x) FILTER (WHERE x > 0)", "(call sum x) filter (> x 0)"},
	{"ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC)",
		"(call ROW_NUMBER) over (PARTITION BY window_start, window_end ORDER BY price DESC)"},
	{"avg(x) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)",
		"(call avg x) over (ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)"},
	{"sum(x) OVER (ROWS UNBOUNDED PRECEDING)", "(call sum x) over (ROWS UNBOUNDED PRECEDING)"},
	{"sum(x) OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING)", "(call sum x) over (ORDER BY t ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING)"},
	{"sum(x) OVER (ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)", "(call sum x) over (ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)"},
	{"count(*) FILTER (WHERE a) OVER ()", "(call count *) filter a over ()"},
	{"CAST(a AS BIGINT)", "(cast BIGINT a)"},
	{"TRY_CAST(a AS DECIMAL(10, 2) NOT NULL)", "(try_cast DECIMAL(10, 2) NOT NULL a)"},
	{"EXTRACT(YEAR FROM ts)", "(call EXTRACT YEAR ts)"},
	{"extract(dow from ts)", "(call extract DOW ts)"},
	{"POSITION('b' IN s)", "(call POSITION 'b' s)"},
	{"POSITION('b' IN s FROM 2)", "(call POSITION 'b' s 2)"},
	{"POSITION(a || 'x' IN s)", "(call POSITION (|| a 'x') s)"},
	{"TRIM(BOTH 'x' FROM s)", "TRIM(BOTH 'x' FROM s)"},
	{"TRIM(LEADING FROM s)", "TRIM(LEADING FROM s)"},
	{"TRIM(TRAILING ' ' FROM s)", "TRIM(TRAILING ' ' FROM s)"},
	{"TRIM('x' FROM s)", "TRIM(BOTH 'x' FROM s)"},
	{"SUBSTRING(s FROM 2 FOR 3)", "(call SUBSTRING s 2 3)"},
	{"SUBSTRING(s, 2, 3)", "(call SUBSTRING s 2 3)"},
	{"SUBSTRING(SUBSTRING(s, 1), 2)", "(call SUBSTRING (call SUBSTRING s 1) 2)"},
	{"OVERLAY(s PLACING 'ab' FROM 2)", "(call OVERLAY s 'ab' 2)"},
	{"FLOOR(ts TO MINUTE)", "(call FLOOR ts MINUTE)"},
	{"CEIL(x)", "(call CEIL x)"},
	{"TIMESTAMPADD(HOUR, 2, ts)", "(call TIMESTAMPADD HOUR 2 ts)"},
	{"TIMESTAMPDIFF(SECOND, a, b)", "(call TIMESTAMPDIFF SECOND a b)"},
	{"CURRENT_TIMESTAMP", "CURRENT_TIMESTAMP"},
	{"current_date + 1", "(+ current_date 1)"},
	{"LOCALTIMESTAMP", "LOCALTIMESTAMP"},
	{"CURRENT_WATERMARK(ts)", "(call CURRENT_WATERMARK ts)"},
	{"PROCTIME()", "(call PROCTIME)"},
	{"f(DESCRIPTOR(a, b), TABLE t)", "(call f DESCRIPTOR(a, b) TABLE t)"},
	{"f(x => 1, `y` => TABLE t PARTITION BY k)", "(call f (x => 1) (y => TABLE t PARTITION BY (k)))"},
	{"LEFT(s, 2)", "(call LEFT s 2)"},
	{"MOD(auction, 123) = 0", "(= (call MOD auction 123) 0)"},
	{"IF(a > 1, 'x', 'y')", "(call IF (> a 1) 'x' 'y')"},

	// CASE.
	{"CASE WHEN a = 1 THEN 'x' WHEN a = 2 THEN 'y' ELSE 'z' END", "(case (= a 1) 'x' (= a 2) 'y' 'z')"},
	{"CASE a WHEN 1 THEN 'x' END", "(case a 1 'x')"},

	// Constructors.
	{"ARRAY[1, 2][1]", "(index ARRAY[1, 2] 1)"},
	{"MAP['a', 1, 'b', 2]", "MAP['a', 1, 'b', 2]"},
	{"ROW(a, 'b')", "ROW(a, 'b')"},
	{"ARRAY[]", "ARRAY[]"},

	// Scalar subqueries.
	{"(SELECT max(a) FROM t) + 1", "(+ (SELECT max(a) FROM t) 1)"},
	{"((SELECT 1) UNION (SELECT 2))", "(SELECT 1 UNION SELECT 2)"},
}

func TestExpressions(t *testing.T) {
	for _, tt := range exprCases {
		e, err := ParseExpr(tt.src)
		if err != nil {
			t.Errorf("ParseExpr(%q): %v", tt.src, err)
			continue
		}
		if got := sexpr(e); got != tt.want {
			t.Errorf("ParseExpr(%q)\n got %s\nwant %s", tt.src, got, tt.want)
		}
		// The canonical form parses back to the same tree.
		out := Format(e)
		back, err := ParseExpr(out)
		if err != nil {
			t.Errorf("%q: canonical form %q: %v", tt.src, out, err)
			continue
		}
		if d := diffIgnoringPos(e, back); d != "" {
			t.Errorf("%q: canonical form %q parses to another tree at %s", tt.src, out, d)
		}
		// And in a statement.
		roundTrip(t, "SELECT "+tt.src+" FROM t")
	}
}

func TestExprAST(t *testing.T) {
	e, err := ParseExpr("a.b.c")
	if err != nil {
		t.Fatal(err)
	}
	ref := e.(*Ref)
	if len(ref.Parts) != 3 || ref.Parts[2].Name != "c" || ref.Parts[2].Pos != (Pos{1, 5}) {
		t.Errorf("ref: %+v", ref)
	}

	e, _ = ParseExpr("x +\n  y * 2")
	b := e.(*Binary)
	if b.Pos != (Pos{1, 1}) || b.OpPos != (Pos{1, 3}) || b.Right.(*Binary).OpPos != (Pos{2, 5}) {
		t.Errorf("positions: %v %v %v", b.Pos, b.OpPos, b.Right.(*Binary).OpPos)
	}

	e, _ = ParseExpr("INTERVAL '1 02:03' DAY(2) TO MINUTE")
	iv := e.(*IntervalLit)
	if iv.Value != "1 02:03" || iv.Qualifier.Start != UnitDay || iv.Qualifier.End != UnitMinute ||
		len(iv.Qualifier.StartPrecision) != 1 || iv.Qualifier.StartPrecision[0] != 2 || iv.Negative {
		t.Errorf("interval: %+v", iv)
	}

	e, _ = ParseExpr("TIMESTAMP '2024-01-01 00:00:00'")
	if l := e.(*Literal); l.Kind != LitTimestamp || l.Value != "2024-01-01 00:00:00" {
		t.Errorf("timestamp: %+v", l)
	}
	e, _ = ParseExpr("'a''b'")
	if l := e.(*Literal); l.Kind != LitString || l.Value != "a'b" {
		t.Errorf("string: %+v", l)
	}
	for src, kind := range map[string]LitKind{"1": LitInteger, "1.0": LitDecimal, "1e1": LitFloat, "TRUE": LitBool,
		"NULL": LitNull, "X'00'": LitBinary, "DATE '2020-02-02'": LitDate, "TIME '10:00'": LitTime} {
		e, err := ParseExpr(src)
		if err != nil || e.(*Literal).Kind != kind {
			t.Errorf("%s: %v %v", src, e, err)
		}
	}
	if e, _ := ParseExpr("TRUE"); !e.(*Literal).Bool() {
		t.Error("TRUE is false")
	}

	e, _ = ParseExpr("CURRENT_TIMESTAMP")
	if f := e.(*FuncCall); !f.NoParens || !f.IsNamed("current_timestamp") {
		t.Errorf("niladic: %+v", f)
	}
	e, _ = ParseExpr("EXTRACT(HOUR FROM ts)")
	if f := e.(*FuncCall); f.Args[0].(*TimeUnitArg).Unit != UnitHour {
		t.Errorf("extract: %s", Format(f))
	}

	e, _ = ParseExpr("count(DISTINCT x) FILTER (WHERE y) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW)")
	f := e.(*FuncCall)
	if !f.Distinct || Format(f.Filter) != "y" || f.Over == nil {
		t.Fatalf("call: %s", Format(f))
	}
	fr := f.Over.Frame
	if fr.Unit != FrameRows || fr.Start.Kind != Preceding || Format(fr.Start.Offset) != "3" || fr.End.Kind != CurrentRow {
		t.Errorf("frame: %s", Format(fr))
	}

	e, _ = ParseExpr("CASE x WHEN 1 THEN 'a' ELSE 'b' END")
	c := e.(*Case)
	if Format(c.Operand) != "x" || len(c.Whens) != 1 || Format(c.Else) != "'b'" || c.Whens[0].Pos != (Pos{1, 8}) {
		t.Errorf("case: %+v", c)
	}

	e, _ = ParseExpr("TRIM(LEADING 'x' FROM s)")
	if tr := e.(*Trim); tr.Mode != TrimLeading || Format(tr.Chars) != "'x'" || Format(tr.Expr) != "s" {
		t.Errorf("trim: %+v", tr)
	}
	e, _ = ParseExpr("ARRAY['a', 'b']")
	if ct := e.(*Constructor); ct.Kind != ArrayCtor || len(ct.Args) != 2 {
		t.Errorf("array: %+v", ct)
	}
}
