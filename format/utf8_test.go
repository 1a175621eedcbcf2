package format

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/weirflow/weir/internal/testutil"
)

// The UTF-8 rule (doc.go): a value that would land in a string column, at
// any depth, must be valid UTF-8, and JSON text must be UTF-8 throughout;
// otherwise the record is rejected with a *RecordError naming the field
// and the offset of the first bad byte, wrapping ErrInvalidUTF8. In every
// case below, the offset to expect is that of the value's first byte that
// is not valid UTF-8.

var utf8JSONSchema = arrow.NewSchema([]arrow.Field{
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	{Name: "l", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), Nullable: true},
	{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

var utf8CSVSchema = arrow.NewSchema([]arrow.Field{
	{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
}, nil)

// utf8AvroWriter has a string, a bytes field read as binary, a bytes
// field read as a string, an array, a map, a record and a string field
// that no column takes (skipped, never read, so not checked).
const utf8AvroWriter = `{"type":"record","name":"r","fields":[
	{"name":"s","type":"string"},
	{"name":"b","type":"bytes"},
	{"name":"t","type":"bytes"},
	{"name":"l","type":{"type":"array","items":"string"}},
	{"name":"m","type":{"type":"map","values":"string"}},
	{"name":"st","type":{"type":"record","name":"in","fields":[{"name":"x","type":"string"}]}},
	{"name":"skipped","type":"string"}]}`

var utf8AvroSchema = arrow.NewSchema([]arrow.Field{
	{Name: "s", Type: arrow.BinaryTypes.String},
	{Name: "b", Type: arrow.BinaryTypes.Binary},
	{Name: "t", Type: arrow.BinaryTypes.String},
	{Name: "l", Type: arrow.ListOf(arrow.BinaryTypes.String)},
	{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)},
	{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.BinaryTypes.String})},
}, nil)

// utf8AvroValue is the Avro encoding of one utf8AvroWriter record.
type utf8AvroValue struct {
	s, b, t, l, mk, mv, x, skipped string
}

func avroStr(dst []byte, s string) []byte {
	return append(appendAvroLong(dst, int64(len(s))), s...)
}

func (v utf8AvroValue) encode() []byte {
	var b []byte
	b = avroStr(b, v.s)
	b = avroStr(b, v.b)
	b = avroStr(b, v.t)
	b = append(appendAvroLong(b, 1), avroStr(nil, v.l)...)
	b = append(b, 0)
	b = appendAvroLong(b, 1)
	b = avroStr(b, v.mk)
	b = avroStr(b, v.mv)
	b = append(b, 0)
	b = avroStr(b, v.x)
	return avroStr(b, v.skipped)
}

func okAvro() utf8AvroValue {
	return utf8AvroValue{s: "s", b: "b", t: "t", l: "l", mk: "k", mv: "v", x: "x", skipped: "-"}
}

type utf8Case struct {
	name  string
	cfg   Config
	value []byte
	field string // the field the error names; "" with ok
	ok    bool   // the value is accepted
	want  []any  // the accepted row, when ok and not nil
}

