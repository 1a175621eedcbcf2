package format

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/testutil"
)

// changeRow is an expected row with its kind.
type changeRow struct {
	kind arrowflow.RowKind
	row  []any
}

// mustChangeDecoder makes a decoder of cfg and checks it is a ChangeDecoder.
func mustChangeDecoder(t testing.TB, cfg Config) ChangeDecoder {
	t.Helper()
	d := mustDecoder(t, cfg)
	cd, ok := d.(ChangeDecoder)
	if !ok {
		t.Fatalf("the %s decoder %T is not a ChangeDecoder", cfg.Name, d)
	}
	return cd
}

// finishChanges takes the builder's batch, checks it is valid and has one
// kind per row, and returns its rows with their kinds.
func finishChanges(t testing.TB, b ChangeBatchBuilder, schema *arrow.Schema) []changeRow {
	t.Helper()
	n := b.Len()
	rec, kinds := b.NewChangeRecord()
	defer rec.Release()
	if err := array.ValidateRecordFull(rec); err != nil {
		t.Fatalf("invalid batch: %v", err)
	}
	if !rec.Schema().Equal(schema) {
		t.Fatalf("schema %s, want %s", rec.Schema(), schema)
	}
	if int(rec.NumRows()) != n || len(kinds) != n {
		t.Fatalf("%d rows and %d kinds, Len was %d", rec.NumRows(), len(kinds), n)
	}
	if b.Len() != 0 {
		t.Fatalf("Len %d after NewChangeRecord", b.Len())
	}
	var out []changeRow
	for i, r := range rowsOf(rec) {
		out = append(out, changeRow{kinds[i], r})
	}
	return out
}

// diffChanges compares rows and kinds.
func diffChanges(t testing.TB, want, got []changeRow) {
	t.Helper()
	var wk, gk []arrowflow.RowKind
	var wr, gr [][]any
	for _, c := range want {
		wk, wr = append(wk, c.kind), append(wr, c.row)
	}
	for _, c := range got {
		gk, gr = append(gk, c.kind), append(gr, c.row)
	}
	if fmt.Sprint(wk) != fmt.Sprint(gk) {
		t.Fatalf("kinds %v, want %v", gk, wk)
	}
	diffRows(t, wr, gr)
}

// appendChanges appends every value, each adding the given number of rows.
func appendChanges(t testing.TB, b ChangeBatchBuilder, values []string, rows []int) {
	t.Helper()
	for i, v := range values {
		n, err := b.AppendChange([]byte(v))
		if err != nil {
			t.Fatalf("event %d %s: %v", i, truncate([]byte(v)), err)
		}
		if n != rows[i] {
			t.Fatalf("event %d %s: %d rows, want %d", i, truncate([]byte(v)), n, rows[i])
		}
	}
}

// The products table of Debezium's and Flink's documentation.
var productsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "description", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "weight", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

func product(id int64, name, desc string, weight float64) []any {
	return []any{id, name, desc, weight}
}

const debeziumSource = `"source":{"version":"1.9.7.Final","connector":"mysql","name":"dbserver1","ts_ms":1589362330000,"snapshot":"false","db":"inventory","sequence":null,"table":"products","server_id":223344,"gtid":null,"file":"mysql-bin.000003","pos":2090,"row":0,"thread":2,"query":null}`

