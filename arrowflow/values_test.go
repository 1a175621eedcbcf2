package arrowflow_test

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
)

// valueColumn is a column of one of the types ValueAt handles: the values
// to build it from (nil for null) and the values ValueAt must return,
// written down independently of ValueAt.
type valueColumn struct {
	field arrow.Field
	in    []any
	want  []any
}

// appender is what every typed builder offers for its value type.
type appender[T any] interface{ Append(T) }

func appendAll[T any](b array.Builder, in []any) {
	for _, v := range in {
		if v == nil {
			b.AppendNull()
		} else {
			b.(appender[T]).Append(v.(T))
		}
	}
}

func (c valueColumn) fill(b array.Builder) {
	switch c.field.Type.ID() {
	case arrow.INT8:
		appendAll[int8](b, c.in)
	case arrow.INT16:
		appendAll[int16](b, c.in)
	case arrow.INT32:
		appendAll[int32](b, c.in)
	case arrow.INT64:
		appendAll[int64](b, c.in)
	case arrow.UINT8:
		appendAll[uint8](b, c.in)
	case arrow.UINT16:
		appendAll[uint16](b, c.in)
	case arrow.UINT32:
		appendAll[uint32](b, c.in)
	case arrow.UINT64:
		appendAll[uint64](b, c.in)
	case arrow.FLOAT32:
		appendAll[float32](b, c.in)
	case arrow.FLOAT64:
		appendAll[float64](b, c.in)
	case arrow.BOOL:
		appendAll[bool](b, c.in)
	case arrow.STRING, arrow.LARGE_STRING:
		appendAll[string](b, c.in)
	case arrow.BINARY, arrow.LARGE_BINARY:
		appendAll[[]byte](b, c.in)
	case arrow.DATE32:
		appendAll[arrow.Date32](b, c.in)
	case arrow.DATE64:
		appendAll[arrow.Date64](b, c.in)
	case arrow.TIMESTAMP:
		appendAll[arrow.Timestamp](b, c.in)
	case arrow.DECIMAL128:
		appendAll[decimal128.Num](b, c.in)
	default:
		panic("valueColumn: no builder for " + c.field.Type.String())
	}
}

