package nexmarkref

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/sources/nexmark"
)

// fmtVals formats a row's values as the sql suite's fmtRow does.
func fmtVals(vals []any) string {
	s := make([]string, len(vals))
	for i, v := range vals {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, " | ")
}

func checkRows[R comparable](t *testing.T, q string, got, want []R) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %d rows: %+v\nwant %d rows: %+v", q, len(got), got, len(want), want)
	}
}

// t0 is one minute before midnight, so that some bids fall on the next day.
var t0 = time.Date(2026, 1, 1, 23, 59, 0, 0, time.UTC)

// handTables are a few events whose answers are worked out by hand in the
// tests: auction windows hit at both ends and missed by a millisecond, ties
// on price and on (price, time), a bid on an auction that does not exist,
// days split at midnight and prices at the rank boundaries.
func handTables() Tables {
	p := func(id int64, name, city, state string) PersonRow {
		return PersonRow{ID: id, Name: name, EmailAddress: name + "@x", CreditCard: "1", City: city, State: state, DateTime: t0, Extra: "p"}
	}
	a := func(id, seller, category int64, length time.Duration) AuctionRow {
		return AuctionRow{ID: id, ItemName: fmt.Sprint("item", id), Description: "d", InitialBid: 1, Reserve: 2,
			DateTime: t0, Expires: t0.Add(length), Seller: seller, Category: category, Extra: "a"}
	}
	b := func(auction, bidder, price int64, channel string, at time.Duration, extra string) Bid {
		return Bid{Auction: auction, Bidder: bidder, Price: price, Channel: channel, URL: "u", Extra: extra, DateTime: t0.Add(at)}
	}
	return Tables{
		Persons: []PersonRow{p(1, "alice", "Portland", "OR"), p(2, "bob", "Boise", "ID"), p(3, "carol", "Seattle", "WA"), p(4, "dave", "LA", "CA")},
		Auctions: []AuctionRow{
			a(100, 1, 10, 10*time.Minute),
			a(101, 2, 10, time.Minute),
			a(102, 3, 10, time.Minute), // seller in WA
			a(103, 4, 11, time.Minute), // category 11
			a(104, 9, 10, time.Minute), // no such seller, no bids
			a(105, 4, 10, time.Minute), // no bid in its window
		},
		Bids: []Bid{
			b(100, 7, 500, "A", 0, "b1"),                                // at the window's start: in
			b(100, 8, 900, "A", 10*time.Minute, "b2"),                   // at its end: in
			b(100, 7, 9999, "A", 10*time.Minute+time.Millisecond, "b3"), // 1 ms after: out
			b(101, 7, 300, "A", 30*time.Second, "b4"),
			b(101, 8, 300, "B", 20*time.Second, "b5"),    // same price, earlier: wins q9
			b(101, 9, 200, "A", -time.Millisecond, "b6"), // 1 ms before the window
			b(102, 7, 11, "B", 5*time.Second, "b7"),
			b(102, 9, 11, "B", 5*time.Second, "b8"),        // ties b7 on price and time
			b(103, 8, 1_000_000, "B", 2*time.Minute, "b9"), // out of the window
			b(103, 8, 7, "A", time.Second, "b10"),
			b(999, 7, 10_000, "A", 90*time.Second, "b11"), // no such auction
			b(999, 8, 999_999, "A", 3*time.Minute, "b12"),
		},
	}
}

func TestQ3Hand(t *testing.T) {
	checkRows(t, "q3", Q3(handTables()), []Q3Row{
		{"alice", "Portland", "OR", 100}, {"bob", "Boise", "ID", 101}, {"dave", "LA", "CA", 105},
	})
}

func TestQ4Hand(t *testing.T) {
	// Category 10: maxima 900 (a100), 300 (a101), 11 (a102): 1211 / 3 is
	// 403 in integer division. Category 11: a103's only bid in its window.
	checkRows(t, "q4", Q4(handTables()), []Q4Row{{10, 403}, {11, 7}})
}

