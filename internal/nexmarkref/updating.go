package nexmarkref

// The answers of the Nexmark suite's updating queries (q3, q4, q9, q15 to
// q20): what each query's sink table holds once the job has applied its
// whole changelog over a bounded input. Each is computed literally from
// the query's SQL (joins as nested lookups, GROUP BY as maps), never from
// weir's operators. Where the SQL leaves the answer open (ROW_NUMBER over
// tied sort keys) the function returns every row the sink may hold, marked,
// and a Check function says whether a sink's rows are one valid choice.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sources/nexmark"
)

// PersonRow is a row of the suite's person view: every column of a person
// event, in ddl_views.sql's order.
type PersonRow struct {
	ID                                          int64
	Name, EmailAddress, CreditCard, City, State string
	DateTime                                    time.Time
	Extra                                       string
}

// AuctionRow is a row of the suite's auction view: every column of an
// auction event, in ddl_views.sql's order.
type AuctionRow struct {
	ID                    int64
	ItemName, Description string
	InitialBid, Reserve   int64
	DateTime, Expires     time.Time
	Seller, Category      int64
	Extra                 string
}

// Tables are the suite's three views (person, auction, bid) with every
// column, each in the generator's order (by event number, as the suite's
// own generator emits them at parallelism 1). Bid already holds every
// column of the bid view. Events are the narrower rows the append-only
// references use; Tables.Events derives them.
type Tables struct {
	Bids     []Bid
	Persons  []PersonRow
	Auctions []AuctionRow
}

// Events returns the narrow Events of t: the rows Read returns, but in
// the generator's order.
func (t Tables) Events() Events {
	ev := Events{Bids: t.Bids}
	for _, p := range t.Persons {
		ev.Persons = append(ev.Persons, Person{ID: p.ID, Name: p.Name, DateTime: p.DateTime})
	}
	for _, a := range t.Auctions {
		ev.Auctions = append(ev.Auctions, Auction{Seller: a.Seller, DateTime: a.DateTime})
	}
	return ev
}

// ReadTables reads every event of src, keeping every column, in the
// generator's order: it reads a copy of src's generator with one split and
// no rate limit (an event depends only on its number, not on the splits),
// whereas one reader over src's splits interleaves them batch by batch.
// q18's tie rule depends on that order.
func ReadTables(src *nexmark.Source) (Tables, error) {
	var t Tables
	cfg := src.Config()
	if cfg.Events <= 0 {
		return t, errors.New("nexmarkref: read tables: the source is unbounded (Config.Events is 0)")
	}
	cfg.Splits, cfg.RateLimit = 1, 0
	one, err := nexmark.New(cfg)
	if err != nil {
		return t, fmt.Errorf("nexmarkref: read tables: %w", err)
	}
	splits, err := one.Splits(context.Background())
	if err != nil {
		return t, fmt.Errorf("nexmarkref: read tables: %w", err)
	}
	states := make([]arrowflow.SplitState, len(splits))
	for i, s := range splits {
		states[i] = arrowflow.SplitState{Split: s}
	}
	mem := memory.DefaultAllocator
	rd, err := one.Open(&arrowflow.TaskInfo{Job: "ref", Parallelism: 1, Allocator: mem}, states)
	if err != nil {
		return t, fmt.Errorf("nexmarkref: read tables: %w", err)
	}
	defer rd.Close()
	for {
		b, err := rd.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return t, nil
		}
		if err != nil {
			return t, fmt.Errorf("nexmarkref: read tables: %w", err)
		}
		if b.IsZero() {
			continue
		}
		err = t.add(mem, b)
		b.Release()
		if err != nil {
			return t, fmt.Errorf("nexmarkref: read tables: %w", err)
		}
	}
}

