package nexmark

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// generator is what generating events needs besides the columns: the
// configuration and what is derived from it. It is immutable.
type generator struct {
	cfg     Config // defaults applied
	seedMix int64  // XORed into every seed: 0 for Seed 0
	tl      timeline
	// auctionHorizon is the number of events over which NumInFlightAuctions
	// auctions are created: auctions last that long on average.
	auctionHorizon int64
	ch             *channels
}

func newGenerator(cfg Config) *generator {
	mix := int64(mix64(cfg.Seed))
	return &generator{
		cfg:     cfg,
		seedMix: mix,
		tl: timeline{
			baseMs: cfg.BaseTime.UnixMilli(),
			rate:   cfg.EventsPerSecond,
			group:  cfg.OutOfOrderGroupSize,
		},
		auctionHorizon: int64(cfg.NumInFlightAuctions) * totalProportion / auctionProportion,
		ch:             newChannels(mix),
	}
}

// mix64 is a bijective 64-bit mixer (the MurmurHash3 finaliser); it maps
// 0 to 0, so that Seed 0 seeds every event exactly as the reference does.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// typeOf is the type of the event with id id.
func typeOf(id int64) EventType {
	switch rem := id % totalProportion; {
	case rem < personProportion:
		return PersonEvent
	case rem < personProportion+auctionProportion:
		return AuctionEvent
	}
	return BidEvent
}

// builder generates batches of events into Arrow columns. It is used by
// one reader, from one goroutine; its scratch space is reused across
// batches.
type builder struct {
	g    *generator
	pool *recycler
	mem  memory.Allocator // pool

	eventType           []int32
	eventTypeBuf        *memory.Buffer
	dateTime            fixedCol
	pValid, aValid      bitmap
	bValid              bitmap
	pID, pDateTime      fixedCol
	pName, pEmail       strCol
	pCard, pCity        strCol
	pState, pExtra      strCol
	aID, aInitialBid    fixedCol
	aReserve, aDateTime fixedCol
	aExpires, aSeller   fixedCol
	aCategory           fixedCol
	aItemName, aDesc    strCol
	aExtra              strCol
	bAuction, bBidder   fixedCol
	bPrice, bDateTime   fixedCol
	bChannel, bURL      strCol
	bExtra              strCol

	fixed []*fixedCol // every fixedCol above
	strs  []*strCol   // every strCol above
}

func newBuilder(g *generator, mem memory.Allocator) *builder {
	b := &builder{g: g, pool: newRecycler(mem)}
	b.mem = b.pool
	b.fixed = b.fixedCols()
	b.strs = b.strCols()
	return b
}

func (b *builder) fixedCols() []*fixedCol {
	return []*fixedCol{&b.dateTime, &b.pID, &b.pDateTime, &b.aID, &b.aInitialBid, &b.aReserve, &b.aDateTime,
		&b.aExpires, &b.aSeller, &b.aCategory, &b.bAuction, &b.bBidder, &b.bPrice, &b.bDateTime}
}

func (b *builder) strCols() []*strCol {
	return []*strCol{&b.pName, &b.pEmail, &b.pCard, &b.pCity, &b.pState, &b.pExtra,
		&b.aItemName, &b.aDesc, &b.aExtra, &b.bChannel, &b.bURL, &b.bExtra}
}

// build generates the events at positions first, first+step, ... (n of
// them, n >= 1) as a record batch of EventSchema.
func (b *builder) build(first, step int64, n int) arrow.RecordBatch {
	b.eventTypeBuf = newBuffer(b.mem, n*4)
	b.eventType = arrow.Int32Traits.CastFromBytes(b.eventTypeBuf.Bytes())[:n]
	for _, c := range b.fixed {
		c.alloc(b.mem, n)
	}
	for _, c := range b.strs {
		c.alloc(b.mem, n)
	}
	b.pValid.alloc(b.mem, n)
	b.aValid.alloc(b.mem, n)
	b.bValid.alloc(b.mem, n)

	pos := first
	for row := range n {
		b.event(row, pos)
		pos += step
	}
	return b.finish(n)
}

// event generates the event at position pos into row. Every value is
// drawn from a java.util.Random seeded with the event id (mixed with the
// seed), in the reference's order of draws.
func (b *builder) event(row int, pos int64) {
	g := b.g
	id := g.tl.eventID(pos)
	ts := g.tl.timestampMs(id)
	r := newJavaRandom(id ^ g.seedMix)
	b.dateTime.v[row] = ts
	t := typeOf(id)
	b.eventType[row] = int32(t)
	switch t {
	case PersonEvent:
		b.person(row, id, ts, &r)
		b.zeroAuction(row)
		b.zeroBid(row)
	case AuctionEvent:
		b.auction(row, id, ts, &r)
		b.zeroPerson(row)
		b.zeroBid(row)
	default:
		b.bid(row, id, ts, &r)
		b.zeroPerson(row)
		b.zeroAuction(row)
	}
}

