package sql

import (
	"fmt"
	"slices"
	"sort"
	"testing"
)

// The updating constructs (non-window GROUP BY with HAVING, aggregations
// of aggregations, DISTINCT, outer joins with a residual, joins of
// updating inputs, multi-way comma joins, RANK and DENSE_RANK Top-N) at
// parallelism 1, 2 and 4: the sink's materialized table equals a plain Go
// answer over the same events.
func TestUpdatingQueries(t *testing.T) {
	bids, auctions := readNexmark(t)
	type query struct {
		name, sink, body string
		want             func() []string
	}
	perBidder := func() map[int64][]testBid {
		m := map[int64][]testBid{}
		for _, b := range bids {
			m[b.bidder] = append(m[b.bidder], b)
		}
		return m
	}
	queries := []query{
		{
			name: "group by with having",
			sink: "CREATE TABLE out (bidder BIGINT, n BIGINT, mx BIGINT, mn BIGINT, s BIGINT, da BIGINT, cheap BIGINT) WITH ('connector' = 'blackhole');",
			body: "INSERT INTO out SELECT bidder, COUNT(*) AS n, MAX(price), MIN(price), SUM(price), COUNT(DISTINCT auction), COUNT(*) FILTER (WHERE price < 1000) FROM bid GROUP BY bidder HAVING COUNT(*) > 2;",
			want: func() []string {
				var out []string
				for bidder, bs := range perBidder() {
					if len(bs) <= 2 {
						continue
					}
					mx, mn, s, cheap := bs[0].price, bs[0].price, int64(0), 0
					da := map[int64]bool{}
					for _, b := range bs {
						mx, mn, s = max(mx, b.price), min(mn, b.price), s+b.price
						da[b.auction] = true
						if b.price < 1000 {
							cheap++
						}
					}
					out = append(out, fmtRow(bidder, len(bs), mx, mn, s, len(da), cheap))
				}
				return out
			},
		},
		{
			name: "aggregation of an aggregation",
			sink: "CREATE TABLE out (n BIGINT, bidders BIGINT, top BIGINT) WITH ('connector' = 'blackhole');",
			body: "INSERT INTO out SELECT n, COUNT(*), MAX(bidder) FROM (SELECT bidder, COUNT(*) AS n FROM bid GROUP BY bidder) GROUP BY n;",
			want: func() []string {
				hist, top := map[int]int{}, map[int]int64{}
				for bidder, bs := range perBidder() {
					hist[len(bs)]++
					top[len(bs)] = max(top[len(bs)], bidder)
				}
				var out []string
				for n, c := range hist {
					out = append(out, fmtRow(n, c, top[n]))
				}
				return out
			},
		},
		{
			name: "global aggregate over updates",
			sink: "CREATE TABLE out (lo BIGINT, hi BIGINT, total BIGINT, k BIGINT) WITH ('connector' = 'blackhole');",
			body: "INSERT INTO out SELECT MIN(n), MAX(n), SUM(n), COUNT(*) FROM (SELECT bidder, COUNT(*) AS n FROM bid GROUP BY bidder);",
			want: func() []string {
				lo, hi := len(bids), 0
				m := perBidder()
				for _, bs := range m {
					lo, hi = min(lo, len(bs)), max(hi, len(bs))
				}
				return []string{fmtRow(lo, hi, len(bids), len(m))}
			},
		},
		{
			name: "keyless aggregate in two phases",
			sink: "CREATE TABLE out (n BIGINT, s BIGINT, mx BIGINT, a DOUBLE) WITH ('connector' = 'blackhole');",
			body: "INSERT INTO out SELECT COUNT(*), SUM(price), MAX(price), AVG(price) FROM bid WHERE price < 100000;",
			want: func() []string {
				n, s, mx := 0, int64(0), int64(0)
				for _, b := range bids {
					if b.price < 100000 {
						n, s, mx = n+1, s+b.price, max(mx, b.price)
					}
				}
				return []string{fmtRow(n, s, mx, float64(s)/float64(n))}
			},
		},
		{
			name: "keyed aggregate in two phases",
			sink: "SET 'table.optimizer.agg-phase-strategy' = 'TWO_PHASE';\nCREATE TABLE out (bidder BIGINT, n BIGINT, s BIGINT) WITH ('connector' = 'blackhole');",
			body: "INSERT INTO out SELECT bidder, COUNT(*), SUM(price) FROM bid GROUP BY bidder;",
			want: func() []string {
				var out []string
				for bidder, bs := range perBidder() {
					s := int64(0)
					for _, b := range bs {
						s += b.price
					}
					out = append(out, fmtRow(bidder, len(bs), s))
				}
				return out
			},
		},
		{
			name: "distinct",
			sink: "CREATE TABLE out (a BIGINT, channel VARCHAR) WITH ('connector' = 'blackhole');",
			body: "INSERT INTO out SELECT DISTINCT auction % 7, channel FROM bid WHERE price < 100000;",
			want: func() []string {
				seen := map[string]bool{}
				for _, b := range bids {
					if b.price < 100000 {
						seen[fmtRow(b.auction%7, b.channel)] = true
					}
				}
				var out []string
				for r := range seen {
					out = append(out, r)
				}
				return out
			},
		},
		{
			name: "left join with a residual",
			sink: "CREATE TABLE out (id BIGINT, seller BIGINT, price BIGINT) WITH ('connector' = 'blackhole');",
			body: "INSERT INTO out SELECT a.id, a.seller, b.price FROM auction a LEFT JOIN bid b ON a.id = b.auction AND b.price > 5000000;",
			want: func() []string {
				var out []string
				for _, a := range auctions {
					matched := false
					for _, b := range bids {
						if b.auction == a.id && b.price > 5000000 {
							out = append(out, fmtRow(a.id, a.seller, b.price))
							matched = true
						}
					}
					if !matched {
						out = append(out, fmtRow(a.id, a.seller, nil))
					}
				}
				return out
			},
		},
		{
			name: "full join of two aggregations",
			sink: "CREATE TABLE out (seller BIGINT, na BIGINT, bidder BIGINT, nb BIGINT) WITH ('connector' = 'blackhole');",
			body: `INSERT INTO out SELECT s.seller, s.na, c.bidder, c.nb FROM
				(SELECT seller, COUNT(*) AS na FROM auction GROUP BY seller) s
				FULL JOIN (SELECT bidder, COUNT(*) AS nb FROM bid GROUP BY bidder) c ON s.seller = c.bidder;`,
			want: func() []string {
				na := map[int64]int{}
				for _, a := range auctions {
					na[a.seller]++
				}
				nb := map[int64]int{}
				for _, b := range bids {
					nb[b.bidder]++
				}
				var out []string
				for s, n := range na {
					if m, ok := nb[s]; ok {
						out = append(out, fmtRow(s, n, s, m))
					} else {
						out = append(out, fmtRow(s, n, nil, nil))
					}
				}
				for b, m := range nb {
					if _, ok := na[b]; !ok {
						out = append(out, fmtRow(nil, nil, b, m))
					}
				}
				return out
			},
		},
		{
			name: "three-way comma join",
			sink: "CREATE TABLE out (auction BIGINT, price BIGINT, seller BIGINT, n BIGINT) WITH ('connector' = 'blackhole');",
			body: `INSERT INTO out SELECT b.auction, b.price, a.seller, x.n
				FROM bid b, auction a, (SELECT seller, COUNT(*) AS n FROM auction GROUP BY seller) x
				WHERE b.auction = a.id AND a.seller = x.seller AND b.price < 2000;`,
			want: func() []string {
				n := map[int64]int{}
				byID := map[int64]testAuction{}
				for _, a := range auctions {
					n[a.seller]++
					byID[a.id] = a
				}
				var out []string
				for _, b := range bids {
					if a, ok := byID[b.auction]; ok && b.price < 2000 {
						out = append(out, fmtRow(b.auction, b.price, a.seller, n[a.seller]))
					}
				}
				return out
			},
		},
		{
			name: "rank top-2",
			sink: "CREATE TABLE out (auction BIGINT, price BIGINT, rk BIGINT) WITH ('connector' = 'blackhole');",
			body: "INSERT INTO out SELECT auction, price, rk FROM (SELECT auction, price, RANK() OVER (PARTITION BY auction ORDER BY price DESC) AS rk FROM bid) WHERE rk <= 2;",
			want: func() []string {
				return rankRef(bids, func(b testBid) int64 { return b.price }, false, 2)
			},
		},
		{
			name: "dense rank top-3 with ties",
			sink: "CREATE TABLE out (auction BIGINT, price BIGINT, rk BIGINT) WITH ('connector' = 'blackhole');",
			body: "INSERT INTO out SELECT auction, price, rk FROM (SELECT auction, price, DENSE_RANK() OVER (PARTITION BY auction ORDER BY band DESC) AS rk FROM (SELECT auction, price, price / 1000000 AS band FROM bid)) WHERE rk <= 3;",
			want: func() []string {
				return rankRef(bids, func(b testBid) int64 { return b.price / 1000000 }, true, 3)
			},
		},
	}
	for _, q := range queries {
		want := q.want()
		for _, par := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/p%d", q.name, par), func(t *testing.T) {
				got := runScript(t, q.sink+"\n"+q.body, "out", par)
				compareRows(t, got, slices.Clone(want))
			})
		}
	}
}

