package nexmark

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
)

// This file is the test oracle: a plain, row-at-a-time transliteration of
// the reference generator (Apache Beam's Nexmark Generator, GeneratorConfig
// and model generators, with Flink nexmark's channels), written
// independently of the package's column builder. oracleEvent(cfg, p) is
// the event at position p.

// oEvent is one event as plain Go values. Times are ms since the epoch.
type oEvent struct {
	Type     EventType
	Person   *oPerson
	Auction  *oAuction
	Bid      *oBid
	DateTime int64
}

type oPerson struct {
	ID                                   int64
	Name, Email, CreditCard, City, State string
	DateTime                             int64
	Extra                                string
}

type oAuction struct {
	ID                    int64
	ItemName, Description string
	InitialBid, Reserve   int64
	DateTime, Expires     int64
	Seller, Category      int64
	Extra                 string
}

type oBid struct {
	Auction, Bidder, Price int64
	Channel, URL           string
	DateTime               int64
	Extra                  string
}

func (e oEvent) String() string {
	switch {
	case e.Person != nil:
		return fmt.Sprintf("person%+v", *e.Person)
	case e.Auction != nil:
		return fmt.Sprintf("auction%+v", *e.Auction)
	case e.Bid != nil:
		return fmt.Sprintf("bid%+v", *e.Bid)
	}
	return fmt.Sprintf("event{type %d, no struct}", e.Type)
}

// jrand is java.util.Random, transliterated from its specification with
// Java's signed long arithmetic.
type jrand struct{ seed int64 }

func newJrand(seed int64) *jrand {
	return &jrand{seed: (seed ^ 0x5DEECE66D) & (1<<48 - 1)}
}

func (r *jrand) next(nbits int) int32 {
	r.seed = (r.seed*0x5DEECE66D + 0xB) & (1<<48 - 1)
	return int32(uint64(r.seed) >> (48 - nbits)) // Java: (int)(seed >>> (48 - bits))
}

func (r *jrand) nextInt() int32 { return r.next(32) }

func (r *jrand) nextIntN(bound int32) int32 {
	v := r.next(31)
	m := bound - 1
	if bound&m == 0 {
		return int32((int64(bound) * int64(v)) >> 31)
	}
	for u := v; ; u = r.next(31) {
		v = u % bound
		if u-v+m >= 0 {
			return v
		}
	}
}

func (r *jrand) nextLong() int64 {
	return int64(r.next(32))<<32 + int64(r.next(32))
}

func (r *jrand) nextDouble() float64 {
	return float64(int64(r.next(26))<<27+int64(r.next(27))) * 0x1.0p-53
}

// LongGenerator.nextLong(random, n).
func (r *jrand) longN(n int64) int64 {
	if n < math.MaxInt32 {
		return int64(r.nextIntN(int32(n)))
	}
	v := r.nextLong() % n
	if v < 0 {
		return -v
	}
	return v
}

// PriceGenerator.nextPrice: Math.round(Math.pow(10.0, nextDouble()*6.0)*100.0).
func (r *jrand) price() int64 {
	x := r.nextDouble() * 6.0
	p := math.Pow(10.0, x)
	p = p * 100.0
	return int64(math.Floor(p + 0.5)) // Java's round half up; exact enough below 2^52
}

// StringsGenerator.nextString(random, maxLength[, special]).
func (r *jrand) str(maxLength int32, special byte) string {
	n := 3 + r.nextIntN(maxLength-3)
	var sb strings.Builder
	for ; n > 0; n-- {
		if r.nextIntN(13) == 0 {
			sb.WriteByte(special)
		} else {
			sb.WriteByte(byte('a' + r.nextIntN(26)))
		}
	}
	return strings.Trim(sb.String(), " ")
}

// StringsGenerator.nextExactString.
func (r *jrand) exact(length int) string {
	var sb strings.Builder
	var rnd int32
	n := 0
	for ; length > 0; length-- {
		if n == 0 {
			rnd = r.nextInt()
			n = 6
		}
		sb.WriteByte(byte(int32('a') + rnd%26))
		rnd /= 26
		n--
	}
	return sb.String()
}

// StringsGenerator.nextExtra.
func (r *jrand) extra(current, avg int) string {
	if current > avg {
		return ""
	}
	avg -= current
	delta := int(math.Floor(float64(avg)*0.2 + 0.5))
	size := avg - delta
	if delta != 0 {
		size += int(r.nextIntN(int32(2 * delta)))
	}
	return r.exact(size)
}

func oMix(x uint64) int64 {
	x = (x ^ x>>33) * 0xff51afd7ed558ccd
	x = (x ^ x>>33) * 0xc4ceb9fe1a85ec53
	return int64(x ^ x>>33)
}

func oLastPerson(id int64) int64 {
	epoch, off := id/50, id%50
	if off >= 1 {
		off = 0
	}
	return epoch + off
}

func oLastAuction(id int64) int64 {
	epoch, off := id/50, id%50
	if off < 1 {
		epoch--
		off = 2
	} else if off >= 4 {
		off = 2
	} else {
		off--
	}
	return epoch*3 + off
}