// add appends the events of b; the views' columns are the structs'
// fields, read by name (the view's dateTime is the event's, which is the
// struct's).
func (t *Tables) add(mem memory.Allocator, b arrowflow.Batch) error {
	for _, kind := range []nexmark.EventType{nexmark.PersonEvent, nexmark.AuctionEvent, nexmark.BidEvent} {
		rec, err := nexmark.Project(mem, b, kind)
		if err != nil {
			return err
		}
		err = t.addRecord(rec, kind)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (t *Tables) addRecord(rec arrow.RecordBatch, kind nexmark.EventType) error {
	col := func(name string) (arrow.Array, error) {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("the %s schema has %d columns named %s, want 1", kind, len(idx), name)
		}
		return rec.Column(idx[0]), nil
	}
	var err error
	i64 := func(name string) *array.Int64 {
		c, e := col(name)
		if e == nil {
			if a, ok := c.(*array.Int64); ok {
				return a
			}
			e = fmt.Errorf("%s column %s is %s, want int64", kind, name, c.DataType())
		}
		err = errors.Join(err, e)
		return nil
	}
	str := func(name string) *array.String {
		c, e := col(name)
		if e == nil {
			if a, ok := c.(*array.String); ok {
				return a
			}
			e = fmt.Errorf("%s column %s is %s, want string", kind, name, c.DataType())
		}
		err = errors.Join(err, e)
		return nil
	}
	ts := func(name string) *array.Timestamp {
		c, e := col(name)
		if e == nil {
			if a, ok := c.(*array.Timestamp); ok && a.DataType().(*arrow.TimestampType).Unit == arrow.Millisecond {
				return a
			}
			e = fmt.Errorf("%s column %s is %s, want timestamp[ms]", kind, name, c.DataType())
		}
		err = errors.Join(err, e)
		return nil
	}
	at := func(a *array.Timestamp, i int) time.Time { return time.UnixMilli(int64(a.Value(i))).UTC() }
	n := int(rec.NumRows())
	switch kind {
	case nexmark.PersonEvent:
		id, name, email, card, city, state, dt, extra := i64("id"), str("name"), str("emailAddress"),
			str("creditCard"), str("city"), str("state"), ts("dateTime"), str("extra")
		if err != nil {
			return err
		}
		for i := range n {
			t.Persons = append(t.Persons, PersonRow{ID: id.Value(i), Name: name.Value(i), EmailAddress: email.Value(i),
				CreditCard: card.Value(i), City: city.Value(i), State: state.Value(i), DateTime: at(dt, i), Extra: extra.Value(i)})
		}
	case nexmark.AuctionEvent:
		id, item, desc, initial, reserve, dt, expires, seller, category, extra := i64("id"), str("itemName"),
			str("description"), i64("initialBid"), i64("reserve"), ts("dateTime"), ts("expires"), i64("seller"),
			i64("category"), str("extra")
		if err != nil {
			return err
		}
		for i := range n {
			t.Auctions = append(t.Auctions, AuctionRow{ID: id.Value(i), ItemName: item.Value(i), Description: desc.Value(i),
				InitialBid: initial.Value(i), Reserve: reserve.Value(i), DateTime: at(dt, i), Expires: at(expires, i),
				Seller: seller.Value(i), Category: category.Value(i), Extra: extra.Value(i)})
		}
	default:
		auction, bidder, price, channel, url, dt, extra := i64("auction"), i64("bidder"), i64("price"),
			str("channel"), str("url"), ts("dateTime"), str("extra")
		if err != nil {
			return err
		}
		for i := range n {
			t.Bids = append(t.Bids, Bid{Auction: auction.Value(i), Bidder: bidder.Value(i), Price: price.Value(i),
				Channel: channel.Value(i), URL: url.Value(i), Extra: extra.Value(i), DateTime: at(dt, i)})
		}
	}
	// The generator writes no nulls; a null would read as a zero value
	// and the answers would silently be wrong.
	for c := range rec.NumCols() {
		if rec.Column(int(c)).NullN() > 0 {
			return fmt.Errorf("%s column %s has %d nulls; the references assume none", kind, rec.Schema().Field(int(c)).Name, rec.Column(int(c)).NullN())
		}
	}
	return nil
}

// ---- q3 -------------------------------------------------------------------

// Q3Row is a row of nexmark_q3 (name, city, state, id).
type Q3Row struct {
	Name, City, State string
	ID                int64
}

// Values returns the row's columns in the sink's order.
func (r Q3Row) Values() []any { return []any{r.Name, r.City, r.State, r.ID} }

// Q3 is q3's answer: each auction of category 10 joined with each person
// whose id is its seller and whose state is OR, ID or CA (an inner join:
// one row per matching pair, in auction order).
func Q3(t Tables) []Q3Row {
	byID := map[int64][]int{}
	for i, p := range t.Persons {
		if p.State == "OR" || p.State == "ID" || p.State == "CA" {
			byID[p.ID] = append(byID[p.ID], i)
		}
	}
	var out []Q3Row
	for _, a := range t.Auctions {
		if a.Category != 10 {
			continue
		}
		for _, i := range byID[a.Seller] {
			p := t.Persons[i]
			out = append(out, Q3Row{Name: p.Name, City: p.City, State: p.State, ID: a.ID})
		}
	}
	return out
}

// ---- q4 -------------------------------------------------------------------

// Q4Row is a row of nexmark_q4 (id, final): a category and the average of
// its auctions' winning prices.
type Q4Row struct{ ID, Final int64 }

// Values returns the row's columns in the sink's order.
func (r Q4Row) Values() []any { return []any{r.ID, r.Final} }

// Q4 is q4's answer. Per (auction id, category), the highest price of the
// bids on that auction whose time is between the auction's dateTime and
// expires, both included (auctions without such a bid have no maximum);
// then per category the average of those maxima. final is BIGINT and
// Flink's AVG of a BIGINT is a BIGINT: the sum divided by the count in
// integer division, truncated toward zero. (weir averages in float64 and
// casts to BIGINT on INSERT, truncating too: the same value while sums stay
// below 2^53.) In order of each category's first maximum.
func Q4(t Tables) []Q4Row {
	type key struct{ id, category int64 }
	win := map[key]int64{}
	var keys []key
	bids := bidsByAuction(t.Bids)
	for _, a := range t.Auctions {
		k := key{a.ID, a.Category}
		for _, i := range bids[a.ID] {
			b := t.Bids[i]
			if !inAuction(b, a) {
				continue
			}
			if m, ok := win[k]; !ok {
				keys = append(keys, k)
				win[k] = b.Price
			} else {
				win[k] = max(m, b.Price)
			}
		}
	}
	type avg struct{ sum, n int64 }
	per := map[int64]*avg{}
	var cats []int64
	for _, k := range keys {
		s := per[k.category]
		if s == nil {
			s = &avg{}
			per[k.category] = s
			cats = append(cats, k.category)
		}
		s.sum += win[k]
		s.n++
	}
	out := make([]Q4Row, 0, len(cats))
	for _, c := range cats {
		out = append(out, Q4Row{ID: c, Final: per[c].sum / per[c].n})
	}
	return out
}

// bidsByAuction indexes bids (their positions) by auction id.
func bidsByAuction(bids []Bid) map[int64][]int {
	m := map[int64][]int{}
	for i, b := range bids {
		m[b.Auction] = append(m[b.Auction], i)
	}
	return m
}

// inAuction is q4's and q9's `B.dateTime BETWEEN A.dateTime AND
// A.expires`, both bounds included.
func inAuction(b Bid, a AuctionRow) bool {
	return !b.DateTime.Before(a.DateTime) && !b.DateTime.After(a.Expires)
}

// ---- q9 -------------------------------------------------------------------

// Q9Row is a row of nexmark_q9: the auction's columns, then the winning
// bid's auction, bidder, price, bid_dateTime and bid_extra. Ties is not a
// column (see Q9).
type Q9Row struct {
	ID                    int64
	ItemName, Description string
	InitialBid, Reserve   int64
	DateTime, Expires     time.Time
	Seller, Category      int64
	Extra                 string
	Auction, Bidder       int64
	Price                 int64
	BidDateTime           time.Time
	BidExtra              string

	// Ties is the number of rows of the answer with this ID: 1 when the
	// winner is unique, otherwise the sink holds exactly one of them.
	Ties int
}

// Values returns the row's columns in the sink's order (without Ties).
func (r Q9Row) Values() []any {
	return []any{r.ID, r.ItemName, r.Description, r.InitialBid, r.Reserve, r.DateTime, r.Expires, r.Seller,
		r.Category, r.Extra, r.Auction, r.Bidder, r.Price, r.BidDateTime, r.BidExtra}
}

// Q9 is q9's answer: per auction id, the joined (auction, bid) row with
// rownum 1 in ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC,
// B.dateTime ASC), over the bids on the auction whose time is between its
// dateTime and expires (both included). Auctions without such a bid have no
// row. When several joined rows share the top price and the earliest time,
// ROW_NUMBER picks one of them arbitrarily: the answer then holds all of
// them, each with Ties set to their number, and the sink holds exactly one
// (CheckQ9 checks that). In auction order.
func Q9(t Tables) []Q9Row {
	bids := bidsByAuction(t.Bids)
	best := map[int64][]Q9Row{}
	var ids []int64
	for _, a := range t.Auctions {
		for _, i := range bids[a.ID] {
			b := t.Bids[i]
			if !inAuction(b, a) {
				continue
			}
			r := Q9Row{ID: a.ID, ItemName: a.ItemName, Description: a.Description, InitialBid: a.InitialBid,
				Reserve: a.Reserve, DateTime: a.DateTime, Expires: a.Expires, Seller: a.Seller, Category: a.Category,
				Extra: a.Extra, Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, BidDateTime: b.DateTime, BidExtra: b.Extra}
			cur, ok := best[a.ID]
			switch {
			case !ok:
				ids = append(ids, a.ID)
				best[a.ID] = []Q9Row{r}
			case r.Price > cur[0].Price || r.Price == cur[0].Price && r.BidDateTime.Before(cur[0].BidDateTime):
				best[a.ID] = []Q9Row{r}
			case r.Price == cur[0].Price && r.BidDateTime.Equal(cur[0].BidDateTime):
				best[a.ID] = append(cur, r)
			}
		}
	}
	var out []Q9Row
	for _, id := range ids {
		for _, r := range best[id] {
			r.Ties = len(best[id])
			out = append(out, r)
		}
	}
	return out
}

// CheckQ9 checks that got, a sink's rows formatted with format, are a valid
// answer of q9 given want (Q9's answer): exactly one row per auction id,
// each one of that auction's candidates, nothing else. format must write
// every column (Values) and ignore Ties.
func CheckQ9(got []string, want []Q9Row, format func(Q9Row) string) error {
	return checkChoices(got, want, format, func(r Q9Row) any { return r.ID }, nil)
}

// ---- q15 / q16 / q17 -----------------------------------------------------

// Day is DATE_FORMAT(t, 'yyyy-MM-dd') of a TIMESTAMP(3) (no time zone:
// the generator's times are UTC, as ValueAt reads them).
func Day(t time.Time) string { return t.UTC().Format("2006-01-02") }

// Minute is DATE_FORMAT(t, 'HH:mm').
func Minute(t time.Time) string { return t.UTC().Format("15:04") }

// priceRank is the rank of q15 to q17's filters: 1 for price < 10000, 2
// for 10000 <= price < 1000000, 3 for price >= 1000000.
func priceRank(price int64) int {
	switch {
	case price < 10_000:
		return 1
	case price < 1_000_000:
		return 2
	}
	return 3
}

// RankCounts are q15's and q16's counts: bids, distinct bidders and
// distinct auctions, in total and per price rank (rank 1: price < 10000,
// rank 2: 10000 <= price < 1000000, rank 3: price >= 1000000), in the
// sinks' column order.
type RankCounts struct {
	TotalBids, Rank1Bids, Rank2Bids, Rank3Bids                 int64
	TotalBidders, Rank1Bidders, Rank2Bidders, Rank3Bidders     int64
	TotalAuctions, Rank1Auctions, Rank2Auctions, Rank3Auctions int64
}

func (c RankCounts) values() []any {
	return []any{c.TotalBids, c.Rank1Bids, c.Rank2Bids, c.Rank3Bids, c.TotalBidders, c.Rank1Bidders,
		c.Rank2Bidders, c.Rank3Bidders, c.TotalAuctions, c.Rank1Auctions, c.Rank2Auctions, c.Rank3Auctions}
}

// rankCounter accumulates RankCounts over a group's bids; the distinct
// counts keep sets, index 0 for the total and r for rank r.
type rankCounter struct {
	bids     [4]int64
	bidders  [4]map[int64]struct{}
	auctions [4]map[int64]struct{}
}

func (c *rankCounter) add(b Bid) {
	r := priceRank(b.Price)
	for _, k := range [2]int{0, r} {
		c.bids[k]++
		if c.bidders[k] == nil {
			c.bidders[k], c.auctions[k] = map[int64]struct{}{}, map[int64]struct{}{}
		}
		c.bidders[k][b.Bidder] = struct{}{}
		c.auctions[k][b.Auction] = struct{}{}
	}
}

func (c *rankCounter) counts() RankCounts {
	n := func(m map[int64]struct{}) int64 { return int64(len(m)) }
	return RankCounts{
		c.bids[0], c.bids[1], c.bids[2], c.bids[3],
		n(c.bidders[0]), n(c.bidders[1]), n(c.bidders[2]), n(c.bidders[3]),
		n(c.auctions[0]), n(c.auctions[1]), n(c.auctions[2]), n(c.auctions[3]),
	}
}

// Q15Row is a row of nexmark_q15: a day and its counts.
type Q15Row struct {
	Day string
	RankCounts
}

// Values returns the row's columns in the sink's order.
func (r Q15Row) Values() []any { return append([]any{r.Day}, r.values()...) }

// Q15 is q15's answer: per day (Day of the bid's time), the count of bids
// and COUNT(DISTINCT) of bidders and auctions, in total and FILTERed per
// price rank. In order of each day's first bid.
func Q15(t Tables) []Q15Row {
	idx := map[string]int{}
	var days []string
	var acc []*rankCounter
	for _, b := range t.Bids {
		d := Day(b.DateTime)
		i, ok := idx[d]
		if !ok {
			i = len(days)
			idx[d] = i
			days = append(days, d)
			acc = append(acc, &rankCounter{})
		}
		acc[i].add(b)
	}
	out := make([]Q15Row, len(days))
	for i, d := range days {
		out[i] = Q15Row{Day: d, RankCounts: acc[i].counts()}
	}
	return out
}

// Q16Row is a row of nexmark_q16: a channel, a day, the latest minute
// (Minute) of the group's bids, and the counts.
type Q16Row struct {
	Channel, Day, Minute string
	RankCounts
}

// Values returns the row's columns in the sink's order.
func (r Q16Row) Values() []any { return append([]any{r.Channel, r.Day, r.Minute}, r.values()...) }

// Q16 is q16's answer: per (channel, day), MAX of the bids' Minute (the
// largest string; 'HH:mm' is zero-padded, so the latest minute) and the
// counts of Q15. In order of each group's first bid.
func Q16(t Tables) []Q16Row {
	type key struct{ channel, day string }
	idx := map[key]int{}
	var out []Q16Row
	var acc []*rankCounter
	for _, b := range t.Bids {
		k := key{b.Channel, Day(b.DateTime)}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, Q16Row{Channel: k.channel, Day: k.day})
			acc = append(acc, &rankCounter{})
		}
		acc[i].add(b)
		out[i].Minute = max(out[i].Minute, Minute(b.DateTime))
	}
	for i := range out {
		out[i].RankCounts = acc[i].counts()
	}
	return out
}

