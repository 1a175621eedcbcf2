package sql

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirflow/weir/arrowflow"
)

// sideValue is the value of key k in the side input writeSideInput
// writes.
func sideValue(k int64) string { return fmt.Sprintf("side-%d-%d", k, k*7919%10007) }

// writeSideInput writes the side input of q13 under home/data: CSV rows
// key,value for keys 0..9999, and returns the value of each key.
func writeSideInput(t *testing.T, home string) map[int64]string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(home, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	values := map[int64]string{}
	var sb strings.Builder
	for k := int64(0); k < 10000; k++ {
		values[k] = sideValue(k)
		fmt.Fprintf(&sb, "%d,%s\n", k, values[k])
	}
	if err := os.WriteFile(filepath.Join(home, "data", "side_input.txt"), []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return values
}

// The Nexmark suite's q13 (a stream joined with a bounded side input FOR
// SYSTEM_TIME AS OF a PROCTIME() column, the side input declared with the
// legacy 'connector.type' options) plans and runs unmodified: every bid
// is joined exactly once, with the value of its auction mod 10000, as a
// plain Go map over the generator's bids says, at parallelism 1 and 2.
func TestNexmarkSuiteQ13LookupJoin(t *testing.T) {
	const events, tps = 20_000, 10_000
	home := t.TempDir()
	values := writeSideInput(t, home)
	var want []string
	for _, b := range suiteRef(t, events, tps).Bids {
		want = append(want, fmtRow(b.Auction, b.Bidder, b.Price, b.DateTime, values[b.Auction%10000]))
	}
	script := suiteScript(t, "q13", events, tps, 0, home)
	for _, par := range []int{1, 2} {
		t.Run(fmt.Sprintf("p%d", par), func(t *testing.T) {
			got := compileRun(t, script, par, "nexmark_q13")
			compareRows(t, got, append([]string(nil), want...))
		})
	}
	job, err := Compile(context.Background(), script, Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(job.Plan, "lookup join (INNER) of side_input on key, the table reloaded every 1h0m0s per subtask") {
		t.Errorf("plan:\n%s", job.Plan)
	}
	for _, n := range job.Graph.Nodes() {
		if n.Kind() == arrowflow.SourceNode && strings.Contains(n.Name(), "side_input") {
			t.Errorf("the looked-up table is read as a stream too: source %s", n.Name())
		}
	}
}

// A LEFT lookup join pads the rows without a match; a key given as a
// bare column of another type is cast to the table key's; conditions
// other than the key filter the joined rows of an inner join; the
// cache TTL option is read.
func TestLookupJoinLeftAndResidual(t *testing.T) {
	const events, tps = 10_000, 10_000
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Odd keys below 500 only.
	values := map[int64]string{}
	var sb strings.Builder
	for k := int64(1); k < 500; k += 2 {
		values[k] = fmt.Sprintf("v%d", k)
		fmt.Fprintf(&sb, "%d,%s\n", k, values[k])
	}
	path := filepath.Join(home, "data", "side.csv")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ddl := suiteScript(t, "q0", events, tps, 0, home)
	ddl = ddl[:strings.Index(ddl, "CREATE TABLE nexmark_q0")]
	ddl += fmt.Sprintf(`
CREATE TABLE side (k INT, v STRING) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv', 'lookup.join.cache.ttl' = '10 min');
CREATE TABLE out1 (auction BIGINT, price BIGINT, v STRING) WITH ('connector' = 'blackhole');
`, path)
	bids := suiteRef(t, events, tps).Bids
	var left, inner []string
	for _, b := range bids {
		k := b.Auction % 1000
		v, ok := values[k]
		if ok {
			left = append(left, fmtRow(b.Auction, b.Price, v))
			if b.Price > 1000 {
				inner = append(inner, fmtRow(b.Auction, b.Price, v))
			}
		} else {
			left = append(left, fmtRow(b.Auction, b.Price, nil))
		}
	}
	for _, par := range []int{1, 2} {
		got := compileRun(t, ddl+`
INSERT INTO out1 SELECT b.Auction, b.Price, s.v
FROM (SELECT *, PROCTIME() AS pt FROM bid) b
LEFT JOIN side FOR SYSTEM_TIME AS OF b.pt AS s ON s.k = b.Auction % 1000;`, par, "out1")
		compareRows(t, got, append([]string(nil), left...))
		got = compileRun(t, ddl+`
INSERT INTO out1 SELECT b.Auction, b.Price, s.v
FROM (SELECT *, PROCTIME() AS pt FROM bid) b
JOIN side FOR SYSTEM_TIME AS OF b.pt AS s ON s.k = b.Auction % 1000 AND b.Price > 1000;`, par, "out1")
		compareRows(t, got, append([]string(nil), inner...))
	}
}

// Lookup joins that cannot be planned say why, at the construct.
func TestLookupJoinErrors(t *testing.T) {
	home := t.TempDir()
	writeSideInput(t, home)
	ddl := suiteScript(t, "q0", 1000, 10_000, 0, home)
	ddl = ddl[:strings.Index(ddl, "CREATE TABLE nexmark_q0")]
	ddl += fmt.Sprintf(`
CREATE TABLE side (key BIGINT, v STRING) WITH ('connector' = 'filesystem', 'path' = '%s/data/side_input.txt', 'format' = 'csv');
CREATE TABLE out1 (auction BIGINT, v STRING) WITH ('connector' = 'blackhole');
`, home)
	cases := []struct{ name, query, msg string }{
		{"not a table", "INSERT INTO out1 SELECT b.Auction, s.extra FROM (SELECT *, PROCTIME() AS pt FROM bid) b JOIN bid FOR SYSTEM_TIME AS OF b.pt AS s ON s.auction = b.Auction;",
			"is a view; a lookup join reads a table"},
		{"not filesystem", "INSERT INTO out1 SELECT b.Auction, s.extra FROM (SELECT *, PROCTIME() AS pt FROM bid) b JOIN datagen FOR SYSTEM_TIME AS OF b.pt AS s ON s.event_type = b.Auction;",
			"the nexmark connector cannot be looked up"},
		{"no key", "INSERT INTO out1 SELECT b.Auction, s.v FROM (SELECT *, PROCTIME() AS pt FROM bid) b JOIN side FOR SYSTEM_TIME AS OF b.pt AS s ON s.key > b.Auction;",
			"needs an equality of a column of side"},
		{"right join", "INSERT INTO out1 SELECT b.Auction, s.v FROM (SELECT *, PROCTIME() AS pt FROM bid) b RIGHT JOIN side FOR SYSTEM_TIME AS OF b.pt AS s ON s.key = b.Auction;",
			"inner or LEFT join"},
		{"left join residual", "INSERT INTO out1 SELECT b.Auction, s.v FROM (SELECT *, PROCTIME() AS pt FROM bid) b LEFT JOIN side FOR SYSTEM_TIME AS OF b.pt AS s ON s.key = b.Auction AND b.Price > 3;",
			"a LEFT lookup join's ON may only equate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compile(context.Background(), ddl+c.query, Options{DryRun: true})
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v, want %q", err, c.msg)
			}
		})
	}
}