func utf8Cases(t *testing.T) []utf8Case {
	jsonCfg := Config{Name: "json", Schema: utf8JSONSchema}
	csvCfg := Config{Name: "csv", Schema: utf8CSVSchema}
	csvEsc := Config{Name: "csv", Schema: utf8CSVSchema, Options: map[string]string{"csv.escape-character": `\\`}}
	rawStr := Config{Name: "raw", Schema: arrow.NewSchema([]arrow.Field{{Name: "line", Type: arrow.BinaryTypes.String}}, nil)}
	rawLarge := Config{Name: "raw", Schema: arrow.NewSchema([]arrow.Field{{Name: "line", Type: arrow.BinaryTypes.LargeString}}, nil)}
	rawBin := Config{Name: "raw"}
	avroCfg := Config{Name: "avro", Schema: utf8AvroSchema, Options: map[string]string{"avro.schema": utf8AvroWriter}}

	_, cl := newRegistry(t)
	id, err := cl.RegisterSchema(context.Background(), "utf8-value", sr.Schema{Schema: utf8AvroWriter}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	confluentCfg := Config{Name: "avro-confluent", Schema: utf8AvroSchema, Registry: cl}
	confluent := func(v utf8AvroValue) []byte { return append(confluentPrefix(id), v.encode()...) }

	with := func(f func(*utf8AvroValue)) utf8AvroValue {
		v := okAvro()
		f(&v)
		return v
	}
	j := func(s string) []byte { return []byte(s) }
	okRow := []any{"s", "b", "t", []any{"l"}, []any{[2]any{"k", "v"}}, []any{"x"}}

	cases := []utf8Case{
		// json
		{name: "json/value", cfg: jsonCfg, value: j(`{"s":"a` + "\xff" + `b"}`), field: "s"},
		{name: "json/value-large", cfg: jsonCfg, value: j(`{"ls":"` + "\xff" + `"}`), field: "ls"},
		{name: "json/list-element", cfg: jsonCfg, value: j(`{"l":["ok","` + "\xff" + `"]}`), field: "l[]"},
		{name: "json/map-key", cfg: jsonCfg, value: j(`{"m":{"` + "\xff" + `":"v"}}`), field: "m"},
		{name: "json/map-value", cfg: jsonCfg, value: j(`{"m":{"k":"` + "\xff" + `"}}`), field: "m{}"},
		{name: "json/struct-value", cfg: jsonCfg, value: j(`{"st":{"x":"` + "\xff" + `"}}`), field: "st.x"},
		{name: "json/struct-key", cfg: jsonCfg, value: j(`{"st":{"` + "\xff" + `":1}}`), field: "st"},
		{name: "json/object-into-string/key", cfg: jsonCfg, value: j(`{"s":{"` + "\xaf\xff" + `":[0]}}`), field: "s"},
		{name: "json/object-into-string/value", cfg: jsonCfg, value: j(`{"s":{"k":"` + "\xff" + `"}}`), field: "s"},
		{name: "json/array-into-string", cfg: jsonCfg, value: j(`{"ls":[1,"` + "\xff" + `"]}`), field: "ls"},
		{name: "json/top-level-key", cfg: jsonCfg, value: j(`{"` + "\xff" + `":1}`), field: ""},
		{name: "json/unknown-field-value", cfg: jsonCfg, value: j(`{"zz":{"a":["` + "\xff" + `"]}}`), field: ""},
		{name: "json/number-from-string", cfg: jsonCfg, value: j(`{"n":"1` + "\xff" + `"}`), field: "n"},
		{name: "json/ok-nested-text", cfg: jsonCfg, value: j(`{"s":{"é":["日本"]}}`), ok: true,
			want: []any{`{"é":["日本"]}`, nil, nil, nil, nil, nil}},
		{name: "json/ok-escaped", cfg: jsonCfg, value: j(`{"s":"\u00ff"}`), ok: true,
			want: []any{"\u00ff", nil, nil, nil, nil, nil}},

		// csv
		{name: "csv/field", cfg: csvCfg, value: j("x,a\xffb,"), field: "s"},
		{name: "csv/first-field", cfg: csvCfg, value: j("\xff,,"), field: "a"},
		{name: "csv/quoted-field", cfg: csvCfg, value: j(`x,"a""` + "\xff" + `",`), field: "s"},
		{name: "csv/escaped-field", cfg: csvEsc, value: j(`x,a\,` + "\xff,"), field: "s"},
		{name: "csv/binary-field", cfg: csvCfg, value: j("x,y,\xff"), field: "b"},
		{name: "csv/ok", cfg: csvCfg, value: j(`é,"日,本",AP8=`), ok: true, want: []any{"é", "日,本", "\x00\xff"}},

		// raw
		{name: "raw/line", cfg: rawStr, value: j("text \xff"), field: "line"},
		{name: "raw/line-large", cfg: rawLarge, value: j("\xff"), field: "line"},
		{name: "raw/binary-ok", cfg: rawBin, value: j("\xff\xfe"), ok: true, want: []any{"\xff\xfe"}},

		// avro
		{name: "avro/string", cfg: avroCfg, value: with(func(v *utf8AvroValue) { v.s = "a\xff" }).encode(), field: "s"},
		{name: "avro/bytes-into-string", cfg: avroCfg, value: with(func(v *utf8AvroValue) { v.t = "\xff" }).encode(), field: "t"},
		{name: "avro/array-element", cfg: avroCfg, value: with(func(v *utf8AvroValue) { v.l = "ok\xff" }).encode(), field: "l[]"},
		{name: "avro/map-key", cfg: avroCfg, value: with(func(v *utf8AvroValue) { v.mk = "k\xff" }).encode(), field: "m"},
		{name: "avro/map-value", cfg: avroCfg, value: with(func(v *utf8AvroValue) { v.mv = "\xff" }).encode(), field: "m{}"},
		{name: "avro/record-field", cfg: avroCfg, value: with(func(v *utf8AvroValue) { v.x = "\xff" }).encode(), field: "st.x"},
		{name: "avro/bytes-ok", cfg: avroCfg, value: with(func(v *utf8AvroValue) { v.b = "\xff" }).encode(), ok: true,
			want: []any{"s", "\xff", "t", []any{"l"}, []any{[2]any{"k", "v"}}, []any{"x"}}},
		{name: "avro/skipped-ok", cfg: avroCfg, value: with(func(v *utf8AvroValue) { v.skipped = "\xff" }).encode(), ok: true, want: okRow},

		// avro-confluent: the same decoding after the 5-byte header
		{name: "avro-confluent/string", cfg: confluentCfg, value: confluent(with(func(v *utf8AvroValue) { v.s = "\xff" })), field: "s"},
		{name: "avro-confluent/map-key", cfg: confluentCfg, value: confluent(with(func(v *utf8AvroValue) { v.mk = "\xff" })), field: "m"},
		{name: "avro-confluent/record-field", cfg: confluentCfg, value: confluent(with(func(v *utf8AvroValue) { v.x = "é\xff" })), field: "st.x"},
		{name: "avro-confluent/ok", cfg: confluentCfg, value: confluent(okAvro()), ok: true, want: okRow},
	}
	return cases
}

// TestDecodeInvalidUTF8 runs every decoder over invalid UTF-8 in every
// position a string can take.
func TestDecodeInvalidUTF8(t *testing.T) {
	for _, c := range utf8Cases(t) {
		t.Run(c.name, func(t *testing.T) {
			dec := mustDecoder(t, c.cfg)
			mem := testutil.CheckedAllocator(t)
			b := dec.NewBuilder(mem)
			defer b.Release()
			err := b.Append(c.value)
			if c.ok {
				if err != nil {
					t.Fatalf("Append(%q): %v", c.value, err)
				}
				rec := b.NewRecord()
				defer rec.Release()
				if err := array.ValidateRecordFull(rec); err != nil {
					t.Fatalf("invalid batch: %v", err)
				}
				if c.want != nil {
					diffRows(t, [][]any{c.want}, rowsOf(rec))
				}
				return
			}
			if err == nil {
				rec := b.NewRecord()
				defer rec.Release()
				t.Fatalf("Append(%q) accepted the row %v", c.value, rowsOf(rec))
			}
			off := invalidUTF8At(c.value)
			if c.field == "b" { // a binary column: base64, not UTF-8, is what fails
				wantRecordError(t, err, c.cfg.Name, c.field, -2, "base64")
				return
			}
			wantRecordError(t, err, c.cfg.Name, c.field, off, "invalid UTF-8")
			if !errors.Is(err, ErrInvalidUTF8) {
				t.Errorf("error %v does not wrap ErrInvalidUTF8", err)
			}
			if b.Len() != 0 {
				t.Errorf("Len %d after a rejection", b.Len())
			}
		})
	}
}

// invalidStrings builds a batch whose string values hold invalid UTF-8,
// as arrays built outside weir's decoders can: at the top, in a large
// string, in a list, as a map key and value, and in a struct.
func invalidStrings(mem memory.Allocator, schema *arrow.Schema, bad string) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i, f := range schema.Fields() {
		switch fb := b.Field(i).(type) {
		case *array.StringBuilder:
			fb.Append(bad)
		case *array.LargeStringBuilder:
			fb.Append(bad)
		case *array.ListBuilder:
			fb.Append(true)
			fb.ValueBuilder().(*array.StringBuilder).Append(bad)
		case *array.MapBuilder:
			fb.Append(true)
			fb.KeyBuilder().(*array.StringBuilder).Append(bad)
			fb.ItemBuilder().(*array.StringBuilder).Append(bad)
		case *array.StructBuilder:
			fb.Append(true)
			fb.FieldBuilder(0).(*array.StringBuilder).Append(bad)
		default:
			panic("invalidStrings: column " + f.Name)
		}
	}
	return b.NewRecordBatch()
}

