package queries

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/nexmarkref"
	"github.com/weirflow/weir/sinks/collect"
	"github.com/weirflow/weir/sources/nexmark"
)

// Each query's output is compared with a plain Go reference computed over
// the same events, row by row, at parallelism 1 and 2.

const testEvents = 40_000

func testSource(t *testing.T) *nexmark.Source {
	t.Helper()
	src, err := nexmark.New(nexmark.Config{Seed: 3, Events: testEvents, Splits: 4, BatchSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// readEvents reads every event of the source in one reader.
func readEvents(t *testing.T) nexmarkref.Events {
	t.Helper()
	ev, err := nexmarkref.Read(testSource(t))
	if err != nil {
		t.Fatal(err)
	}
	return ev
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

// references computes each deterministic query's expected rows, in the
// Go-API queries' column orders.
func references(ev nexmarkref.Events) map[string][]string {
	ref := map[string][]string{}
	for _, b := range ev.Bids {
		eur, _ := big.NewRat(908*b.Price, 1000).Float64() // exact, then the nearest double, as Flink
		ref["q0"] = append(ref["q0"], row(b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra))
		ref["q1"] = append(ref["q1"], row(b.Auction, b.Bidder, eur, b.DateTime, b.Extra))
		if b.Auction%123 == 0 {
			ref["q2"] = append(ref["q2"], row(b.Auction, b.Price))
		}
		if eur > 1_000_000 && eur < 50_000_000 {
			h := b.DateTime.Hour()
			kind := "otherTime"
			switch {
			case h >= 8 && h <= 18:
				kind = "dayTime"
			case h <= 6 || h >= 20:
				kind = "nightTime"
			}
			ref["q14"] = append(ref["q14"], row(b.Auction, b.Bidder, eur, kind, b.DateTime, b.Extra, int64(strings.Count(b.Extra, "c"))))
		}
		named := map[string]string{"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}
		if id, ok := named[strings.ToLower(b.Channel)]; ok {
			ref["q21"] = append(ref["q21"], row(b.Auction, b.Bidder, b.Price, b.Channel, id))
		} else if id, ok := nexmarkref.ChannelID(b.URL); ok {
			ref["q21"] = append(ref["q21"], row(b.Auction, b.Bidder, b.Price, b.Channel, id))
		}
		dir := func(i int) any {
			if d, ok := nexmarkref.URLDir(b.URL, i); ok {
				return d
			}
			return nil
		}
		ref["q22"] = append(ref["q22"], row(b.Auction, b.Bidder, b.Price, b.Channel, dir(3), dir(4), dir(5)))
	}
	for _, s := range nexmarkref.Sessions(ev.Bids, 10*time.Second) {
		ref["q11"] = append(ref["q11"], row(s.Start, s.End, s.Bidder, s.Bids))
	}
	for _, c := range nexmarkref.HotItems(ev.Bids) {
		ref["q5"] = append(ref["q5"], row(c.Auction, c.Bids))
	}
	for _, b := range nexmarkref.HighestBids(ev.Bids, false) {
		ref["q7"] = append(ref["q7"], row(b.Auction, b.Price, b.Bidder, b.DateTime, b.Extra))
	}
	for _, u := range nexmarkref.NewUsers(ev.Persons, ev.Auctions) {
		ref["q8"] = append(ref["q8"], row(u.ID, u.Name, u.Window))
	}
	for k := range ref {
		sorted(ref[k])
	}
	return ref
}

func TestQueriesMatchReferences(t *testing.T) {
	ev := readEvents(t)
	if len(ev.Bids) != testEvents*46/50 {
		t.Fatalf("%d bids in %d events, want 46 in 50", len(ev.Bids), testEvents)
	}
	ref := references(ev)
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
	want := map[string]int64{}
	for _, b := range readEvents(t).Bids {
		want[fmt.Sprint(b.Bidder)]++
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
