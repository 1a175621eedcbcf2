package nexmark

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/testutil"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newMem is a checked allocator: the test fails if anything is left.
var newMem = testutil.CheckedAllocator

func mustNew(t testing.TB, cfg Config) *Source {
	t.Helper()
	src, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return src
}

// states returns SplitStates from scratch for the given split numbers.
func states(nums ...int) []arrowflow.SplitState {
	out := make([]arrowflow.SplitState, len(nums))
	for i, n := range nums {
		out[i] = arrowflow.SplitState{Split: fmt.Sprintf("nexmark-%d", n)}
	}
	return out
}

func allSplits(src *Source) []int {
	out := make([]int, src.Config().Splits)
	for i := range out {
		out[i] = i
	}
	return out
}

func open(t testing.TB, src *Source, mem memory.Allocator, splits []arrowflow.SplitState) *reader {
	t.Helper()
	rd, err := src.Open(&arrowflow.TaskInfo{Allocator: mem}, splits)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { rd.Close() })
	return rd.(*reader)
}

// read reads up to maxBatches non-zero batches (all when maxBatches < 0)
// and returns their events; eof reports whether Next returned io.EOF.
func read(t testing.TB, rd arrowflow.SourceReader, maxBatches int) (events []oEvent, eof bool) {
	t.Helper()
	for n := 0; maxBatches < 0 || n < maxBatches; {
		b, err := rd.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return events, true
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if b.IsZero() {
			continue
		}
		events = append(events, eventsOf(t, b.Record)...)
		b.Release()
		n++
	}
	return events, false
}

// eventsOf converts a batch of EventSchema to oEvents, reading the Arrow
// arrays independently of the generator, and checks the batch's shape:
// the schema, one non-null struct per row (the one event_type names), the
// fields of the null structs null, dateTime equal to the struct's.
func eventsOf(t testing.TB, rec arrow.RecordBatch) []oEvent {
	t.Helper()
	if !rec.Schema().Equal(EventSchema()) {
		t.Fatalf("schema\n%s\nwant\n%s", rec.Schema(), EventSchema())
	}
	for i, c := range rec.Columns() {
		if err := validateArray(c); err != nil {
			t.Fatalf("column %d: %v", i, err)
		}
	}
	types := rec.Column(0).(*array.Int32)
	structs := []*array.Struct{rec.Column(1).(*array.Struct), rec.Column(2).(*array.Struct), rec.Column(3).(*array.Struct)}
	dt := rec.Column(4).(*array.Timestamp)
	if types.NullN() != 0 || dt.NullN() != 0 {
		t.Fatal("event_type or dateTime has nulls")
	}
	out := make([]oEvent, rec.NumRows())
	for i := range out {
		typ := EventType(types.Value(i))
		for k, st := range structs {
			if valid := st.IsValid(i); valid != (EventType(k) == typ) {
				t.Fatalf("row %d of type %v: struct %v valid %v", i, typ, EventType(k), valid)
			}
			if EventType(k) != typ {
				for j := range st.NumField() {
					if st.Field(j).IsValid(i) {
						t.Fatalf("row %d: field %s.%d of a null struct is not null", i, EventType(k), j)
					}
				}
			}
		}
		e := oEvent{Type: typ, DateTime: int64(dt.Value(i))}
		st := structs[typ]
		i64 := func(j int) int64 {
			f := st.Field(j)
			switch a := f.(type) {
			case *array.Int64:
				return a.Value(i)
			case *array.Timestamp:
				return int64(a.Value(i))
			}
			t.Fatalf("field %d: %T", j, f)
			return 0
		}
		str := func(j int) string { return st.Field(j).(*array.String).Value(i) }
		var own int64
		switch typ {
		case PersonEvent:
			e.Person = &oPerson{ID: i64(0), Name: str(1), Email: str(2), CreditCard: str(3), City: str(4), State: str(5), DateTime: i64(6), Extra: str(7)}
			own = e.Person.DateTime
		case AuctionEvent:
			e.Auction = &oAuction{ID: i64(0), ItemName: str(1), Description: str(2), InitialBid: i64(3), Reserve: i64(4),
				DateTime: i64(5), Expires: i64(6), Seller: i64(7), Category: i64(8), Extra: str(9)}
			own = e.Auction.DateTime
		case BidEvent:
			e.Bid = &oBid{Auction: i64(0), Bidder: i64(1), Price: i64(2), Channel: str(3), URL: str(4), DateTime: i64(5), Extra: str(6)}
			own = e.Bid.DateTime
		default:
			t.Fatalf("row %d: event_type %d", i, typ)
		}
		if own != e.DateTime {
			t.Fatalf("row %d: dateTime %d, struct's %d", i, e.DateTime, own)
		}
		out[i] = e
	}
	return out
}

// checkEvents checks that got are the oracle's events at positions
// first, first+step, ...
func checkEvents(t testing.TB, cfg Config, got []oEvent, first, step int64) {
	t.Helper()
	for k, e := range got {
		pos := first + int64(k)*step
		if want := oracleEvent(cfg, pos); e.String() != want.String() || e.Type != want.Type || e.DateTime != want.DateTime {
			t.Fatalf("position %d:\n got %v\nwant %v", pos, e, want)
		}
	}
}

// validateArray checks an array and its children fully (arrow-go offers
// ValidateFull on some array types only).
func validateArray(a arrow.Array) error {
	if v, ok := a.(interface{ ValidateFull() error }); ok {
		if err := v.ValidateFull(); err != nil {
			return err
		}
	}
	if st, ok := a.(*array.Struct); ok {
		for j := range st.NumField() {
			f := st.Field(j)
			if f.Len() != st.Len() {
				return fmt.Errorf("field %d: length %d, struct %d", j, f.Len(), st.Len())
			}
			if err := validateArray(f); err != nil {
				return fmt.Errorf("field %d: %w", j, err)
			}
		}
	}
	return nil
}