// zeroPerson, zeroAuction and zeroBid set the fixed-width fields of a
// null struct to 0 (its strings are left empty by strCol.begin).
func (b *builder) zeroPerson(row int) {
	b.pID.v[row], b.pDateTime.v[row] = 0, 0
}

func (b *builder) zeroAuction(row int) {
	b.aID.v[row], b.aInitialBid.v[row], b.aReserve.v[row], b.aDateTime.v[row] = 0, 0, 0, 0
	b.aExpires.v[row], b.aSeller.v[row], b.aCategory.v[row] = 0, 0, 0
}

func (b *builder) zeroBid(row int) {
	b.bAuction.v[row], b.bBidder.v[row], b.bPrice.v[row], b.bDateTime.v[row] = 0, 0, 0, 0
}

// person follows the reference's PersonGenerator.nextPerson.
func (b *builder) person(row int, id, ts int64, r *javaRandom) {
	b.pValid.mark(row)
	b.pID.v[row] = lastBase0PersonID(id) + firstPersonID
	b.pDateTime.v[row] = ts
	size := 8

	c := &b.pName
	c.begin(row)
	start := len(c.data)
	c.data = append(c.data, firstNames[r.nextInt(int32(len(firstNames)))]...)
	c.data = append(c.data, ' ')
	c.data = append(c.data, lastNames[r.nextInt(int32(len(lastNames)))]...)
	size += len(c.data) - start

	c = &b.pEmail
	c.begin(row)
	start = len(c.data)
	c.data = appendRandomString(c.data, r, 7, ' ')
	c.data = append(c.data, '@')
	c.data = appendRandomString(c.data, r, 5, ' ')
	c.data = append(c.data, ".com"...)
	size += len(c.data) - start

	c = &b.pCard
	c.begin(row)
	for i := range 4 {
		if i > 0 {
			c.data = append(c.data, ' ')
		}
		v := r.nextInt(10000) // "%04d"
		c.data = append(c.data, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
	}
	size += 19

	city := usCities[r.nextInt(int32(len(usCities)))]
	b.pCity.begin(row)
	b.pCity.data = append(b.pCity.data, city...)
	state := usStates[r.nextInt(int32(len(usStates)))]
	b.pState.begin(row)
	b.pState.data = append(b.pState.data, state...)
	size += len(city) + len(state)

	b.pExtra.begin(row)
	b.pExtra.data = appendExtra(b.pExtra.data, r, size, b.g.cfg.AvgPersonByteSize)
}

// nextBase0PersonID is the reference's PersonGenerator.nextBase0PersonId:
// one of the NumActivePeople newest people, or up to personIDLead people
// not created yet.
func (gen *generator) nextBase0PersonID(id int64, r *javaRandom) int64 {
	numPeople := lastBase0PersonID(id) + 1
	active := min(numPeople, int64(gen.cfg.NumActivePeople))
	return numPeople - active + r.nextLong(active+personIDLead)
}

// nextBase0AuctionID is the reference's AuctionGenerator.nextBase0AuctionId:
// one of the NumInFlightAuctions newest auctions, or up to auctionIDLead
// auctions not created yet.
func (gen *generator) nextBase0AuctionID(id int64, r *javaRandom) int64 {
	maxAuction := lastBase0AuctionID(id)
	minAuction := max(maxAuction-int64(gen.cfg.NumInFlightAuctions), 0)
	return minAuction + r.nextLong(maxAuction-minAuction+1+auctionIDLead)
}

// auction follows the reference's AuctionGenerator.nextAuction.
func (b *builder) auction(row int, id, ts int64, r *javaRandom) {
	gen := b.g
	b.aValid.mark(row)
	b.aID.v[row] = lastBase0AuctionID(id) + firstAuctionID
	b.aDateTime.v[row] = ts

	var seller int64
	if r.nextInt(int32(gen.cfg.HotSellersRatio)) > 0 {
		seller = lastBase0PersonID(id) / hotSellerBatch * hotSellerBatch
	} else {
		seller = gen.nextBase0PersonID(id, r)
	}
	b.aSeller.v[row] = seller + firstPersonID
	b.aCategory.v[row] = firstCategoryID + int64(r.nextInt(numCategories))
	initialBid := r.nextPrice()
	b.aInitialBid.v[row] = initialBid

	// The auction lasts 1 ms plus up to twice the time NumInFlightAuctions
	// auctions take to be created.
	horizon := gen.tl.timestampMs(id+gen.auctionHorizon) - ts
	b.aExpires.v[row] = ts + 1 + r.nextLong(max(horizon*2, 1))

	c := &b.aItemName
	c.begin(row)
	start := len(c.data)
	c.data = appendRandomString(c.data, r, 20, ' ')
	size := 8 + len(c.data) - start + 5*8
	c = &b.aDesc
	c.begin(row)
	start = len(c.data)
	c.data = appendRandomString(c.data, r, 100, ' ')
	size += len(c.data) - start
	b.aReserve.v[row] = initialBid + r.nextPrice()

	b.aExtra.begin(row)
	b.aExtra.data = appendExtra(b.aExtra.data, r, size, gen.cfg.AvgAuctionByteSize)
}

// bid follows the reference's BidGenerator.nextBid, then draws the
// channel as Flink's nexmark does (after the extra padding here, so that
// the reference's fields keep the reference's draws).
func (b *builder) bid(row int, id, ts int64, r *javaRandom) {
	gen := b.g
	b.bValid.mark(row)
	b.bDateTime.v[row] = ts

	var auction int64
	if r.nextInt(int32(gen.cfg.HotAuctionRatio)) > 0 {
		auction = lastBase0AuctionID(id) / hotAuctionBatch * hotAuctionBatch
	} else {
		auction = gen.nextBase0AuctionID(id, r)
	}
	b.bAuction.v[row] = auction + firstAuctionID

	var bidder int64
	if r.nextInt(int32(gen.cfg.HotBiddersRatio)) > 0 {
		// The second person of the batch, so that hot bidders and hot
		// sellers differ.
		bidder = lastBase0PersonID(id)/hotBidderBatch*hotBidderBatch + 1
	} else {
		bidder = gen.nextBase0PersonID(id, r)
	}
	b.bBidder.v[row] = bidder + firstPersonID
	b.bPrice.v[row] = r.nextPrice()

	b.bExtra.begin(row)
	b.bExtra.data = appendExtra(b.bExtra.data, r, 4*8, gen.cfg.AvgBidByteSize)

	ch := gen.ch
	if r.nextInt(hotChannelsRatio) > 0 {
		i := r.nextInt(int32(len(hotChannels)))
		b.bChannel.appendRow(row, ch.hotNames.get(i))
		b.bURL.appendRow(row, ch.hotURLs.get(i))
	} else {
		c := r.nextInt(numChannels)
		b.bChannel.appendRow(row, ch.names.get(c))
		b.bURL.appendRow(row, ch.urls.get(c))
	}
}

// finish assembles the generated columns into a record batch and hands
// over every buffer.
func (b *builder) finish(n int) arrow.RecordBatch {
	mem := b.mem
	ts := arrow.DataType(TimestampType)
	i64 := arrow.DataType(arrow.PrimitiveTypes.Int64)
	fixed := func(c *fixedCol, dt arrow.DataType, v *bitmap) arrow.ArrayData {
		return c.finish(dt, n, v.buf, n-v.set)
	}
	str := func(c *strCol, v *bitmap) arrow.ArrayData {
		return c.finish(mem, n, v.buf, n-v.set)
	}
	fields := eventSchema.Fields()
	pv, av, bv := &b.pValid, &b.aValid, &b.bValid
	person := structData(fields[colPerson].Type, n, pv, []arrow.ArrayData{
		fixed(&b.pID, i64, pv), str(&b.pName, pv), str(&b.pEmail, pv), str(&b.pCard, pv),
		str(&b.pCity, pv), str(&b.pState, pv), fixed(&b.pDateTime, ts, pv), str(&b.pExtra, pv),
	})
	auction := structData(fields[colAuction].Type, n, av, []arrow.ArrayData{
		fixed(&b.aID, i64, av), str(&b.aItemName, av), str(&b.aDesc, av), fixed(&b.aInitialBid, i64, av),
		fixed(&b.aReserve, i64, av), fixed(&b.aDateTime, ts, av), fixed(&b.aExpires, ts, av),
		fixed(&b.aSeller, i64, av), fixed(&b.aCategory, i64, av), str(&b.aExtra, av),
	})
	bid := structData(fields[colBid].Type, n, bv, []arrow.ArrayData{
		fixed(&b.bAuction, i64, bv), fixed(&b.bBidder, i64, bv), fixed(&b.bPrice, i64, bv),
		str(&b.bChannel, bv), str(&b.bURL, bv), fixed(&b.bDateTime, ts, bv), str(&b.bExtra, bv),
	})
	pv.release()
	av.release()
	bv.release()
	eventType := array.NewData(arrow.PrimitiveTypes.Int32, n, []*memory.Buffer{nil, b.eventTypeBuf}, nil, 0, 0)
	b.eventTypeBuf.Release()
	b.eventTypeBuf, b.eventType = nil, nil
	dateTime := b.dateTime.finish(ts, n, nil, 0)

	cols := make([]arrow.Array, 0, len(fields))
	for _, d := range []arrow.ArrayData{eventType, person, auction, bid, dateTime} {
		cols = append(cols, array.MakeFromData(d))
		d.Release()
	}
	rec := array.NewRecordBatch(eventSchema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}
