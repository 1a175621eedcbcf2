package main

// The DuckDB side of TestSuiteUpdatingMatchesDuckDB: the suite's updating
// queries as batch SQL over tables person, auction and bid (the suite's
// views, every column, loaded from the same generated events), and the
// loading itself.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sources/nexmark"
)

// duckQuery is one suite query as DuckDB batch SQL. SQL's columns are the
// sink table's, in its order and with its types (BIGINT, VARCHAR,
// TIMESTAMP).
//
// For the ROW_NUMBER queries (q9, q18, q19) rows tied on the ORDER BY may
// be kept either way, so the rows are compared on what is determined:
// Key lists the sink's columns whose multiset is determined; every row of
// weir's restricted to Cand (column positions) must be a row of
// Candidates, no candidate row used more often than it occurs; and Ties
// counts the ties that leave the result open: when it is 0 the rows are
// also compared whole.
type duckQuery struct {
	SQL        string
	Key        []int
	Candidates string
	Cand       []int
	Ties       string
}

// rankFilters are the suite's count(*) / count(DISTINCT) columns of q15
// and q16, over bid, in the sinks' order.
const rankFilters = `count(*) AS total_bids,
  count(*) FILTER (WHERE price < 10000) AS rank1_bids,
  count(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,
  count(*) FILTER (WHERE price >= 1000000) AS rank3_bids,
  count(DISTINCT bidder) AS total_bidders,
  count(DISTINCT bidder) FILTER (WHERE price < 10000) AS rank1_bidders,
  count(DISTINCT bidder) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bidders,
  count(DISTINCT bidder) FILTER (WHERE price >= 1000000) AS rank3_bidders,
  count(DISTINCT auction) AS total_auctions,
  count(DISTINCT auction) FILTER (WHERE price < 10000) AS rank1_auctions,
  count(DISTINCT auction) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_auctions,
  count(DISTINCT auction) FILTER (WHERE price >= 1000000) AS rank3_auctions`

// q9Join is q9's join: every (auction, bid) pair the query ranks, in
// nexmark_q9's columns.
const q9Join = `SELECT A.*, B.auction, B.bidder, B.price, B.dateTime AS bid_dateTime, B.extra AS bid_extra
FROM auction A, bid B
WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires`

// bidColumns are the bid view's columns (q18's and q19's candidates).
const bidColumns = `SELECT auction, bidder, price, channel, url, dateTime, extra FROM bid`

