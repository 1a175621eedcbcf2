package format

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/hamba/avro/v2"
	"github.com/weirflow/weir/internal/testutil"
)

// A writer schema that differs from the columns in every way Avro's
// schema resolution allows.
const resolveWriter = `{"type":"record","name":"W","fields":[
 {"name":"extra","type":{"type":"array","items":{"type":"map","values":["null","string",{"type":"record","name":"X","fields":[{"name":"q","type":"double"}]}]}}},
 {"name":"a","type":"int"},
 {"name":"f","type":"float"},
 {"name":"e","type":{"type":"enum","name":"E","symbols":["RED","GREEN"]}},
 {"name":"u","type":["long","null"]},
 {"name":"d","type":{"type":"fixed","name":"D","size":8,"logicalType":"decimal","precision":12,"scale":2}},
 {"name":"s","type":"string"},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"tail","type":["null","boolean"]}
]}`

var resolveColumns = arrow.NewSchema([]arrow.Field{
	{Name: "a", Type: arrow.PrimitiveTypes.Int64},
	{Name: "m", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, // not written
	{Name: "f", Type: arrow.PrimitiveTypes.Float64},
	{Name: "e", Type: arrow.BinaryTypes.String},
	{Name: "u", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "d", Type: &arrow.Decimal128Type{Precision: 14, Scale: 3}},
	{Name: "s", Type: arrow.BinaryTypes.Binary},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
}, nil)

func TestAvroResolution(t *testing.T) {
	w := avro.MustParse(resolveWriter)
	mem := testutil.CheckedAllocator(t)
	dec := mustDecoder(t, Config{Name: "avro", Schema: resolveColumns, Options: map[string]string{"avro.schema": resolveWriter}})
	rows := []map[string]any{
		{"extra": []any{map[string]any{"k": map[string]any{"X": map[string]any{"q": 1.5}}, "n": nil, "s": map[string]any{"string": "v"}}},
			"a": -7, "f": float32(0.5), "e": "GREEN", "u": map[string]any{"long": int64(1) << 40},
			"d": big.NewRat(-12345, 100), "s": "héllo", "ts": time.UnixMicro(-1).UTC(), "tail": nil},
		{"extra": []any{}, "a": 2147483647, "f": float32(-3), "e": "RED", "u": nil,
			"d": big.NewRat(0, 1), "s": "", "ts": time.UnixMicro(1_700_000_000_123_999).UTC(), "tail": map[string]any{"boolean": true}},
	}
	var values [][]byte
	for _, r := range rows {
		b, err := avro.Marshal(w, r)
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, b)
	}
	got := decodeAll(t, dec, mem, values)
	want := [][]any{
		{int64(-7), nil, 0.5, "GREEN", int64(1) << 40, "-123450", "héllo", int64(-1)},
		{int64(2147483647), nil, -3.0, "RED", nil, "0", "", int64(1_700_000_000_123)},
	}
	diffRows(t, want, got)
}

func TestAvroResolutionErrors(t *testing.T) {
	for _, c := range []struct {
		writer string
		fields []arrow.Field
		msg    string
	}{
		{`{"type":"record","name":"r","fields":[{"name":"a","type":"long"}]}`,
			[]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32}}, "column a: the writer's long does not resolve to int32"},
		{`{"type":"record","name":"r","fields":[{"name":"a","type":"long"}]}`,
			[]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.PrimitiveTypes.Int64}}, "column b: not in the writer schema and not nullable"},
		{`{"type":"record","name":"r","fields":[{"name":"a","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":4}}]}`,
			[]arrow.Field{{Name: "a", Type: &arrow.Decimal128Type{Precision: 9, Scale: 2}}}, "does not resolve to decimal(9, 2)"},
		{`"long"`, []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, "not a record"},
	} {
		_, err := NewDecoder(context.Background(), Config{Name: "avro", Schema: arrow.NewSchema(c.fields, nil), Options: map[string]string{"avro.schema": c.writer}})
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %v, want %q", c.writer, err, c.msg)
		}
	}
}