// Events as Debezium's MySQL connector writes them (JSON converter without
// schemas), each checked against its rows: a snapshot read, a create, an
// update (2 rows), a delete and its tombstone, several per batch.
func TestDebeziumJSONDecodeEvents(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	dec := mustChangeDecoder(t, Config{Name: DebeziumJSON, Schema: productsSchema})
	b := dec.NewChangeBuilder(mem)
	defer b.Release()
	events := []string{
		`{"before":null,"after":{"id":101,"name":"scooter","description":"Small 2-wheel scooter","weight":3.14},` + debeziumSource + `,"op":"r","ts_ms":1589355606100,"transaction":null}`,
		`{"before":null,"after":{"id":111,"name":"scooter","description":"Big 2-wheel scooter","weight":5.18},` + debeziumSource + `,"op":"c","ts_ms":1589362330904,"transaction":null}`,
		`{"before":{"id":111,"name":"scooter","description":"Big 2-wheel scooter","weight":5.18},"after":{"id":111,"name":"scooter","description":"Big 2-wheel scooter","weight":5.15},` + debeziumSource + `,"op":"u","ts_ms":1589362330904,"transaction":null}`,
		`{"before":{"id":111,"name":"scooter","description":"Big 2-wheel scooter","weight":5.15},"after":null,` + debeziumSource + `,"op":"d","ts_ms":1589362331000,"transaction":null}`,
		``, // the tombstone after a delete
		` { "op" : "c", "after" : { "weight" : null, "id" : 7 }, "before" : null } `,
	}
	appendChanges(t, b, events, []int{1, 1, 2, 1, 0, 1})
	diffChanges(t, []changeRow{
		{arrowflow.Insert, product(101, "scooter", "Small 2-wheel scooter", 3.14)},
		{arrowflow.Insert, product(111, "scooter", "Big 2-wheel scooter", 5.18)},
		{arrowflow.UpdateBefore, product(111, "scooter", "Big 2-wheel scooter", 5.18)},
		{arrowflow.UpdateAfter, product(111, "scooter", "Big 2-wheel scooter", 5.15)},
		{arrowflow.Delete, product(111, "scooter", "Big 2-wheel scooter", 5.15)},
		{arrowflow.Insert, []any{int64(7), nil, nil, nil}},
	}, finishChanges(t, b, productsSchema))

	// The images in other orders, and images the op does not use (a
	// create with a before, a delete with an after): the rows are the
	// op's, in its order.
	appendChanges(t, b, []string{
		`{"op":"u","after":{"id":2,"name":"new"},"before":{"id":1,"name":"old"}}`,
		`{"after":{"id":4,"name":"new"},"before":{"id":3,"name":"old"},"op":"u"}`,
		`{"before":{"id":5},"after":{"id":6},"op":"c"}`,
		`{"before":{"id":7},"after":{"id":8},"op":"d"}`,
		`{"after":{"id":10},"before":{"id":9},"op":"r"}`,
		`{"after":{"id":12},"before":{"id":11},"op":"d"}`,
	}, []int{2, 2, 1, 1, 1, 1})
	row := func(id int64, name any) []any { return []any{id, name, nil, nil} }
	diffChanges(t, []changeRow{
		{arrowflow.UpdateBefore, row(1, "old")},
		{arrowflow.UpdateAfter, row(2, "new")},
		{arrowflow.UpdateBefore, row(3, "old")},
		{arrowflow.UpdateAfter, row(4, "new")},
		{arrowflow.Insert, row(6, nil)},
		{arrowflow.Delete, row(7, nil)},
		{arrowflow.Insert, row(10, nil)},
		{arrowflow.Delete, row(11, nil)},
	}, finishChanges(t, b, productsSchema))
}

