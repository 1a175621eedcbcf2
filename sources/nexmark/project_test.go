package nexmark

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
)

// flatEvents converts a flat batch of PersonSchema, AuctionSchema or
// BidSchema to oEvents of type t.
func flatEvents(t *testing.T, rec arrow.RecordBatch, typ EventType) []oEvent {
	t.Helper()
	want := []*arrow.Schema{PersonSchema(), AuctionSchema(), BidSchema()}[typ]
	if !rec.Schema().Equal(want) {
		t.Fatalf("schema\n%s\nwant\n%s", rec.Schema(), want)
	}
	if i, ok := arrowflow.EventTimeColumn(rec.Schema()); !ok || rec.Schema().Field(i).Name != "dateTime" {
		t.Fatal("flat schema: dateTime is not the event-time column")
	}
	out := make([]oEvent, rec.NumRows())
	for j, c := range rec.Columns() {
		if c.NullN() != 0 {
			t.Fatalf("column %d has %d nulls", j, c.NullN())
		}
		if err := validateArray(c); err != nil {
			t.Fatal(err)
		}
	}
	for i := range out {
		i64 := func(j int) int64 {
			switch a := rec.Column(j).(type) {
			case *array.Int64:
				return a.Value(i)
			case *array.Timestamp:
				return int64(a.Value(i))
			}
			t.Fatalf("column %d: %T", j, rec.Column(j))
			return 0
		}
		str := func(j int) string { return rec.Column(j).(*array.String).Value(i) }
		e := oEvent{Type: typ}
		switch typ {
		case PersonEvent:
			e.Person = &oPerson{ID: i64(0), Name: str(1), Email: str(2), CreditCard: str(3), City: str(4), State: str(5), DateTime: i64(6), Extra: str(7)}
			e.DateTime = e.Person.DateTime
		case AuctionEvent:
			e.Auction = &oAuction{ID: i64(0), ItemName: str(1), Description: str(2), InitialBid: i64(3), Reserve: i64(4),
				DateTime: i64(5), Expires: i64(6), Seller: i64(7), Category: i64(8), Extra: str(9)}
			e.DateTime = e.Auction.DateTime
		case BidEvent:
			e.Bid = &oBid{Auction: i64(0), Bidder: i64(1), Price: i64(2), Channel: str(3), URL: str(4), DateTime: i64(5), Extra: str(6)}
			e.DateTime = e.Bid.DateTime
		}
		out[i] = e
	}
	return out
}

// TestProject checks Persons, Auctions, Bids and Project (with random
// selection vectors) against the events of the same batches, for batches
// of mixed types (gathered) and of one type (sliced), and for batches
// without rows of the type.
func TestProject(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, cfg := range []Config{
		{Seed: 9, Events: 3_000, BatchSize: 500, Splits: 1}, // mixed batches
		{Seed: 9, Events: 5_000, BatchSize: 64, Splits: 50}, // split 0: persons only; 1-3: auctions; others: bids
		{Seed: 9, Events: 2_000, BatchSize: 77, Splits: 7, OutOfOrderGroupSize: 20},
	} {
		src := mustNew(t, cfg)
		mem := newMem(t)
		rd := open(t, src, mem, states(allSplits(src)...))
		for {
			b, err := rd.Next(context.Background())
			if err != nil {
				break
			}
			events := eventsOf(t, b.Record)
			for _, typ := range []EventType{PersonEvent, AuctionEvent, BidEvent} {
				var want []string
				for _, e := range events {
					if e.Type == typ {
						want = append(want, e.String())
					}
				}
				fn := []func(memory.Allocator, arrow.RecordBatch) (arrow.RecordBatch, error){Persons, Auctions, Bids}[typ]
				flat, err := fn(mem, b.Record)
				if err != nil {
					t.Fatal(err)
				}
				checkFlat(t, flat, typ, want)

				// A random selection.
				var sel []int32
				want = want[:0]
				for i, e := range events {
					if rng.IntN(3) > 0 {
						sel = append(sel, int32(i))
						if e.Type == typ {
							want = append(want, e.String())
						}
					}
				}
				flat, err = Project(mem, arrowflow.Batch{Record: b.Record, Sel: sel}, typ)
				if err != nil {
					t.Fatal(err)
				}
				checkFlat(t, flat, typ, want)

				// A slice of the batch (arrays with an offset).
				if n := len(events); n > 2 {
					lo, hi := rng.IntN(n/2), n/2+rng.IntN(n/2)
					want = want[:0]
					for _, e := range events[lo:hi] {
						if e.Type == typ {
							want = append(want, e.String())
						}
					}
					slice := b.Record.NewSlice(int64(lo), int64(hi))
					flat, err = fn(mem, slice)
					slice.Release()
					if err != nil {
						t.Fatal(err)
					}
					checkFlat(t, flat, typ, want)
				}
			}
			b.Release()
		}
	}
}

func checkFlat(t *testing.T, flat arrow.RecordBatch, typ EventType, want []string) {
	t.Helper()
	defer flat.Release()
	got := flatEvents(t, flat, typ)
	if len(got) != len(want) {
		t.Fatalf("%v: %d rows, want %d", typ, len(got), len(want))
	}
	for i := range got {
		if got[i].String() != want[i] {
			t.Fatalf("%v row %d:\n got %v\nwant %v", typ, i, got[i], want[i])
		}
	}
}

func TestProjectErrors(t *testing.T) {
	mem := newMem(t)
	src := mustNew(t, Config{Events: 100, Splits: 1})
	rd := open(t, src, mem, states(0))
	b, err := rd.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	bids, err := Bids(mem, b.Record)
	if err != nil {
		t.Fatal(err)
	}
	defer bids.Release()
	if _, err := Bids(mem, bids); err == nil || !strings.Contains(err.Error(), `no (single) column "event_type"`) {
		t.Fatalf("Bids of a bid batch: %v", err)
	}
	if _, err := Project(mem, b, EventType(3)); err == nil {
		t.Fatal("Project of event type 3: no error")
	}
	if _, err := Project(mem, arrowflow.Batch{}, BidEvent); err == nil {
		t.Fatal("Project of a zero batch: no error")
	}
}
