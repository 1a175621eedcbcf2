package nexmark

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirflow/weir/arrowflow"
)

// oracleConfigs are the configurations compared with the oracle.
func oracleConfigs() []struct {
	name string
	cfg  Config
} {
	return []struct {
		name string
		cfg  Config
	}{
		{"reference", Config{Events: 6_000}},
		{"seed=1", Config{Seed: 1, Events: 3_000, BatchSize: 100}},
		{"seed=42/ooo=11/rate=3", Config{Seed: 42, Events: 3_000, EventsPerSecond: 3, OutOfOrderGroupSize: 11, BatchSize: 333}},
		{"seed=7/small", Config{
			Seed: 7, Events: 2_500, BatchSize: 1, Splits: 1,
			AvgPersonByteSize: 1, AvgAuctionByteSize: 1000, AvgBidByteSize: 33,
			HotAuctionRatio: 1, HotSellersRatio: 100, HotBiddersRatio: 1,
			NumActivePeople: 5, NumInFlightAuctions: 3,
			BaseTime: time.Date(1969, 12, 31, 23, 59, 0, 0, time.UTC),
		}},
		{"seed=max/ooo=1000/rate=1M", Config{Seed: ^uint64(0), Events: 3_000, EventsPerSecond: 1_000_000, OutOfOrderGroupSize: 1000, BatchSize: 4096}},
	}
}

// TestOracle compares every generated event with the oracle, reading all
// splits with one reader.
func TestOracle(t *testing.T) {
	for _, tc := range oracleConfigs() {
		t.Run(tc.name, func(t *testing.T) {
			src := mustNew(t, tc.cfg)
			cfg := src.Config()
			rd := open(t, src, newMem(t), states(allSplits(src)...))
			// Collect each split's events in order: batches come from one
			// split each, round-robin.
			for {
				k := rd.pick()
				if k < 0 {
					break
				}
				first := rd.cursors[k].next
				got, _ := read(t, rd, 1)
				checkEvents(t, cfg, got, first, int64(cfg.Splits))
			}
		})
	}
}

// TestProportions checks 1 person, 3 auctions and 46 bids in every 50
// consecutive positions, in that order, and the ids: person and auction
// ids count from 1000 in creation order.
func TestProportions(t *testing.T) {
	src := mustNew(t, Config{Events: 10_000, Splits: 1, BatchSize: 777})
	events, _ := read(t, open(t, src, newMem(t), states(0)), -1)
	if len(events) != 10_000 {
		t.Fatalf("%d events", len(events))
	}
	nextPerson, nextAuction := int64(1000), int64(1000)
	for b := 0; b < len(events); b += 50 {
		var n [3]int
		for k, e := range events[b : b+50] {
			n[e.Type]++
			want := BidEvent
			switch {
			case k == 0:
				want = PersonEvent
			case k < 4:
				want = AuctionEvent
			}
			if e.Type != want {
				t.Fatalf("position %d: %v, want %v", b+k, e.Type, want)
			}
			switch e.Type {
			case PersonEvent:
				if e.Person.ID != nextPerson {
					t.Fatalf("position %d: person id %d, want %d", b+k, e.Person.ID, nextPerson)
				}
				nextPerson++
			case AuctionEvent:
				if e.Auction.ID != nextAuction {
					t.Fatalf("position %d: auction id %d, want %d", b+k, e.Auction.ID, nextAuction)
				}
				nextAuction++
			}
		}
		if n != [3]int{1, 3, 46} {
			t.Fatalf("events %d..%d: %v persons/auctions/bids, want 1/3/46", b, b+49, n)
		}
	}
}

