package format

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Rows are compared as plain Go values: nil for null, bool, int64, uint64,
// float64 (NaN as the string "NaN"), string (strings and binaries),
// decimals as "unscaled" big-integer strings, temporal values as int64
// counts, structs and lists as []any, maps as []any of [2]any.

func rowsOf(rec arrow.RecordBatch) [][]any {
	rows := make([][]any, rec.NumRows())
	for i := range rows {
		row := make([]any, rec.NumCols())
		for j := range row {
			row[j] = valueAt(rec.Column(j), i)
		}
		rows[i] = row
	}
	return rows
}

func floatValue(f float64) any {
	if math.IsNaN(f) {
		return "NaN"
	}
	return f
}

func valueAt(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return uint64(a.Value(i))
	case *array.Uint16:
		return uint64(a.Value(i))
	case *array.Uint32:
		return uint64(a.Value(i))
	case *array.Uint64:
		return a.Value(i)
	case *array.Float32:
		return floatValue(float64(a.Value(i)))
	case *array.Float64:
		return floatValue(a.Value(i))
	case *array.Decimal128:
		return a.Value(i).BigInt().String()
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		return string(a.Value(i))
	case *array.LargeBinary:
		return string(a.Value(i))
	case *array.FixedSizeBinary:
		return string(a.Value(i))
	case *array.Timestamp:
		return int64(a.Value(i))
	case *array.Date32:
		return int64(a.Value(i))
	case *array.Time32:
		return int64(a.Value(i))
	case *array.Time64:
		return int64(a.Value(i))
	case *array.Struct:
		out := make([]any, a.NumField())
		for j := range out {
			out[j] = valueAt(a.Field(j), i)
		}
		return out
	case *array.Map:
		start, end := a.ValueOffsets(i)
		out := []any{}
		for j := start; j < end; j++ {
			out = append(out, [2]any{valueAt(a.Keys(), int(j)), valueAt(a.Items(), int(j))})
		}
		return out
	case *array.List:
		start, end := a.ValueOffsets(i)
		out := []any{}
		for j := start; j < end; j++ {
			out = append(out, valueAt(a.ListValues(), int(j)))
		}
		return out
	}
	panic(fmt.Sprintf("valueAt: %T", arr))
}

// diffRows reports the first difference between two row sets.
func diffRows(t testing.TB, want, got [][]any) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		for j := range want[i] {
			if !reflect.DeepEqual(want[i][j], got[i][j]) {
				t.Fatalf("row %d column %d:\n got %#v\nwant %#v", i, j, got[i][j], want[i][j])
			}
		}
	}
}

// typeSet says which Arrow types a random schema may use.
type typeSet struct {
	nested       bool // struct, list, map
	large        bool // large string/binary
	fixedBinary  bool
	unsigned     bool
	uint64Full   bool // uint64 past 2^63-1
	timeNanos    bool // time64[ns]
	negScale     bool // decimals with negative scale
	timestampSec bool // timestamp[s] with any int64
}

var (
	jsonTypes = typeSet{nested: true, large: true, fixedBinary: true, unsigned: true, uint64Full: true, timeNanos: true, negScale: true, timestampSec: true}
	csvTypes  = typeSet{large: true, fixedBinary: true, unsigned: true, uint64Full: true, timeNanos: true, negScale: true, timestampSec: true}
	avroTypes = typeSet{nested: true, large: true, fixedBinary: true, unsigned: true}
)