// With debezium-json.schema-include, the envelope is the payload of a
// message written by Kafka Connect's JSON converter with schemas.
func TestDebeziumJSONSchemaInclude(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	schema := `{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},{"type":"string","optional":false,"field":"name"},{"type":"string","optional":true,"field":"description"},{"type":"double","optional":true,"field":"weight"}],"optional":true,"name":"dbserver1.inventory.products.Value","field":"before"},{"type":"string","optional":false,"field":"op"}],"optional":false,"name":"dbserver1.inventory.products.Envelope"}`
	msg := `{"schema":` + schema + `,"payload":{"before":{"id":111,"name":"scooter","description":"Big 2-wheel scooter","weight":5.18},"after":{"id":111,"name":"scooter","description":"Big 2-wheel scooter","weight":5.15},` + debeziumSource + `,"op":"u","ts_ms":1589362330904,"transaction":null}}`
	dec := mustChangeDecoder(t, Config{Name: DebeziumJSON, Schema: productsSchema, Options: map[string]string{"debezium-json.schema-include": "true"}})
	b := dec.NewChangeBuilder(mem)
	defer b.Release()
	appendChanges(t, b, []string{msg, `{"payload":{"op":"d","before":{"id":1}},"schema":{}}`}, []int{2, 1})
	diffChanges(t, []changeRow{
		{arrowflow.UpdateBefore, product(111, "scooter", "Big 2-wheel scooter", 5.18)},
		{arrowflow.UpdateAfter, product(111, "scooter", "Big 2-wheel scooter", 5.15)},
		{arrowflow.Delete, []any{int64(1), nil, nil, nil}},
	}, finishChanges(t, b, productsSchema))

	// Without the option, such a message is an error that says so.
	plain := mustChangeDecoder(t, Config{Name: DebeziumJSON, Schema: productsSchema}).NewChangeBuilder(mem)
	defer plain.Release()
	_, err := plain.AppendChange([]byte(msg))
	wantRecordError(t, err, DebeziumJSON, "op", -1, "debezium-json.schema-include = true")
	// With it, a message without a payload is one too.
	_, err = b.AppendChange([]byte(`{"before":null,"after":{"id":1},"op":"c"}`))
	wantRecordError(t, err, DebeziumJSON, "payload", 0, `no "payload" field`)
}

// Bad events are *RecordErrors naming the field and the offset; the
// builder stays usable and the batch holds exactly the good events' rows.
func TestDebeziumJSONBadEvents(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	dec := mustChangeDecoder(t, Config{Name: DebeziumJSON, Schema: productsSchema})
	b := dec.NewChangeBuilder(mem)
	defer b.Release()
	good := `{"before":{"id":1,"name":"a"},"after":{"id":1,"name":"b"},"op":"u"}`
	for _, c := range []struct {
		value  string
		field  string
		offset int
		msg    string
	}{
		{`{"before":null,"after":{"id":1},"op":"c"`, "", 40, "expected ',' or '}', found the end of the value"},
		{`xyz`, "", 0, "expected a JSON object, found 'x'"},
		{`null`, "", 0, "expected a JSON object, found null"},
		{`{"before":null,"after":{"id":1},"op":"x"}`, "op", 37, `unknown op "x"`},
		{`{"before":null,"after":{"id":1},"op":"create"}`, "op", 37, `unknown op "create"`},
		{`{"before":null,"after":{"id":1}}`, "op", -1, `no "op" field`},
		{`{"before":null,"after":{"id":1},"op":1}`, "op", 37, "expected a string, found a number"},
		{`{"before":null,"after":{"id":1,"name":"b"},"op":"u"}`, "before", 48, "REPLICA IDENTITY FULL"},
		{`{"after":{"id":1,"name":"b"},"op":"u"}`, "before", 34, "REPLICA IDENTITY FULL"},
		{`{"before":null,"after":null,"op":"d"}`, "before", 33, `op "d" (delete) has no "before" row`},
		{`{"before":{"id":1},"after":null,"op":"u"}`, "after", 37, `op "u" (update) has no "after" row`},
		{`{"before":null,"after":null,"op":"c"}`, "after", 33, `op "c" (insert) has no "after" row`},
		{`{"before":null,"after":{"id":1,"weight":"heavy"},"op":"c"}`, "after.weight", 41, "is not a number"},
		{`{"before":null,"after":{"id":"x1"},"op":"c"}`, "after.id", 30, "is not an integer"},
		{`{"before":null,"after":{"name":"x"},"op":"c"}`, "after.id", 34, "missing field"},
		{`{"before":null,"after":{"id":null},"op":"c"}`, "after.id", 29, "null in a non-nullable field"},
		// An error in "before" after "after" is found when settling.
		{`{"after":{"id":1},"before":{"id":true},"op":"u"}`, "before.id", 33, "expected a number, found a boolean"},
		{`{"before":null,"after":[1],"op":"c"}`, "after", 23, "expected an object (the row), found an array"},
		{`{"before":null,"after":{"id":1},"op":"c","op":"c"}`, "op", 41, "duplicate field"},
		{`{"before":null,"after":{"id":1},"after":{"id":1},"op":"c"}`, "after", 32, "duplicate field"},
		{`{"before":null,"after":{"id":1},"op":"c"} {}`, "", 42, "data after the top-level object"},
		{`{"before":null,"after":{"id":1,"name":"` + "\xff" + `"},"op":"c"}`, "after.name", 39, "invalid UTF-8"},
		{`{"before":nul,"after":{"id":1},"op":"c"}`, "before", 10, "invalid literal"},
		{`{"before":null,"after":{"id":1},"source":{"a":[1,}]},"op":"c"}`, "", 49, "expected a value"},
	} {
		// A good event before and after each bad one.
		appendChanges(t, b, []string{good}, []int{2})
		n, err := b.AppendChange([]byte(c.value))
		if n != 0 {
			t.Errorf("%s: %d rows with an error", c.value, n)
		}
		wantRecordError(t, err, DebeziumJSON, c.field, c.offset, c.msg)
		if b.Len() != 2 {
			t.Fatalf("%s: Len %d after a rejected event", c.value, b.Len())
		}
		appendChanges(t, b, []string{good}, []int{2})
		before, after := []any{int64(1), "a", nil, nil}, []any{int64(1), "b", nil, nil}
		diffChanges(t, []changeRow{
			{arrowflow.UpdateBefore, before}, {arrowflow.UpdateAfter, after},
			{arrowflow.UpdateBefore, before}, {arrowflow.UpdateAfter, after},
		}, finishChanges(t, b, productsSchema))
	}
}