// TestModelInvariants checks properties the reference's model promises,
// over a long run: foreign keys point at most a lead beyond the newest
// person or auction and, when not hot, within the active or in-flight
// window; hot references dominate in the configured ratios; categories,
// prices, channels and strings are in their domains; the events' average
// sizes are near the configured ones.
func TestModelInvariants(t *testing.T) {
	src := mustNew(t, Config{Seed: 3, Events: 100_000, Splits: 1, BatchSize: 8192})
	cfg := src.Config()
	events, _ := read(t, open(t, src, newMem(t), states(0)), -1)
	var lastPerson, lastAuction int64 = 999, 999
	var hotBids, hotBidders, hotSellers, bids, auctions, hotChannelBids int
	var size [3]int
	var count [3]int
	for p, e := range events {
		switch e.Type {
		case PersonEvent:
			lastPerson = e.Person.ID
			s := 8 + len(e.Person.Name) + len(e.Person.Email) + len(e.Person.CreditCard) + len(e.Person.City) + len(e.Person.State) + len(e.Person.Extra)
			size[0] += s
			count[0]++
			if len(e.Person.CreditCard) != 19 || !slices.Contains(usStates, e.Person.State) || !slices.Contains(usCities, e.Person.City) {
				t.Fatalf("position %d: %v", p, e)
			}
		case AuctionEvent:
			a := e.Auction
			lastAuction = a.ID
			auctions++
			if a.Seller > lastPerson+personIDLead || a.Seller < 1000 {
				t.Fatalf("position %d: seller %d, last person %d", p, a.Seller, lastPerson)
			}
			if (a.Seller-1000)%100 == 0 && a.Seller == (lastPerson-1000)/100*100+1000 {
				hotSellers++
			}
			if a.Category < 10 || a.Category > 14 || a.Expires <= a.DateTime || a.Reserve <= a.InitialBid || a.InitialBid < 100 || a.InitialBid > 100_000_000 {
				t.Fatalf("position %d: %v", p, e)
			}
			size[1] += 8 + len(a.ItemName) + len(a.Description) + 5*8 + len(a.Extra)
			count[1]++
		case BidEvent:
			b := e.Bid
			bids++
			if b.Auction > lastAuction+auctionIDLead || b.Auction < lastAuction-int64(cfg.NumInFlightAuctions) && b.Auction != (lastAuction-1000)/100*100+1000 {
				t.Fatalf("position %d: bid for auction %d, last auction %d", p, b.Auction, lastAuction)
			}
			if b.Auction == (lastAuction-1000)/100*100+1000 {
				hotBids++
			}
			if b.Bidder == (lastPerson-1000)/100*100+1001 {
				hotBidders++
			}
			if b.Bidder > lastPerson+personIDLead || b.Bidder < lastPerson-int64(cfg.NumActivePeople)-1 {
				t.Fatalf("position %d: bidder %d, last person %d", p, b.Bidder, lastPerson)
			}
			if slices.Contains(hotChannels, b.Channel) {
				hotChannelBids++
			} else if !strings.HasPrefix(b.Channel, "channel-") {
				t.Fatalf("position %d: channel %q", p, b.Channel)
			}
			if !strings.HasPrefix(b.URL, "https://www.nexmark.com/") || b.Price < 100 || b.Price > 100_000_000 {
				t.Fatalf("position %d: %v", p, e)
			}
			size[2] += 4*8 + len(b.Extra)
			count[2]++
		}
	}
	// Hot shares: 1 - 1/ratio plus what random choices hit by chance.
	near := func(name string, got, n int, want float64) {
		if f := float64(got) / float64(n); f < want-0.02 || f > want+0.05 {
			t.Errorf("%s: %.3f of %d, want about %.3f", name, f, n, want)
		}
	}
	near("hot auctions", hotBids, bids, 1-1.0/float64(cfg.HotAuctionRatio))
	near("hot bidders", hotBidders, bids, 1-1.0/float64(cfg.HotBiddersRatio))
	near("hot sellers", hotSellers, auctions, 1-1.0/float64(cfg.HotSellersRatio))
	near("hot channels", hotChannelBids, bids, 0.5)
	for k, avg := range []int{cfg.AvgPersonByteSize, cfg.AvgAuctionByteSize, cfg.AvgBidByteSize} {
		if got := float64(size[k]) / float64(count[k]); got < 0.97*float64(avg) || got > 1.03*float64(avg) {
			t.Errorf("%v: average size %.1f bytes, want about %d", EventType(k), got, avg)
		}
	}
}

// readPerSplit reads every split of src with readers readers (split i to
// reader i mod readers) and returns each split's events in order.
func readPerSplit(t *testing.T, src *Source, readers int) map[int][]oEvent {
	t.Helper()
	mem := newMem(t)
	out := map[int][]oEvent{}
	for r := range readers {
		var mine []int
		for s := r; s < src.Config().Splits; s += readers {
			mine = append(mine, s)
		}
		rd := open(t, src, mem, states(mine...))
		for {
			k := rd.pick()
			if k < 0 {
				break
			}
			got, _ := read(t, rd, 1)
			s := rd.cursors[k].split
			out[s] = append(out[s], got...)
		}
		if _, eof := read(t, rd, -1); !eof {
			t.Fatal("no EOF")
		}
	}
	return out
}