func randomType(rng *rand.Rand, ts typeSet, depth int) arrow.DataType {
	n := 22
	if ts.nested && depth < 3 {
		n = 25
	}
	switch rng.IntN(n) {
	case 0:
		return arrow.FixedWidthTypes.Boolean
	case 1:
		return arrow.PrimitiveTypes.Int8
	case 2:
		return arrow.PrimitiveTypes.Int16
	case 3:
		return arrow.PrimitiveTypes.Int32
	case 4, 5:
		return arrow.PrimitiveTypes.Int64
	case 6:
		if ts.unsigned {
			return []arrow.DataType{arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64}[rng.IntN(4)]
		}
		return arrow.PrimitiveTypes.Int64
	case 7:
		return arrow.PrimitiveTypes.Float32
	case 8:
		return arrow.PrimitiveTypes.Float64
	case 9, 10:
		return arrow.BinaryTypes.String
	case 11:
		if ts.large {
			return arrow.BinaryTypes.LargeString
		}
		return arrow.BinaryTypes.String
	case 12:
		return arrow.BinaryTypes.Binary
	case 13:
		if ts.large {
			return arrow.BinaryTypes.LargeBinary
		}
		return arrow.BinaryTypes.Binary
	case 14:
		if ts.fixedBinary {
			return &arrow.FixedSizeBinaryType{ByteWidth: 1 + rng.IntN(20)}
		}
		return arrow.BinaryTypes.Binary
	case 15, 16:
		p := int32(1 + rng.IntN(38))
		s := int32(rng.IntN(int(p) + 1))
		if ts.negScale && rng.IntN(5) == 0 {
			s = -int32(rng.IntN(5))
		}
		return &arrow.Decimal128Type{Precision: p, Scale: s}
	case 17, 18:
		units := []arrow.TimeUnit{arrow.Second, arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond}
		tz := ""
		if rng.IntN(2) == 0 {
			tz = "UTC"
		}
		return &arrow.TimestampType{Unit: units[rng.IntN(4)], TimeZone: tz}
	case 19:
		return arrow.FixedWidthTypes.Date32
	case 20:
		if rng.IntN(2) == 0 {
			return []arrow.DataType{arrow.FixedWidthTypes.Time32s, arrow.FixedWidthTypes.Time32ms}[rng.IntN(2)]
		}
		if ts.timeNanos && rng.IntN(2) == 0 {
			return arrow.FixedWidthTypes.Time64ns
		}
		return arrow.FixedWidthTypes.Time64us
	case 21:
		return arrow.BinaryTypes.String
	case 22:
		return arrow.StructOf(randomFields(rng, ts, depth+1, 1+rng.IntN(4))...)
	case 23:
		return arrow.ListOfField(arrow.Field{Name: "item", Type: randomType(rng, ts, depth+1), Nullable: rng.IntN(2) == 0})
	default:
		return arrow.MapOfFields(arrow.Field{Name: "key", Type: arrow.BinaryTypes.String},
			arrow.Field{Name: "value", Type: randomType(rng, ts, depth+1), Nullable: rng.IntN(2) == 0})
	}
}

func randomFields(rng *rand.Rand, ts typeSet, depth, n int) []arrow.Field {
	fields := make([]arrow.Field, n)
	for i := range fields {
		fields[i] = arrow.Field{Name: fmt.Sprintf("f%d_%d", depth, i), Type: randomType(rng, ts, depth), Nullable: rng.IntN(3) != 0}
	}
	return fields
}

func randomSchema(rng *rand.Rand, ts typeSet) *arrow.Schema {
	return arrow.NewSchema(randomFields(rng, ts, 0, 1+rng.IntN(8)), nil)
}

// randomBatch builds n random rows of schema with arrow-go's builders.
func randomBatch(rng *rand.Rand, mem memory.Allocator, schema *arrow.Schema, ts typeSet, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for range n {
		for j, f := range schema.Fields() {
			appendRandom(rng, b.Field(j), f.Type, f.Nullable, ts)
		}
	}
	return b.NewRecordBatch()
}

var stringPieces = []string{"a", "Z", " ", "\"", "\\", "/", "\n", "\t", "\x00", "\x1f", "é", "日本", "😀", "\u2028", ",", ";", "'", "{", "}", "[", "]", ":", "null", "0", "-"}

func randomString(rng *rand.Rand) string {
	var sb strings.Builder
	for range rng.IntN(12) {
		sb.WriteString(stringPieces[rng.IntN(len(stringPieces))])
	}
	return sb.String()
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return b
}