func oNextPerson(cfg Config, id int64, r *jrand) int64 {
	num := oLastPerson(id) + 1
	active := min(num, int64(cfg.NumActivePeople))
	return num - active + r.longN(active+10)
}

func oNextAuction(cfg Config, id int64, r *jrand) int64 {
	maxA := oLastAuction(id)
	minA := max(maxA-int64(cfg.NumInFlightAuctions), 0)
	return minA + r.longN(maxA-minA+1+10)
}

// oURL is the url of channel k (hot channel i is k = 10000+i).
func oURL(cfg Config, k int) string {
	r := newJrand(^int64(k) ^ oMix(cfg.Seed))
	url := "https://www.nexmark.com/" + r.str(5, '_') + "/" + r.str(5, '_') + "/" + r.str(5, '_') + "/item.htm?query=1"
	if k < 10000 && r.nextIntN(10) > 0 {
		id := int32(bits.Reverse32(uint32(k)))
		if id < 0 {
			id = -id
		}
		url += fmt.Sprintf("&channel_id=%d", id)
	}
	return url
}

// oracleEvent is the event at position pos of a source configured by cfg
// (defaults applied).
func oracleEvent(cfg Config, pos int64) oEvent {
	G := cfg.OutOfOrderGroupSize
	id := pos/G*G + pos*953%G
	tsOf := func(n int64) int64 { return cfg.BaseTime.UnixMilli() + n*1000/cfg.EventsPerSecond }
	ts := tsOf(id)
	r := newJrand(id ^ oMix(cfg.Seed))
	ev := oEvent{DateTime: ts}
	switch rem := id % 50; {
	case rem == 0:
		p := &oPerson{ID: oLastPerson(id) + 1000, DateTime: ts}
		p.Name = firstNamesO[r.nextIntN(11)] + " " + lastNamesO[r.nextIntN(9)]
		p.Email = r.str(7, ' ') + "@" + r.str(5, ' ') + ".com"
		var cc []string
		for range 4 {
			cc = append(cc, fmt.Sprintf("%04d", r.nextIntN(10000)))
		}
		p.CreditCard = strings.Join(cc, " ")
		p.City = citiesO[r.nextIntN(10)]
		p.State = statesO[r.nextIntN(6)]
		size := 8 + len(p.Name) + len(p.Email) + len(p.CreditCard) + len(p.City) + len(p.State)
		p.Extra = r.extra(size, cfg.AvgPersonByteSize)
		ev.Type, ev.Person = PersonEvent, p
	case rem < 4:
		a := &oAuction{ID: oLastAuction(id) + 1000, DateTime: ts}
		if r.nextIntN(int32(cfg.HotSellersRatio)) > 0 {
			a.Seller = oLastPerson(id) / 100 * 100
		} else {
			a.Seller = oNextPerson(cfg, id, r)
		}
		a.Seller += 1000
		a.Category = 10 + int64(r.nextIntN(5))
		a.InitialBid = r.price()
		future := tsOf(id + int64(cfg.NumInFlightAuctions)*50/3)
		a.Expires = ts + 1 + r.longN(max((future-ts)*2, 1))
		a.ItemName = r.str(20, ' ')
		a.Description = r.str(100, ' ')
		a.Reserve = a.InitialBid + r.price()
		size := 8 + len(a.ItemName) + len(a.Description) + 8 + 8 + 8 + 8 + 8
		a.Extra = r.extra(size, cfg.AvgAuctionByteSize)
		ev.Type, ev.Auction = AuctionEvent, a
	default:
		b := &oBid{DateTime: ts}
		if r.nextIntN(int32(cfg.HotAuctionRatio)) > 0 {
			b.Auction = oLastAuction(id) / 100 * 100
		} else {
			b.Auction = oNextAuction(cfg, id, r)
		}
		b.Auction += 1000
		if r.nextIntN(int32(cfg.HotBiddersRatio)) > 0 {
			b.Bidder = oLastPerson(id)/100*100 + 1
		} else {
			b.Bidder = oNextPerson(cfg, id, r)
		}
		b.Bidder += 1000
		b.Price = r.price()
		b.Extra = r.extra(32, cfg.AvgBidByteSize)
		if r.nextIntN(2) > 0 {
			i := int(r.nextIntN(4))
			b.Channel = []string{"Google", "Facebook", "Baidu", "Apple"}[i]
			b.URL = oURL(cfg, 10000+i)
		} else {
			c := int(r.nextIntN(10000))
			b.Channel = fmt.Sprintf("channel-%d", c)
			b.URL = oURL(cfg, c)
		}
		ev.Type, ev.Bid = BidEvent, b
	}
	return ev
}

var (
	statesO     = strings.Split("AZ,CA,ID,OR,WA,WY", ",")
	citiesO     = strings.Split("Phoenix,Los Angeles,San Francisco,Boise,Portland,Bend,Redmond,Seattle,Kent,Cheyenne", ",")
	firstNamesO = strings.Split("Peter,Paul,Luke,John,Saul,Vicky,Kate,Julie,Sarah,Deiter,Walter", ",")
	lastNamesO  = strings.Split("Shultz,Abrams,Spencer,White,Bartels,Walton,Smith,Jones,Noris", ",")
)