// jsonRowValues returns the json format's bytes of each row of rec.
func jsonRowValues(t testing.TB, rec arrow.RecordBatch, opts map[string]string) [][]byte {
	t.Helper()
	return encodeAll(t, mustEncoder(t, Config{Name: "json", Schema: rec.Schema(), Options: opts}), rec)
}

// Round trip: random batches (every type the json format supports, nulls,
// nesting) with random row kinds, written by the debezium-json encoder,
// read back by the decoder: the same rows, retractions as deletes and
// additions as inserts (Flink's encoder writes no "u"). Updates built
// from the json format's rows ({"before": row i, "after": row i+1,
// "op": "u"}) give -U and +U.
func TestDebeziumJSONRoundTrip(t *testing.T) {
	for seed := range 60 {
		rng := rand.New(rand.NewPCG(uint64(seed), 23))
		schema := randomSchema(rng, jsonTypes)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			mem := testutil.CheckedAllocator(t)
			rec := randomBatch(rng, mem, schema, jsonTypes, 2+rng.IntN(40))
			defer rec.Release()
			opts, jsonOpts := map[string]string{}, map[string]string{}
			if seed%3 == 1 {
				opts["debezium-json.timestamp-format.standard"] = "SQL"
				jsonOpts["json.timestamp-format.standard"] = "SQL"
			}
			cfg := Config{Name: DebeziumJSON, Schema: schema, Options: opts}
			enc := mustEncoder(t, cfg).(ChangeEncoder)
			kinds := randomKinds(rng, int(rec.NumRows()))
			var events [][]byte
			if err := enc.EncodeChanges(rec, kinds, func(_ int, v []byte) error {
				events = append(events, bytes.Clone(v))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			dec := mustChangeDecoder(t, cfg)
			b := dec.NewChangeBuilder(mem)
			defer b.Release()
			rows := rowsOf(rec)
			var want []changeRow
			for i, v := range events {
				if _, err := b.AppendChange(v); err != nil {
					t.Fatalf("event %d %s: %v", i, truncate(v), err)
				}
				k := arrowflow.Insert
				if kinds[i].IsRetraction() {
					k = arrowflow.Delete
				}
				want = append(want, changeRow{k, rows[i]})
			}
			diffChanges(t, want, finishChanges(t, b, schema))

			objs := jsonRowValues(t, rec, jsonOpts)
			for i := 0; i+1 < len(objs); i += 2 {
				ev := `{"before":` + string(objs[i]) + `,"after":` + string(objs[i+1]) + `,"op":"u"}`
				if n, err := b.AppendChange([]byte(ev)); err != nil || n != 2 {
					t.Fatalf("update %d: %d rows, %v", i, n, err)
				}
			}
			want = want[:0]
			for i := 0; i+1 < len(rows); i += 2 {
				want = append(want, changeRow{arrowflow.UpdateBefore, rows[i]}, changeRow{arrowflow.UpdateAfter, rows[i+1]})
			}
			diffChanges(t, want, finishChanges(t, b, schema))
		})
	}
}

