package format

import (
	"strings"
	"testing"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/testutil"
)

// withMetadata makes a decoder of cfg reading the metadata keys.
func withMetadata(t testing.TB, cfg Config, keys ...string) ChangeDecoder {
	t.Helper()
	md, ok := mustDecoder(t, cfg).(MetadataDecoder)
	if !ok {
		t.Fatalf("the %s decoder is not a MetadataDecoder", cfg.Name)
	}
	d, err := md.WithMetadata(keys...)
	if err != nil {
		t.Fatal(err)
	}
	want := cfg.Schema.NumFields() + len(keys)
	if d.Schema().NumFields() != want {
		t.Fatalf("schema %s, want %d columns", d.Schema(), want)
	}
	for i, k := range keys {
		if f := d.Schema().Field(cfg.Schema.NumFields() + i); f.Name != k || !f.Nullable {
			t.Fatalf("metadata column %d: %s", i, f)
		}
	}
	return d
}

// Debezium's metadata, on every row of an event (an update's two rows),
// null where the event lacks it; with schema-include from the payload,
// and the schema as its JSON text.
func TestDebeziumJSONMetadata(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	keys := []string{"source.table", "ingestion-timestamp", "source.timestamp", "source.database", "source.schema", "schema", "source.properties"}
	dec := withMetadata(t, Config{Name: DebeziumJSON, Schema: productsSchema}, keys...)
	b := dec.NewChangeBuilder(mem)
	defer b.Release()
	appendChanges(t, b, []string{
		`{"before":{"id":1},"after":{"id":2},"source":{"version":"1.9.7.Final","ts_ms":1589362330000,"db":"inventory","sequence":null,"table":"products","server_id":223344,"snapshot":false},"op":"u","ts_ms":1589362330904}`,
		`{"op":"c","after":{"id":3}}`,
		`{"op":"d","before":{"id":4},"source":{"connector":"mongodb","db":"shop","collection":"orders","ts_ms":5},"ts_ms":null}`,
		`{"op":"r","after":{"id":5},"source":null,"ts_ms":7}`,
	}, []int{2, 1, 1, 1})
	props := []any{
		[2]any{"version", "1.9.7.Final"}, [2]any{"ts_ms", "1589362330000"}, [2]any{"db", "inventory"}, [2]any{"sequence", nil},
		[2]any{"table", "products"}, [2]any{"server_id", "223344"}, [2]any{"snapshot", "false"},
	}
	meta := []any{"products", int64(1589362330904), int64(1589362330000), "inventory", nil, nil, props}
	row := func(id int64, meta []any) []any { return append([]any{id, nil, nil, nil}, meta...) }
	diffChanges(t, []changeRow{
		{arrowflow.UpdateBefore, row(1, meta)},
		{arrowflow.UpdateAfter, row(2, meta)},
		{arrowflow.Insert, row(3, []any{nil, nil, nil, nil, nil, nil, nil})},
		{arrowflow.Delete, row(4, []any{"orders", nil, int64(5), "shop", nil, nil, []any{
			[2]any{"connector", "mongodb"}, [2]any{"db", "shop"}, [2]any{"collection", "orders"}, [2]any{"ts_ms", "5"}}})},
		{arrowflow.Insert, row(5, []any{nil, int64(7), nil, nil, nil, nil, nil})},
	}, finishChanges(t, b, dec.Schema()))

	// A bad metadata value rejects the event, naming it.
	_, err := b.AppendChange([]byte(`{"op":"c","after":{"id":3},"ts_ms":"soon"}`))
	wantRecordError(t, err, DebeziumJSON, "ts_ms", 35, "expected a number")
	_, err = b.AppendChange([]byte(`{"op":"c","after":{"id":3},"source":[]}`))
	wantRecordError(t, err, DebeziumJSON, "source.table", 36, "expected an object, found an array")
	if b.Len() != 0 {
		t.Fatalf("Len %d after rejected events", b.Len())
	}

	inc := withMetadata(t, Config{Name: DebeziumJSON, Schema: productsSchema, Options: map[string]string{"debezium-json.schema-include": "true"}}, "schema", "source.database", "ingestion-timestamp")
	bi := inc.NewChangeBuilder(mem)
	defer bi.Release()
	appendChanges(t, bi, []string{
		`{"schema":{"type":"struct","optional":false},"payload":{"op":"c","after":{"id":1},"source":{"db":"inventory"},"ts_ms":9},"ts_ms":10}`,
	}, []int{1})
	diffChanges(t, []changeRow{
		{arrowflow.Insert, row(1, []any{`{"type":"struct","optional":false}`, "inventory", int64(9)})},
	}, finishChanges(t, bi, inc.Schema()))

	md := mustDecoder(t, Config{Name: DebeziumJSON, Schema: productsSchema}).(MetadataDecoder)
	if _, err := md.WithMetadata("source.lsn"); err == nil || !strings.Contains(err.Error(), `unknown metadata key "source.lsn"`) || !strings.Contains(err.Error(), "source.properties") {
		t.Errorf("unknown key: %v", err)
	}
	var got []string
	for _, f := range md.ReadableMetadata() {
		got = append(got, f.Name+" "+f.Type.String())
	}
	if want := "schema utf8, ingestion-timestamp timestamp[ms, tz=UTC], source.timestamp timestamp[ms, tz=UTC], source.database utf8, source.schema utf8, source.table utf8, source.properties map<utf8, utf8, items_nullable>"; strings.Join(got, ", ") != want {
		t.Errorf("ReadableMetadata %s", strings.Join(got, ", "))
	}
}