func TestQ9Hand(t *testing.T) {
	ht := handTables()
	row := func(a AuctionRow, b Bid, ties int) Q9Row {
		return Q9Row{ID: a.ID, ItemName: a.ItemName, Description: a.Description, InitialBid: a.InitialBid, Reserve: a.Reserve,
			DateTime: a.DateTime, Expires: a.Expires, Seller: a.Seller, Category: a.Category, Extra: a.Extra,
			Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, BidDateTime: b.DateTime, BidExtra: b.Extra, Ties: ties}
	}
	A, B := ht.Auctions, ht.Bids
	want := []Q9Row{row(A[0], B[1], 1), row(A[1], B[4], 1), row(A[2], B[6], 2), row(A[2], B[7], 2), row(A[3], B[9], 1)}
	got := Q9(ht)
	checkRows(t, "q9", got, want)

	format := func(r Q9Row) string { return fmtVals(r.Values()) }
	fs := func(rows ...Q9Row) []string {
		var s []string
		for _, r := range rows {
			s = append(s, format(r))
		}
		return s
	}
	for _, ok := range [][]Q9Row{{want[0], want[1], want[2], want[4]}, {want[4], want[3], want[1], want[0]}} {
		if err := CheckQ9(fs(ok...), want, format); err != nil {
			t.Errorf("CheckQ9 refuses a valid answer: %v", err)
		}
	}
	other := want[0]
	other.Bidder = 42
	for name, bad := range map[string][]Q9Row{
		"both tied rows":   want[:4],
		"a tie left out":   {want[0], want[1], want[4]},
		"an auction twice": {want[0], want[0], want[1], want[2], want[4]},
		"a wrong row":      {other, want[1], want[2], want[4]},
		"nothing":          nil,
	} {
		if err := CheckQ9(fs(bad...), want, format); err == nil {
			t.Errorf("CheckQ9 accepts %s", name)
		}
	}
}

func TestQ15Hand(t *testing.T) {
	// Day 1 (before midnight): b1 b4 b5 b6 b7 b8 b10, all under 10000,
	// bidders 7 8 9, auctions 100 101 102 103. Day 2: b2 b3 (rank 1, 9999
	// included), b11 b12 (rank 2: 10000 and 999999), b9 (rank 3: 1000000).
	checkRows(t, "q15", Q15(handTables()), []Q15Row{
		{"2026-01-01", RankCounts{7, 7, 0, 0, 3, 3, 0, 0, 4, 4, 0, 0}},
		{"2026-01-02", RankCounts{5, 2, 2, 1, 2, 2, 2, 1, 3, 1, 1, 1}},
	})
}

func TestQ16Hand(t *testing.T) {
	// (A, day 2)'s latest minute is its first bid's, 00:09 (b2), not its
	// last's (b12 at 00:02).
	checkRows(t, "q16", Q16(handTables()), []Q16Row{
		{"A", "2026-01-01", "23:59", RankCounts{4, 4, 0, 0, 3, 3, 0, 0, 3, 3, 0, 0}},
		{"A", "2026-01-02", "00:09", RankCounts{4, 2, 2, 0, 2, 2, 2, 0, 2, 1, 1, 0}},
		{"B", "2026-01-01", "23:59", RankCounts{3, 3, 0, 0, 3, 3, 0, 0, 2, 2, 0, 0}},
		{"B", "2026-01-02", "00:01", RankCounts{1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1}},
	})
}

func TestQ17Hand(t *testing.T) {
	// avg_price truncates: 800/3 = 266, 10899/2 = 5449, 1009999/2 = 504999.
	checkRows(t, "q17", Q17(handTables()), []Q17Row{
		{100, "2026-01-01", 1, 1, 0, 0, 500, 500, 500, 500},
		{100, "2026-01-02", 2, 2, 0, 0, 900, 9999, 5449, 10899},
		{101, "2026-01-01", 3, 3, 0, 0, 200, 300, 266, 800},
		{102, "2026-01-01", 2, 2, 0, 0, 11, 11, 11, 22},
		{103, "2026-01-02", 1, 0, 0, 1, 1_000_000, 1_000_000, 1_000_000, 1_000_000},
		{103, "2026-01-01", 1, 1, 0, 0, 7, 7, 7, 7},
		{999, "2026-01-02", 2, 0, 2, 0, 10_000, 999_999, 504_999, 1_009_999},
	})
}