// duckQueries are the suite's updating queries in DuckDB's SQL: the
// suite's qN.sql almost verbatim. The changes: backquotes dropped;
// DATE_FORMAT(x, 'yyyy-MM-dd') and 'HH:mm' are strftime(x, '%Y-%m-%d')
// and '%H:%M'; Flink's AVG of a BIGINT is a BIGINT (SUM / COUNT in integer
// division, truncated; the prices are positive), written
// sum(x) // count(x); DuckDB's SUM of a BIGINT is a HUGEINT, cast to the
// sink's BIGINT as INSERT does.
var duckQueries = map[string]duckQuery{
	"q3": {SQL: `SELECT P.name, P.city, P.state, A.id
FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')`},

	"q4": {SQL: `SELECT Q.category, CAST(sum(Q.final) // count(Q.final) AS BIGINT)
FROM (
  SELECT MAX(B.price) AS final, A.category
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
  GROUP BY A.id, A.category
) Q
GROUP BY Q.category`},

	"q9": {
		SQL: `SELECT id, itemName, description, initialBid, reserve, dateTime, expires, seller, category, extra,
  auction, bidder, price, bid_dateTime, bid_extra
FROM (
  SELECT A.*, B.auction, B.bidder, B.price, B.dateTime AS bid_dateTime, B.extra AS bid_extra,
    ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime ASC) AS rownum
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
)
WHERE rownum <= 1`,
		// Per auction the winning price and its earliest time.
		Key:        []int{0, 12, 13},
		Candidates: q9Join,
		Cand:       []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14},
		Ties: `SELECT count(*) - count(DISTINCT id) FROM (
  SELECT A.id, RANK() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime ASC) AS r
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires)
WHERE r = 1`,
	},

	"q15": {SQL: `SELECT strftime(dateTime, '%Y-%m-%d') AS "day",
  ` + rankFilters + `
FROM bid
GROUP BY strftime(dateTime, '%Y-%m-%d')`},

	"q16": {SQL: `SELECT channel,
  strftime(dateTime, '%Y-%m-%d') AS "day",
  max(strftime(dateTime, '%H:%M')) AS "minute",
  ` + rankFilters + `
FROM bid
GROUP BY channel, strftime(dateTime, '%Y-%m-%d')`},

	"q17": {SQL: `SELECT auction,
  strftime(dateTime, '%Y-%m-%d') AS "day",
  count(*) AS total_bids,
  count(*) FILTER (WHERE price < 10000) AS rank1_bids,
  count(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,
  count(*) FILTER (WHERE price >= 1000000) AS rank3_bids,
  min(price) AS min_price,
  max(price) AS max_price,
  CAST(sum(price) // count(price) AS BIGINT) AS avg_price,
  CAST(sum(price) AS BIGINT) AS sum_price
FROM bid
GROUP BY auction, strftime(dateTime, '%Y-%m-%d')`},

	"q18": {
		SQL: `SELECT auction, bidder, price, channel, url, dateTime, extra
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY dateTime DESC) AS rank_number
      FROM bid)
WHERE rank_number <= 1`,
		// Per (bidder, auction) the latest time.
		Key:        []int{0, 1, 5},
		Candidates: bidColumns,
		Cand:       []int{0, 1, 2, 3, 4, 5, 6},
		Ties: `SELECT count(*) - count(DISTINCT (bidder, auction)) FROM (
  SELECT bidder, auction, RANK() OVER (PARTITION BY bidder, auction ORDER BY dateTime DESC) AS r FROM bid)
WHERE r = 1`,
	},

	"q19": {
		SQL: `SELECT * FROM
(SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid)
WHERE rank_number <= 10`,
		// Rank k of an auction holds its k-th highest price (repeats
		// counted); which bid at a tied price takes which rank is open.
		Key:        []int{0, 2, 7},
		Candidates: bidColumns,
		Cand:       []int{0, 1, 2, 3, 4, 5, 6},
		Ties: `SELECT count(*) FROM (
  SELECT auction, price FROM (
    SELECT auction, price, RANK() OVER (PARTITION BY auction ORDER BY price DESC) AS r FROM bid)
  WHERE r <= 10
  GROUP BY auction, price
  HAVING count(*) > 1)`,
	},

	"q20": {SQL: `SELECT
  auction, bidder, price, channel, url, B.dateTime, B.extra,
  itemName, description, initialBid, reserve, A.dateTime, expires, seller, category, A.extra
FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id
WHERE A.category = 10`},
	// q23: the suite's multi-way join, verbatim.
	"q23": {SQL: `SELECT bidder, price, channel, url, B.extra AS bid_extra,
  P.id AS person_id, name, emailAddress, creditCard, city, state, P.extra AS person_extra,
  itemName, description, initialBid, reserve, A.dateTime AS auction_dateTime, expires, seller, category, A.extra AS auction_extra
FROM bid B JOIN person P ON P.id = B.bidder JOIN auction A ON A.seller = B.bidder`},
}

// viewColumns are the columns of the suite's views (ddl_views.sql), as
// the DuckDB tables hold them.
var viewColumns = map[nexmark.EventType]struct {
	table, cols string
}{
	nexmark.PersonEvent:  {"person", "id, name, emailAddress, creditCard, city, state, CAST(dateTime AS TIMESTAMP) AS dateTime, extra"},
	nexmark.AuctionEvent: {"auction", "id, itemName, description, initialBid, reserve, CAST(dateTime AS TIMESTAMP) AS dateTime, CAST(expires AS TIMESTAMP) AS expires, seller, category, extra"},
	nexmark.BidEvent:     {"bid", "auction, bidder, price, channel, url, CAST(dateTime AS TIMESTAMP) AS dateTime, extra"},
}

// projectSchema is the schema nexmark.Project gives for events of kind k.
func projectSchema(k nexmark.EventType) *arrow.Schema {
	switch k {
	case nexmark.PersonEvent:
		return nexmark.PersonSchema()
	case nexmark.AuctionEvent:
		return nexmark.AuctionSchema()
	}
	return nexmark.BidSchema()
}

// eventCounts are the rows written per event type.
type eventCounts map[nexmark.EventType]int64

