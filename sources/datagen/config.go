package datagen

import (
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Defaults applied by New to zero Config fields.
const (
	defaultBatchSize    = 1024
	defaultSplits       = 8
	defaultStringLength = 10
	defaultColumn       = "ts"
	defaultInterval     = time.Millisecond
)

// defaultStart is the default EventTimeConfig.Start: 2026-01-01T00:00:00Z.
var defaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Kind says how a field's values follow the row number.
type Kind int

const (
	// Random values are drawn uniformly from the field's range (or from
	// Values) by hashing the seed, the field and the row number.
	Random Kind = iota
	// Sequence values are Min + r for row r, converted to the field's type
	// (integers wrap around as Go conversions do). A string sequence is the
	// decimal form of Min + r, or Values[(Min + r) mod len(Values)].
	Sequence
)

// String returns "random" or "sequence".
func (k Kind) String() string {
	switch k {
	case Random:
		return "random"
	case Sequence:
		return "sequence"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Field describes one generated column.
//
// Supported types: int8, int16, int32, int64, uint8, uint16, uint32,
// uint64, float32, float64, bool, string, timestamp (any unit and time
// zone) and date32.
type Field struct {
	// Name is the column name, unique within the Config.
	Name string
	// Type is the column's Arrow type.
	Type arrow.DataType
	// Kind is Random (the default) or Sequence.
	Kind Kind
	// Min and Max bound Random numeric values: integers (and timestamps
	// and date32, in the type's own unit since the Unix epoch) take values
	// in [Min, Max]; floats take values in [Min, Max), or exactly Min when
	// Min == Max. Integer bounds must be whole numbers within the type's
	// range (beyond ±2^53 a float64 cannot hold every integer).
	//
	// When both are zero a default range applies: the whole range of an
	// integer type, [0, 1) for floats, and one year from EventTime.Start
	// for timestamps and date32. Min is also the first value of a Sequence.
	// Min and Max do not apply to bool and random strings.
	Min, Max float64
	// Decimals, when positive, makes a Random float a multiple of
	// 10^-Decimals (at most 15): a price rounded to cents has Decimals 2.
	Decimals int
	// Length is the length of random strings (10 when zero). Random
	// strings are made of lower-case letters and the digits 0-5.
	Length int
	// Values, if not empty, lists the strings a string field takes,
	// chosen uniformly (or in turn, for a Sequence).
	Values []string
	// NullRate is the probability in [0, 1] that a value is null; the
	// column is nullable in the schema when it is positive.
	NullRate float64
}

// EventTimeConfig configures the event-time column, whose values do not
// come from its Field but from the row number:
// row r's event time is Start + r*Interval - jitter(r), with jitter(r)
// uniform in [0, MaxOutOfOrderness].
type EventTimeConfig struct {
	// Column names the event-time column, a timestamp field. Empty means
	// no event time, except with the default fields, where it means "ts".
	Column string
	// Start is row 0's event time (2026-01-01T00:00:00Z when zero).
	Start time.Time
	// Interval is the event time between consecutive rows (1ms when
	// zero).
	Interval time.Duration
	// MaxOutOfOrderness bounds how far behind its nominal time a row's
	// event time may be (0: rows of a split are in event-time order).
	// Watermarks hold back by MaxOutOfOrderness rounded up to the
	// column's unit, so that no row is ever late.
	MaxOutOfOrderness time.Duration
}

// Config configures a generator Source. The zero Config is valid: an
// unbounded stream of DefaultFields rows, as fast as possible.
type Config struct {
	// Fields are the columns to generate, DefaultFields when empty.
	Fields []Field
	// Seed selects the generated values; equal seeds give equal rows.
	Seed uint64
	// Rows is the total number of rows over all splits; 0 means unbounded.
	Rows int64
	// RowsPerSecond limits the rate of the whole source; each reader gets
	// a share proportional to its number of splits. 0 means as fast as
	// possible.
	RowsPerSecond float64
	// BatchSize is the largest number of rows in a batch (1024 when zero).
	// Rate-limited readers make smaller batches, about 100ms worth of rows.
	BatchSize int
	// Splits is the number of splits (8 when zero). Positions are kept per
	// split, so keep Splits unchanged across restores; the parallelism may
	// change.
	Splits int
	// EventTime configures the event-time column.
	EventTime EventTimeConfig
}

// DefaultFields returns the default columns:
//
//	id        int64               Sequence from 0: the global row number
//	key       int64               Random in [0, 999]
//	category  string              one of eight words
//	price     float64             Random in [1, 1000), in cents, 1% nulls
//	ts        timestamp[ms, UTC]  the event-time column
func DefaultFields() []Field {
	return []Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Kind: Sequence},
		{Name: "key", Type: arrow.PrimitiveTypes.Int64, Min: 0, Max: 999},
		{Name: "category", Type: arrow.BinaryTypes.String, Values: []string{
			"books", "electronics", "garden", "grocery", "health", "music", "sports", "toys",
		}},
		{Name: "price", Type: arrow.PrimitiveTypes.Float64, Min: 1, Max: 1000, Decimals: 2, NullRate: 0.01},
		{Name: defaultColumn, Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	}
}

// withDefaults returns a copy of c (not sharing its slices) with the zero
// fields set to their defaults.
func (c Config) withDefaults() Config {
	if len(c.Fields) == 0 {
		c.Fields = DefaultFields()
		if c.EventTime.Column == "" {
			c.EventTime.Column = defaultColumn
		}
	} else {
		fields := make([]Field, len(c.Fields))
		for i, f := range c.Fields {
			f.Values = append([]string(nil), f.Values...)
			fields[i] = f
		}
		c.Fields = fields
	}
	for i, f := range c.Fields {
		if f.Length == 0 && f.Kind == Random && len(f.Values) == 0 && f.Type != nil && f.Type.ID() == arrow.STRING {
			c.Fields[i].Length = defaultStringLength
		}
	}
	if c.BatchSize == 0 {
		c.BatchSize = defaultBatchSize
	}
	if c.Splits == 0 {
		c.Splits = defaultSplits
	}
	if c.EventTime.Start.IsZero() {
		c.EventTime.Start = defaultStart
	}
	if c.EventTime.Interval == 0 {
		c.EventTime.Interval = defaultInterval
	}
	return c
}

// Bounds of time.Time.UnixNano.
var (
	minStart = time.Unix(0, math.MinInt64)
	maxStart = time.Unix(0, math.MaxInt64)
)

// validate checks the source-wide settings of a Config with defaults
// applied; field checks are in compileField.
func (c *Config) validate() error {
	switch {
	case c.Rows < 0:
		return fmt.Errorf("datagen: Rows is %d; it must be >= 0 (0 = unbounded)", c.Rows)
	case c.RowsPerSecond < 0 || math.IsNaN(c.RowsPerSecond) || math.IsInf(c.RowsPerSecond, 0):
		return fmt.Errorf("datagen: RowsPerSecond is %v; it must be finite and >= 0 (0 = unlimited)", c.RowsPerSecond)
	case c.BatchSize < 0:
		return fmt.Errorf("datagen: BatchSize is %d; it must be > 0 (0 = %d)", c.BatchSize, defaultBatchSize)
	case c.BatchSize > math.MaxInt32:
		return fmt.Errorf("datagen: BatchSize %d is too large; at most %d", c.BatchSize, math.MaxInt32)
	case c.Splits < 0:
		return fmt.Errorf("datagen: Splits is %d; it must be > 0 (0 = %d)", c.Splits, defaultSplits)
	}
	et := c.EventTime
	switch {
	case et.Interval < 0:
		return fmt.Errorf("datagen: EventTime.Interval is %v; it must be >= 0", et.Interval)
	case et.MaxOutOfOrderness < 0:
		return fmt.Errorf("datagen: EventTime.MaxOutOfOrderness is %v; it must be >= 0", et.MaxOutOfOrderness)
	case et.Start.Before(minStart) || et.Start.After(maxStart):
		return fmt.Errorf("datagen: EventTime.Start %v is out of range [%v, %v]", et.Start, minStart.UTC(), maxStart.UTC())
	case et.Start.UnixNano() < math.MinInt64+int64(et.MaxOutOfOrderness):
		return fmt.Errorf("datagen: EventTime.Start %v minus MaxOutOfOrderness %v is before %v", et.Start, et.MaxOutOfOrderness, minStart.UTC())
	}
	if et.Column != "" && c.Rows > 0 {
		// The last row's nominal time must fit in int64 nanoseconds.
		last := c.Rows - 1
		room := math.MaxInt64 - et.Start.UnixNano()
		if et.Interval > 0 && last > room/int64(et.Interval) {
			return fmt.Errorf("datagen: EventTime: row %d's time Start + %d*%v overflows (later than %v)",
				last, last, et.Interval, maxStart.UTC())
		}
	}
	seen := make(map[string]int, len(c.Fields))
	for i, f := range c.Fields {
		if f.Name == "" {
			return fmt.Errorf("datagen: field #%d has no name", i)
		}
		if j, dup := seen[f.Name]; dup {
			return fmt.Errorf("datagen: fields #%d and #%d are both named %q", j, i, f.Name)
		}
		seen[f.Name] = i
	}
	if et.Column != "" {
		i, ok := seen[et.Column]
		if !ok {
			return fmt.Errorf("datagen: EventTime.Column %q is not one of the fields", et.Column)
		}
		f := c.Fields[i]
		if _, ok := f.Type.(*arrow.TimestampType); !ok {
			return fmt.Errorf("datagen: EventTime.Column %q has type %v; it must be a timestamp", et.Column, f.Type)
		}
		if f.Kind != Random || f.Min != 0 || f.Max != 0 || f.Decimals != 0 || len(f.Values) != 0 || f.NullRate != 0 {
			return fmt.Errorf("datagen: field %q is the event-time column: its values come from EventTime, "+
				"so leave its Kind, Min, Max, Decimals, Values and NullRate unset", f.Name)
		}
	}
	return nil
}