func TestQ20Hand(t *testing.T) {
	ht := handTables()
	var want []Q20Row
	for _, b := range ht.Bids[:8] { // bids on 100, 101, 102: category 10
		a := ht.Auctions[b.Auction-100]
		want = append(want, Q20Row{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, Channel: b.Channel, URL: b.URL,
			BidDateTime: b.DateTime, BidExtra: b.Extra, ItemName: a.ItemName, Description: a.Description,
			InitialBid: a.InitialBid, Reserve: a.Reserve, AuctionDateTime: a.DateTime, Expires: a.Expires,
			Seller: a.Seller, Category: a.Category, AuctionExtra: a.Extra})
	}
	checkRows(t, "q20", Q20(ht), want)
	if got := want[0].Values(); len(got) != 16 || got[7] != "item100" || got[15] != "a" {
		t.Errorf("q20 values %v: want 16 columns, itemName 8th, auction_extra last", got)
	}
}

func TestQ18Hand(t *testing.T) {
	T := t0
	b := func(auction, bidder, price int64, at time.Duration) Bid {
		return Bid{Auction: auction, Bidder: bidder, Price: price, Channel: "c", URL: "u", Extra: fmt.Sprint(price), DateTime: T.Add(at)}
	}
	bids := []Bid{
		b(1, 1, 10, 0),
		b(1, 1, 20, time.Second),
		b(1, 1, 5, 500*time.Millisecond), // arrives last, but earlier: not kept
		b(2, 1, 30, 2*time.Second),
		b(2, 1, 31, 2*time.Second), // ties the one before: the last to arrive
		b(1, 2, 40, 0),
	}
	row := func(b Bid, ties int, last bool) Q18Row {
		return Q18Row{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, Channel: b.Channel, URL: b.URL,
			DateTime: b.DateTime, Extra: b.Extra, Ties: ties, Last: last}
	}
	want := []Q18Row{row(bids[1], 1, true), row(bids[3], 2, false), row(bids[4], 2, true), row(bids[5], 1, true)}
	checkRows(t, "q18", Q18(Tables{Bids: bids}), want)

	format := func(r Q18Row) string { return fmtVals(r.Values()) }
	fs := func(rows ...Q18Row) []string {
		var s []string
		for _, r := range rows {
			s = append(s, format(r))
		}
		return s
	}
	for _, ok := range [][]Q18Row{{want[0], want[2], want[3]}, {want[3], want[1], want[0]}} {
		if err := CheckQ18(fs(ok...), want, format); err != nil {
			t.Errorf("CheckQ18 refuses a valid answer: %v", err)
		}
	}
	first := row(bids[0], 1, true)
	for name, bad := range map[string][]Q18Row{
		"both tied rows":  want,
		"an earlier bid":  {first, want[2], want[3]},
		"a pair left out": {want[0], want[2]},
	} {
		if err := CheckQ18(fs(bad...), want, format); err == nil {
			t.Errorf("CheckQ18 accepts %s", name)
		}
	}
}

