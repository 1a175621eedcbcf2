package sql

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// CREATE FUNCTION and DROP FUNCTION parse in Flink's syntax and print
// back as written.
func TestCreateFunctionParses(t *testing.T) {
	for _, src := range []string{
		"CREATE FUNCTION count_char AS 'com.github.nexmark.flink.udf.CountChar'",
		"CREATE TEMPORARY SYSTEM FUNCTION IF NOT EXISTS cc AS 'com.github.nexmark.flink.udf.CountChar' LANGUAGE JAVA USING JAR '/a.jar', JAR '/b.jar'",
		"CREATE TEMPORARY FUNCTION db.f AS 'x.Y' LANGUAGE PYTHON",
		"DROP TEMPORARY SYSTEM FUNCTION IF EXISTS cc",
		"DROP FUNCTION f",
	} {
		s, err := Parse(src)
		if err != nil {
			t.Fatalf("Parse(%q): %v", src, err)
		}
		if got := Format(s.Statements[0]); got != src {
			t.Errorf("Format:\n got %s\nwant %s", got, src)
		}
	}
	cf := mustParseScript(t, "CREATE FUNCTION f AS 'x.Y' LANGUAGE SCALA").Statements[0].(*CreateFunction)
	if cf.Name.String() != "f" || cf.Identifier != "x.Y" || cf.Language != "SCALA" || cf.IdentifierPos != (Pos{1, 22}) {
		t.Errorf("%+v", cf)
	}
	for src, msg := range map[string]string{
		"CREATE FUNCTION f 'x.Y'":                 "expected AS",
		"CREATE FUNCTION f AS x":                  "identifier",
		"CREATE FUNCTION f AS 'x' LANGUAGE GO":    "JAVA, SCALA or PYTHON",
		"CREATE FUNCTION f AS 'x' USING FILE 'y'": "expected JAR",
	} {
		if _, err := Parse(src); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("Parse(%q): %v, want %q", src, err, msg)
		}
	}
}

// A function created AS the class the Nexmark suite names is weir's
// count_char, under any name, until it is dropped; a built-in's own name
// is an identifier too.
func TestCreateFunctionBindsBuiltin(t *testing.T) {
	const events, tps = 5000, 10_000
	ddl := suiteScript(t, "q0", events, tps, 0, t.TempDir())
	ddl = ddl[:strings.Index(ddl, "CREATE TABLE nexmark_q0")] + `
CREATE TABLE out1 (auction BIGINT, extra VARCHAR, c BIGINT, u VARCHAR) WITH ('connector' = 'blackhole');
`
	var want []string
	for _, b := range suiteRef(t, events, tps).Bids {
		want = append(want, fmtRow(b.Auction, b.Extra, int64(strings.Count(b.Extra, "c")), strings.ToUpper(b.Extra)))
	}
	got := compileRun(t, ddl+`
CREATE TEMPORARY FUNCTION chars AS 'com.github.nexmark.flink.udf.CountChar';
CREATE FUNCTION IF NOT EXISTS chars AS 'nothing.Else';
CREATE TEMPORARY SYSTEM FUNCTION Shout AS 'UPPER' LANGUAGE JAVA;
INSERT INTO out1 SELECT auction, extra, CHARS(extra, 'c'), shout(extra) FROM bid;`, 2, "out1")
	compareRows(t, got, want)

	for _, c := range []struct {
		name, script string
		pos          Pos
		msg, hint    string
	}{
		{"unknown class", "SET 'a' = 'b';\nCREATE FUNCTION f AS 'com.example.Foo';\nINSERT INTO out1 SELECT auction, extra, f(extra), extra FROM bid;",
			Pos{2, 1}, "weir cannot load Java classes", "com.github.nexmark.flink.udf.CountChar"},
		{"dropped", "CREATE FUNCTION f AS 'com.github.nexmark.flink.udf.CountChar';\nDROP TEMPORARY FUNCTION f;\nINSERT INTO out1 SELECT auction, extra, f(extra, 'c'), extra FROM bid;",
			Pos{3, 41}, "function f is not supported", ""},
		{"created twice", "CREATE FUNCTION f AS 'upper';\nCREATE FUNCTION F AS 'lower';\nINSERT INTO out1 SELECT auction, extra, 1, f(extra) FROM bid;",
			Pos{2, 1}, "function F already exists", ""},
		{"drop unknown", "DROP FUNCTION g;\nINSERT INTO out1 SELECT auction, extra, 1, extra FROM bid;",
			Pos{1, 1}, "DROP FUNCTION: g does not exist", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The DDL ends with a line break: the script's lines count from
			// the line after it.
			_, err := Compile(context.Background(), ddl+c.script, Options{DryRun: true})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v", err)
			}
			line := strings.Count(ddl, "\n")
			if e.Pos != (Pos{c.pos.Line + line, c.pos.Col}) || !strings.Contains(e.Msg, c.msg) || !strings.Contains(e.Hint, c.hint) {
				t.Fatalf("error at %v: %s (%s); want %v %q %q", e.Pos, e.Msg, e.Hint, Pos{c.pos.Line + line, c.pos.Col}, c.msg, c.hint)
			}
		})
	}
}

// The Nexmark suite's q14 (CREATE FUNCTION count_char AS the suite's
// CountChar class, DECIMAL arithmetic) plans and runs unmodified: its
// rows are the bids with 0.908 * price in (1e6, 5e7), each with that
// price, its time of day and the count of 'c' in its extra.
func TestNexmarkSuiteQ14CreateFunction(t *testing.T) {
	const events, tps = 20_000, 10_000
	script := suiteScript(t, "q14", events, tps, 0, t.TempDir())
	// Rows by everything but the price, each with the prices it may have.
	want := map[string][]int64{}
	n := 0
	for _, b := range suiteRef(t, events, tps).Bids {
		if p := b.Price * 908; p > 1_000_000_000 && p < 50_000_000_000 {
			typ := "otherTime"
			if h := b.DateTime.UTC().Hour(); h >= 8 && h <= 18 {
				typ = "dayTime"
			} else if h <= 6 || h >= 20 {
				typ = "nightTime"
			}
			k := fmt.Sprintf("%d | %d | %s | %v | %s | %d", b.Auction, b.Bidder, typ, b.DateTime, b.Extra, strings.Count(b.Extra, "c"))
			want[k] = append(want[k], b.Price)
			n++
		}
	}
	if n == 0 {
		t.Fatal("no bid passes q14's filter: nothing is compared")
	}
	got := compileRun(t, script, 2, "nexmark_q14")
	if len(got) != n {
		t.Fatalf("%d rows, want %d", len(got), n)
	}
	for _, r := range got {
		f := strings.Split(r, " | ")
		if len(f) != 7 {
			t.Fatalf("row %q", r)
		}
		k := strings.Join([]string{f[0], f[1], f[3], f[4], f[5], f[6]}, " | ")
		prices := want[k]
		var price float64
		if _, err := fmt.Sscan(f[2], &price); err != nil {
			t.Fatalf("row %q: price: %v", r, err)
		}
		i := slices.IndexFunc(prices, func(p int64) bool { return math.Abs(float64(p*908)/1000-price) < 1e-6*price })
		if i < 0 {
			t.Fatalf("row %q: no such bid, or a wrong bidTimeType, c_counts or price (bids %v)", r, prices)
		}
		want[k] = slices.Delete(prices, i, i+1)
	}
}
