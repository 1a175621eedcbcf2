// Package nexmarkref computes the answers of Nexmark queries with plain Go
// over the events of a nexmark.Source: the independent references that
// the tests of weir's Go-API queries (bench/queries) and of the Nexmark
// suite's SQL files (sql) compare with. Nothing here uses weir's
// operators: events are read once, in one reader, and the answers come
// from maps and sorts.
package nexmarkref

import (
	"context"
	"errors"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sources/nexmark"
)

// Bid is one bid event.
type Bid struct {
	Auction, Bidder, Price int64
	Channel, URL, Extra    string
	DateTime               time.Time
}

// Person holds the fields of a person event the references use.
type Person struct {
	ID       int64
	Name     string
	DateTime time.Time
}

// Auction holds the fields of an auction event the references use.
type Auction struct {
	Seller   int64
	DateTime time.Time
}

// Events are a source's events by kind, in the order one reader over
// every split returns them.
type Events struct {
	Bids     []Bid
	Persons  []Person
	Auctions []Auction
}

// Read reads every event of src in one reader over all its splits.
func Read(src *nexmark.Source) (Events, error) {
	var ev Events
	splits, err := src.Splits(context.Background())
	if err != nil {
		return ev, err
	}
	states := make([]arrowflow.SplitState, len(splits))
	for i, s := range splits {
		states[i] = arrowflow.SplitState{Split: s}
	}
	mem := memory.DefaultAllocator
	rd, err := src.Open(&arrowflow.TaskInfo{Job: "ref", Parallelism: 1, Allocator: mem}, states)
	if err != nil {
		return ev, err
	}
	defer rd.Close()
	for {
		b, err := rd.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return ev, nil
		}
		if err != nil {
			return ev, err
		}
		if b.IsZero() {
			continue
		}
		err = ev.add(mem, b)
		b.Release()
		if err != nil {
			return ev, err
		}
	}
}

func (ev *Events) add(mem memory.Allocator, b arrowflow.Batch) error {
	for _, kind := range []nexmark.EventType{nexmark.PersonEvent, nexmark.AuctionEvent, nexmark.BidEvent} {
		rec, err := nexmark.Project(mem, b, kind)
		if err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			v := func(name string) any { return arrowflow.ValueAt(rec.Column(rec.Schema().FieldIndices(name)[0]), i) }
			switch kind {
			case nexmark.PersonEvent:
				ev.Persons = append(ev.Persons, Person{ID: v("id").(int64), Name: v("name").(string), DateTime: v("dateTime").(time.Time)})
			case nexmark.AuctionEvent:
				ev.Auctions = append(ev.Auctions, Auction{Seller: v("seller").(int64), DateTime: v("dateTime").(time.Time)})
			default:
				ev.Bids = append(ev.Bids, Bid{
					Auction: v("auction").(int64), Bidder: v("bidder").(int64), Price: v("price").(int64),
					Channel: v("channel").(string), URL: v("url").(string), Extra: v("extra").(string),
					DateTime: v("dateTime").(time.Time),
				})
			}
		}
		rec.Release()
	}
	return nil
}

// ChannelID is q21's channel id of a bid's URL: the value of its
// channel_id query parameter, and whether it has one.
func ChannelID(url string) (string, bool) {
	if m := channelIDRe.FindStringSubmatch(url); m != nil {
		return m[2], true
	}
	return "", false
}

var channelIDRe = regexp.MustCompile(`(&|^)channel_id=([^&]*)`)

// URLDir is q22's SPLIT_INDEX(url, '/', i): the i-th part of the URL split
// at '/', and false past the last.
func URLDir(url string, i int) (string, bool) {
	parts := strings.Split(url, "/")
	if i < len(parts) {
		return parts[i], true
	}
	return "", false
}

// AuctionCount is an auction and a number of bids.
type AuctionCount struct{ Auction, Bids int64 }

// HotItems is q5's answer: per 10 s window sliding by 2 s, the auctions
// with the window's largest number of bids.
func HotItems(bids []Bid) []AuctionCount {
	const size, slide = 10 * time.Second, 2 * time.Second
	counts := map[time.Time]map[int64]int64{} // window start -> auction -> bids
	for _, b := range bids {
		for s := b.DateTime.Truncate(slide); s.After(b.DateTime.Add(-size)); s = s.Add(-slide) {
			if counts[s] == nil {
				counts[s] = map[int64]int64{}
			}
			counts[s][b.Auction]++
		}
	}
	var out []AuctionCount
	for _, m := range counts {
		var top int64
		for _, n := range m {
			top = max(top, n)
		}
		for a, n := range m {
			if n == top {
				out = append(out, AuctionCount{a, n})
			}
		}
	}
	return out
}

// HighestBids is q7's answer: per 10 s tumbling window, the bids at the
// window's highest price. With boundaries set it is the suite's q7, whose
// join condition `dateTime BETWEEN window_end - 10 s AND window_end` also
// pairs a bid at a window's end with the window before it.
func HighestBids(bids []Bid, boundaries bool) []Bid {
	const size = 10 * time.Second
	top := map[time.Time]int64{}
	for _, b := range bids {
		w := b.DateTime.Truncate(size)
		top[w] = max(top[w], b.Price)
	}
	var out []Bid
	for _, b := range bids {
		w := b.DateTime.Truncate(size)
		if b.Price == top[w] {
			out = append(out, b)
		}
		if p, ok := top[w.Add(-size)]; boundaries && w.Equal(b.DateTime) && ok && b.Price == p {
			out = append(out, b)
		}
	}
	return out
}

// Session is one of q11's sessions.
type Session struct {
	Bidder     int64
	Bids       int64
	Start, End time.Time
}

// Sessions is q11's answer: per bidder, bids at most gap apart (a bid at
// t opens [t, t+gap)) form one session.
func Sessions(bids []Bid, gap time.Duration) []Session {
	times := map[int64][]time.Time{}
	for _, b := range bids {
		times[b.Bidder] = append(times[b.Bidder], b.DateTime)
	}
	var out []Session
	for bidder, ts := range times {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		s := Session{Bidder: bidder, Bids: 1, Start: ts[0], End: ts[0].Add(gap)}
		for _, t := range ts[1:] {
			if t.Before(s.End) {
				s.Bids++
				if e := t.Add(gap); e.After(s.End) {
					s.End = e
				}
				continue
			}
			out = append(out, s)
			s = Session{Bidder: bidder, Bids: 1, Start: t, End: t.Add(gap)}
		}
		out = append(out, s)
	}
	return out
}

// NewUser is one of q8's answers.
type NewUser struct {
	ID     int64
	Name   string
	Window time.Time // the window's start
}

// NewUsers is q8's answer: persons who opened an auction in the same 10 s
// tumbling window they registered in, once per window.
func NewUsers(persons []Person, auctions []Auction) []NewUser {
	const size = 10 * time.Second
	type key struct {
		seller int64
		window time.Time
	}
	sold := map[key]bool{}
	for _, a := range auctions {
		sold[key{a.Seller, a.DateTime.Truncate(size)}] = true
	}
	var out []NewUser
	for _, p := range persons {
		if w := p.DateTime.Truncate(size); sold[key{p.ID, w}] {
			out = append(out, NewUser{p.ID, p.Name, w})
		}
	}
	return out
}