// valueColumns has four rows per column, one of them null, with the
// extremes of each type.
func valueColumns() []valueColumn {
	f32 := func(f float32) any { return float64(f) }
	day := func(d int64) time.Time { return time.Unix(d*86400, 0).UTC() }
	ts := func(name string, unit arrow.TimeUnit, tz string, in []any, toTime func(int64) time.Time) valueColumn {
		want := make([]any, len(in))
		for i, v := range in {
			if v != nil {
				want[i] = toTime(int64(v.(arrow.Timestamp)))
			}
		}
		return valueColumn{arrow.Field{Name: name, Type: &arrow.TimestampType{Unit: unit, TimeZone: tz}, Nullable: true}, in, want}
	}
	field := func(name string, dt arrow.DataType) arrow.Field {
		return arrow.Field{Name: name, Type: dt, Nullable: true}
	}
	return []valueColumn{
		{field("i8", arrow.PrimitiveTypes.Int8), []any{int8(math.MinInt8), int8(-1), nil, int8(math.MaxInt8)},
			[]any{int64(math.MinInt8), int64(-1), nil, int64(math.MaxInt8)}},
		{field("i16", arrow.PrimitiveTypes.Int16), []any{int16(math.MinInt16), int16(2), nil, int16(math.MaxInt16)},
			[]any{int64(math.MinInt16), int64(2), nil, int64(math.MaxInt16)}},
		{field("i32", arrow.PrimitiveTypes.Int32), []any{nil, int32(math.MinInt32), int32(0), int32(math.MaxInt32)},
			[]any{nil, int64(math.MinInt32), int64(0), int64(math.MaxInt32)}},
		{field("i64", arrow.PrimitiveTypes.Int64), []any{int64(math.MinInt64), nil, int64(-7), int64(math.MaxInt64)},
			[]any{int64(math.MinInt64), nil, int64(-7), int64(math.MaxInt64)}},
		{field("u8", arrow.PrimitiveTypes.Uint8), []any{uint8(0), uint8(1), nil, uint8(math.MaxUint8)},
			[]any{uint64(0), uint64(1), nil, uint64(math.MaxUint8)}},
		{field("u16", arrow.PrimitiveTypes.Uint16), []any{uint16(0), nil, uint16(300), uint16(math.MaxUint16)},
			[]any{uint64(0), nil, uint64(300), uint64(math.MaxUint16)}},
		{field("u32", arrow.PrimitiveTypes.Uint32), []any{nil, uint32(0), uint32(70000), uint32(math.MaxUint32)},
			[]any{nil, uint64(0), uint64(70000), uint64(math.MaxUint32)}},
		{field("u64", arrow.PrimitiveTypes.Uint64), []any{uint64(0), uint64(1 << 63), nil, uint64(math.MaxUint64)},
			[]any{uint64(0), uint64(1 << 63), nil, uint64(math.MaxUint64)}},
		{field("f32", arrow.PrimitiveTypes.Float32), []any{float32(1.5), float32(-0.1), nil, float32(math.MaxFloat32)},
			[]any{1.5, f32(-0.1), nil, f32(math.MaxFloat32)}},
		{field("f64", arrow.PrimitiveTypes.Float64), []any{math.Pi, math.Copysign(0, -1), nil, math.Inf(1)},
			[]any{math.Pi, math.Copysign(0, -1), nil, math.Inf(1)}},
		{field("bool", arrow.FixedWidthTypes.Boolean), []any{true, false, nil, true},
			[]any{true, false, nil, true}},
		{field("utf8", arrow.BinaryTypes.String), []any{"", "héllo", nil, "a, b"},
			[]any{"", "héllo", nil, "a, b"}},
		{field("large_utf8", arrow.BinaryTypes.LargeString), []any{"x", nil, "", "ünï"},
			[]any{"x", nil, "", "ünï"}},
		{field("binary", arrow.BinaryTypes.Binary), []any{[]byte{}, []byte{0, 255}, nil, []byte("xyz")},
			[]any{[]byte{}, []byte{0, 255}, nil, []byte("xyz")}},
		{field("large_binary", arrow.BinaryTypes.LargeBinary), []any{nil, []byte{1}, []byte{}, []byte{2, 3}},
			[]any{nil, []byte{1}, []byte{}, []byte{2, 3}}},
		{field("date32", arrow.FixedWidthTypes.Date32), []any{arrow.Date32(0), arrow.Date32(-1), nil, arrow.Date32(20454)},
			[]any{day(0), day(-1), nil, day(20454)}},
		{field("date64", arrow.FixedWidthTypes.Date64), []any{arrow.Date64(0), nil, arrow.Date64(-86400000), arrow.Date64(20454 * 86400000)},
			[]any{day(0), nil, day(-1), day(20454)}},
		ts("ts_s", arrow.Second, "", []any{arrow.Timestamp(0), arrow.Timestamp(-1), nil, arrow.Timestamp(1767225600)},
			func(v int64) time.Time { return time.Unix(v, 0).UTC() }),
		ts("ts_ms", arrow.Millisecond, "UTC", []any{arrow.Timestamp(-1500), nil, arrow.Timestamp(0), arrow.Timestamp(1767225600123)},
			func(v int64) time.Time { return time.UnixMilli(v).UTC() }),
		ts("ts_us", arrow.Microsecond, "Asia/Tokyo", []any{nil, arrow.Timestamp(-1), arrow.Timestamp(1767225600123456), arrow.Timestamp(1)},
			func(v int64) time.Time { return time.UnixMicro(v).UTC() }),
		ts("ts_ns", arrow.Nanosecond, "America/New_York", []any{arrow.Timestamp(math.MinInt64), arrow.Timestamp(-1), nil, arrow.Timestamp(math.MaxInt64)},
			func(v int64) time.Time { return time.Unix(0, v).UTC() }),
		// Decimals: exact, every digit of the scale.
		{field("decimal", &arrow.Decimal128Type{Precision: 10, Scale: 2}),
			[]any{decimal128.FromI64(12345), decimal128.FromI64(-5), nil, decimal128.FromI64(0)},
			[]any{"123.45", "-0.05", nil, "0.00"}},
	}
}

const valueRows = 4

func buildValueRecord(t testing.TB, mem memory.Allocator, cols []valueColumn) arrow.RecordBatch {
	t.Helper()
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = c.field
		if len(c.in) != valueRows || len(c.want) != valueRows {
			t.Fatalf("column %s: %d inputs, %d wanted values", c.field.Name, len(c.in), len(c.want))
		}
	}
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	for i, c := range cols {
		c.fill(b.Field(i))
	}
	return b.NewRecordBatch()
}

// sameGoValue compares a value ValueAt returned with the one wanted:
// same dynamic type, times equal instants in UTC, floats equal bit for bit.
func sameGoValue(got, want any) bool {
	if reflect.TypeOf(got) != reflect.TypeOf(want) {
		return false
	}
	switch w := want.(type) {
	case time.Time:
		g := got.(time.Time)
		return g.Equal(w) && g.Location() == time.UTC
	case []byte:
		return bytes.Equal(got.([]byte), w)
	case float64:
		return math.Float64bits(got.(float64)) == math.Float64bits(w)
	}
	return got == want
}

