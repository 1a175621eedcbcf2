package sql

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/bench/queries"
)

// DECIMAL in SQL, checked against math/big over the Nexmark bids: q1's
// and q14's 0.908 * price (DECIMAL(4, 3) * BIGINT = DECIMAL(23, 3),
// exact), its text form, division, HALF_UP casts and overflow to NULL.

// decOracleRound is r rounded HALF_UP (half away from zero) to s places,
// as plain text with s digits after the point.
func decOracleRound(r *big.Rat, s int) string {
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil)
	x := new(big.Rat).Mul(r, new(big.Rat).SetInt(scale))
	q, rem := new(big.Int).QuoRem(x.Num(), x.Denom(), new(big.Int))
	if rem.Abs(rem).Lsh(rem, 1).Cmp(x.Denom()) >= 0 {
		q.Add(q, big.NewInt(int64(x.Sign())))
	}
	return new(big.Rat).SetFrac(q, scale).FloatString(s)
}

// decField parses a collected DECIMAL value (NULL stays "NULL") and
// prints it with s digits, so that the comparison is on exact values.
func decField(t *testing.T, v string, s int) string {
	t.Helper()
	if v == "NULL" {
		return v
	}
	r, ok := new(big.Rat).SetString(v)
	if !ok {
		t.Fatalf("collected DECIMAL %q does not parse", v)
	}
	return r.FloatString(s)
}

func TestDecimalQ1Q14ExactAgainstBig(t *testing.T) {
	bids, _ := readNexmark(t)
	var want []string
	for _, b := range bids {
		price := big.NewRat(b.price, 1)
		eur := new(big.Rat).Mul(big.NewRat(908, 1000), price)
		if eur.Cmp(big.NewRat(1_000_000, 1)) <= 0 || eur.Cmp(big.NewRat(50_000_000, 1)) >= 0 {
			continue
		}
		half := decOracleRound(new(big.Rat).Quo(price, big.NewRat(2, 1)), 0) // price / 2.0 HALF_UP to DECIMAL(10, 0)
		if len(strings.TrimPrefix(half, "-")) > 10 {
			half = "NULL"
		}
		seventh := decOracleRound(new(big.Rat).Quo(price, big.NewRat(7, 1)), 11) // DECIMAL(19,0) / DECIMAL(10,0) = DECIMAL(30, 11)
		small := "NULL"                                                          // DECIMAL(4, 1) holds below 1000
		if b.price < 1000 {
			small = decOracleRound(price, 1)
		}
		want = append(want, fmtRow(b.auction, eur.FloatString(3), eur.FloatString(3), half, seventh, small, eur.FloatString(5)))
	}
	got := runScript(t, `
CREATE TABLE q14d (auction BIGINT, price DECIMAL(23, 3), txt STRING, half DECIMAL(10, 0), seventh DECIMAL(30, 11), small DECIMAL(4, 1),
    wide DECIMAL(26, 5))
WITH ('connector' = 'blackhole');
INSERT INTO q14d
SELECT auction, 0.908 * price AS price, CAST(0.908 * price AS STRING), CAST(price / 2.0 AS DECIMAL(10, 0)),
    CAST(price AS DECIMAL(19, 0)) / 7, CAST(price AS DECIMAL(4, 1)), 0.908 * price -- widened to the sink's DECIMAL(26, 5)
FROM bid WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;`, "q14d", 2)
	for i, r := range got {
		f := strings.Split(r, " | ")
		if len(f) != 7 {
			t.Fatalf("row %q", r)
		}
		f[1], f[3], f[4], f[5], f[6] = decField(t, f[1], 3), decField(t, f[3], 0), decField(t, f[4], 11), decField(t, f[5], 1), decField(t, f[6], 5)
		got[i] = strings.Join(f, " | ")
	}
	compareRows(t, got, want)
}

