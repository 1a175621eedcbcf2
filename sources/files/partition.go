package files

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// partitionParser reads a partition column's values from folder names.
type partitionParser struct {
	field arrow.Field
}

// newPartitionParser checks that a declared column's type can be read
// from folder names.
func newPartitionParser(f arrow.Field) (*partitionParser, error) {
	switch f.Type.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT32, arrow.FLOAT64, arrow.BOOL, arrow.STRING, arrow.LARGE_STRING,
		arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP:
		return &partitionParser{field: f}, nil
	}
	return nil, fmt.Errorf("partition column %s has type %s, which folder names cannot hold "+
		"(integers, floats, bool, strings, dates and timestamps can)", f.Name, f.Type)
}

// check fails unless v can be read as the column's type (and null only
// into a nullable column).
func (p *partitionParser) check(v partValue) error {
	b := array.NewBuilder(memory.DefaultAllocator, p.field.Type)
	defer b.Release()
	return p.append(b, v)
}

// constant returns an array of n copies of v.
func (p *partitionParser) constant(v partValue, n int, mem memory.Allocator) (arrow.Array, error) {
	if v.null {
		return array.MakeArrayOfNull(mem, p.field.Type, n), nil
	}
	b := array.NewBuilder(mem, p.field.Type)
	defer b.Release()
	if err := p.append(b, v); err != nil {
		return nil, err
	}
	one := b.NewArray()
	defer one.Release()
	sc, err := scalar.GetScalar(one, 0)
	if err != nil {
		return nil, err
	}
	if r, ok := sc.(scalar.Releasable); ok {
		defer r.Release()
	}
	return scalar.MakeArrayFromScalar(sc, n, mem)
}

// Layouts of dates and timestamps in folder names: Hive writes
// "2026-01-02" and "2026-01-02 10:00:00"; RFC 3339 is accepted too.
// Values without a zone are UTC.
var timestampLayouts = []string{
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02",
}

// append appends v, parsed as the column's type, to b.
func (p *partitionParser) append(b array.Builder, v partValue) error {
	if v.null {
		if !p.field.Nullable {
			return fmt.Errorf("partition column %s is NOT NULL, but the folder is %s=%s", p.field.Name, p.field.Name, hiveNull)
		}
		b.AppendNull()
		return nil
	}
	s := v.value
	var err error
	switch b := b.(type) {
	case *array.Int8Builder:
		var x int64
		if x, err = strconv.ParseInt(s, 10, 8); err == nil {
			b.Append(int8(x))
		}
	case *array.Int16Builder:
		var x int64
		if x, err = strconv.ParseInt(s, 10, 16); err == nil {
			b.Append(int16(x))
		}
	case *array.Int32Builder:
		var x int64
		if x, err = strconv.ParseInt(s, 10, 32); err == nil {
			b.Append(int32(x))
		}
	case *array.Int64Builder:
		var x int64
		if x, err = strconv.ParseInt(s, 10, 64); err == nil {
			b.Append(x)
		}
	case *array.Uint8Builder:
		var x uint64
		if x, err = strconv.ParseUint(s, 10, 8); err == nil {
			b.Append(uint8(x))
		}
	case *array.Uint16Builder:
		var x uint64
		if x, err = strconv.ParseUint(s, 10, 16); err == nil {
			b.Append(uint16(x))
		}
	case *array.Uint32Builder:
		var x uint64
		if x, err = strconv.ParseUint(s, 10, 32); err == nil {
			b.Append(uint32(x))
		}
	case *array.Uint64Builder:
		var x uint64
		if x, err = strconv.ParseUint(s, 10, 64); err == nil {
			b.Append(x)
		}
	case *array.Float32Builder:
		var x float64
		if x, err = strconv.ParseFloat(s, 32); err == nil {
			b.Append(float32(x))
		}
	case *array.Float64Builder:
		var x float64
		if x, err = strconv.ParseFloat(s, 64); err == nil {
			b.Append(x)
		}
	case *array.BooleanBuilder:
		var x bool
		if x, err = strconv.ParseBool(s); err == nil {
			b.Append(x)
		}
	case *array.StringBuilder:
		b.Append(s)
	case *array.LargeStringBuilder:
		b.Append(s)
	case *array.Date32Builder:
		var t time.Time
		if t, err = time.Parse(time.DateOnly, s); err == nil {
			b.Append(arrow.Date32FromTime(t))
		}
	case *array.Date64Builder:
		var t time.Time
		if t, err = time.Parse(time.DateOnly, s); err == nil {
			b.Append(arrow.Date64FromTime(t))
		}
	case *array.TimestampBuilder:
		var ts arrow.Timestamp
		if ts, err = parseTimestamp(s, b.Type().(*arrow.TimestampType).Unit); err == nil {
			b.Append(ts)
		}
	default:
		return fmt.Errorf("BUG: files source: no partition parser for %s", b.Type())
	}
	if err != nil {
		return fmt.Errorf("partition column %s: folder value %q is not a %s: %w", p.field.Name, s, p.field.Type, unwrapNum(err))
	}
	return nil
}

// parseTimestamp reads a timestamp folder value in one of
// timestampLayouts.
func parseTimestamp(s string, unit arrow.TimeUnit) (arrow.Timestamp, error) {
	for _, layout := range timestampLayouts {
		t, err := time.Parse(layout, s)
		if err != nil {
			continue
		}
		ts, err := arrow.TimestampFromTime(t, unit)
		if err != nil {
			return 0, fmt.Errorf("out of range for unit %s", unit)
		}
		return ts, nil
	}
	return 0, fmt.Errorf("want yyyy-MM-dd[ HH:mm:ss[.fff]] or RFC 3339")
}

// unwrapNum drops strconv's "strconv.ParseInt: parsing "x": " prefix.
func unwrapNum(err error) error {
	if ne, ok := err.(*strconv.NumError); ok {
		return ne.Err
	}
	if strings.HasPrefix(err.Error(), "parsing time") {
		return fmt.Errorf("want yyyy-MM-dd")
	}
	return err
}