func TestAvroRecordErrors(t *testing.T) {
	writer := `{"type":"record","name":"r","fields":[
		{"name":"a","type":["null","long"]},
		{"name":"b","type":"boolean"},
		{"name":"c","type":{"type":"array","items":"string"}},
		{"name":"d","type":"int"}]}`
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64}, // null in the writer's union is a record error
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "c", Type: arrow.ListOf(arrow.BinaryTypes.String)},
		{Name: "d", Type: arrow.PrimitiveTypes.Int8},
	}, nil)
	mem := testutil.CheckedAllocator(t)
	b := mustDecoder(t, Config{Name: "avro", Schema: schema, Options: map[string]string{"avro.schema": writer}}).NewBuilder(mem)
	defer b.Release()
	// union 1 (long) 5, true, one block of 1 string "x", end, int 3
	good := []byte{2, 10, 1, 2, 2, 'x', 0, 6}
	cases := []struct {
		value  []byte
		field  string
		offset int
		msg    string
	}{
		{[]byte{}, "a", 0, "unexpected end"},
		{[]byte{0, 1, 0, 6}, "a", 1, "null in a non-nullable field"},
		{[]byte{4, 10, 1, 0, 6}, "a", 0, "union branch 2 out of 2"},
		{[]byte{2, 10, 2, 0, 6}, "b", 2, "boolean byte is neither 0 nor 1"},
		{[]byte{2, 10, 1, 2, 0x10, 'x', 0, 6}, "c[]", 4, "unexpected end"},
		{[]byte{2, 10, 1, 2, 3, 'x', 0, 6}, "c[]", 4, "negative length"},
		{[]byte{2, 10, 1, 100, 0, 6}, "c", 3, "more items than bytes left"},
		{[]byte{2, 10, 1, 2, 2, 'x', 0, 0x80, 2}, "d", 7, "out of range for int8"},
		{[]byte{2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1}, "a", 1, "malformed varint"},
		{append(append([]byte{}, good...), 0), "", 8, "bytes after the end of the record"},
	}
	for i, c := range cases {
		before := b.Len()
		wantRecordError(t, b.Append(c.value), "avro", c.field, c.offset, c.msg)
		if b.Len() != before {
			t.Fatalf("case %d: Len %d, want %d", i, b.Len(), before)
		}
		if err := b.Append(good); err != nil {
			t.Fatalf("case %d: good record after a bad one: %v", i, err)
		}
	}
	rec := b.NewRecord()
	defer rec.Release()
	for _, row := range rowsOf(rec) {
		diffRows(t, [][]any{{int64(5), true, []any{"x"}, int64(3)}}, [][]any{row})
	}
}

func TestAvroSchemaConversion(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "addr", Type: arrow.StructOf(arrow.Field{Name: "city", Type: arrow.BinaryTypes.String}), Nullable: true},
	}, nil)
	text, err := AvroSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"record","name":"org.apache.flink.avro.generated.record","fields":[` +
		`{"name":"id","type":"long"},` +
		`{"name":"name","type":["null","string"],"default":null},` +
		`{"name":"at","type":{"type":"long","logicalType":"local-timestamp-millis"}},` +
		`{"name":"price","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}],"default":null},` +
		`{"name":"addr","type":["null",{"type":"record","name":"org.apache.flink.avro.generated.record_addr","fields":[{"name":"city","type":"string"}]}],"default":null}]}`
	if text != want {
		t.Fatalf("AvroSchema:\n got %s\nwant %s", text, want)
	}
	back, err := ArrowSchemaFromAvro(text)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(schema) {
		t.Fatalf("ArrowSchemaFromAvro:\n got %s\nwant %s", back, schema)
	}
	for _, c := range []struct{ text, msg string }{
		{`{"type":"record","name":"r","fields":[{"name":"u","type":["int","string"]}]}`, "unions other than"},
		{`{"type":"record","name":"n","fields":[{"name":"next","type":["null","n"]}]}`, "recursive record n"},
		{`{"type":"record","name":"r","fields":[{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":40,"scale":2}}]}`, "wider than decimal128"},
	} {
		if _, err := ArrowSchemaFromAvro(c.text); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %v, want %q", c.text, err, c.msg)
		}
	}
	if _, err := AvroSchema(arrow.NewSchema([]arrow.Field{{Name: "a-b", Type: arrow.PrimitiveTypes.Int64}}, nil)); err == nil {
		t.Error("AvroSchema took a column name that is not an Avro name")
	}
}

// TestAvroRecursiveWriterSkipped checks that a recursive writer record
// decodes into the finite columns and skips the deeper levels.
func TestAvroRecursiveWriterSkipped(t *testing.T) {
	writer := `{"type":"record","name":"n","fields":[{"name":"v","type":"long"},{"name":"next","type":["null","n"]}]}`
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
		{Name: "next", Type: arrow.StructOf(arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Int64}), Nullable: true},
	}, nil)
	w := avro.MustParse(writer)
	v := map[string]any{"v": int64(1), "next": map[string]any{"n": map[string]any{"v": int64(2),
		"next": map[string]any{"n": map[string]any{"v": int64(3), "next": nil}}}}}
	b, err := avro.Marshal(w, v)
	if err != nil {
		t.Fatal(err)
	}
	mem := testutil.CheckedAllocator(t)
	got := decodeAll(t, mustDecoder(t, Config{Name: "avro", Schema: schema, Options: map[string]string{"avro.schema": writer}}), mem, [][]byte{b})
	diffRows(t, [][]any{{int64(1), []any{int64(2)}}}, got)
}

func ExampleAvroSchema() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "auction", Type: arrow.PrimitiveTypes.Int64},
		{Name: "channel", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	text, _ := AvroSchema(schema)
	fmt.Println(text)
	// Output:
	// {"type":"record","name":"org.apache.flink.avro.generated.record","fields":[{"name":"auction","type":"long"},{"name":"channel","type":["null","string"],"default":null}]}
}