// rankRef ranks each auction's bids by key descending (RANK, or
// DENSE_RANK when dense) and keeps ranks up to n, as (auction, price,
// rank) rows.
func rankRef(bids []testBid, key func(testBid) int64, dense bool, n int) []string {
	by := map[int64][]testBid{}
	for _, b := range bids {
		by[b.auction] = append(by[b.auction], b)
	}
	var out []string
	for a, bs := range by {
		sort.SliceStable(bs, func(i, j int) bool { return key(bs[i]) > key(bs[j]) })
		rank, distinct := 0, 0
		for i, b := range bs {
			if i == 0 || key(b) != key(bs[i-1]) {
				distinct++
				rank = i + 1
			}
			r := rank
			if dense {
				r = distinct
			}
			if r > n {
				break
			}
			out = append(out, fmtRow(a, b.price, r))
		}
	}
	return out
}

// ROW_NUMBER() ... ORDER BY a processing-time attribute = 1 keeps each
// key's first row to arrive, append-only (which row arrives first
// depends on the run): one row per bidder, each one of its bids, and the
// row number column, always 1.
func TestDeduplicateByProcessingTime(t *testing.T) {
	bids, _ := readNexmark(t)
	own := map[string]bool{}
	bidders := map[int64]bool{}
	for _, b := range bids {
		own[fmtRow(b.bidder, b.auction, b.price)] = true
		bidders[b.bidder] = true
	}
	for _, par := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("p%d", par), func(t *testing.T) {
			got := runScript(t, `CREATE TABLE out (bidder BIGINT, auction BIGINT, price BIGINT, rn BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out SELECT bidder, auction, price, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY pt) AS rn FROM (SELECT *, PROCTIME() AS pt FROM bid))
WHERE rn = 1;`, "out", par)
			if len(got) != len(bidders) {
				t.Fatalf("%d rows, %d bidders", len(got), len(bidders))
			}
			seen := map[string]bool{}
			for _, r := range got {
				var bidder, auction, price, rn int64
				if _, err := fmt.Sscanf(r, "%d | %d | %d | %d", &bidder, &auction, &price, &rn); err != nil {
					t.Fatalf("row %q: %v", r, err)
				}
				if !own[fmtRow(bidder, auction, price)] || rn != 1 || seen[fmt.Sprint(bidder)] {
					t.Fatalf("row %q is not one first bid of its bidder", r)
				}
				seen[fmt.Sprint(bidder)] = true
			}
		})
	}
}