// Q17Row is a row of nexmark_q17.
type Q17Row struct {
	Auction                                    int64
	Day                                        string
	TotalBids, Rank1Bids, Rank2Bids, Rank3Bids int64
	MinPrice, MaxPrice, AvgPrice, SumPrice     int64
}

// Values returns the row's columns in the sink's order.
func (r Q17Row) Values() []any {
	return []any{r.Auction, r.Day, r.TotalBids, r.Rank1Bids, r.Rank2Bids, r.Rank3Bids, r.MinPrice, r.MaxPrice,
		r.AvgPrice, r.SumPrice}
}

// Q17 is q17's answer: per (auction, day), the count of bids in total and
// per price rank, and MIN, MAX, AVG and SUM of the price. avg_price is
// BIGINT as Flink's AVG of a BIGINT: SUM / COUNT in integer division,
// truncated toward zero (see Q4). In order of each group's first bid.
func Q17(t Tables) []Q17Row {
	type key struct {
		auction int64
		day     string
	}
	idx := map[key]int{}
	var out []Q17Row
	for _, b := range t.Bids {
		k := key{b.Auction, Day(b.DateTime)}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, Q17Row{Auction: k.auction, Day: k.day, MinPrice: b.Price, MaxPrice: b.Price})
		}
		r := &out[i]
		r.TotalBids++
		switch priceRank(b.Price) {
		case 1:
			r.Rank1Bids++
		case 2:
			r.Rank2Bids++
		default:
			r.Rank3Bids++
		}
		r.MinPrice, r.MaxPrice = min(r.MinPrice, b.Price), max(r.MaxPrice, b.Price)
		r.SumPrice += b.Price
	}
	for i := range out {
		out[i].AvgPrice = out[i].SumPrice / out[i].TotalBids
	}
	return out
}

