package nexmark

import (
	"fmt"
	"math"
	"time"
)

// Defaults applied by New to zero Config fields. The model defaults are
// those of the reference generator's NexmarkConfiguration (Apache Beam,
// reused by Flink's nexmark suite).
const (
	DefaultEventsPerSecond     = 10_000
	DefaultSplits              = 8
	DefaultBatchSize           = 1024
	DefaultOutOfOrderGroupSize = 1
	DefaultAvgPersonByteSize   = 200
	DefaultAvgAuctionByteSize  = 500
	DefaultAvgBidByteSize      = 100
	DefaultHotAuctionRatio     = 2
	DefaultHotSellersRatio     = 4
	DefaultHotBiddersRatio     = 4
	DefaultNumActivePeople     = 1000
	DefaultNumInFlightAuctions = 100
)

// DefaultBaseTime is the event time of event 0 when Config.BaseTime is
// zero: 2015-07-15T00:00:00Z, the reference's fixed BASE_TIME, so that
// every run sees the same events.
var DefaultBaseTime = time.Date(2015, 7, 15, 0, 0, 0, 0, time.UTC)

// Config configures a Nexmark Source. The zero Config is valid: an
// unbounded stream of the reference's default workload (10,000 events per
// second of event time from DefaultBaseTime), generated as fast as
// possible.
//
// Zero model fields take the reference's defaults; a field's default is
// named Default<Field>.
type Config struct {
	// Seed selects the events. Seed 0 is the reference's own sequence:
	// event n draws its values from java.util.Random(n), as in Apache
	// Beam's generator. Another seed s draws them from
	// java.util.Random(n XOR mix(s)), mix being a bijective 64-bit hash
	// with mix(0) = 0.
	Seed uint64
	// Events is the total number of events over all splits; 0 means
	// unbounded.
	Events int64
	// EventsPerSecond is the rate of event time: event n's time is
	// BaseTime + n/EventsPerSecond seconds, floored to the millisecond
	// (10,000 when zero, as the reference's first-event.rate).
	EventsPerSecond int64
	// BaseTime is event 0's time, truncated to the millisecond
	// (DefaultBaseTime when zero).
	BaseTime time.Time
	// RateLimit paces the whole source in processing time, in events per
	// second; each reader gets a share proportional to its number of
	// splits. 0 means as fast as possible. It never changes the events,
	// only when they are produced.
	RateLimit float64
	// Splits is the number of splits (DefaultSplits when zero): split i
	// generates the events n with n mod Splits = i. Positions are kept per
	// split, so keep Splits unchanged across restores; the parallelism
	// may change.
	Splits int
	// BatchSize is the largest number of events in a batch
	// (DefaultBatchSize when zero). Rate-limited readers make smaller
	// batches, about 100ms worth of events.
	BatchSize int
	// OutOfOrderGroupSize is the reference's outOfOrderGroupSize: events
	// are emitted in groups of this many, shuffled within each group by
	// the reference's permutation (position n of a group starting at b
	// emits event b + (n*953) mod size), so that event times are out of
	// order by up to the group's span. 1 (the default) means in order.
	// Multiples of 953 are rejected: the permutation would repeat events.
	OutOfOrderGroupSize int64
	// WatermarkHoldback holds each split's watermark back by this much
	// (the reference's watermarkHoldbackSec). Without it the watermark is
	// exact: just below the earliest event time the split can still
	// produce, so no event is ever late.
	WatermarkHoldback time.Duration

	// AvgPersonByteSize, AvgAuctionByteSize and AvgBidByteSize are the
	// average idealised sizes of the events: each event's extra field is
	// padded with random letters to reach them on average. A size below
	// the event's fixed part disables padding.
	AvgPersonByteSize, AvgAuctionByteSize, AvgBidByteSize int
	// HotAuctionRatio: a bid is for a hot auction with probability
	// 1 - 1/HotAuctionRatio (1 disables hot auctions).
	HotAuctionRatio int
	// HotSellersRatio: an auction is by a hot seller with probability
	// 1 - 1/HotSellersRatio.
	HotSellersRatio int
	// HotBiddersRatio: a bid is by a hot bidder with probability
	// 1 - 1/HotBiddersRatio.
	HotBiddersRatio int
	// NumActivePeople is how many of the most recent people sellers and
	// bidders are chosen from when not hot.
	NumActivePeople int
	// NumInFlightAuctions is how many of the most recent auctions bids
	// are for when not hot; it also sets the average auction length.
	NumInFlightAuctions int
}

// withDefaults returns a copy of c with the zero fields set to their
// defaults.
func (c Config) withDefaults() Config {
	setDefault(&c.EventsPerSecond, DefaultEventsPerSecond)
	setDefault(&c.Splits, DefaultSplits)
	setDefault(&c.BatchSize, DefaultBatchSize)
	setDefault(&c.OutOfOrderGroupSize, DefaultOutOfOrderGroupSize)
	setDefault(&c.AvgPersonByteSize, DefaultAvgPersonByteSize)
	setDefault(&c.AvgAuctionByteSize, DefaultAvgAuctionByteSize)
	setDefault(&c.AvgBidByteSize, DefaultAvgBidByteSize)
	setDefault(&c.HotAuctionRatio, DefaultHotAuctionRatio)
	setDefault(&c.HotSellersRatio, DefaultHotSellersRatio)
	setDefault(&c.HotBiddersRatio, DefaultHotBiddersRatio)
	setDefault(&c.NumActivePeople, DefaultNumActivePeople)
	setDefault(&c.NumInFlightAuctions, DefaultNumInFlightAuctions)
	if c.BaseTime.IsZero() {
		c.BaseTime = DefaultBaseTime
	}
	return c
}