// Flink's legacy connector keys are read as the new ones; giving both
// is an error at the later one.
func TestLegacyOptionKeys(t *testing.T) {
	o, err := newTableOptions("t", Pos{1, 1}, []*Option{
		{Pos: Pos{2, 3}, Key: "connector.type", Value: "filesystem"},
		{Pos: Pos{3, 3}, Key: "connector.path", Value: "/x"},
		{Pos: Pos{4, 3}, Key: "format.type", Value: "csv"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"connector": "filesystem", "path": "/x", "format": "csv"} {
		if v, ok := o.get(k); !ok || v != want {
			t.Errorf("%s = %q, %v; want %q", k, v, ok, want)
		}
	}
	if o.posOf("path") != (Pos{3, 3}) {
		t.Errorf("path at %v", o.posOf("path"))
	}
	if err := o.checkUnknown("filesystem"); err != nil {
		t.Errorf("checkUnknown: %v", err)
	}
	_, err = newTableOptions("t", Pos{1, 1}, []*Option{
		{Pos: Pos{2, 3}, Key: "path", Value: "/x"},
		{Pos: Pos{3, 3}, Key: "connector.path", Value: "/y"},
	})
	var e *Error
	if !errors.As(err, &e) || e.Pos != (Pos{3, 3}) || !strings.Contains(e.Msg, "'connector.path' and 'path'") {
		t.Fatalf("both keys: %v", err)
	}
}
