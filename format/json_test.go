package format

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/internal/testutil"
)

var jsonTestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "small", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "u", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
	{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "addr", Type: arrow.StructOf(
		arrow.Field{Name: "city", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "zip", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	), Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
}, nil)

func TestJSONValues(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	dec := mustDecoder(t, Config{Name: "json", Schema: jsonTestSchema})
	docs := []string{
		`{"id":1}`,
		` {"id" : -9223372036854775808, "small": -128, "u": 4294967295, "name": "a\"b\\c\/d\u00e9\ud83d\ude00\n"} `,
		`{"name":"x","id":"42","small":"7","unknown":{"deep":[1,2,{"x":null}]},"u":null}`,
		`{"id":3,"ts":"2024-02-29T23:59:59.1234Z","price":"12.345","bin":"AAEC/w=="}`,
		`{"id":4,"ts":"2024-02-29 23:59:59","price":-0.005,"addr":{"city":"Oslo"}}`,
		`{"id":5,"ts":"1969-12-31T23:59:59.999+01:00","price":1.5e3,"addr":null,"tags":["a",null,"c"]}`,
		`{"id":6,"ts":-1,"price":99999999.99,"addr":{"zip":7,"city":""},"tags":[]}`,
		`{"id":7,"name":12.50,"small":null}`,
		`{"id":8,"name":{"a": [true]}}`,
	}
	values := make([][]byte, len(docs))
	for i, d := range docs {
		values[i] = []byte(d)
	}
	got := decodeAll(t, dec, mem, values)
	want := [][]any{
		{int64(1), nil, nil, nil, nil, nil, nil, nil, nil},
		{int64(-1 << 63), int64(-128), uint64(4294967295), "a\"b\\c/dé😀\n", nil, nil, nil, nil, nil},
		{int64(42), int64(7), nil, "x", nil, nil, nil, nil, nil},
		{int64(3), nil, nil, nil, int64(1709251199123), "1235", "\x00\x01\x02\xff", nil, nil},
		{int64(4), nil, nil, nil, int64(1709251199000), "-1", nil, []any{"Oslo", nil}, nil},
		{int64(5), nil, nil, nil, int64(-3600001), "150000", nil, nil, []any{"a", nil, "c"}},
		{int64(6), nil, nil, nil, int64(-1), "9999999999", nil, []any{"", int64(7)}, []any{}},
		{int64(7), nil, nil, "12.50", nil, nil, nil, nil, nil},
		{int64(8), nil, nil, `{"a": [true]}`, nil, nil, nil, nil, nil},
	}
	diffRows(t, want, got)
}

