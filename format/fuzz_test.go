package format

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/sr"
)

// Each fuzz target decodes arbitrary bytes: a rejection must be a
// *RecordError that leaves no row, and an accepted row must encode and
// decode back to itself.

var fuzzSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 12, Scale: 3}, Nullable: true},
	{Name: "st", Type: arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "l", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	), Nullable: true},
	{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float32), Nullable: true},
}, nil)

var fuzzFlatSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i", Type: arrow.PrimitiveTypes.Int16},
	{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
	{Name: "t", Type: arrow.FixedWidthTypes.Time32ms, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 5, Scale: -2}, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
}, nil)

// fuzzDecode checks one value against dec, re-encoding accepted rows with
// enc and decoding them with dec again.
func fuzzDecode(t *testing.T, dec Decoder, enc Encoder, value []byte) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := dec.NewBuilder(mem)
	defer b.Release()
	if err := b.Append(value); err != nil {
		var re *RecordError
		if !errors.As(err, &re) {
			t.Fatalf("error %v is not a *RecordError", err)
		}
		if re.Offset > len(value) {
			t.Fatalf("offset %d past the value's %d bytes", re.Offset, len(value))
		}
		if b.Len() != 0 {
			t.Fatalf("Len %d after a rejection", b.Len())
		}
		return
	}
	rec := b.NewRecord()
	defer rec.Release()
	first := rowsOf(rec)
	var again []byte
	if err := enc.Encode(rec, func(_ int, v []byte) error {
		if v != nil { // nil is a null (raw); keep empty values empty
			again = append([]byte{}, v...)
		}
		return nil
	}); err != nil {
		t.Fatalf("re-encoding an accepted row: %v", err)
	}
	if err := b.Append(again); err != nil {
		t.Fatalf("decoding the re-encoded row %q: %v", again, err)
	}
	rec2 := b.NewRecord()
	defer rec2.Release()
	diffRows(t, first, rowsOf(rec2))
}

func FuzzJSONDecode(f *testing.F) {
	for _, s := range []string{
		`{"i":1,"u8":255,"f":1.5e300,"b":true,"s":"a\u00e9\ud83d\ude00","bin":"AA==","ts":"2024-01-01T00:00:00.5+02:00","d":"2024-02-29","dec":"-1.2345","st":{"x":1,"l":["a",null]},"m":{"k":1.5,"n":null}}`,
		`{"i":"12","f":"NaN","s":{"raw":[1,2]},"ts":-5,"st":null,"m":{}}`,
		`{}`, `{"i":9223372036854775808}`, `[`, `{"s":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	cfg := Config{Name: "json", Schema: fuzzSchema}
	dec, enc := mustDecoder(f, cfg), mustEncoder(f, cfg)
	f.Fuzz(func(t *testing.T, value []byte) { fuzzDecode(t, dec, enc, value) })
}

func FuzzCSVDecode(f *testing.F) {
	for _, s := range []string{
		`1,2.5,"a,""b""",2024-01-01 00:00:00.123,12:00:00,12300,AAE=`,
		`-32768,,,,,,`, `1,NaN,"",0,0,1e4,`, `x`, `1,"`,
	} {
		f.Add([]byte(s))
	}
	cfg := Config{Name: "csv", Schema: fuzzFlatSchema}
	dec, enc := mustDecoder(f, cfg), mustEncoder(f, cfg)
	f.Fuzz(func(t *testing.T, value []byte) { fuzzDecode(t, dec, enc, value) })
}

func FuzzRawDecode(f *testing.F) {
	f.Add([]byte("text"))
	f.Add([]byte{0xff, 0xfe})
	cfg := Config{Name: "raw", Schema: arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)}
	dec, enc := mustDecoder(f, cfg), mustEncoder(f, cfg)
	f.Fuzz(func(t *testing.T, value []byte) { fuzzDecode(t, dec, enc, value) })
}

// avroSeeds encodes the JSON seeds' rows as Avro.
func avroSeeds(f *testing.F, cfg Config) [][]byte {
	mem := memory.NewGoAllocator()
	b := mustDecoder(f, Config{Name: "json", Schema: cfg.Schema}).NewBuilder(mem)
	defer b.Release()
	for _, s := range []string{
		`{"i":1,"u8":255,"f":1.5e300,"b":true,"s":"aé","bin":"AA==","ts":"2024-01-01T00:00:00.5Z","d":"2024-02-29","dec":"-1.2345","st":{"x":1,"l":["a",null]},"m":{"k":1.5}}`,
		`{"i":-1,"st":{"x":-7},"m":{}}`,
	} {
		if err := b.Append([]byte(s)); err != nil {
			f.Fatal(err)
		}
	}
	rec := b.NewRecord()
	defer rec.Release()
	return encodeAll(f, mustEncoder(f, cfg), rec)
}

func FuzzAvroDecode(f *testing.F) {
	cfg := Config{Name: "avro", Schema: fuzzSchema}
	for _, v := range avroSeeds(f, cfg) {
		f.Add(v)
		f.Add(v[:len(v)/2])
	}
	dec, enc := mustDecoder(f, cfg), mustEncoder(f, cfg)
	f.Fuzz(func(t *testing.T, value []byte) { fuzzDecode(t, dec, enc, value) })
}

func FuzzConfluentDecode(f *testing.F) {
	_, cl := newRegistry(f)
	text, err := AvroSchema(fuzzSchema)
	if err != nil {
		f.Fatal(err)
	}
	if _, err := cl.RegisterSchema(context.Background(), "fuzz-value", sr.Schema{Schema: text}, -1, -1); err != nil {
		f.Fatal(err)
	}
	cfg := Config{Name: "avro-confluent", Schema: fuzzSchema, Registry: cl, Options: map[string]string{"avro-confluent.subject": "fuzz-value"}}
	for _, v := range avroSeeds(f, cfg) {
		f.Add(v)
		f.Add(v[:3])
		f.Add(append([]byte{0, 0, 0, 0, 9}, v[5:]...))
	}
	dec, enc := mustDecoder(f, cfg), mustEncoder(f, cfg)
	f.Fuzz(func(t *testing.T, value []byte) { fuzzDecode(t, dec, enc, value) })
}