func TestQ19Hand(t *testing.T) {
	var bids []Bid
	add := func(auction, bidder, price int64) {
		bids = append(bids, Bid{Auction: auction, Bidder: bidder, Price: price, Channel: "c", URL: "u", Extra: "e",
			DateTime: t0.Add(time.Duration(len(bids)) * time.Second)})
	}
	// Auction 1: 12 bids, three at 90 (ranks 2 to 4), two at 20 of which
	// one takes rank 10, and 10 out of the top 10.
	for i, p := range []int64{20, 90, 100, 90, 80, 70, 10, 60, 50, 90, 40, 20} {
		add(1, int64(i), p)
	}
	// Auction 2: one bid twice, exactly (ranks 1 and 2 both copy it).
	add(2, 7, 5)
	bids = append(bids, bids[len(bids)-1])
	// Auction 3: one bid.
	add(3, 1, 1)
	want := Q19(Tables{Bids: bids})

	type rk struct{ auction, rank int64 }
	rows := map[rk][]Q19Row{}
	for _, r := range want {
		k := rk{r.Auction, r.RankNumber}
		rows[k] = append(rows[k], r)
	}
	for _, r := range want {
		if n := len(rows[rk{r.Auction, r.RankNumber}]); r.Ties != n {
			t.Errorf("row %+v: Ties %d, but %d rows at its rank", r, r.Ties, n)
		}
	}
	prices := []int64{100, 90, 90, 90, 80, 70, 60, 50, 40, 20}
	for i, p := range prices {
		k := rk{1, int64(i + 1)}
		n := 1
		switch p {
		case 90, 20:
			n = map[int64]int{90: 3, 20: 2}[p]
		}
		if len(rows[k]) != n {
			t.Errorf("auction 1 rank %d: %d candidates, want %d", i+1, len(rows[k]), n)
		}
		for _, r := range rows[k] {
			if r.Price != p || r.Ties != n {
				t.Errorf("auction 1 rank %d: candidate %+v, want price %d, Ties %d", i+1, r, p, n)
			}
		}
	}
	if len(rows[rk{2, 1}]) != 2 || len(rows[rk{2, 2}]) != 2 || len(rows[rk{3, 1}]) != 1 || len(want) != 17+4+1 {
		t.Fatalf("auctions 2 and 3: %d and %d and %d candidates, %d in all; want 2, 2, 1 and 22",
			len(rows[rk{2, 1}]), len(rows[rk{2, 2}]), len(rows[rk{3, 1}]), len(want))
	}

	format := func(r Q19Row) string { return fmtVals(r.Values()) }
	// A valid answer: the first candidate of each rank, but ranks 2 to 4
	// take the three bids at 90 in reverse order.
	var valid []string
	done := map[rk]bool{}
	for _, r := range want {
		k := rk{r.Auction, r.RankNumber}
		if done[k] {
			continue
		}
		done[k] = true
		c := rows[k][0]
		if r.Auction == 1 && r.RankNumber >= 2 && r.RankNumber <= 4 {
			c = rows[k][4-r.RankNumber]
		}
		valid = append(valid, format(c))
	}
	if err := CheckQ19(valid, want, format); err != nil {
		t.Errorf("CheckQ19 refuses a valid answer: %v", err)
	}
	// The same bid at 90 at ranks 2 and 3.
	twice := slices.Clone(valid)
	reranked := rows[rk{1, 2}][0]
	reranked.RankNumber = 3
	twice[2] = format(reranked)
	// Rank 10 held by the bid at 10.
	low := slices.Clone(valid)
	low[9] = format(Q19Row{Auction: 1, Bidder: 6, Price: 10, Channel: "c", URL: "u", Extra: "e", DateTime: t0.Add(6 * time.Second), RankNumber: 10})
	for name, bad := range map[string][]string{
		"a bid used twice":       twice,
		"a bid out of the top":   low,
		"a rank left out":        valid[1:],
		"a rank twice":           append(slices.Clone(valid), valid[0]),
		"auction 2's bid thrice": append(slices.Clone(valid), valid[10]),
	} {
		if err := CheckQ19(bad, want, format); err == nil {
			t.Errorf("CheckQ19 accepts %s", name)
		}
	}
}

// sameRows says whether a and b hold the same rows, in any order.
func sameRows[R comparable](a, b []R) bool {
	n := map[R]int{}
	for _, r := range a {
		n[r]++
	}
	for _, r := range b {
		n[r]--
	}
	for _, c := range n {
		if c != 0 {
			return false
		}
	}
	return len(a) == len(b)
}

// genTables reads weir's generator with the suite's proportions (1 person,
// 3 auctions, 46 bids in 50 events).
func genTables(t *testing.T, events, rate int) (Tables, *nexmark.Source) {
	t.Helper()
	src, err := nexmark.New(nexmark.Config{Events: int64(events), EventsPerSecond: int64(rate)})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := ReadTables(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.Bids) != events*46/50 || len(tb.Auctions) != events*3/50 || len(tb.Persons) != events/50 {
		t.Fatalf("%d events read as %d bids, %d auctions, %d persons; want 46, 3 and 1 in 50",
			events, len(tb.Bids), len(tb.Auctions), len(tb.Persons))
	}
	return tb, src
}