// ---- q18 ------------------------------------------------------------------

// Q18Row is a row of nexmark_q18: a bid (every column of the bid view).
// Ties and Last are not columns (see Q18).
type Q18Row struct {
	Auction, Bidder, Price int64
	Channel, URL           string
	DateTime               time.Time
	Extra                  string

	// Ties is the number of rows of the answer with this (bidder,
	// auction): 1 when the latest bid is unique.
	Ties int
	// Last marks, among tied rows, the last one in the input's order: the
	// one Flink keeps when the rows arrive in that order.
	Last bool
}

// Values returns the row's columns in the sink's order (without Ties and
// Last).
func (r Q18Row) Values() []any {
	return []any{r.Auction, r.Bidder, r.Price, r.Channel, r.URL, r.DateTime, r.Extra}
}

// Q18 is q18's answer: per (bidder, auction), the bid with rank_number 1 in
// ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY dateTime DESC),
// Flink's keep-last-row deduplication on event time: the bid with the
// latest time, and among bids at that time the last to arrive (Flink
// replaces the kept row when a new one's time is >= its own). Arrival
// order across parallel splits is not the input's order, so when several
// bids share the latest time the answer holds all of them (Ties set, the
// one last in t.Bids marked Last) and the sink holds exactly one: CheckQ18
// accepts any, a check of the exact arrival order can require the Last
// one. In order of each pair's first bid.
func Q18(t Tables) []Q18Row {
	type key struct{ bidder, auction int64 }
	idx := map[key]int{}
	var latest [][]Bid
	for _, b := range t.Bids {
		k := key{b.Bidder, b.Auction}
		i, ok := idx[k]
		switch {
		case !ok:
			idx[k] = len(latest)
			latest = append(latest, []Bid{b})
		case b.DateTime.After(latest[i][0].DateTime):
			latest[i] = []Bid{b}
		case b.DateTime.Equal(latest[i][0].DateTime):
			latest[i] = append(latest[i], b)
		}
	}
	var out []Q18Row
	for _, bs := range latest {
		for j, b := range bs {
			out = append(out, Q18Row{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, Channel: b.Channel,
				URL: b.URL, DateTime: b.DateTime, Extra: b.Extra, Ties: len(bs), Last: j == len(bs)-1})
		}
	}
	return out
}