func randomInt(rng *rand.Rand, bits int) int64 {
	switch rng.IntN(6) {
	case 0:
		return 0
	case 1:
		return -1 << (bits - 1) // min
	case 2:
		return 1<<(bits-1) - 1 // max
	case 3:
		return rng.Int64N(200) - 100
	}
	v := int64(rng.Uint64())
	return v >> (64 - bits)
}

func randomFloat(rng *rand.Rand) float64 {
	switch rng.IntN(10) {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(1 - 2*rng.IntN(2))
	case 2:
		return 0
	case 3:
		return math.Copysign(0, -1)
	case 4:
		return math.Float64frombits(rng.Uint64())
	}
	return (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(40)-20))
}

func randomDecimal(rng *rand.Rand, p int32) decimal128.Num {
	digits := 1 + rng.IntN(int(p))
	v := new(big.Int)
	for range digits {
		v.Mul(v, big.NewInt(10))
		v.Add(v, big.NewInt(int64(rng.IntN(10))))
	}
	if rng.IntN(2) == 0 {
		v.Neg(v)
	}
	return decimal128.FromBigInt(v)
}

func appendRandom(rng *rand.Rand, b array.Builder, dt arrow.DataType, nullable bool, ts typeSet) {
	if nullable && rng.IntN(5) == 0 {
		b.AppendNull()
		return
	}
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		bb.Append(rng.IntN(2) == 0)
	case *array.Int8Builder:
		bb.Append(int8(randomInt(rng, 8)))
	case *array.Int16Builder:
		bb.Append(int16(randomInt(rng, 16)))
	case *array.Int32Builder:
		bb.Append(int32(randomInt(rng, 32)))
	case *array.Int64Builder:
		bb.Append(randomInt(rng, 64))
	case *array.Uint8Builder:
		bb.Append(uint8(randomInt(rng, 8)))
	case *array.Uint16Builder:
		bb.Append(uint16(randomInt(rng, 16)))
	case *array.Uint32Builder:
		bb.Append(uint32(randomInt(rng, 32)))
	case *array.Uint64Builder:
		v := uint64(randomInt(rng, 64))
		if !ts.uint64Full {
			v &= math.MaxInt64
		}
		bb.Append(v)
	case *array.Float32Builder:
		bb.Append(float32(randomFloat(rng)))
	case *array.Float64Builder:
		bb.Append(randomFloat(rng))
	case *array.StringBuilder:
		bb.Append(randomString(rng))
	case *array.LargeStringBuilder:
		bb.Append(randomString(rng))
	case *array.BinaryBuilder:
		if dt.ID() == arrow.LARGE_BINARY || dt.ID() == arrow.BINARY {
			bb.Append(randomBytes(rng, rng.IntN(10)))
		}
	case *array.FixedSizeBinaryBuilder:
		bb.Append(randomBytes(rng, dt.(*arrow.FixedSizeBinaryType).ByteWidth))
	case *array.Decimal128Builder:
		bb.Append(randomDecimal(rng, dt.(*arrow.Decimal128Type).Precision))
	case *array.TimestampBuilder:
		unit := dt.(*arrow.TimestampType).Unit
		var v int64
		switch {
		case rng.IntN(4) == 0 && (unit == arrow.Nanosecond || ts.timestampSec):
			v = int64(rng.Uint64())
		case unit == arrow.Second && !ts.timestampSec:
			v = rng.Int64N(1<<50) - 1<<49
		default:
			// Years 1900 to 2100.
			secs := rng.Int64N(200*365*86400) - 70*365*86400
			v = secs*unitPerSecond(unit) + rng.Int64N(unitPerSecond(unit))
			if rng.IntN(3) == 0 {
				v -= v % unitPerSecond(unit) // whole seconds
			}
		}
		bb.Append(arrow.Timestamp(v))
	case *array.Date32Builder:
		if rng.IntN(4) == 0 {
			bb.Append(arrow.Date32(rng.Uint32()))
		} else {
			bb.Append(arrow.Date32(rng.IntN(80000) - 40000))
		}
	case *array.Time32Builder:
		per := unitPerSecond(dt.(*arrow.Time32Type).Unit)
		bb.Append(arrow.Time32(rng.Int64N(86400 * per)))
	case *array.Time64Builder:
		per := unitPerSecond(dt.(*arrow.Time64Type).Unit)
		bb.Append(arrow.Time64(rng.Int64N(86400 * per)))
	case *array.StructBuilder:
		bb.Append(true)
		for j, f := range dt.(*arrow.StructType).Fields() {
			appendRandom(rng, bb.FieldBuilder(j), f.Type, f.Nullable, ts)
		}
	case *array.MapBuilder:
		bb.Append(true)
		mt := dt.(*arrow.MapType)
		for k := range rng.IntN(4) {
			// Distinct keys: decoders into Go maps keep one of each.
			bb.KeyBuilder().(*array.StringBuilder).Append(randomString(rng) + strconv.Itoa(k))
			appendRandom(rng, bb.ItemBuilder(), mt.ItemType(), mt.ItemField().Nullable, ts)
		}
	case *array.ListBuilder:
		bb.Append(true)
		ef := dt.(*arrow.ListType).ElemField()
		for range rng.IntN(4) {
			appendRandom(rng, bb.ValueBuilder(), ef.Type, ef.Nullable, ts)
		}
	default:
		panic(fmt.Sprintf("appendRandom: %T", b))
	}
}