// TestUpdatingOverGenerator checks the answers over weir's generator against
// brute-force versions of the joins (nested loops over every pair) and
// invariants of the aggregates, and that each answer is not empty.
func TestUpdatingOverGenerator(t *testing.T) {
	for _, rate := range []int{1000, 10000} {
		t.Run(fmt.Sprintf("r%d", rate), func(t *testing.T) {
			tb, src := genTables(t, 5000, rate)
			ev, err := Read(src)
			if err != nil {
				t.Fatal(err)
			}
			if n := tb.Events(); !sameRows(n.Bids, ev.Bids) || !sameRows(n.Persons, ev.Persons) || !sameRows(n.Auctions, ev.Auctions) {
				t.Fatal("Tables.Events differs from Read's events")
			}
			// The generator's order is event time's (the default
			// out-of-order group size is 1); Read's is not.
			inOrder := func(n int, at func(int) time.Time) bool {
				for i := 1; i < n; i++ {
					if at(i).Before(at(i - 1)) {
						return false
					}
				}
				return true
			}
			if !inOrder(len(tb.Bids), func(i int) time.Time { return tb.Bids[i].DateTime }) ||
				!inOrder(len(tb.Auctions), func(i int) time.Time { return tb.Auctions[i].DateTime }) ||
				!inOrder(len(tb.Persons), func(i int) time.Time { return tb.Persons[i].DateTime }) {
				t.Error("ReadTables' rows are not in the generator's order")
			}
			if inOrder(len(ev.Bids), func(i int) time.Time { return ev.Bids[i].DateTime }) {
				t.Log("Read's bids are in event-time order too")
			}
			for _, p := range tb.Persons {
				if p.State == "" || p.City == "" || p.DateTime.Location() != time.UTC {
					t.Fatalf("person %+v: empty state or city, or time not in UTC", p)
				}
			}
			checkGenJoins(t, tb)
			checkGenAggregates(t, tb)
			checkGenRanks(t, tb)
		})
	}
}

func checkGenJoins(t *testing.T, tb Tables) {
	t.Helper()
	var q3 []Q3Row
	for _, a := range tb.Auctions {
		for _, p := range tb.Persons {
			if a.Seller == p.ID && a.Category == 10 && (p.State == "OR" || p.State == "ID" || p.State == "CA") {
				q3 = append(q3, Q3Row{p.Name, p.City, p.State, a.ID})
			}
		}
	}
	checkRows(t, "q3", Q3(tb), q3)

	var q20 []Q20Row
	for _, b := range tb.Bids {
		for _, a := range tb.Auctions {
			if b.Auction == a.ID && a.Category == 10 {
				q20 = append(q20, Q20Row{b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime, b.Extra,
					a.ItemName, a.Description, a.InitialBid, a.Reserve, a.DateTime, a.Expires, a.Seller, a.Category, a.Extra})
			}
		}
	}
	checkRows(t, "q20", Q20(tb), q20)

	// q4 and q9 by brute force: for each auction, its bids in the window.
	sums := map[int64][2]int64{}
	var cats []int64
	q9 := Q9(tb)
	winners := map[int64][]Q9Row{}
	for _, r := range q9 {
		winners[r.ID] = append(winners[r.ID], r)
	}
	for _, a := range tb.Auctions {
		var in []Bid
		for _, b := range tb.Bids {
			if b.Auction == a.ID && !b.DateTime.Before(a.DateTime) && !b.DateTime.After(a.Expires) {
				in = append(in, b)
			}
		}
		w := winners[a.ID]
		if len(in) == 0 {
			if len(w) != 0 {
				t.Errorf("q9: auction %d has no bid in its window, but winners %+v", a.ID, w)
			}
			continue
		}
		top := slices.MaxFunc(in, func(x, y Bid) int {
			if c := cmpInt(x.Price, y.Price); c != 0 {
				return c
			}
			return y.DateTime.Compare(x.DateTime) // earlier is greater
		})
		var ties int
		for _, b := range in {
			if b.Price == top.Price && b.DateTime.Equal(top.DateTime) {
				ties++
			}
		}
		if len(w) != ties {
			t.Errorf("q9: auction %d has %d winners, want %d", a.ID, len(w), ties)
		}
		for _, r := range w {
			if r.Price != top.Price || !r.BidDateTime.Equal(top.DateTime) || r.Ties != ties || r.ItemName != a.ItemName || r.Auction != a.ID {
				t.Errorf("q9: auction %d: winner %+v, want price %d at %v", a.ID, r, top.Price, top.DateTime)
			}
		}
		s, ok := sums[a.Category]
		if !ok {
			cats = append(cats, a.Category)
		}
		sums[a.Category] = [2]int64{s[0] + top.Price, s[1] + 1}
	}
	var q4 []Q4Row
	for _, c := range cats {
		q4 = append(q4, Q4Row{c, sums[c][0] / sums[c][1]})
	}
	checkRows(t, "q4", Q4(tb), q4)

	// One valid sink answer: the first candidate of each auction.
	var got []string
	format := func(r Q9Row) string { return fmtVals(r.Values()) }
	done := map[int64]bool{}
	for _, r := range q9 {
		if !done[r.ID] {
			done[r.ID] = true
			got = append(got, format(r))
		}
	}
	if err := CheckQ9(got, q9, format); err != nil {
		t.Errorf("q9: %v", err)
	}
	for q, n := range map[string]int{"q3": len(q3), "q4": len(q4), "q9": len(q9), "q20": len(q20)} {
		if n == 0 {
			t.Errorf("%s's answer over the generator is empty: the test checks little", q)
		}
	}
	t.Logf("q3 %d rows, q4 %d, q9 %d (%d auctions), q20 %d", len(q3), len(q4), len(q9), len(got), len(q20))
}

