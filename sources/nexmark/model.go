package nexmark

import (
	"math"
	"math/bits"
)

// Constants of the reference generator (GeneratorConfig and the model
// generators of Apache Beam's Nexmark).
const (
	// Ids start at these values so that queries find matches even on
	// small inputs.
	firstPersonID   = 1000
	firstAuctionID  = 1000
	firstCategoryID = 10
	numCategories   = 5

	// Of every 50 consecutive event ids, the first is a person, the next
	// three auctions and the other 46 bids.
	personProportion  = 1
	auctionProportion = 3
	totalProportion   = 50

	// How far beyond the newest person or auction a random reference may
	// point (an event "from the future", as if two events were swapped).
	personIDLead  = 10
	auctionIDLead = 10

	// Hot sellers, bidders and auctions are the first (sellers), second
	// (bidders) and first (auctions) of each batch of this many ids.
	hotSellerBatch  = 100
	hotBidderBatch  = 100
	hotAuctionBatch = 100

	// Channels, from Flink's nexmark: half of the bids come through one of
	// four hot channels, the others through one of 10,000 numbered ones.
	hotChannelsRatio = 2
	numChannels      = 10_000

	// The in-group permutation of out-of-order groups.
	outOfOrderMultiplier = 953
)

// Word lists of the reference's PersonGenerator.
var (
	usStates   = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	usCities   = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	firstNames = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames  = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
)

// hotChannels are Flink nexmark's four hot bid channels.
var hotChannels = []string{"Google", "Facebook", "Baidu", "Apple"}

// lastBase0PersonID is the id (from 0) of the newest person at event id:
// the event's own id when it is a person.
func lastBase0PersonID(id int64) int64 {
	epoch, offset := id/totalProportion, id%totalProportion
	if offset >= personProportion {
		offset = personProportion - 1
	}
	return epoch*personProportion + offset
}

// lastBase0AuctionID is the id (from 0) of the newest auction at event id:
// the event's own id when it is an auction. It is -1 before the first
// auction.
func lastBase0AuctionID(id int64) int64 {
	epoch, offset := id/totalProportion, id%totalProportion
	switch {
	case offset < personProportion: // a person: the previous epoch's last auction
		epoch--
		offset = auctionProportion - 1
	case offset >= personProportion+auctionProportion: // a bid
		offset = auctionProportion - 1
	default:
		offset -= personProportion
	}
	return epoch*auctionProportion + offset
}

// timeline maps event positions to event ids and event times.
type timeline struct {
	baseMs int64 // event 0's time, ms since the epoch
	rate   int64 // events per second of event time
	group  int64 // out-of-order group size
}

// eventID is the id of the event at position pos (counted from 0 over the
// whole stream): pos itself, unless out-of-order groups shuffle it within
// its group.
func (t *timeline) eventID(pos int64) int64 {
	if t.group == 1 {
		return pos
	}
	off := pos % t.group
	return pos - off + off*outOfOrderMultiplier%t.group
}

// groupStart is the first position of pos's out-of-order group: the
// smallest event id at pos or later.
func (t *timeline) groupStart(pos int64) int64 {
	return pos - pos%t.group
}

// timestampMs is the event time of event id n in ms: BaseTime +
// floor(n*1000/rate), saturating at the int64 bounds.
func (t *timeline) timestampMs(n int64) int64 {
	var off int64
	if n <= math.MaxInt64/1000 {
		off = n * 1000 / t.rate
	} else {
		hi, lo := bits.Mul64(uint64(n), 1000)
		if hi >= uint64(t.rate) {
			return math.MaxInt64
		}
		q, _ := bits.Div64(hi, lo, uint64(t.rate))
		if q > math.MaxInt64 {
			return math.MaxInt64
		}
		off = int64(q)
	}
	if t.baseMs > 0 && off > math.MaxInt64-t.baseMs {
		return math.MaxInt64
	}
	return t.baseMs + off
}