// decodeAll appends values to a fresh builder, requiring every one to be
// accepted, and returns the batch's rows.
func decodeAll(t testing.TB, dec Decoder, mem memory.Allocator, values [][]byte) [][]any {
	t.Helper()
	b := dec.NewBuilder(mem)
	defer b.Release()
	for i, v := range values {
		if err := b.Append(v); err != nil {
			t.Fatalf("value %d %q: %v", i, truncate(v), err)
		}
	}
	if b.Len() != len(values) {
		t.Fatalf("Len %d after %d values", b.Len(), len(values))
	}
	rec := b.NewRecord()
	defer rec.Release()
	if err := array.ValidateRecordFull(rec); err != nil {
		t.Fatalf("invalid batch: %v", err)
	}
	if b.Len() != 0 {
		t.Fatalf("Len %d after NewRecord", b.Len())
	}
	return rowsOf(rec)
}

func truncate(v []byte) string {
	if len(v) > 300 {
		return string(v[:300]) + "..."
	}
	return string(v)
}

// encodeAll encodes rec, copying each value.
func encodeAll(t testing.TB, enc Encoder, rec arrow.RecordBatch) [][]byte {
	t.Helper()
	var out [][]byte
	err := enc.Encode(rec, func(row int, value []byte) error {
		if row != len(out) {
			t.Fatalf("row %d, want %d", row, len(out))
		}
		if value == nil {
			out = append(out, nil)
		} else {
			out = append(out, append([]byte{}, value...))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return out
}

func mustDecoder(t testing.TB, cfg Config) Decoder {
	t.Helper()
	d, err := NewDecoder(context.Background(), cfg)
	if err != nil {
		t.Fatalf("NewDecoder(%s): %v", cfg.Name, err)
	}
	return d
}

func mustEncoder(t testing.TB, cfg Config) Encoder {
	t.Helper()
	e, err := NewEncoder(context.Background(), cfg)
	if err != nil {
		t.Fatalf("NewEncoder(%s): %v", cfg.Name, err)
	}
	return e
}

// wantRecordError checks that err is a *RecordError of the format, naming
// field (when field is not "?") at offset (when offset >= -1), whose text
// contains msg.
func wantRecordError(t testing.TB, err error, format, field string, offset int, msg string) {
	t.Helper()
	var re *RecordError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T), want a *RecordError", err, err)
	}
	if re.Format != format {
		t.Errorf("Format %q, want %q (%v)", re.Format, format, err)
	}
	if field != "?" && re.Field != field {
		t.Errorf("Field %q, want %q (%v)", re.Field, field, err)
	}
	if offset >= -1 && re.Offset != offset {
		t.Errorf("Offset %d, want %d (%v)", re.Offset, offset, err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("error %q does not say %q", err, msg)
	}
}
