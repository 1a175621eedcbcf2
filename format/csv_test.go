package format

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/internal/testutil"
)

var csvTestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int32},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Second}, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
}, nil)

func TestCSVValues(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	dec := mustDecoder(t, Config{Name: "csv", Schema: csvTestSchema})
	lines := []string{
		"1,plain,2024-01-02 03:04:05,true",
		"2,\"quoted, with \"\"quotes\"\"\nand a line\", 2024-01-02T03:04:05Z ,false\n",
		"3,,,\r\n",
		"4,\"\",60,TRUE",
		" 5 ,  spaced  ,,",
	}
	var values [][]byte
	for _, l := range lines {
		values = append(values, []byte(l))
	}
	got := decodeAll(t, dec, mem, values)
	want := [][]any{
		{int64(1), "plain", int64(1704164645), true},
		{int64(2), "quoted, with \"quotes\"\nand a line", int64(1704164645), false},
		{int64(3), nil, nil, nil},
		{int64(4), "", int64(60), true},
		{int64(5), "  spaced  ", nil, nil},
	}
	diffRows(t, want, got)
}

func TestCSVErrors(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	b := mustDecoder(t, Config{Name: "csv", Schema: csvTestSchema}).NewBuilder(mem)
	defer b.Release()
	good := []byte("9,x,0,false")
	for _, c := range []struct {
		line   string
		field  string
		offset int
		msg    string
	}{
		{"", "id", 0, "null in a non-nullable field"},
		{"1", "name", 1, "missing field"},
		{"1,a,0,true,extra", "", 10, "more fields than columns"},
		{"x,a,0,true", "id", 0, `"x" is not an integer`},
		{"99999999999,a,0,true", "id", 0, "out of range for int32"},
		{"1,\"open,0,true", "name", 2, "unterminated quoted field"},
		{"1,\"a\"b,0,true", "name", 5, "data after a closing quote"},
		{"1,a,yesterday,true", "at", 4, "not a timestamp"},
		{"1,a,0,maybe", "ok", 6, "not a boolean"},
		{"1,a,0,true\nsecond", "", 10, "more than one line"},
		{"1,a\xff,0,true", "name", 3, "invalid UTF-8"},
	} {
		before := b.Len()
		wantRecordError(t, b.Append([]byte(c.line)), "csv", c.field, c.offset, c.msg)
		if b.Len() != before {
			t.Fatalf("%q: Len %d, want %d", c.line, b.Len(), before)
		}
		if err := b.Append(good); err != nil {
			t.Fatalf("good line after %q: %v", c.line, err)
		}
	}
}

func TestCSVEncodeText(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	dec := mustDecoder(t, Config{Name: "csv", Schema: csvTestSchema})
	b := dec.NewBuilder(mem)
	defer b.Release()
	for _, l := range []string{`1,"a,b",1704164645,true`, `2,"",,`, `3,,-1,false`} {
		if err := b.Append([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	rec := b.NewRecord()
	defer rec.Release()
	got := encodeAll(t, mustEncoder(t, Config{Name: "csv", Schema: csvTestSchema}), rec)
	want := []string{`1,"a,b",2024-01-02 03:04:05,true`, `2,"",,`, `3,,1969-12-31 23:59:59,false`}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("row %d: %s, want %s", i, got[i], want[i])
		}
	}
}

func TestOptionErrors(t *testing.T) {
	ctx := context.Background()
	schema := csvTestSchema
	for _, c := range []struct {
		cfg Config
		msg string
	}{
		{Config{Name: "xml", Schema: schema}, `unknown format "xml" (known: avro, avro-confluent, canal-json, csv, debezium-avro-confluent, debezium-json, json, maxwell-json, raw)`},
		{Config{Name: "json"}, "json: a schema is required"},
		{Config{Name: "json", Schema: schema, Options: map[string]string{"json.fail-on-missing-field": "maybe"}}, `"maybe" is not true or false`},
		{Config{Name: "json", Schema: schema, Options: map[string]string{"json.ignore-parse-errors": "true"}}, "bad records are the connector's policy"},
		{Config{Name: "json", Schema: schema, Options: map[string]string{"json.timestamp-format.standard": "UNIX"}}, `"UNIX" is not SQL, ISO-8601 or RFC-3339`},
		{Config{Name: "json", Schema: schema, Options: map[string]string{"value.json.x": "1", "json.y": "2"}}, "json: unknown option json.y, value.json.x"},
		{Config{Name: "csv", Schema: schema, Options: map[string]string{"csv.field-delimiter": ";;"}}, "must be one ASCII character"},
		{Config{Name: "csv", Schema: schema, Options: map[string]string{"csv.allow-comments": "true"}}, "is not supported: every value is one row"},
		{Config{Name: "csv", Schema: schema, Options: map[string]string{"csv.quote-character": ","}}, "the quote character and the field delimiter are the same"},
		{Config{Name: "csv", Schema: arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int8)}}, nil)}, "column l: type list<item: int8, nullable> is not supported by csv"},
		{Config{Name: "raw", Schema: schema}, "raw: the schema must have one column, not 4"},
		{Config{Name: "raw", Options: map[string]string{"raw.charset": "latin1"}}, `"latin1" is not supported`},
		{Config{Name: "avro"}, "avro: a schema or the option avro.schema is required"},
		{Config{Name: "avro", Options: map[string]string{"avro.schema": `{"type":"record"}`}}, "invalid Avro schema"},
	} {
		_, err := NewDecoder(ctx, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s %v: error %v, want %q", c.cfg.Name, c.cfg.Options, err, c.msg)
		}
	}
	if got := strings.Join(Names(), ","); got != "avro,avro-confluent,canal-json,csv,debezium-avro-confluent,debezium-json,json,maxwell-json,raw" {
		t.Errorf("Names %s", got)
	}
}
