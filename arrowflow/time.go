package arrowflow

import (
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// EventTime is an instant in event time: nanoseconds since the Unix epoch,
// UTC. Watermarks are EventTimes.
type EventTime int64

const (
	// MinEventTime is the watermark before any progress: nothing is known.
	MinEventTime EventTime = math.MinInt64
	// MaxEventTime is the watermark at the end of a stream: every event-time
	// window can fire.
	MaxEventTime EventTime = math.MaxInt64
)

// EventTimeOf converts a wall-clock time to an EventTime.
func EventTimeOf(t time.Time) EventTime { return EventTime(t.UnixNano()) }

// Time converts t to a time.Time in UTC.
func (t EventTime) Time() time.Time { return time.Unix(0, int64(t)).UTC() }

// String formats t as RFC 3339 with milliseconds, or "-inf"/"+inf" for the
// extremes.
func (t EventTime) String() string {
	switch t {
	case MinEventTime:
		return "-inf"
	case MaxEventTime:
		return "+inf"
	}
	return t.Time().Format("2006-01-02T15:04:05.000Z07:00")
}

// EventTimeMetadataKey is the schema metadata key whose value names a
// stream's event-time column.
const EventTimeMetadataKey = "weir.event_time"

// WithEventTimeColumn returns a copy of schema whose metadata names column
// as the event-time column. The column must exist and be a timestamp.
func WithEventTimeColumn(schema *arrow.Schema, column string) (*arrow.Schema, error) {
	idx := schema.FieldIndices(column)
	if len(idx) != 1 {
		return nil, fmt.Errorf("event-time column %q: not found (or ambiguous) in schema %s", column, schema)
	}
	if _, ok := schema.Field(idx[0]).Type.(*arrow.TimestampType); !ok {
		return nil, fmt.Errorf("event-time column %q has type %s; it must be a timestamp", column, schema.Field(idx[0]).Type)
	}
	keys, vals := []string{}, []string{}
	md := schema.Metadata()
	for i, k := range md.Keys() {
		if k != EventTimeMetadataKey {
			keys, vals = append(keys, k), append(vals, md.Values()[i])
		}
	}
	keys, vals = append(keys, EventTimeMetadataKey), append(vals, column)
	meta := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(schema.Fields(), &meta), nil
}

// EventTimeColumn returns the index of schema's event-time column, or
// false when the schema names none.
func EventTimeColumn(schema *arrow.Schema) (int, bool) {
	name, ok := schema.Metadata().GetValue(EventTimeMetadataKey)
	if !ok {
		return 0, false
	}
	idx := schema.FieldIndices(name)
	if len(idx) != 1 {
		return 0, false
	}
	return idx[0], true
}

// TimestampToEventTime converts a value of an Arrow timestamp column of the
// given unit to an EventTime. Values beyond the range of EventTime (years
// before 1678 or after 2262) saturate to MinEventTime or MaxEventTime.
func TimestampToEventTime(v arrow.Timestamp, unit arrow.TimeUnit) EventTime {
	mult := int64(unit.Multiplier())
	switch {
	case int64(v) > math.MaxInt64/mult:
		return MaxEventTime
	case int64(v) < math.MinInt64/mult:
		return MinEventTime
	}
	return EventTime(int64(v) * mult)
}
