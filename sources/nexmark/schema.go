package nexmark

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
)

// EventType is the value of the event_type column: which of the three
// structs a row holds.
type EventType int32

// The event types, numbered as in Flink's nexmark table.
const (
	PersonEvent  EventType = 0
	AuctionEvent EventType = 1
	BidEvent     EventType = 2
)

// String returns "person", "auction" or "bid".
func (t EventType) String() string {
	switch t {
	case PersonEvent:
		return "person"
	case AuctionEvent:
		return "auction"
	case BidEvent:
		return "bid"
	}
	return fmt.Sprintf("EventType(%d)", int32(t))
}

// TimestampType is the type of every time column: Flink's TIMESTAMP(3),
// milliseconds since the Unix epoch without a time zone (ticks counted in
// UTC).
var TimestampType = &arrow.TimestampType{Unit: arrow.Millisecond}

// Column names of the event stream, as in Flink's nexmark DDL.
const (
	EventTypeColumn = "event_type"
	PersonColumn    = "person"
	AuctionColumn   = "auction"
	BidColumn       = "bid"
	// DateTimeColumn is the event-time column of every schema of this
	// package.
	DateTimeColumn = "dateTime"
)

// Indices of the event schema's columns.
const (
	colEventType = iota
	colPerson
	colAuction
	colBid
	colDateTime
)

// personFields, auctionFields and bidFields are the fields of the three
// structs, in Flink's order; nullable says whether they are marked
// nullable (inside the event stream's structs they are null where the
// struct is).
func personFields(nullable bool) []arrow.Field {
	return []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: nullable},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: nullable},
		{Name: "emailAddress", Type: arrow.BinaryTypes.String, Nullable: nullable},
		{Name: "creditCard", Type: arrow.BinaryTypes.String, Nullable: nullable},
		{Name: "city", Type: arrow.BinaryTypes.String, Nullable: nullable},
		{Name: "state", Type: arrow.BinaryTypes.String, Nullable: nullable},
		{Name: "dateTime", Type: TimestampType, Nullable: nullable},
		{Name: "extra", Type: arrow.BinaryTypes.String, Nullable: nullable},
	}
}

func auctionFields(nullable bool) []arrow.Field {
	return []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: nullable},
		{Name: "itemName", Type: arrow.BinaryTypes.String, Nullable: nullable},
		{Name: "description", Type: arrow.BinaryTypes.String, Nullable: nullable},
		{Name: "initialBid", Type: arrow.PrimitiveTypes.Int64, Nullable: nullable},
		{Name: "reserve", Type: arrow.PrimitiveTypes.Int64, Nullable: nullable},
		{Name: "dateTime", Type: TimestampType, Nullable: nullable},
		{Name: "expires", Type: TimestampType, Nullable: nullable},
		{Name: "seller", Type: arrow.PrimitiveTypes.Int64, Nullable: nullable},
		{Name: "category", Type: arrow.PrimitiveTypes.Int64, Nullable: nullable},
		{Name: "extra", Type: arrow.BinaryTypes.String, Nullable: nullable},
	}
}

func bidFields(nullable bool) []arrow.Field {
	return []arrow.Field{
		{Name: "auction", Type: arrow.PrimitiveTypes.Int64, Nullable: nullable},
		{Name: "bidder", Type: arrow.PrimitiveTypes.Int64, Nullable: nullable},
		{Name: "price", Type: arrow.PrimitiveTypes.Int64, Nullable: nullable},
		{Name: "channel", Type: arrow.BinaryTypes.String, Nullable: nullable},
		{Name: "url", Type: arrow.BinaryTypes.String, Nullable: nullable},
		{Name: "dateTime", Type: TimestampType, Nullable: nullable},
		{Name: "extra", Type: arrow.BinaryTypes.String, Nullable: nullable},
	}
}

// The schemas are built once; arrow schemas are immutable.
var (
	eventSchema   = mustEventTime(arrow.NewSchema(eventFields(), nil))
	personSchema  = mustEventTime(arrow.NewSchema(personFields(false), nil))
	auctionSchema = mustEventTime(arrow.NewSchema(auctionFields(false), nil))
	bidSchema     = mustEventTime(arrow.NewSchema(bidFields(false), nil))
)

func eventFields() []arrow.Field {
	return []arrow.Field{
		{Name: EventTypeColumn, Type: arrow.PrimitiveTypes.Int32},
		{Name: PersonColumn, Type: arrow.StructOf(personFields(true)...), Nullable: true},
		{Name: AuctionColumn, Type: arrow.StructOf(auctionFields(true)...), Nullable: true},
		{Name: BidColumn, Type: arrow.StructOf(bidFields(true)...), Nullable: true},
		{Name: DateTimeColumn, Type: TimestampType},
	}
}

func mustEventTime(s *arrow.Schema) *arrow.Schema {
	s, err := arrowflow.WithEventTimeColumn(s, DateTimeColumn)
	if err != nil {
		panic("BUG: nexmark schema: " + err.Error())
	}
	return s
}

// EventSchema is the schema of the batches a Source produces, one event
// per row, fitting Flink's nexmark table:
//
//	event_type  int32      0 person, 1 auction, 2 bid
//	person      struct<id int64, name string, emailAddress string,
//	                   creditCard string, city string, state string,
//	                   dateTime timestamp[ms], extra string>
//	auction     struct<id int64, itemName string, description string,
//	                   initialBid int64, reserve int64,
//	                   dateTime timestamp[ms], expires timestamp[ms],
//	                   seller int64, category int64, extra string>
//	bid         struct<auction int64, bidder int64, price int64,
//	                   channel string, url string,
//	                   dateTime timestamp[ms], extra string>
//	dateTime    timestamp[ms]  the event's time: the event-time column
//
// In each row exactly one struct, the one event_type names, is not null;
// the fields of the null structs are null too. dateTime is the event's
// own dateTime (Flink computes it with a CASE over event_type).
func EventSchema() *arrow.Schema { return eventSchema }

// PersonSchema is the flat schema Persons returns: the person struct's
// fields as columns, none null, dateTime the event-time column.
func PersonSchema() *arrow.Schema { return personSchema }

// AuctionSchema is the flat schema Auctions returns: the auction struct's
// fields as columns, none null, dateTime the event-time column.
func AuctionSchema() *arrow.Schema { return auctionSchema }

// BidSchema is the flat schema Bids returns: the bid struct's fields as
// columns, none null, dateTime the event-time column.
func BidSchema() *arrow.Schema { return bidSchema }

// CountOf returns how many events of type t the first n events hold:
// persons, auctions and bids come 1 : 3 : 46 in every 50 event ids. (With
// OutOfOrderGroupSize > 1 the ids are emitted in another order, not in
// other numbers.)
func CountOf(t EventType, n int64) int64 {
	var c int64
	full, rest := n/totalProportion, n%totalProportion
	for id := int64(0); id < totalProportion; id++ {
		if typeOf(id) == t {
			c += full
			if id < rest {
				c++
			}
		}
	}
	return c
}