// CheckQ18 checks that got, a sink's rows formatted with format, are a
// valid answer of q18 given want (Q18's answer): exactly one row per
// (bidder, auction), one of its candidates, nothing else. format must write
// every column (Values) and ignore Ties and Last.
func CheckQ18(got []string, want []Q18Row, format func(Q18Row) string) error {
	type key struct{ bidder, auction int64 }
	return checkChoices(got, want, format, func(r Q18Row) any { return key{r.Bidder, r.Auction} }, nil)
}

// ---- q19 ------------------------------------------------------------------

// Q19Row is a row of nexmark_q19: a bid and its rank_number. Ties is not a
// column (see Q19).
type Q19Row struct {
	Auction, Bidder, Price int64
	Channel, URL           string
	DateTime               time.Time
	Extra                  string
	RankNumber             int64

	// Ties is the number of rows of the answer with this (auction,
	// rank_number): 1 when the bid at that rank is determined.
	Ties int
}

// Values returns the row's columns in the sink's order (without Ties).
func (r Q19Row) Values() []any {
	return []any{r.Auction, r.Bidder, r.Price, r.Channel, r.URL, r.DateTime, r.Extra, r.RankNumber}
}

// Q19 is q19's answer: per auction, the bids with rank_number <= 10 in
// ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC). Rank k
// holds the k-th highest price (counting repeats), so the multiset of
// (auction, price, rank_number) is determined; which of several bids at one
// price takes which of that price's ranks is not (Flink orders them by
// arrival). The answer therefore holds, for every rank k of every auction,
// each bid at rank k's price with rank_number k, Ties being the number of
// such rows; a bid that occurs m times in the input gives m equal rows.
// A sink's rows are valid (CheckQ19) when each (auction, rank_number) for
// rank_number 1 to min(10, bids on the auction) has exactly one row, that
// row is one of the answer's rows for that rank, and no bid is used more
// often than it occurs. In auction order, ranks ascending.
func Q19(t Tables) []Q19Row {
	var order []int64
	bids := map[int64][]Bid{}
	for _, b := range t.Bids {
		if _, ok := bids[b.Auction]; !ok {
			order = append(order, b.Auction)
		}
		bids[b.Auction] = append(bids[b.Auction], b)
	}
	var out []Q19Row
	for _, a := range order {
		bs := bids[a]
		slices.SortStableFunc(bs, func(x, y Bid) int { return -cmpInt(x.Price, y.Price) })
		for k := 0; k < len(bs) && k < 10; k++ {
			var cands []Bid
			for _, b := range bs {
				if b.Price == bs[k].Price {
					cands = append(cands, b)
				}
			}
			for _, b := range cands {
				out = append(out, Q19Row{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, Channel: b.Channel,
					URL: b.URL, DateTime: b.DateTime, Extra: b.Extra, RankNumber: int64(k + 1), Ties: len(cands)})
			}
		}
	}
	return out
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// CheckQ19 checks that got, a sink's rows formatted with format, are a
// valid answer of q19 given want (Q19's answer; see Q19 for the rule).
// format must write every column (Values) and ignore Ties.
func CheckQ19(got []string, want []Q19Row, format func(Q19Row) string) error {
	type key struct{ auction, rank int64 }
	return checkChoices(got, want, format, func(r Q19Row) any { return key{r.Auction, r.RankNumber} },
		func(r Q19Row) any { r.RankNumber, r.Ties = 0, 0; return r })
}

// ---- q20 ------------------------------------------------------------------

// Q20Row is a row of nexmark_q20: the bid's columns, then the auction's
// but its id.
type Q20Row struct {
	Auction, Bidder, Price int64
	Channel, URL           string
	BidDateTime            time.Time
	BidExtra               string
	ItemName, Description  string
	InitialBid, Reserve    int64
	AuctionDateTime        time.Time
	Expires                time.Time
	Seller, Category       int64
	AuctionExtra           string
}

// Values returns the row's columns in the sink's order.
func (r Q20Row) Values() []any {
	return []any{r.Auction, r.Bidder, r.Price, r.Channel, r.URL, r.BidDateTime, r.BidExtra, r.ItemName,
		r.Description, r.InitialBid, r.Reserve, r.AuctionDateTime, r.Expires, r.Seller, r.Category, r.AuctionExtra}
}

// Q20 is q20's answer: each bid joined with each auction of category 10
// whose id is the bid's auction (an inner join: one row per matching pair;
// bids on other auctions have none). In bid order.
func Q20(t Tables) []Q20Row {
	byID := map[int64][]int{}
	for i, a := range t.Auctions {
		if a.Category == 10 {
			byID[a.ID] = append(byID[a.ID], i)
		}
	}
	var out []Q20Row
	for _, b := range t.Bids {
		for _, i := range byID[b.Auction] {
			a := t.Auctions[i]
			out = append(out, Q20Row{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, Channel: b.Channel,
				URL: b.URL, BidDateTime: b.DateTime, BidExtra: b.Extra, ItemName: a.ItemName,
				Description: a.Description, InitialBid: a.InitialBid, Reserve: a.Reserve,
				AuctionDateTime: a.DateTime, Expires: a.Expires, Seller: a.Seller, Category: a.Category,
				AuctionExtra: a.Extra})
		}
	}
	return out
}

// ---- choices --------------------------------------------------------------

// checkChoices checks got against an answer whose rows fall into groups
// (group(r)), each group standing for one row of the sink: got must hold
// exactly one row of every group, equal (as formatted) to one of its rows,
// and nothing else. With item set, the rows of different groups may copy
// one input row (item(r) says which); got may then use each item at most as
// often as it appears in one group (its multiplicity in the input).
func checkChoices[R any](got []string, want []R, format func(R) string, group func(R) any, item func(R) any) error {
	type cand struct {
		group, item any
	}
	cands := map[string]cand{}
	groups := map[any]int{} // group -> rows of got in it
	var order []any
	perGroup := map[[2]any]int{} // (group, item) -> rows of want
	for _, r := range want {
		s := format(r)
		c := cand{group: group(r)}
		if item != nil {
			c.item = item(r)
		}
		if old, ok := cands[s]; ok && old.group != c.group {
			return fmt.Errorf("the answer's row %q is in two groups, %v and %v: format must write every column", s, old.group, c.group)
		}
		cands[s] = c
		if _, ok := groups[c.group]; !ok {
			groups[c.group] = 0
			order = append(order, c.group)
		}
		if item != nil {
			perGroup[[2]any{c.group, c.item}]++
		}
	}
	limit := map[any]int{} // item -> multiplicity: its rows in any one group
	for k, n := range perGroup {
		limit[k[1]] = max(limit[k[1]], n)
	}
	used := map[any]int{}
	var errs []string
	for _, s := range got {
		c, ok := cands[s]
		if !ok {
			errs = append(errs, fmt.Sprintf("row %q is not in the answer", s))
			continue
		}
		groups[c.group]++
		if item != nil {
			used[c.item]++
			if used[c.item] > limit[c.item] {
				errs = append(errs, fmt.Sprintf("row %q copies an input row used %d times, which occurs %d times", s, used[c.item], limit[c.item]))
			}
		}
	}
	for _, g := range order {
		if n := groups[g]; n != 1 {
			errs = append(errs, fmt.Sprintf("group %v has %d rows, want 1", g, n))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	more := ""
	if len(errs) > 5 {
		more = fmt.Sprintf(" (and %d more)", len(errs)-5)
		errs = errs[:5]
	}
	return fmt.Errorf("%d rows, the answer has %d groups: %s%s", len(got), len(order), strings.Join(errs, "; "), more)
}

// ---- q23 ------------------------------------------------------------------

// Q23Row is a row of nexmark_q23: a bid's columns, its bidder's (the
// person) and an auction the bidder sells.
type Q23Row struct {
	Bidder, Price          int64
	Channel, URL, BidExtra string
	Person                 PersonRow
	Auction                AuctionRow
}

// Values returns the row's columns in the sink's order.
func (r Q23Row) Values() []any {
	p, a := r.Person, r.Auction
	return []any{r.Bidder, r.Price, r.Channel, r.URL, r.BidExtra,
		p.ID, p.Name, p.EmailAddress, p.CreditCard, p.City, p.State, p.Extra,
		a.ItemName, a.Description, a.InitialBid, a.Reserve, a.DateTime, a.Expires, a.Seller, a.Category, a.Extra}
}

// Q23 is q23's answer, a multi-way inner join: each bid with each person
// whose id is the bidder and each auction whose seller is the bidder (one
// row per matching triple). In bid order.
func Q23(t Tables) []Q23Row {
	persons := map[int64][]int{}
	for i, p := range t.Persons {
		persons[p.ID] = append(persons[p.ID], i)
	}
	sells := map[int64][]int{}
	for i, a := range t.Auctions {
		sells[a.Seller] = append(sells[a.Seller], i)
	}
	var out []Q23Row
	for _, b := range t.Bids {
		for _, pi := range persons[b.Bidder] {
			for _, ai := range sells[b.Bidder] {
				out = append(out, Q23Row{Bidder: b.Bidder, Price: b.Price, Channel: b.Channel, URL: b.URL,
					BidExtra: b.Extra, Person: t.Persons[pi], Auction: t.Auctions[ai]})
			}
		}
	}
	return out
}