func setDefault[T int | int64](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}

// maxBatchSize bounds BatchSize; see also maxStringBytes.
const maxBatchSize = 1 << 20

// maxStringBytes bounds the bytes of one string column of a batch (Arrow
// strings have int32 offsets), estimated as BatchSize times the largest
// event: its extra is at most 1.2 times its average size, the other
// strings are at most a few hundred bytes.
const maxStringBytes = math.MaxInt32

// Bounds of BaseTime: event times are milliseconds in an int64, and
// watermarks nanoseconds in an int64.
var (
	minBaseTime = time.Unix(0, math.MinInt64/2).UTC()
	maxBaseTime = time.Unix(0, math.MaxInt64/2).UTC()
)

// validate checks a Config with defaults applied. Errors name the field
// at fault.
func (c *Config) validate() error {
	positive := []struct {
		name string
		v    int64
	}{
		{"EventsPerSecond", c.EventsPerSecond},
		{"Splits", int64(c.Splits)},
		{"BatchSize", int64(c.BatchSize)},
		{"OutOfOrderGroupSize", c.OutOfOrderGroupSize},
		{"HotAuctionRatio", int64(c.HotAuctionRatio)},
		{"HotSellersRatio", int64(c.HotSellersRatio)},
		{"HotBiddersRatio", int64(c.HotBiddersRatio)},
		{"NumActivePeople", int64(c.NumActivePeople)},
		{"NumInFlightAuctions", int64(c.NumInFlightAuctions)},
	}
	for _, p := range positive {
		if p.v < 0 {
			return fmt.Errorf("nexmark: %s is %d; it must be > 0 (0 = the default)", p.name, p.v)
		}
	}
	for _, s := range []struct {
		name string
		v    int
	}{{"AvgPersonByteSize", c.AvgPersonByteSize}, {"AvgAuctionByteSize", c.AvgAuctionByteSize}, {"AvgBidByteSize", c.AvgBidByteSize}} {
		if s.v < 0 || s.v > 1<<20 {
			return fmt.Errorf("nexmark: %s is %d; it must be in [0, %d] (0 = the default)", s.name, s.v, 1<<20)
		}
	}
	// Bounds that keep the reference's int arithmetic (nextInt bounds)
	// within 32 bits.
	for _, s := range []struct {
		name string
		v    int
	}{
		{"HotAuctionRatio", c.HotAuctionRatio}, {"HotSellersRatio", c.HotSellersRatio}, {"HotBiddersRatio", c.HotBiddersRatio},
		{"NumActivePeople", c.NumActivePeople}, {"NumInFlightAuctions", c.NumInFlightAuctions},
	} {
		if s.v > 1<<30 {
			return fmt.Errorf("nexmark: %s %d is too large; at most %d", s.name, s.v, 1<<30)
		}
	}
	switch {
	case c.Events < 0:
		return fmt.Errorf("nexmark: Events is %d; it must be >= 0 (0 = unbounded)", c.Events)
	case c.RateLimit < 0 || math.IsNaN(c.RateLimit) || math.IsInf(c.RateLimit, 0):
		return fmt.Errorf("nexmark: RateLimit is %v; it must be finite and >= 0 (0 = unlimited)", c.RateLimit)
	case c.BatchSize > maxBatchSize:
		return fmt.Errorf("nexmark: BatchSize %d is too large; at most %d", c.BatchSize, maxBatchSize)
	case int64(c.BatchSize)*int64(max(c.AvgPersonByteSize, c.AvgAuctionByteSize, c.AvgBidByteSize)*6/5+512) > maxStringBytes:
		return fmt.Errorf("nexmark: BatchSize %d is too large for events of up to %d bytes: a batch's strings "+
			"must stay below 2 GiB; lower BatchSize or the Avg*ByteSize fields", c.BatchSize,
			max(c.AvgPersonByteSize, c.AvgAuctionByteSize, c.AvgBidByteSize))
	case c.OutOfOrderGroupSize%953 == 0:
		return fmt.Errorf("nexmark: OutOfOrderGroupSize %d is a multiple of 953: the reference's in-group "+
			"permutation (n*953 mod size) would then repeat events; choose another size", c.OutOfOrderGroupSize)
	case c.OutOfOrderGroupSize > 1<<40:
		return fmt.Errorf("nexmark: OutOfOrderGroupSize %d is too large; at most %d", c.OutOfOrderGroupSize, int64(1)<<40)
	case c.WatermarkHoldback < 0:
		return fmt.Errorf("nexmark: WatermarkHoldback is %v; it must be >= 0", c.WatermarkHoldback)
	case c.BaseTime.Before(minBaseTime) || c.BaseTime.After(maxBaseTime):
		return fmt.Errorf("nexmark: BaseTime %v is out of range [%v, %v]", c.BaseTime, minBaseTime, maxBaseTime)
	}
	return nil
}