// TestJSONErrors checks that a bad record is rejected with its field and
// byte offset, leaves no row behind, and that the builder goes on.
func TestJSONErrors(t *testing.T) {
	cases := []struct {
		doc, field string
		offset     int
		msg        string
	}{
		{``, "", 0, "expected a JSON object, found the end"},
		{`[1]`, "", 0, "expected a JSON object, found an array"},
		{`{"id":1} x`, "", 9, "data after the top-level object"},
		{`{"id":1}{}`, "", 8, "data after the top-level object"},
		{`{"id":1`, "", 7, "expected ',' or '}', found the end"},
		{`{"id":1,}`, "", 8, "expected a string key"},
		{`{"id":01}`, "", 7, "expected ',' or '}'"},
		{`{"id":-}`, "id", 7, "invalid number"},
		{`{"id":1.5}`, "id", 6, "not an integer"},
		{`{"id":1e2}`, "id", 6, "not an integer"},
		{`{"id":9223372036854775808}`, "id", 6, "out of range for int64"},
		{`{"id":1,"small":128}`, "small", 16, "out of range for int8"},
		{`{"id":1,"u":-1}`, "u", 12, "out of range for uint32"},
		{`{"id":true}`, "id", 6, "expected a number, found a boolean"},
		{`{"small":1}`, "id", 10, "missing field"},
		{`{"id":null}`, "id", 6, "null in a non-nullable field"},
		{`{"id":1,"id":2}`, "id", 8, "duplicate field"},
		{`{"id":1,"name":"a` + "\x01" + `"}`, "name", 17, "control character"},
		{`{"id":1,"name":"a\x"}`, "name", 17, "invalid escape"},
		{`{"id":1,"name":"\ud800"}`, "name", 16, "invalid surrogate"},
		{`{"id":1,"name":"\udc00\udc00"}`, "name", 16, "invalid surrogate"},
		{`{"id":1,"name":"ok` + "\xff" + `"}`, "name", 18, "invalid UTF-8"},
		{`{"id":1,"name":"abc`, "name", 19, "unexpected end"},
		{`{"id":1,"ts":"2023-02-29T00:00:00Z"}`, "ts", 14, "not a timestamp"},
		{`{"id":1,"ts":"2023-01-01T24:00:00"}`, "ts", 14, "not a timestamp"},
		{`{"id":1,"ts":1.5}`, "ts", 13, "not an integer"},
		{`{"id":1,"price":123456789.12}`, "price", 16, "out of range for decimal(10, 2)"},
		{`{"id":1,"price":"1.2.3"}`, "price", 17, "not a decimal"},
		{`{"id":1,"bin":"AAE"}`, "bin", 14, "invalid base64"},
		{`{"id":1,"addr":{"zip":1}}`, "addr.city", 23, "missing field"},
		{`{"id":1,"addr":{"city":"x","zip":"z"}}`, "addr.zip", 34, "not an integer"},
		{`{"id":1,"addr":[]}`, "addr", 15, "expected an object, found an array"},
		{`{"id":1,"tags":[1,}`, "tags[]", 18, "expected a value, found '}'"},
		{`{"id":1,"tags":["a"`, "tags", 19, "expected ',' or ']', found the end"},
		{`{"id":1,"tags":{}}`, "tags", 15, "expected an array"},
		{`{"id":1,"x":[1,2}`, "", 16, "expected ',' or ']'"},
		{`{"id":1,"x":tru}`, "", 12, "invalid literal"},
		{`{"id":1,"x":` + strings.Repeat("[", 1100) + strings.Repeat("]", 1100) + `}`, "", -2, "nested too deep"},
	}
	mem := testutil.CheckedAllocator(t)
	dec := mustDecoder(t, Config{Name: "json", Schema: jsonTestSchema})
	b := dec.NewBuilder(mem)
	defer b.Release()
	good := []byte(`{"id":1,"small":2,"u":3,"name":"n","ts":0,"price":1,"bin":"","addr":{"city":"c"},"tags":["t"]}`)
	for i, c := range cases {
		t.Run(fmt.Sprintf("%d", i), func(t *testing.T) {
			before := b.Len()
			err := b.Append([]byte(c.doc))
			wantRecordError(t, err, "json", c.field, c.offset, c.msg)
			if b.Len() != before {
				t.Fatalf("Len %d, want %d", b.Len(), before)
			}
			if err := b.Append(good); err != nil {
				t.Fatalf("good record after a bad one: %v", err)
			}
		})
	}
	rec := b.NewRecord()
	defer rec.Release()
	want := []any{int64(1), int64(2), uint64(3), "n", int64(0), "100", "", []any{"c", nil}, []any{"t"}}
	for i, row := range rowsOf(rec) {
		diffRows(t, [][]any{want}, [][]any{row})
		_ = i
	}
	if int(rec.NumRows()) != len(cases) {
		t.Fatalf("%d rows, want %d", rec.NumRows(), len(cases))
	}
}

func TestJSONFailOnMissingField(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	dec := mustDecoder(t, Config{Name: "json", Schema: jsonTestSchema, Options: map[string]string{"json.fail-on-missing-field": "true"}})
	b := dec.NewBuilder(mem)
	defer b.Release()
	wantRecordError(t, b.Append([]byte(`{"id":1}`)), "json", "small", 7, "missing field")
}

func TestJSONEncodeText(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	dec := mustDecoder(t, Config{Name: "json", Schema: jsonTestSchema})
	doc := `{"id":3,"name":"q\"\u0001é","ts":"2024-02-29T23:59:59.12Z","price":"-0.05","bin":"AAEC/w==","addr":{"city":"x"},"tags":["a",null]}`
	b := dec.NewBuilder(mem)
	defer b.Release()
	if err := b.Append([]byte(doc)); err != nil {
		t.Fatal(err)
	}
	rec := b.NewRecord()
	defer rec.Release()
	for _, c := range []struct {
		opts map[string]string
		want string
	}{
		{nil, `{"id":3,"small":null,"u":null,"name":"q\"\u0001é","ts":"2024-02-29T23:59:59.12Z","price":-0.05,"bin":"AAEC/w==","addr":{"city":"x","zip":null},"tags":["a",null]}`},
		{map[string]string{"json.timestamp-format.standard": "SQL", "json.encode.ignore-null-fields": "true"},
			`{"id":3,"name":"q\"\u0001é","ts":"2024-02-29 23:59:59.12","price":-0.05,"bin":"AAEC/w==","addr":{"city":"x"},"tags":["a",null]}`},
		{map[string]string{"json.timestamp-format.standard": "ISO-8601", "json.encode.ignore-null-fields": "true"},
			`{"id":3,"name":"q\"\u0001é","ts":"2024-02-29T23:59:59.12","price":-0.05,"bin":"AAEC/w==","addr":{"city":"x"},"tags":["a",null]}`},
	} {
		enc := mustEncoder(t, Config{Name: "json", Schema: jsonTestSchema, Options: c.opts})
		got := encodeAll(t, enc, rec)
		if string(got[0]) != c.want {
			t.Errorf("%v:\n got %s\nwant %s", c.opts, got[0], c.want)
		}
	}
}