// TestSplitting checks that 1, 2 and 3 splits (read by 1 to 3 readers,
// with various batch sizes) produce exactly the same events: the union is
// the single split's sequence, and split i holds positions i, i+k, ... in
// order.
func TestSplitting(t *testing.T) {
	base := Config{Seed: 11, Events: 5_003, OutOfOrderGroupSize: 10}
	one := readPerSplit(t, mustNew(t, withSplits(base, 1, 64)), 1)[0]
	if len(one) != 5_003 {
		t.Fatalf("1 split: %d events", len(one))
	}
	checkEvents(t, mustNew(t, base).Config(), one, 0, 1)
	for _, v := range []struct{ splits, readers, batch int }{{2, 1, 100}, {2, 2, 7}, {3, 1, 1000}, {3, 2, 1}, {3, 3, 64}} {
		per := readPerSplit(t, mustNew(t, withSplits(base, v.splits, v.batch)), v.readers)
		var all []string
		for s := range v.splits {
			for j, e := range per[s] {
				if pos := s + j*v.splits; e.String() != one[pos].String() {
					t.Fatalf("splits=%d: split %d event %d (position %d):\n got %v\nwant %v", v.splits, s, j, pos, e, one[pos])
				}
				all = append(all, e.String())
			}
		}
		want := make([]string, len(one))
		for i, e := range one {
			want[i] = e.String()
		}
		slices.Sort(all)
		slices.Sort(want)
		if !slices.Equal(all, want) {
			t.Fatalf("splits=%d readers=%d: the multiset of events differs", v.splits, v.readers)
		}
	}
}

func withSplits(c Config, splits, batch int) Config {
	c.Splits, c.BatchSize = splits, batch
	return c
}

// readBySplit reads up to batches non-zero batches from rd and appends
// their events to out by split.
func readBySplit(t *testing.T, rd *reader, batches int, out map[int][]oEvent) {
	t.Helper()
	for range batches {
		k := rd.pick()
		if k < 0 {
			return
		}
		got, _ := read(t, rd, 1)
		out[rd.cursors[k].split] = append(out[rd.cursors[k].split], got...)
	}
}

// TestRestore reads part of the stream, takes the positions, and checks
// that readers opened at them (with another grouping of splits) continue
// with exactly the next events of each split.
func TestRestore(t *testing.T) {
	for _, cfg := range []Config{
		{Seed: 5, Events: 4_000, Splits: 4, BatchSize: 90},
		{Seed: 6, Splits: 3, BatchSize: 50, OutOfOrderGroupSize: 13}, // unbounded
	} {
		src := mustNew(t, cfg)
		mem := newMem(t)
		got := map[int][]oEvent{}
		rd := open(t, src, mem, states(allSplits(src)...))
		readBySplit(t, rd, 7, got)
		pos, err := rd.Positions()
		if err != nil {
			t.Fatal(err)
		}
		rd.Close()
		// Restore with two readers: splits 0, 2, ... and 1, 3, ...
		for r := range 2 {
			var mine []arrowflow.SplitState
			for i := r; i < len(pos); i += 2 {
				mine = append(mine, pos[i])
			}
			readBySplit(t, open(t, src, mem, mine), 12, got)
		}
		c := src.Config()
		for s := range c.Splits {
			if len(got[s]) == 0 {
				t.Fatalf("split %d: no events", s)
			}
			checkEvents(t, c, got[s], int64(s), int64(c.Splits))
		}
	}
}

// TestBounded checks that a bounded source ends with io.EOF after exactly
// Events events, and keeps returning io.EOF.
func TestBounded(t *testing.T) {
	for _, v := range []struct {
		events            int64
		splits, readers   int
		batch             int
		wantSplitsNonZero int
	}{
		{1, 3, 1, 10, 1}, {49, 8, 3, 5, 8}, {1_001, 4, 4, 1024, 4}, {100, 1, 1, 100, 1},
	} {
		src := mustNew(t, Config{Events: v.events, Splits: v.splits, BatchSize: v.batch})
		per := readPerSplit(t, src, v.readers)
		total := 0
		for _, events := range per {
			total += len(events)
		}
		if int64(total) != v.events {
			t.Fatalf("events=%d splits=%d: read %d", v.events, v.splits, total)
		}
		rd := open(t, src, newMem(t), states(allSplits(src)...))
		if _, eof := read(t, rd, -1); !eof {
			t.Fatal("no EOF")
		}
		for range 3 {
			if _, err := rd.Next(context.Background()); !errors.Is(err, io.EOF) {
				t.Fatalf("Next after EOF: %v", err)
			}
		}
		if wm := rd.Watermark(); wm != arrowflow.MaxEventTime {
			t.Fatalf("watermark at EOF %v", wm)
		}
	}
	// A reader without splits ends at once.
	src := mustNew(t, Config{})
	rd := open(t, src, newMem(t), nil)
	if _, err := rd.Next(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("reader without splits: %v", err)
	}
}