func TestDecimalTypesInSQL(t *testing.T) {
	ddl := queries.SQLDDL(100, 1, 1) + `
CREATE VIEW t AS SELECT CAST(price AS DECIMAL) AS a, CAST(price AS DEC(5, 2)) AS b, CAST(price AS NUMERIC(38, 10)) AS c, price AS d FROM bid;
CREATE TABLE o (x DECIMAL(38, 10)) WITH ('connector' = 'blackhole');
`
	for _, c := range []struct {
		expr, typ string
	}{
		{"a", "decimal(10, 0)"},
		{"b", "decimal(5, 2)"},
		{"0.908", "decimal(4, 3)"},
		{"0.908 * d", "decimal(23, 3)"},
		{"b + a", "decimal(13, 2)"},
		{"b - 1", "decimal(13, 2)"},
		{"b * b", "decimal(10, 4)"},
		{"b / a", "decimal(16, 13)"},
		{"MOD(b, 3)", "decimal(5, 2)"},
		{"c * c", "decimal(38, 6)"},
		{"c / b", "decimal(38, 8)"}, // (38,10) / (5,2): s 16, p 46 -> capped: 30 integral digits keep, s = 38-30
		{"b * 1.5E0", "float64"},
		{"CAST(d AS DECIMAL(20, 2))", "decimal(20, 2)"},
		{"-b", "decimal(5, 2)"},
		{"CASE WHEN d > 0 THEN b ELSE a END", "decimal(12, 2)"},
		{"b > 1", "bool"},
		{"b BETWEEN 1 AND 2.5", "bool"},
		{"b IN (1, 2.25)", "bool"},
	} {
		got := planType(t, ddl, c.expr)
		if got != c.typ {
			t.Errorf("%s: type %s, want %s", c.expr, got, c.typ)
		}
	}
	for _, bad := range []struct{ script, msg string }{
		{"CREATE TABLE t (a DECIMAL(39, 2)) WITH ('connector' = 'blackhole');", "precision must be between 1 and 38"},
		{ddl + "INSERT INTO o SELECT CAST(d AS DECIMAL(40, 0)) FROM t;", "precision must be between 1 and 38"},
		{ddl + "INSERT INTO o SELECT 1234567890123456789012345678901234567890.5 FROM t;", "DECIMAL holds at most 38"},
	} {
		_, err := Compile(context.Background(), bad.script, Options{DryRun: true})
		if err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%q: error %v, want %q", bad.script, err, bad.msg)
		}
	}
}

// planType plans INSERT INTO o SELECT expr AS x FROM t after ddl and
// returns the type of x.
func planType(t *testing.T, ddl, expr string) string {
	t.Helper()
	script, err := Parse(ddl + "INSERT INTO o SELECT " + expr + " AS x FROM t;")
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	p := newPlanner(context.Background(), Options{DryRun: true})
	var ins *Insert
	for _, st := range script.Statements {
		switch s := st.(type) {
		case *CreateTable:
			if err := p.createTable(s); err != nil {
				t.Fatal(err)
			}
		case *CreateView:
			p.views[s.Name.String()] = &viewDef{name: s.Name.String(), columns: s.Columns, query: s.Query}
		case *Insert:
			ins = s
		}
	}
	if err := p.applySettings(&Job{Settings: p.settings}); err != nil {
		t.Fatal(err)
	}
	p.g = arrowflow.NewGraph("types")
	r, err := p.query(ins.Query)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return r.visible()[0].typ.String()
}

// SUM, AVG, MIN, MAX and COUNT of q1's DECIMAL(23, 3) prices per auction
// and window, against math/big: SUM is DECIMAL(38, 3), AVG DECIMAL(38, 6)
// rounded HALF_UP, as in Flink.
func TestDecimalWindowAggregatesAgainstBig(t *testing.T) {
	bids, _ := readNexmark(t)
	type acc struct {
		sum, min, max *big.Rat
		n             int64
	}
	groups := map[int64]*acc{}
	for _, b := range bids {
		eur := big.NewRat(908*b.price, 1000)
		a := groups[b.auction]
		if a == nil {
			a = &acc{sum: new(big.Rat), min: eur, max: eur}
			groups[b.auction] = a
		}
		a.sum.Add(a.sum, eur)
		if eur.Cmp(a.min) < 0 {
			a.min = eur
		}
		if eur.Cmp(a.max) > 0 {
			a.max = eur
		}
		a.n++
	}
	var want []string
	for auction, a := range groups {
		avg := decOracleRound(new(big.Rat).Quo(a.sum, big.NewRat(a.n, 1)), 6)
		want = append(want, fmtRow(auction, a.sum.FloatString(3), avg, a.min.FloatString(3), a.max.FloatString(3), a.n))
	}
	got := runScript(t, `
CREATE TABLE agg (auction BIGINT, s DECIMAL(38, 3), a DECIMAL(38, 6), mn DECIMAL(23, 3), mx DECIMAL(23, 3), c BIGINT)
WITH ('connector' = 'blackhole');
INSERT INTO agg
SELECT auction, SUM(0.908 * price), AVG(0.908 * price), MIN(0.908 * price), MAX(0.908 * price), COUNT(0.908 * price)
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '1' HOUR))
GROUP BY window_start, window_end, auction;`, "agg", 2)
	for i, r := range got {
		f := strings.Split(r, " | ")
		if len(f) != 6 {
			t.Fatalf("row %q", r)
		}
		f[1], f[2], f[3], f[4] = decField(t, f[1], 3), decField(t, f[2], 6), decField(t, f[3], 3), decField(t, f[4], 3)
		got[i] = strings.Join(f, " | ")
	}
	compareRows(t, got, want)
}
