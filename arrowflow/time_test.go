package arrowflow_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
)

func TestEventTimeRoundTrip(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	times := []time.Time{
		time.Unix(0, 0),
		time.Date(2026, 1, 1, 0, 0, 0, 123456789, time.UTC),
		time.Date(2026, 1, 1, 9, 0, 0, 1, tokyo), // an instant, whatever the zone
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Unix(0, math.MinInt64),
		time.Unix(0, math.MaxInt64),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100; i++ {
		times = append(times, time.Unix(0, int64(rng.Uint64())))
	}
	for _, tm := range times {
		et := arrowflow.EventTimeOf(tm)
		if int64(et) != tm.UnixNano() {
			t.Errorf("EventTimeOf(%s) = %d, want %d ns", tm, int64(et), tm.UnixNano())
		}
		back := et.Time()
		if !back.Equal(tm) || back.Location() != time.UTC {
			t.Errorf("EventTimeOf(%s).Time() = %s (%s)", tm, back, back.Location())
		}
		if arrowflow.EventTimeOf(back) != et {
			t.Errorf("%d does not survive Time and EventTimeOf", int64(et))
		}
	}
	// The JST time above is the same instant as one in UTC.
	if arrowflow.EventTimeOf(times[2]) != arrowflow.EventTimeOf(time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC)) {
		t.Error("event time depends on the time zone")
	}
}

func TestEventTimeString(t *testing.T) {
	for _, c := range []struct {
		t    arrowflow.EventTime
		want string
	}{
		{arrowflow.MinEventTime, "-inf"},
		{arrowflow.MaxEventTime, "+inf"},
		// The nearest finite instants: 1677-09-21T00:12:43.145224193Z and
		// 2262-04-11T23:47:16.854775806Z, cut to milliseconds.
		{arrowflow.MinEventTime + 1, "1677-09-21T00:12:43.145Z"},
		{arrowflow.MaxEventTime - 1, "2262-04-11T23:47:16.854Z"},
		{0, "1970-01-01T00:00:00.000Z"},
		{-1, "1969-12-31T23:59:59.999Z"},
		{arrowflow.EventTime(1767225600123456789), "2026-01-01T00:00:00.123Z"},
	} {
		if got := c.t.String(); got != c.want {
			t.Errorf("EventTime(%d).String() = %q, want %q", int64(c.t), got, c.want)
		}
	}
}

func TestTimestampToEventTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		unit arrow.TimeUnit
		// oracle: the instant of v in this unit, via the time package
		of    func(v int64) time.Time
		limit int64 // |v| below which the instant fits an EventTime
	}{
		{arrow.Second, func(v int64) time.Time { return time.Unix(v, 0) }, math.MaxInt64 / 1_000_000_000},
		{arrow.Millisecond, time.UnixMilli, math.MaxInt64 / 1_000_000},
		{arrow.Microsecond, time.UnixMicro, math.MaxInt64 / 1_000},
		{arrow.Nanosecond, func(v int64) time.Time { return time.Unix(0, v) }, math.MaxInt64},
	} {
		vals := []int64{0, 1, -1, c.limit, -c.limit, 1767225600}
		for i := 0; i < 50; i++ {
			vals = append(vals, rng.Int64N(c.limit)-rng.Int64N(c.limit))
		}
		for _, v := range vals {
			got := arrowflow.TimestampToEventTime(arrow.Timestamp(v), c.unit)
			if want := arrowflow.EventTimeOf(c.of(v)); got != want {
				t.Errorf("TimestampToEventTime(%d, %s) = %d, want %d", v, c.unit, int64(got), int64(want))
			}
		}
		if c.unit == arrow.Nanosecond {
			continue
		}
		// Beyond the nanosecond range, values saturate instead of wrapping.
		for _, v := range []int64{c.limit + 1, math.MaxInt64} {
			if got := arrowflow.TimestampToEventTime(arrow.Timestamp(v), c.unit); got != arrowflow.MaxEventTime {
				t.Errorf("TimestampToEventTime(%d, %s) = %d, want MaxEventTime", v, c.unit, int64(got))
			}
			if got := arrowflow.TimestampToEventTime(arrow.Timestamp(-v), c.unit); got != arrowflow.MinEventTime {
				t.Errorf("TimestampToEventTime(%d, %s) = %d, want MinEventTime", -v, c.unit, int64(got))
			}
		}
	}
}

