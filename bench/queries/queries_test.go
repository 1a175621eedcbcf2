package queries

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/collect"
	"github.com/weirflow/weir/sources/nexmark"
)

// Each query's output is compared with a plain Go reference computed over
// the same events, row by row, at parallelism 1 and 2.

const testEvents = 40_000

// bid is one bid, read from the generator's flat projection.
type bid struct {
	auction, bidder, price int64
	channel, url, extra    string
	dateTime               time.Time
}

func testSource(t *testing.T) *nexmark.Source {
	t.Helper()
	src, err := nexmark.New(nexmark.Config{Seed: 3, Events: testEvents, Splits: 4, BatchSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// person and auction hold the fields q8 uses.
type person struct {
	id       int64
	name     string
	dateTime time.Time
}

type auction struct {
	seller   int64
	dateTime time.Time
}

// readBids reads every event of the source in one reader and returns its
// bids.
func readBids(t *testing.T) []bid {
	t.Helper()
	bids, _, _ := readEvents(t)
	return bids
}

// readEvents reads every event of the source in one reader.
func readEvents(t *testing.T) (bids []bid, persons []person, auctions []auction) {
	t.Helper()
	src := testSource(t)
	splits, err := src.Splits(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	states := make([]arrowflow.SplitState, len(splits))
	for i, s := range splits {
		states[i] = arrowflow.SplitState{Split: s}
	}
	rd, err := src.Open(&arrowflow.TaskInfo{Job: "ref", Parallelism: 1, Allocator: memory.DefaultAllocator}, states)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var out []bid
	for {
		b, err := rd.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return out, persons, auctions
		}
		if err != nil {
			t.Fatal(err)
		}
		if b.IsZero() {
			continue
		}
		ps, err := nexmark.Project(memory.DefaultAllocator, b, nexmark.PersonEvent)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < int(ps.NumRows()); i++ {
			v := func(name string) any { return arrowflow.ValueAt(ps.Column(ps.Schema().FieldIndices(name)[0]), i) }
			persons = append(persons, person{id: v("id").(int64), name: v("name").(string), dateTime: v("dateTime").(time.Time)})
		}
		ps.Release()
		as, err := nexmark.Project(memory.DefaultAllocator, b, nexmark.AuctionEvent)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < int(as.NumRows()); i++ {
			v := func(name string) any { return arrowflow.ValueAt(as.Column(as.Schema().FieldIndices(name)[0]), i) }
			auctions = append(auctions, auction{seller: v("seller").(int64), dateTime: v("dateTime").(time.Time)})
		}
		as.Release()
		rec, err := nexmark.Project(memory.DefaultAllocator, b, nexmark.BidEvent)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			v := func(c int) any { return arrowflow.ValueAt(rec.Column(c), i) }
			idx := func(name string) int { return rec.Schema().FieldIndices(name)[0] }
			out = append(out, bid{
				auction: v(idx("auction")).(int64), bidder: v(idx("bidder")).(int64), price: v(idx("price")).(int64),
				channel: v(idx("channel")).(string), url: v(idx("url")).(string), extra: v(idx("extra")).(string),
				dateTime: v(idx("dateTime")).(time.Time),
			})
		}
		rec.Release()
	}
}

// run runs query name at parallelism par and returns its committed rows
// formatted one per string, sorted.
func run(t *testing.T, name string, par int) []string {
	t.Helper()
	out := collect.New()
	g, err := Build(name, Config{Source: testSource(t), Parallelism: par, Sink: out})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	job, err := g.Plan(arrowflow.Options{Allocator: mem, CheckpointInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	var rows []string
	for _, r := range out.Rows() {
		rows = append(rows, row(r...))
	}
	sort.Strings(rows)
	return rows
}

func row(vals ...any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		if v == nil {
			parts[i] = "NULL"
			continue
		}
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, " | ")
}

func sorted(rows []string) []string {
	sort.Strings(rows)
	return rows
}

var channelIDRe = regexp.MustCompile(channelIDPattern)

// references computes each deterministic query's expected rows.
func references(bids []bid) map[string][]string {
	ref := map[string][]string{}
	for _, b := range bids {
		eur := 0.908 * float64(b.price)
		ref["q0"] = append(ref["q0"], row(b.auction, b.bidder, b.price, b.dateTime, b.extra))
		ref["q1"] = append(ref["q1"], row(b.auction, b.bidder, eur, b.dateTime, b.extra))
		if b.auction%123 == 0 {
			ref["q2"] = append(ref["q2"], row(b.auction, b.price))
		}
		if eur > 1_000_000 && eur < 50_000_000 {
			h := b.dateTime.Hour()
			kind := "otherTime"
			switch {
			case h >= 8 && h <= 18:
				kind = "dayTime"
			case h <= 6 || h >= 20:
				kind = "nightTime"
			}
			ref["q14"] = append(ref["q14"], row(b.auction, b.bidder, eur, kind, b.dateTime, b.extra, int64(strings.Count(b.extra, "c"))))
		}
		var extracted any
		if m := channelIDRe.FindStringSubmatch(b.url); m != nil {
			extracted = m[2]
		}
		named := map[string]string{"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}
		if id, ok := named[strings.ToLower(b.channel)]; ok {
			ref["q21"] = append(ref["q21"], row(b.auction, b.bidder, b.price, b.channel, id))
		} else if extracted != nil {
			ref["q21"] = append(ref["q21"], row(b.auction, b.bidder, b.price, b.channel, extracted))
		}
		parts := strings.Split(b.url, "/")
		dir := func(i int) any {
			if i < len(parts) {
				return parts[i]
			}
			return nil
		}
		ref["q22"] = append(ref["q22"], row(b.auction, b.bidder, b.price, b.channel, dir(3), dir(4), dir(5)))
	}
	ref["q11"] = sessions(bids, 10*time.Second)
	ref["q5"] = hotItems(bids)
	ref["q7"] = highestBids(bids)
	for k := range ref {
		sorted(ref[k])
	}
	return ref
}

// hotItems is q5's reference: per 10 s window sliding by 2 s, the
// auctions with the window's largest number of bids.
func hotItems(bids []bid) []string {
	const size, slide = 10 * time.Second, 2 * time.Second
	counts := map[time.Time]map[int64]int64{} // window start -> auction -> bids
	for _, b := range bids {
		for s := b.dateTime.Truncate(slide); s.After(b.dateTime.Add(-size)); s = s.Add(-slide) {
			if counts[s] == nil {
				counts[s] = map[int64]int64{}
			}
			counts[s][b.auction]++
		}
	}
	var out []string
	for _, m := range counts {
		var top int64
		for _, n := range m {
			top = max(top, n)
		}
		for a, n := range m {
			if n == top {
				out = append(out, row(a, n))
			}
		}
	}
	return out
}

// highestBids is q7's reference: per 10 s tumbling window, the bids at
// the window's highest price.
func highestBids(bids []bid) []string {
	const size = 10 * time.Second
	top := map[time.Time]int64{}
	for _, b := range bids {
		w := b.dateTime.Truncate(size)
		top[w] = max(top[w], b.price)
	}
	var out []string
	for _, b := range bids {
		if b.price == top[b.dateTime.Truncate(size)] {
			out = append(out, row(b.auction, b.price, b.bidder, b.dateTime, b.extra))
		}
	}
	return out
}

// sessions is q11's reference: per bidder, bids at most gap apart (a bid
// at t opens [t, t+gap)) form one session.
func sessions(bids []bid, gap time.Duration) []string {
	times := map[int64][]time.Time{}
	for _, b := range bids {
		times[b.bidder] = append(times[b.bidder], b.dateTime)
	}
	var out []string
	for bidder, ts := range times {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		start, end, n := ts[0], ts[0].Add(gap), int64(1)
		for _, t := range ts[1:] {
			if t.Before(end) {
				end, n = maxTime(end, t.Add(gap)), n+1
				continue
			}
			out = append(out, row(start, end, bidder, n))
			start, end, n = t, t.Add(gap), 1
		}
		out = append(out, row(start, end, bidder, n))
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// newUsers is q8's reference: persons who opened an auction in the same
// 10 s tumbling window they registered in, once per window.
func newUsers(persons []person, auctions []auction) []string {
	const size = 10 * time.Second
	type key struct {
		seller int64
		window time.Time
	}
	sold := map[key]bool{}
	for _, a := range auctions {
		sold[key{a.seller, a.dateTime.Truncate(size)}] = true
	}
	var out []string
	for _, p := range persons {
		if w := p.dateTime.Truncate(size); sold[key{p.id, w}] {
			out = append(out, row(p.id, p.name, w))
		}
	}
	return out
}

func TestQueriesMatchReferences(t *testing.T) {
	bids, persons, auctions := readEvents(t)
	if len(bids) != testEvents*46/50 {
		t.Fatalf("%d bids in %d events, want 46 in 50", len(bids), testEvents)
	}
	ref := references(bids)
	ref["q8"] = sorted(newUsers(persons, auctions))
	for _, name := range []string{"q0", "q1", "q2", "q5", "q7", "q8", "q11", "q14", "q21", "q22"} {
		for _, par := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/p%d", name, par), func(t *testing.T) {
				got, want := run(t, name, par), ref[name]
				if len(want) == 0 {
					t.Fatalf("the reference of %s is empty: the test checks nothing", name)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%d rows, reference %d; first row %q, reference %q", len(got), len(want), first(got), first(want))
				}
			})
		}
	}
}

// q12's windows depend on processing time: the counts must add up to the
// bids, each bidder's to its bids.
func TestQ12CountsEveryBidOnce(t *testing.T) {
	bids := readBids(t)
	want := map[string]int64{}
	for _, b := range bids {
		want[fmt.Sprint(b.bidder)]++
	}
	for _, par := range []int{1, 2} {
		got := map[string]int64{}
		for _, r := range run(t, "q12", par) {
			f := strings.Split(r, " | ")
			var n int64
			fmt.Sscan(f[3], &n)
			got[f[2]] += n
		}
		if len(got) != len(want) {
			t.Fatalf("p%d: %d bidders, want %d", par, len(got), len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("p%d: bidder %s counted %d times, has %d bids", par, k, got[k], v)
			}
		}
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