func checkGenAggregates(t *testing.T, tb Tables) {
	t.Helper()
	n := int64(len(tb.Bids))
	checkCounts := func(q string, c RankCounts) {
		t.Helper()
		if c.Rank1Bids+c.Rank2Bids+c.Rank3Bids != c.TotalBids {
			t.Errorf("%s %+v: the rank counts do not add up to total_bids", q, c)
		}
		for _, x := range [][4]int64{{c.TotalBidders, c.Rank1Bidders, c.Rank2Bidders, c.Rank3Bidders},
			{c.TotalAuctions, c.Rank1Auctions, c.Rank2Auctions, c.Rank3Auctions}} {
			if x[0] > x[1]+x[2]+x[3] || max(x[1], x[2], x[3]) > x[0] || x[0] > c.TotalBids || x[0] == 0 {
				t.Errorf("%s %+v: distinct counts out of bounds", q, c)
			}
		}
	}
	// q15 against distinct counts taken another way: sort and count runs.
	days := map[string][]Bid{}
	for _, b := range tb.Bids {
		days[Day(b.DateTime)] = append(days[Day(b.DateTime)], b)
	}
	distinct := func(bs []Bid, f func(Bid) int64) int64 {
		v := make([]int64, len(bs))
		for i, b := range bs {
			v[i] = f(b)
		}
		slices.Sort(v)
		return int64(len(slices.Compact(v)))
	}
	var total int64
	q15 := Q15(tb)
	for _, r := range q15 {
		checkCounts("q15 "+r.Day, r.RankCounts)
		total += r.TotalBids
		bs := days[r.Day]
		if r.TotalBids != int64(len(bs)) || r.TotalBidders != distinct(bs, func(b Bid) int64 { return b.Bidder }) ||
			r.TotalAuctions != distinct(bs, func(b Bid) int64 { return b.Auction }) {
			t.Errorf("q15 %+v: totals differ from the day's %d bids", r, len(bs))
		}
	}
	if total != n || len(q15) != len(days) {
		t.Errorf("q15: %d bids in %d days, want %d in %d", total, len(q15), n, len(days))
	}

	perDay := map[string]int64{}
	q16 := Q16(tb)
	for _, r := range q16 {
		checkCounts("q16 "+r.Channel+" "+r.Day, r.RankCounts)
		perDay[r.Day] += r.TotalBids
		var latest string
		for _, b := range days[r.Day] {
			if b.Channel == r.Channel {
				latest = max(latest, b.DateTime.Format("15:04"))
			}
		}
		if r.Minute != latest {
			t.Errorf("q16 %s %s: minute %s, want %s", r.Channel, r.Day, r.Minute, latest)
		}
	}
	for _, r := range q15 {
		if perDay[r.Day] != r.TotalBids {
			t.Errorf("q16: day %s holds %d bids over its channels, q15 %d", r.Day, perDay[r.Day], r.TotalBids)
		}
	}

	total = 0
	for _, r := range Q17(tb) {
		total += r.TotalBids
		if r.Rank1Bids+r.Rank2Bids+r.Rank3Bids != r.TotalBids || r.MinPrice > r.AvgPrice || r.AvgPrice > r.MaxPrice ||
			r.AvgPrice != r.SumPrice/r.TotalBids || r.SumPrice < r.MaxPrice || r.SumPrice > r.MaxPrice*r.TotalBids {
			t.Errorf("q17 %+v: inconsistent", r)
		}
	}
	if total != n {
		t.Errorf("q17: %d bids, want %d", total, n)
	}
	t.Logf("q15 %d rows, q16 %d", len(q15), len(q16))
}