// TestEncodeInvalidUTF8 checks that every encoder writes a string column's
// invalid UTF-8 as U+FFFD, one per byte that is not part of a valid
// sequence, so that what it writes is well-formed and decodes back (a
// string is never an encoding error: the sink would fail the job).
func TestEncodeInvalidUTF8(t *testing.T) {
	const bad, repaired = "a\xffb\xe6\x97", "a\ufffdb\ufffd\ufffd" // a stray byte and a cut 3-byte sequence
	nested := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "ls", Type: arrow.BinaryTypes.LargeString},
		{Name: "l", Type: arrow.ListOf(arrow.BinaryTypes.String)},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.BinaryTypes.String})},
	}, nil)
	nestedWant := []any{repaired, repaired, []any{repaired}, []any{[2]any{repaired, repaired}}, []any{repaired}}
	flat := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "ls", Type: arrow.BinaryTypes.LargeString},
	}, nil)
	one := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	oneLarge := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.LargeString}}, nil)
	_, cl := newRegistry(t)
	for _, c := range []struct {
		cfg  Config
		want []any
	}{
		{Config{Name: "json", Schema: nested}, nestedWant},
		{Config{Name: "csv", Schema: flat}, []any{repaired, repaired}},
		{Config{Name: "csv", Schema: flat, Options: map[string]string{"csv.disable-quote-character": "true", "csv.escape-character": `\\`}}, []any{repaired, repaired}},
		{Config{Name: "raw", Schema: one}, []any{repaired}},
		{Config{Name: "raw", Schema: oneLarge}, []any{repaired}},
		{Config{Name: "avro", Schema: nested}, nestedWant},
		{Config{Name: "avro", Schema: one, Options: map[string]string{ // a string column as Avro bytes
			"avro.schema": `{"type":"record","name":"r","fields":[{"name":"s","type":"bytes"}]}`}}, []any{repaired}},
		{Config{Name: "avro-confluent", Schema: nested, Registry: cl, Options: map[string]string{"avro-confluent.subject": "utf8-enc"}}, nestedWant},
	} {
		t.Run(c.cfg.Name, func(t *testing.T) {
			mem := testutil.CheckedAllocator(t)
			rec := invalidStrings(mem, c.cfg.Schema, bad)
			defer rec.Release()
			values := encodeAll(t, mustEncoder(t, c.cfg), rec)
			for _, v := range values {
				if c.cfg.Name != "avro" && c.cfg.Name != "avro-confluent" && !utf8Valid(v) {
					t.Errorf("encoded %q is not UTF-8", v)
				}
			}
			got := decodeAll(t, mustDecoder(t, c.cfg), mem, values)
			diffRows(t, [][]any{c.want}, got)
		})
	}
}

func utf8Valid(b []byte) bool { return invalidUTF8At(b) < 0 }

// TestEncodeBinaryAsAvroStringInvalidUTF8 checks the one exception: bytes
// of a binary column are not text, so writing ones that are not UTF-8 as
// an Avro string is an error rather than a repair.
func TestEncodeBinaryAsAvroStringInvalidUTF8(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "b", Type: arrow.BinaryTypes.Binary}}, nil)
	enc := mustEncoder(t, Config{Name: "avro", Schema: schema, Options: map[string]string{
		"avro.schema": `{"type":"record","name":"r","fields":[{"name":"b","type":"string"}]}`}})
	bb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	bb.Append([]byte("ok"))
	bb.Append([]byte("\xff"))
	col := bb.NewArray()
	bb.Release()
	defer col.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, 2)
	defer rec.Release()
	rows := 0
	err := enc.Encode(rec, func(int, []byte) error { rows++; return nil })
	if err == nil || !strings.Contains(err.Error(), "invalid UTF-8") || rows != 1 {
		t.Fatalf("Encode: %v after %d rows, want an invalid UTF-8 error at row 1", err, rows)
	}
}