// writeEvents reads every event of src's generator and writes the
// person, auction and bid rows (nexmark.Project: every column) to
// person.parquet, auction.parquet and bid.parquet in dir. It reads a copy
// of the generator with one split and no rate limit: an event depends
// only on its number, not on the splits, so these are the events the job
// read. mem must have nothing left allocated when it returns.
func writeEvents(ctx context.Context, mem memory.Allocator, src *nexmark.Source, dir string) (eventCounts, error) {
	cfg := src.Config()
	if cfg.Events <= 0 {
		return nil, errors.New("write events: the source is unbounded")
	}
	cfg.Splits, cfg.RateLimit = 1, 0
	one, err := nexmark.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("write events: %w", err)
	}
	splits, err := one.Splits(ctx)
	if err != nil {
		return nil, fmt.Errorf("write events: %w", err)
	}
	states := make([]arrowflow.SplitState, len(splits))
	for i, s := range splits {
		states[i] = arrowflow.SplitState{Split: s}
	}
	rd, err := one.Open(&arrowflow.TaskInfo{Job: "duckdb-suite", Parallelism: 1, Allocator: mem}, states)
	if err != nil {
		return nil, fmt.Errorf("write events: %w", err)
	}
	defer rd.Close()

	kinds := []nexmark.EventType{nexmark.PersonEvent, nexmark.AuctionEvent, nexmark.BidEvent}
	writers := map[nexmark.EventType]*pqarrow.FileWriter{}
	files := map[nexmark.EventType]*os.File{}
	closeAll := func() error {
		var errs []error
		for _, k := range kinds {
			// A FileWriter closes its file.
			if w := writers[k]; w != nil {
				errs = append(errs, w.Close())
			} else if f := files[k]; f != nil {
				errs = append(errs, f.Close())
			}
		}
		writers, files = nil, nil
		return errors.Join(errs...)
	}
	defer closeAll()
	for _, k := range kinds {
		f, err := os.Create(filepath.Join(dir, viewColumns[k].table+".parquet"))
		if err != nil {
			return nil, fmt.Errorf("write events: %w", err)
		}
		files[k] = f
		w, err := pqarrow.NewFileWriter(projectSchema(k), f,
			parquet.NewWriterProperties(parquet.WithAllocator(mem)),
			pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
		if err != nil {
			return nil, fmt.Errorf("write events: %s: %w", viewColumns[k].table, err)
		}
		writers[k] = w
	}
	counts := eventCounts{}
	for {
		b, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("write events: %w", err)
		}
		if b.IsZero() {
			continue
		}
		for _, k := range kinds {
			rec, err := nexmark.Project(mem, b, k)
			if err != nil {
				b.Release()
				return nil, fmt.Errorf("write events: %w", err)
			}
			counts[k] += rec.NumRows()
			err = writers[k].WriteBuffered(rec)
			rec.Release()
			if err != nil {
				b.Release()
				return nil, fmt.Errorf("write events: %s: %w", viewColumns[k].table, err)
			}
		}
		b.Release()
	}
	if err := closeAll(); err != nil {
		return nil, fmt.Errorf("write events: %w", err)
	}
	return counts, nil
}

// loadEvents creates the DuckDB tables person, auction and bid from the
// Parquet files writeEvents wrote to dir, with the views' columns.
func loadEvents(ctx context.Context, d *duck, dir string) error {
	for _, k := range []nexmark.EventType{nexmark.PersonEvent, nexmark.AuctionEvent, nexmark.BidEvent} {
		v := viewColumns[k]
		path := strings.ReplaceAll(filepath.Join(dir, v.table+".parquet"), "'", "''")
		stmt := fmt.Sprintf("CREATE TABLE %s AS SELECT %s FROM read_parquet('%s')", v.table, v.cols, path)
		if _, err := d.conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("duckdb: load %s: %w", v.table, err)
		}
	}
	return nil
}

// queryRows runs query in d and returns its rows, each value as the
// driver scans it (int64, string, time.Time, ...; nil for NULL).
func queryRows(ctx context.Context, d *duck, query string) ([][]any, error) {
	rows, err := d.conn.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, vals)
	}
	return out, rows.Err()
}

// fmtValue formats one value of either engine the same way: integers in
// decimal, strings as they are, timestamps in UTC (RFC 3339, to the
// nanosecond the value holds: milliseconds here), NULL for nil. Any other
// type is written with its Go type, so that it cannot equal a value of
// the other engine by accident.
func fmtValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case int64:
		return fmt.Sprint(x)
	case int32:
		return fmt.Sprint(int64(x))
	case int16:
		return fmt.Sprint(int64(x))
	case int8:
		return fmt.Sprint(int64(x))
	case uint64:
		return fmt.Sprint(x)
	case uint32:
		return fmt.Sprint(uint64(x))
	case string:
		return x
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

// fmtRows formats each row's columns cols (all when nil), joined by " | ".
func fmtRows(rows [][]any, cols []int) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		var b strings.Builder
		pick := cols
		if pick == nil {
			pick = make([]int, len(r))
			for j := range r {
				pick[j] = j
			}
		}
		for j, c := range pick {
			if j > 0 {
				b.WriteString(" | ")
			}
			if c < len(r) {
				b.WriteString(fmtValue(r[c]))
			} else {
				fmt.Fprintf(&b, "<no column %d>", c)
			}
		}
		out[i] = b.String()
	}
	return out
}