// ROW_NUMBER() ... ORDER BY an event-time column ASC = 1 keeps each key's
// earliest row even when a later one arrives first (rows of several
// splits interleave): an updating result, as Flink's event-time
// deduplication.
func TestDeduplicateByEventTimeKeepsEarliest(t *testing.T) {
	bids, _ := readNexmark(t)
	earliest := map[int64]testBid{}
	for _, b := range bids {
		if e, ok := earliest[b.bidder]; !ok || b.ts.Before(e.ts) {
			earliest[b.bidder] = b
		}
	}
	for _, par := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("p%d", par), func(t *testing.T) {
			got := runScript(t, `CREATE TABLE out (bidder BIGINT, ts TIMESTAMP(3)) WITH ('connector' = 'blackhole');
INSERT INTO out SELECT bidder, dateTime FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY dateTime ASC) AS rn FROM bid)
WHERE rn = 1;`, "out", par)
			var want []string
			for bidder, b := range earliest {
				want = append(want, fmtRow(bidder, b.ts))
			}
			compareRows(t, got, want)
		})
	}
}

// ROW_NUMBER() ... ORDER BY a processing-time attribute DESC = 1 keeps
// each key's last row to arrive (an updating result): one row per
// bidder, one of its bids.
func TestDeduplicateLastByProcessingTime(t *testing.T) {
	bids, _ := readNexmark(t)
	own := map[string]bool{}
	bidders := map[int64]bool{}
	for _, b := range bids {
		own[fmtRow(b.bidder, b.auction, b.price)] = true
		bidders[b.bidder] = true
	}
	for _, par := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("p%d", par), func(t *testing.T) {
			got := runScript(t, `CREATE TABLE out (bidder BIGINT, auction BIGINT, price BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out SELECT bidder, auction, price FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY pt DESC) AS rn FROM (SELECT *, PROCTIME() AS pt FROM bid))
WHERE rn = 1;`, "out", par)
			if len(got) != len(bidders) {
				t.Fatalf("%d rows, %d bidders", len(got), len(bidders))
			}
			for _, r := range got {
				var bidder, auction, price int64
				if _, err := fmt.Sscanf(r, "%d | %d | %d", &bidder, &auction, &price); err != nil || !own[fmtRow(bidder, auction, price)] {
					t.Fatalf("row %q is not a bid of its bidder", r)
				}
			}
		})
	}
}