func checkGenRanks(t *testing.T, tb Tables) {
	t.Helper()
	// q18: one row per (bidder, auction), none of whose bids is later.
	type pair struct{ bidder, auction int64 }
	latest := map[pair]time.Time{}
	for _, b := range tb.Bids {
		k := pair{b.Bidder, b.Auction}
		if l, ok := latest[k]; !ok || b.DateTime.After(l) {
			latest[k] = b.DateTime
		}
	}
	q18 := Q18(tb)
	format18 := func(r Q18Row) string { return fmtVals(r.Values()) }
	var got18 []string
	ties := 0
	for _, r := range q18 {
		if !r.DateTime.Equal(latest[pair{r.Bidder, r.Auction}]) {
			t.Errorf("q18 %+v: not the latest bid of its pair (%v)", r, latest[pair{r.Bidder, r.Auction}])
		}
		if r.Last {
			got18 = append(got18, format18(r))
		}
		if r.Ties > 1 {
			ties++
		}
	}
	if len(got18) != len(latest) {
		t.Errorf("q18: %d rows marked Last, %d pairs", len(got18), len(latest))
	}
	if err := CheckQ18(got18, q18, format18); err != nil {
		t.Errorf("q18: %v", err)
	}

	// q19: per auction, the ranks hold the auction's prices sorted
	// descending.
	prices := map[int64][]int64{}
	for _, b := range tb.Bids {
		prices[b.Auction] = append(prices[b.Auction], b.Price)
	}
	q19 := Q19(tb)
	type rk struct{ auction, rank int64 }
	first := map[rk]Q19Row{}
	var got19 []string
	format19 := func(r Q19Row) string { return fmtVals(r.Values()) }
	for _, r := range q19 {
		ps := prices[r.Auction]
		slices.Sort(ps)
		slices.Reverse(ps)
		if r.RankNumber < 1 || r.RankNumber > min(10, int64(len(ps))) || ps[r.RankNumber-1] != r.Price {
			t.Errorf("q19 %+v: rank out of range or not the auction's price at that rank", r)
		}
		if _, ok := first[rk{r.Auction, r.RankNumber}]; !ok {
			first[rk{r.Auction, r.RankNumber}] = r
		}
	}
	var ranks int
	for a, ps := range prices {
		for k := 1; k <= min(10, len(ps)); k++ {
			ranks++
			if _, ok := first[rk{a, int64(k)}]; !ok {
				t.Errorf("q19: auction %d has no row at rank %d", a, k)
			}
		}
	}
	// A valid answer when no price repeats within an auction's top 10: the
	// first candidate of each rank. With repeats, take the j-th candidate
	// at the j-th rank of the price.
	done := map[rk]bool{}
	for _, r := range q19 {
		k := rk{r.Auction, r.RankNumber}
		if done[k] {
			continue
		}
		done[k] = true
		lo := r.RankNumber // the first rank of r's price
		for lo > 1 && first[rk{r.Auction, lo - 1}].Price == r.Price {
			lo--
		}
		var cands []Q19Row
		for _, c := range q19 {
			if c.Auction == r.Auction && c.RankNumber == r.RankNumber {
				cands = append(cands, c)
			}
		}
		c := cands[r.RankNumber-lo]
		got19 = append(got19, format19(c))
	}
	if len(got19) != ranks {
		t.Errorf("q19: %d ranks chosen, %d in the input", len(got19), ranks)
	}
	if err := CheckQ19(got19, q19, format19); err != nil {
		t.Errorf("q19: %v", err)
	}
	t.Logf("q18 %d rows (%d pairs with tied latest bids), q19 %d candidates for %d ranks", len(q18), ties, len(q19), ranks)
}

func TestReadTablesRefuses(t *testing.T) {
	src, err := nexmark.New(nexmark.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTables(src); err == nil || !strings.Contains(err.Error(), "unbounded") {
		t.Errorf("ReadTables of an unbounded source: %v, want an error saying it is unbounded", err)
	}

	// A null would read as a zero value: the row is refused.
	mem := testutil.CheckedAllocator(t)
	bld := array.NewRecordBuilder(mem, nexmark.BidSchema())
	defer bld.Release()
	for i, f := range bld.Fields() {
		switch b := f.(type) {
		case *array.Int64Builder:
			if i == 2 {
				b.AppendNull()
			} else {
				b.Append(1)
			}
		case *array.StringBuilder:
			b.Append("s")
		case *array.TimestampBuilder:
			b.Append(0)
		}
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	var tb Tables
	if err := tb.addRecord(rec, nexmark.BidEvent); err == nil || !strings.Contains(err.Error(), "price") {
		t.Errorf("a bid with a null price: %v, want an error naming the column", err)
	}
}