// Canal's and Maxwell's metadata (Maxwell's ts is in seconds).
func TestCanalMaxwellMetadata(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	canal := withMetadata(t, Config{Name: CanalJSON, Schema: productsSchema, Options: map[string]string{"canal-json.database.include": "inventory"}},
		"database", "table", "sql-type", "pk-names", "ingestion-timestamp", "event-timestamp")
	b := canal.NewChangeBuilder(mem)
	defer b.Release()
	appendChanges(t, b, []string{canalUpdateSample, `{"data":[{"id":"1"}],"database":"inventory","type":"DELETE"}`}, []int{2, 1})
	meta := []any{"inventory", "products", []any{[2]any{"id", int64(4)}, [2]any{"name", int64(12)}, [2]any{"description", int64(12)}, [2]any{"weight", int64(7)}},
		[]any{"id"}, int64(1589373560798), int64(1589373560000)}
	diffChanges(t, []changeRow{
		{arrowflow.UpdateBefore, append(product(111, "scooter", "Big 2-wheel scooter", 5.15), meta...)},
		{arrowflow.UpdateAfter, append(product(111, "scooter", "Big 2-wheel scooter", 5.18), meta...)},
		{arrowflow.Delete, []any{int64(1), nil, nil, nil, "inventory", nil, nil, nil, nil, nil}},
	}, finishChanges(t, b, canal.Schema()))

	mx := withMetadata(t, Config{Name: MaxwellJSON, Schema: productsSchema}, "ingestion-timestamp", "primary-key-columns", "table", "database")
	bm := mx.NewChangeBuilder(mem)
	defer bm.Release()
	appendChanges(t, bm, []string{maxwellEvent("insert", `{"id":111}`, "")}, []int{1})
	diffChanges(t, []changeRow{
		{arrowflow.Insert, []any{int64(111), nil, nil, nil, int64(1477053217000), []any{"id"}, "products", "inventory"}},
	}, finishChanges(t, bm, mx.Schema()))
	_, err := bm.AppendChange([]byte(`{"type":"insert","data":{"id":1},"ts":1e3}`))
	wantRecordError(t, err, MaxwellJSON, "ts", 38, "is not an integer")

	// A decoder without metadata keeps its schema; WithMetadata leaves
	// the original decoder as it was.
	plain := mustDecoder(t, Config{Name: MaxwellJSON, Schema: productsSchema})
	if _, err := plain.(MetadataDecoder).WithMetadata("table"); err != nil {
		t.Fatal(err)
	}
	if !plain.Schema().Equal(productsSchema) {
		t.Fatalf("schema changed: %s", plain.Schema())
	}
	if _, ok := mustDecoder(t, Config{Name: "json", Schema: productsSchema}).(MetadataDecoder); ok {
		t.Fatal("the json decoder claims metadata")
	}
}