func TestValueAtEveryType(t *testing.T) {
	mem := checkedAlloc(t)
	cols := valueColumns()
	rec := buildValueRecord(t, mem, cols)
	defer rec.Release()
	for c, col := range cols {
		arr := rec.Column(c)
		for i := 0; i < valueRows; i++ {
			if got := arrowflow.ValueAt(arr, i); !sameGoValue(got, col.want[i]) {
				t.Errorf("%s row %d: ValueAt = %#v (%T), want %#v (%T)", col.field.Name, i, got, got, col.want[i], col.want[i])
			}
		}
		// An array slice reads through its offset.
		sl := array.NewSlice(arr, 1, valueRows)
		for i := 0; i < sl.Len(); i++ {
			if got := arrowflow.ValueAt(sl, i); !sameGoValue(got, col.want[i+1]) {
				t.Errorf("%s slice row %d: ValueAt = %#v, want %#v", col.field.Name, i, got, col.want[i+1])
			}
		}
		sl.Release()
	}
}

// Binary values are copies: changing one changes neither the array nor a
// later read.
func TestValueAtBinaryIsACopy(t *testing.T) {
	mem := checkedAlloc(t)
	for _, dt := range []arrow.DataType{arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeBinary} {
		b := array.NewBuilder(mem, dt).(*array.BinaryBuilder)
		b.Append([]byte("abc"))
		arr := b.NewArray()
		b.Release()
		v := arrowflow.ValueAt(arr, 0).([]byte)
		v[0] = 'X'
		if again := arrowflow.ValueAt(arr, 0).([]byte); string(again) != "abc" {
			t.Errorf("%s: after changing a returned value, the array reads %q", dt, again)
		}
		arr.Release()
	}
}

// Arrow timestamps in seconds, milliseconds and microseconds reach far
// beyond the ±292 years around 1970 that int64 nanoseconds cover; the
// "end of time" sentinel 9999-12-31 is common in real tables.
func TestValueAtTimestampsBeyondNanosecondRange(t *testing.T) {
	mem := checkedAlloc(t)
	endOfTime := time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	firstDay := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		unit arrow.TimeUnit
		of   func(time.Time) int64
	}{
		{arrow.Second, func(t time.Time) int64 { return t.Unix() }},
		{arrow.Millisecond, func(t time.Time) int64 { return t.UnixMilli() }},
		{arrow.Microsecond, func(t time.Time) int64 { return t.UnixMicro() }},
	} {
		b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: c.unit})
		for _, tm := range []time.Time{endOfTime, firstDay} {
			b.Append(arrow.Timestamp(c.of(tm)))
		}
		arr := b.NewArray()
		b.Release()
		for i, tm := range []time.Time{endOfTime, firstDay} {
			want := tm.Truncate(c.unit.Multiplier())
			if got := arrowflow.ValueAt(arr, i).(time.Time); !got.Equal(want) {
				t.Errorf("timestamp[%s] of %s: ValueAt = %s", c.unit, want, got)
			}
		}
		arr.Release()
	}
}

func TestRowValues(t *testing.T) {
	mem := checkedAlloc(t)
	cols := valueColumns()
	rec := buildValueRecord(t, mem, cols)
	for _, sel := range [][]int32{nil, {0, 2, 3}, {1}, {}} {
		b := arrowflow.Batch{Record: rec, Sel: sel}
		rows := []int{0, 1, 2, 3}
		if sel != nil {
			rows = rows[:0]
			for _, i := range sel {
				rows = append(rows, int(i))
			}
		}
		if b.NumRows() != len(rows) {
			t.Fatalf("selection %v: NumRows %d, want %d", sel, b.NumRows(), len(rows))
		}
		for k, i := range rows {
			vals := b.RowValues(k)
			if len(vals) != len(cols) {
				t.Fatalf("selection %v row %d: %d values, want %d", sel, k, len(vals), len(cols))
			}
			for c, col := range cols {
				if !sameGoValue(vals[c], col.want[i]) {
					t.Errorf("selection %v row %d column %s: %#v, want %#v", sel, k, col.field.Name, vals[c], col.want[i])
				}
			}
		}
	}
	rec.Release()
	if n := mem.CurrentAlloc(); n != 0 {
		t.Fatalf("RowValues kept %d bytes", n)
	}
}

func ExampleValueAt() {
	mem := memory.NewGoAllocator()
	b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Millisecond})
	defer b.Release()
	b.Append(1767225600123)
	b.AppendNull()
	arr := b.NewArray()
	defer arr.Release()
	fmt.Println(arrowflow.ValueAt(arr, 0), arrowflow.ValueAt(arr, 1))
	// Output: 2026-01-01 00:00:00.123 +0000 UTC <nil>
}