func TestWithEventTimeColumn(t *testing.T) {
	tsMS := &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}
	fields := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: tsMS},
		{Name: "other_ts", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32},
	}

	t.Run("no metadata", func(t *testing.T) {
		schema := arrow.NewSchema(fields, nil)
		if _, ok := arrowflow.EventTimeColumn(schema); ok {
			t.Fatal("a schema without metadata has an event-time column")
		}
		got, err := arrowflow.WithEventTimeColumn(schema, "ts")
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(schema) {
			t.Fatalf("fields changed: %s", got)
		}
		if v, ok := got.Metadata().GetValue(arrowflow.EventTimeMetadataKey); !ok || v != "ts" || got.Metadata().Len() != 1 {
			t.Fatalf("metadata %v", got.Metadata())
		}
		if i, ok := arrowflow.EventTimeColumn(got); !ok || i != 1 {
			t.Fatalf("EventTimeColumn = %d, %v; want 1, true", i, ok)
		}
		if schema.HasMetadata() {
			t.Fatal("the input schema was changed")
		}
	})

	t.Run("replaces the key and keeps other metadata", func(t *testing.T) {
		md := arrow.NewMetadata([]string{"a", arrowflow.EventTimeMetadataKey, "b"}, []string{"1", "ts", "2"})
		schema := arrow.NewSchema(fields, &md)
		if i, ok := arrowflow.EventTimeColumn(schema); !ok || i != 1 {
			t.Fatalf("EventTimeColumn = %d, %v; want 1, true", i, ok)
		}
		got, err := arrowflow.WithEventTimeColumn(schema, "other_ts")
		if err != nil {
			t.Fatal(err)
		}
		gm := got.Metadata()
		if gm.Len() != 3 {
			t.Fatalf("metadata %v: want a, b and the event-time key once", gm)
		}
		for k, want := range map[string]string{"a": "1", "b": "2", arrowflow.EventTimeMetadataKey: "other_ts"} {
			if v, ok := gm.GetValue(k); !ok || v != want {
				t.Errorf("metadata %q = %q (%v), want %q", k, v, ok, want)
			}
		}
		if i, ok := arrowflow.EventTimeColumn(got); !ok || i != 2 {
			t.Fatalf("EventTimeColumn = %d, %v; want 2, true", i, ok)
		}
		if v, _ := schema.Metadata().GetValue(arrowflow.EventTimeMetadataKey); v != "ts" {
			t.Fatalf("the input schema's metadata changed to %q", v)
		}
		for i, f := range got.Fields() {
			if !f.Equal(fields[i]) {
				t.Fatalf("field %d changed: %s", i, f)
			}
		}
	})

	for _, c := range []struct {
		name, column string
		fields       []arrow.Field
		want         string
	}{
		{"missing column", "nope", fields, `event-time column "nope": not found`},
		{"ambiguous column", "ts", append(slices.Clone(fields), arrow.Field{Name: "ts", Type: tsMS}), `event-time column "ts": not found (or ambiguous)`},
		{"int64 column", "id", fields, `event-time column "id" has type int64; it must be a timestamp`},
		{"date column", "day", fields, `event-time column "day" has type date32; it must be a timestamp`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := arrowflow.WithEventTimeColumn(arrow.NewSchema(c.fields, nil), c.column)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
			if got != nil {
				t.Fatalf("schema %s returned with an error", got)
			}
		})
	}

	t.Run("metadata naming no single column", func(t *testing.T) {
		for _, c := range []struct {
			fields []arrow.Field
			name   string
		}{
			{fields, "gone"},
			{append(slices.Clone(fields), arrow.Field{Name: "ts", Type: tsMS}), "ts"},
		} {
			md := arrow.NewMetadata([]string{arrowflow.EventTimeMetadataKey}, []string{c.name})
			if i, ok := arrowflow.EventTimeColumn(arrow.NewSchema(c.fields, &md)); ok {
				t.Errorf("metadata names %q: EventTimeColumn = %d, true; want false", c.name, i)
			}
		}
	})
}