// The plain Decoder interface: Append takes an event's rows, NewRecord
// drops the kinds; ChangeDecoder's builder hands the kinds over.
func TestDebeziumJSONPlainDecoder(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	dec := mustDecoder(t, Config{Name: DebeziumJSON, Schema: productsSchema})
	b := dec.NewBuilder(mem)
	defer b.Release()
	for _, v := range []string{
		`{"before":{"id":1},"after":{"id":2},"op":"u"}`,
		`{"before":{"id":3},"after":null,"op":"d"}`,
	} {
		if err := b.Append([]byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if b.Len() != 3 {
		t.Fatalf("Len %d, want 3", b.Len())
	}
	rec := b.NewRecord()
	defer rec.Release()
	diffRows(t, [][]any{{int64(1), nil, nil, nil}, {int64(2), nil, nil, nil}, {int64(3), nil, nil, nil}}, rowsOf(rec))
	// Release drops pending rows; the builder is usable after.
	if err := b.Append([]byte(`{"after":{"id":9},"op":"c"}`)); err != nil {
		t.Fatal(err)
	}
	b.Release()
	if b.Len() != 0 {
		t.Fatalf("Len %d after Release", b.Len())
	}
	rec2 := b.NewRecord()
	defer rec2.Release()
	if rec2.NumRows() != 0 {
		t.Fatalf("%d rows after Release", rec2.NumRows())
	}
}

// Decoder options: Flink's are taken or refused with a reason.
func TestDebeziumJSONDecoderOptions(t *testing.T) {
	for _, c := range []struct {
		opts map[string]string
		msg  string // "" when accepted
	}{
		{map[string]string{"debezium-json.schema-include": "true", "debezium-json.timestamp-format.standard": "ISO-8601"}, ""},
		{map[string]string{"debezium-json.map-null-key.mode": "DROP", "debezium-json.map-null-key.literal": "x", "debezium-json.encode.decimal-as-plain-number": "true"}, ""},
		{map[string]string{"debezium-json.schema-include": "yes"}, `"yes" is not true or false`},
		{map[string]string{"debezium-json.encode.decimal-as-plain-number": "1.5"}, `debezium-json.encode.decimal-as-plain-number: "1.5" is not true or false`},
		{map[string]string{"debezium-json.ignore-parse-errors": "true"}, "bad records are the connector's policy"},
		{map[string]string{"debezium-json.fail-on-missing-field": "true"}, "unknown option debezium-json.fail-on-missing-field"},
	} {
		_, err := NewDecoder(context.Background(), Config{Name: DebeziumJSON, Schema: productsSchema, Options: c.opts})
		if c.msg == "" && err != nil || c.msg != "" && (err == nil || !strings.Contains(err.Error(), c.msg)) {
			t.Errorf("%v: error %v, want %q", c.opts, err, c.msg)
		}
	}
	if _, err := NewDecoder(context.Background(), Config{Name: DebeziumJSON}); err == nil || !strings.Contains(err.Error(), "a schema is required") {
		t.Errorf("no schema: %v", err)
	}
	bad := arrow.NewSchema([]arrow.Field{{Name: "d", Type: arrow.FixedWidthTypes.Duration_s}}, nil)
	if _, err := NewDecoder(context.Background(), Config{Name: DebeziumJSON, Schema: bad}); err == nil || !strings.Contains(err.Error(), "debezium-json: ") {
		t.Errorf("unsupported type: %v", err)
	}
	// Writing a schema is refused, as by Flink.
	if _, err := NewEncoder(context.Background(), Config{Name: DebeziumJSON, Schema: productsSchema, Options: map[string]string{"debezium-json.schema-include": "true"}}); err == nil || !strings.Contains(err.Error(), "supported for reading") {
		t.Errorf("schema-include for writing: %v", err)
	}
}

// Decoding allocates nothing per event in steady state (the row kinds of
// a batch are one slice when it is taken).
func TestDebeziumJSONDecodeAllocs(t *testing.T) {
	dec := mustChangeDecoder(t, Config{Name: DebeziumJSON, Schema: productsSchema})
	b := dec.NewChangeBuilder(memory.DefaultAllocator)
	defer b.Release()
	events := [][]byte{
		[]byte(`{"before":null,"after":{"id":111,"name":"scooter","description":"Big 2-wheel scooter","weight":5.18},` + debeziumSource + `,"op":"c"}`),
		[]byte(`{"before":{"id":111,"name":"scooter","description":"Big","weight":5.18},"after":{"id":111,"name":"scooter","description":"Big","weight":5.15},"op":"u"}`),
		[]byte(`{"before":{"id":111,"name":"scooter","description":"Big","weight":5.15},"after":null,"op":"d"}`),
	}
	run := func() {
		for range 100 {
			for _, v := range events {
				if _, err := b.AppendChange(v); err != nil {
					t.Fatal(err)
				}
			}
		}
		b.Release()
	}
	run()
	if a := testing.AllocsPerRun(5, run); a > 0 {
		t.Errorf("%v allocations per 300 events", a)
	}

	// canal-json and maxwell-json, updates (merged old rows) included.
	for _, c := range []struct {
		name   string
		opts   map[string]string
		events []string
	}{
		{CanalJSON, map[string]string{"canal-json.database.include": "inv.*"}, []string{
			canalUpdateSample,
			canalEvent("INSERT", "inventory", "products", `[{"id":"1","name":"a"},{"id":"2","name":"b"}]`, "null"),
			canalEvent("DELETE", "inventory", "products", `[{"id":"1","name":"a"}]`, "null"),
		}},
		{MaxwellJSON, nil, []string{
			maxwellEvent("insert", `{"id":111,"name":"scooter","description":"Big 2-wheel scooter","weight":5.15}`, ""),
			maxwellEvent("update", `{"id":111,"name":"scooter","description":"Big 2-wheel scooter","weight":5.18}`, `{"weight":5.15,"other":1}`),
			maxwellEvent("delete", `{"id":111,"name":"scooter","description":"Big 2-wheel scooter","weight":5.18}`, ""),
		}},
	} {
		b := mustChangeDecoder(t, Config{Name: c.name, Schema: productsSchema, Options: c.opts}).NewChangeBuilder(memory.DefaultAllocator)
		var values [][]byte
		for _, v := range c.events {
			values = append(values, []byte(v))
		}
		run := func() {
			for range 100 {
				for _, v := range values {
					if _, err := b.AppendChange(v); err != nil {
						t.Fatal(err)
					}
				}
			}
			b.Release()
		}
		run()
		if a := testing.AllocsPerRun(5, run); a > 0 {
			t.Errorf("%s: %v allocations per 300 events", c.name, a)
		}
	}
}
