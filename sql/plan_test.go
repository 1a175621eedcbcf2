package sql

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// bidsDDL declares a nexmark table and a bid view, for tests that plan
// but do not run.
const bidsDDL = `CREATE TABLE datagen (
    event_type INT,
    bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime TIMESTAMP(3), extra VARCHAR>,
    dateTime AS bid.dateTime,
    WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH ('connector' = 'nexmark', 'events.num' = '1000');
CREATE VIEW bid AS SELECT bid.auction, bid.bidder, bid.price, dateTime FROM datagen WHERE event_type = 2;
CREATE TABLE out1 (a BIGINT, b BIGINT) WITH ('connector' = 'blackhole');
`

// Planning errors name the line and column of the offending construct,
// say what is wrong and, where it helps, what to do.
func TestPlanErrorsHavePositions(t *testing.T) {
	ddlLines := strings.Count(bidsDDL, "\n")
	cases := []struct {
		name     string
		script   string
		line     int // relative to the line after bidsDDL; 0 = absolute below
		col      int
		msg      string
		hint     string
		absolute bool
	}{
		{name: "unknown table", script: "INSERT INTO out1 SELECT a, b FROM nope;", line: 1, col: 35, msg: "table or view nope does not exist", hint: "CREATE TABLE"},
		{name: "unknown column", script: "INSERT INTO out1 SELECT auction, pricee FROM bid;", line: 1, col: 34, msg: "column pricee not found", hint: "bid.price"},
		{name: "grouping sets", script: "INSERT INTO out1 SELECT auction, COUNT(*) FROM bid GROUP BY ROLLUP (auction);", line: 1, col: 61, msg: "ROLLUP is not supported"},
		{name: "window column without aggregation", script: "INSERT INTO out1 SELECT auction, window_start FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND));",
			line: 1, col: 34, msg: "window_start of a window TVF can only be grouped by", hint: "GROUP BY window_start, window_end"},
		{name: "descriptor not a time attribute", script: "INSERT INTO out1 SELECT auction, COUNT(*) FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(price), INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end;",
			line: 1, col: 83, msg: "DESCRIPTOR(price): the column is not a time attribute", hint: "WATERMARK FOR price"},
		{name: "column count", script: "INSERT INTO out1 SELECT auction FROM bid;", line: 1, col: 1, msg: "the table has 2 columns, the query gives 1", hint: "a, b"},
		{name: "insert into view", script: "INSERT INTO bid SELECT auction, bidder FROM bid;", line: 1, col: 13, msg: "bid is a view"},
		{name: "order by", script: "INSERT INTO out1 SELECT auction, bidder FROM bid ORDER BY auction;", line: 1, col: 18, msg: "ORDER BY, LIMIT and OFFSET have no meaning", hint: "ROW_NUMBER"},
		{name: "aggregate in where", script: "INSERT INTO out1 SELECT auction, bidder FROM bid WHERE COUNT(*) > 1;", line: 1, col: 56, msg: "aggregate COUNT(*) is not allowed here"},
		{name: "unknown function", script: "INSERT INTO out1 SELECT auction, FROBNICATE(bidder) FROM bid;", line: 1, col: 34, msg: "function FROBNICATE is not supported"},
		{name: "two inserts", script: "INSERT INTO out1 SELECT auction, bidder FROM bid;\nINSERT INTO out1 SELECT auction, bidder FROM bid;", line: 2, col: 1, msg: "a second INSERT INTO out1"},
		{name: "read a sink", script: "INSERT INTO out1 SELECT a, b FROM out1;", line: 8, col: 46, msg: "the blackhole connector can only be written to", hint: "sources:", absolute: true},
		{name: "write a source", script: "CREATE TABLE src (x BIGINT, y BIGINT) WITH ('connector' = 'datagen');\nINSERT INTO src SELECT auction, bidder FROM bid;", line: 1, col: 45, msg: "the datagen connector can only be read", hint: "sinks:"},
		{name: "unknown option", script: "CREATE TABLE o2 (x BIGINT) WITH ('connector' = 'blackhole', 'colour' = 'blue');\nINSERT INTO o2 SELECT auction FROM bid;", line: 1, col: 61, msg: "option 'colour': the blackhole connector has no such option"},
		{name: "no connector", script: "CREATE TABLE o3 (x BIGINT) WITH ('path' = 'x');", line: 1, col: 1, msg: "has no 'connector'", hint: "'connector' = 'kafka'"},
		{name: "no insert", script: "SET 'parallelism.default' = '2';", line: 1, col: 1, msg: "no INSERT INTO statement", absolute: true},
		{name: "regular join without a key", script: "INSERT INTO out1 SELECT a.auction, b.bidder FROM bid a JOIN bid b ON a.auction > b.auction;", line: 1, col: 50, msg: "a regular join needs an equality between the two sides", hint: "ON a.k = b.k"},
		{name: "ranking without bound", script: "INSERT INTO out1 SELECT auction, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rn FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))) WHERE auction > 3;",
			line: 1, col: 218, msg: "a ranking without a bound on rn", hint: "rn <= N"},
		{name: "cumulate size not a multiple of the step", script: "INSERT INTO out1 SELECT auction, COUNT(*) FROM TABLE(CUMULATE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '3' SECOND, INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end;",
			line: 1, col: 48, msg: "multiple of"},
		{name: "cumulate top-n", script: "INSERT INTO out1 SELECT auction, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rn FROM TABLE(CUMULATE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))) WHERE rn <= 3;",
			line: 1, col: 53, msg: "window Top-N directly over CUMULATE windows", hint: "aggregate the CUMULATE windows first"},
		{name: "temporal join of a view", script: "INSERT INTO out1 SELECT b.auction, v.bidder FROM bid b JOIN bid FOR SYSTEM_TIME AS OF b.dateTime AS v ON b.auction = v.auction;",
			line: 1, col: 61, msg: "is a view", hint: "PRIMARY KEY"},
		{name: "temporal join without primary key", script: "INSERT INTO out1 SELECT b.auction, v.event_type FROM bid b JOIN datagen FOR SYSTEM_TIME AS OF b.dateTime AS v ON b.auction = v.event_type;",
			line: 1, col: 65, msg: "needs a PRIMARY KEY", hint: "NOT ENFORCED"},
		{name: "temporal join as of a right column", script: "INSERT INTO out1 SELECT b.auction, v.event_type FROM bid b JOIN datagen FOR SYSTEM_TIME AS OF v.dateTime AS v ON b.auction = v.event_type;",
			line: 1, col: 95, msg: "a time attribute of the join's left side"},
		{name: "temporal right join", script: "INSERT INTO out1 SELECT b.auction, v.event_type FROM bid b RIGHT JOIN datagen FOR SYSTEM_TIME AS OF b.dateTime AS v ON b.auction = v.event_type;",
			line: 1, col: 54, msg: "an inner or LEFT join"},
		{name: "union distinct", script: "INSERT INTO out1 SELECT auction, bidder FROM bid UNION SELECT auction, bidder FROM bid;", line: 1, col: 50, msg: "UNION without ALL", hint: "UNION ALL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compile(context.Background(), bidsDDL+c.script, Options{Parallelism: 1})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("want a *sql.Error, got %v", err)
			}
			line := c.line + ddlLines
			if c.absolute {
				line = c.line
				if c.name == "no insert" {
					line = 1
				}
			}
			if e.Pos.Line != line || e.Pos.Col != c.col || !strings.Contains(e.Msg, c.msg) || !strings.Contains(e.Hint, c.hint) {
				t.Fatalf("got %s (hint %q)\nwant line %d:%d %q (hint with %q)", e.Pos, e.Hint, line, c.col, c.msg, c.hint)
			}
			if e.Src == "" {
				t.Fatalf("no source line in %v", err)
			}
		})
	}
}
