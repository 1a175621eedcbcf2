package format

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format/registry"
	"github.com/weirflow/weir/internal/testutil"
)

// debeziumEnvelope is the envelope schema Debezium's Avro converter
// registers for a table whose row record is row (its value schema):
// before and after (the latter referring to the row record by name),
// the connector's source record, op, ts_ms and the transaction block.
func debeziumEnvelope(row, rowName string) string {
	return `{"type":"record","name":"Envelope","namespace":"dbserver1.inventory.products","fields":[` +
		`{"name":"before","type":["null",` + row + `],"default":null},` +
		`{"name":"after","type":["null","` + rowName + `"],"default":null},` +
		`{"name":"source","type":{"type":"record","name":"Source","namespace":"io.debezium.connector.mysql","fields":[` +
		`{"name":"version","type":"string"},{"name":"connector","type":"string"},{"name":"name","type":"string"},` +
		`{"name":"ts_ms","type":"long"},` +
		`{"name":"snapshot","type":[{"type":"string","connect.version":1,"connect.parameters":{"allowed":"true,last,false,incremental"},"connect.default":"false","connect.name":"io.debezium.data.Enum"},"null"],"default":"false"},` +
		`{"name":"db","type":"string"},{"name":"sequence","type":["null","string"],"default":null},` +
		`{"name":"table","type":["null","string"],"default":null},{"name":"server_id","type":"long"},` +
		`{"name":"gtid","type":["null","string"],"default":null},{"name":"file","type":"string"},` +
		`{"name":"pos","type":"long"},{"name":"row","type":"int"},` +
		`{"name":"thread","type":["null","long"],"default":null},{"name":"query","type":["null","string"],"default":null}],` +
		`"connect.name":"io.debezium.connector.mysql.Source"}},` +
		`{"name":"op","type":"string"},` +
		`{"name":"ts_ms","type":["null","long"],"default":null},` +
		`{"name":"transaction","type":["null",{"type":"record","name":"ConnectDefault","namespace":"io.confluent.connect.avro","fields":[` +
		`{"name":"id","type":"string"},{"name":"total_order","type":"long"},{"name":"data_collection_order","type":"long"}]}],"default":null}],` +
		`"connect.name":"dbserver1.inventory.products.Envelope"}`
}

// The products table's value record as Debezium's MySQL connector writes it.
const productsValue = `{"type":"record","name":"Value","namespace":"dbserver1.inventory.products","fields":[` +
	`{"name":"id","type":"long"},{"name":"name","type":["null","string"],"default":null},` +
	`{"name":"description","type":["null","string"],"default":null},{"name":"weight","type":["null","double"],"default":null}],` +
	`"connect.name":"dbserver1.inventory.products.Value"}`

func debeziumSourceValue(rng *rand.Rand) map[string]any {
	return map[string]any{
		"version": "1.9.7.Final", "connector": "mysql", "name": "dbserver1", "ts_ms": int64(1589362330000),
		"snapshot": map[string]any{"string": "false"}, "db": "inventory", "sequence": nil,
		"table": map[string]any{"string": "products"}, "server_id": int64(223344), "gtid": nil,
		"file": "mysql-bin.000003", "pos": int64(rng.IntN(1 << 20)), "row": 0, "thread": nil, "query": nil,
	}
}

// marshalEvent writes a Debezium event with hamba/avro in the Confluent
// wire format.
func marshalEvent(t testing.TB, w avro.Schema, id int, ev map[string]any) []byte {
	t.Helper()
	// A configuration of its own: hamba caches encoders by schema
	// fingerprint, which for a named reference is the name's, and the
	// tests' schemas reuse names.
	b, err := avro.Config{}.Freeze().Marshal(w, ev)
	if err != nil {
		t.Fatalf("hamba marshal: %v", err)
	}
	return append(confluentPrefix(id), b...)
}

// mustParseAvro parses with a cache of its own: the tests' schemas reuse
// record names.
func mustParseAvro(t testing.TB, text string) avro.Schema {
	t.Helper()
	w, err := parseAvroSchema(text)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func register(t testing.TB, cl *sr.Client, subject, text string) int {
	t.Helper()
	id, err := cl.RegisterSchema(context.Background(), subject, sr.Schema{Schema: text}, -1, -1)
	if err != nil {
		t.Fatalf("registering under %s: %v", subject, err)
	}
	return id
}

// Events of the products table as Debezium's MySQL connector and Avro
// converter write them (hamba/avro encoding them with Debezium's envelope
// schema): a snapshot read, a create, an update (2 rows), a delete and its
// tombstone, read with and without a given schema.
func TestDebeziumAvroDebeziumEvents(t *testing.T) {
	url, cl := newRegistry(t)
	text := debeziumEnvelope(productsValue, "Value")
	w := mustParseAvro(t, text)
	id := register(t, cl, "dbserver1.inventory.products-value", text)
	rng := rand.New(rand.NewPCG(1, 2))
	row := func(id int64, name, desc string, weight float64) map[string]any {
		return map[string]any{"id": id, "name": map[string]any{"string": name},
			"description": map[string]any{"string": desc}, "weight": map[string]any{"double": weight}}
	}
	img := func(r map[string]any) any { return map[string]any{"dbserver1.inventory.products.Value": r} }
	ev := func(op string, before, after map[string]any) []byte {
		e := map[string]any{"before": nil, "after": nil, "source": debeziumSourceValue(rng), "op": op,
			"ts_ms": map[string]any{"long": int64(1589362330904)}, "transaction": nil}
		if before != nil {
			e["before"] = img(before)
		}
		if after != nil {
			e["after"] = img(after)
		}
		return marshalEvent(t, w, id, e)
	}
	scooter := row(101, "scooter", "Small 2-wheel scooter", 3.14)
	scooter2 := row(101, "scooter", "Small 2-wheel scooter", 5.18)
	values := [][]byte{
		ev("r", nil, scooter),
		ev("c", nil, row(102, "car battery", "12V car battery", 8.1)),
		ev("u", scooter, scooter2),
		ev("d", scooter2, nil),
		nil, // the tombstone
	}
	counts := []int{1, 1, 2, 1, 0}
	want := []changeRow{
		{arrowflow.Insert, product(101, "scooter", "Small 2-wheel scooter", 3.14)},
		{arrowflow.Insert, product(102, "car battery", "12V car battery", 8.1)},
		{arrowflow.UpdateBefore, product(101, "scooter", "Small 2-wheel scooter", 3.14)},
		{arrowflow.UpdateAfter, product(101, "scooter", "Small 2-wheel scooter", 5.18)},
		{arrowflow.Delete, product(101, "scooter", "Small 2-wheel scooter", 5.18)},
	}
	mem := testutil.CheckedAllocator(t)
	for _, cfg := range []Config{
		{Name: DebeziumAvroConfluent, Schema: productsSchema, Registry: cl},
		// The columns from the subject's latest envelope, with a client the
		// decoder builds itself.
		{Name: DebeziumAvroConfluent, Options: map[string]string{
			"debezium-avro-confluent.url": url, "debezium-avro-confluent.subject": "dbserver1.inventory.products-value"}},
		// The columns from the schema option.
		{Name: DebeziumAvroConfluent, Registry: cl, Options: map[string]string{"debezium-avro-confluent.schema": text}},
	} {
		dec := mustChangeDecoder(t, cfg)
		if !dec.Schema().Equal(productsSchema) {
			t.Fatalf("schema %s, want %s", dec.Schema(), productsSchema)
		}
		b := dec.NewChangeBuilder(mem)
		for i, v := range values {
			n, err := b.AppendChange(v)
			if err != nil || n != counts[i] {
				t.Fatalf("event %d: %d rows, %v; want %d", i, n, err, counts[i])
			}
		}
		diffChanges(t, want, finishChanges(t, b, productsSchema))
		b.Release()
		closeIdle(dec.(*debeziumAvroDecoder).conf)
	}

	// As a plain Decoder: the rows without their kinds.
	b := mustDecoder(t, Config{Name: DebeziumAvroConfluent, Schema: productsSchema, Registry: cl}).NewBuilder(mem)
	defer b.Release()
	for _, v := range values {
		if err := b.Append(v); err != nil {
			t.Fatal(err)
		}
	}
	rec := b.NewRecord()
	defer rec.Release()
	var rows [][]any
	for _, c := range want {
		rows = append(rows, c.row)
	}
	diffRows(t, rows, rowsOf(rec))
}

// TestDebeziumAvroHambaOracle decodes random events of random tables,
// written by hamba/avro with Debezium's envelope, every row type
// avro-confluent supports, and checks the rows against hamba's own
// unmarshalling of the images and the kinds against the ops.
func TestDebeziumAvroHambaOracle(t *testing.T) {
	_, cl := newRegistry(t)
	for seed := range 60 {
		rng := rand.New(rand.NewPCG(uint64(seed), 23))
		schema := randomSchema(rng, avroTypes)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rowText, err := AvroSchema(schema)
			if err != nil {
				t.Fatal(err)
			}
			// A name of the seed's own: hamba caches its encoders by
			// schema fingerprint, which for the reference (after) is the
			// name's.
			rowName := fmt.Sprintf("db.seed%d.Value", seed)
			rowText = strings.ReplaceAll(rowText, avroRecordName, rowName)
			text := debeziumEnvelope(rowText, rowName)
			w := mustParseAvro(t, text)
			rowSchema := mustParseAvro(t, rowText).(*avro.RecordSchema)
			id := register(t, cl, fmt.Sprintf("oracle-%d-value", seed), text)
			randomRow := func() map[string]any {
				v := map[string]any{}
				for i, f := range schema.Fields() {
					v[f.Name] = hambaValue(rng, rowSchema.Fields()[i].Type(), f.Type)
				}
				return v
			}
			var values [][]byte
			var want []changeRow
			for range 30 {
				op := []string{"c", "r", "u", "d"}[rng.IntN(4)]
				before, after := randomRow(), randomRow()
				e := map[string]any{"before": nil, "after": nil, "source": debeziumSourceValue(rng), "op": op, "ts_ms": nil, "transaction": nil}
				if op == "u" || op == "d" {
					e["before"] = map[string]any{rowName: before}
				}
				if op != "d" {
					e["after"] = map[string]any{rowName: after}
				}
				v := marshalEvent(t, w, id, e)
				values = append(values, v)
				var back map[string]any
				if err := avro.Unmarshal(w, v[5:], &back); err != nil {
					t.Fatalf("hamba unmarshal: %v", err)
				}
				image := func(name string) []any {
					m := back[name].(map[string]any)[rowName].(map[string]any)
					row := make([]any, len(schema.Fields()))
					for i, f := range schema.Fields() {
						row[i] = fromHamba(m[f.Name], rowSchema.Fields()[i].Type(), f.Type)
					}
					return row
				}
				switch op {
				case "c", "r":
					want = append(want, changeRow{arrowflow.Insert, image("after")})
				case "u":
					want = append(want, changeRow{arrowflow.UpdateBefore, image("before")}, changeRow{arrowflow.UpdateAfter, image("after")})
				case "d":
					want = append(want, changeRow{arrowflow.Delete, image("before")})
				}
			}
			mem := testutil.CheckedAllocator(t)
			b := mustChangeDecoder(t, Config{Name: DebeziumAvroConfluent, Schema: schema, Registry: cl}).NewChangeBuilder(mem)
			defer b.Release()
			for i, v := range values {
				if _, err := b.AppendChange(v); err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
			}
			got := finishChanges(t, b, schema)
			for _, c := range got {
				for j, f := range schema.Fields() {
					c.row[j] = normalizeMaps(c.row[j], f.Type)
				}
			}
			diffChanges(t, want, got)
		})
	}
}

// Every row of random batches (every type avro-confluent supports, nulls,
// nesting, sliced batches) becomes one event, checked by hamba/avro with
// the registered schema ({before: null, after: row, op: "c"} for Insert
// and UpdateAfter, {before: row, after: null, op: "d"} for UpdateBefore
// and Delete), and decodes back to the row with kind Insert or Delete.
func TestDebeziumAvroRoundTrip(t *testing.T) {
	_, cl := newRegistry(t)
	for seed := range 60 {
		rng := rand.New(rand.NewPCG(uint64(seed), 29))
		schema := randomSchema(rng, avroTypes)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			mem := testutil.CheckedAllocator(t)
			rec := randomBatch(rng, mem, schema, avroTypes, 1+rng.IntN(30))
			defer rec.Release()
			if seed%3 == 1 && rec.NumRows() > 2 {
				sliced := rec.NewSlice(1, rec.NumRows()-1)
				defer sliced.Release()
				rec = sliced
			}
			subject := fmt.Sprintf("rt-%d-value", seed)
			cfg := Config{Name: DebeziumAvroConfluent, Schema: schema, Registry: cl,
				Options: map[string]string{"debezium-avro-confluent.subject": subject}}
			ce, ok := mustEncoder(t, cfg).(ChangeEncoder)
			if !ok {
				t.Fatal("not a ChangeEncoder")
			}
			kinds := randomKinds(rng, int(rec.NumRows()))
			if seed%5 == 0 {
				kinds = nil
			}
			var values [][]byte
			if err := ce.EncodeChanges(rec, kinds, func(row int, v []byte) error {
				if row != len(values) {
					t.Fatalf("row %d, want %d", row, len(values))
				}
				values = append(values, bytes.Clone(v))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			text, err := AvroSchema(debeziumAvroEnvelope(schema))
			if err != nil {
				t.Fatal(err)
			}
			registered, err := cl.LookupSchema(context.Background(), subject, sr.Schema{Schema: text})
			if err != nil {
				t.Fatal(err)
			}
			w := mustParseAvro(t, text)
			var want []changeRow
			for i, row := range rowsOf(rec) {
				v := values[i]
				if v[0] != 0 || int(uint32(v[1])<<24|uint32(v[2])<<16|uint32(v[3])<<8|uint32(v[4])) != registered.ID {
					t.Fatalf("row %d: header % x, want id %d", i, v[:5], registered.ID)
				}
				var ev map[string]any
				if err := avro.Unmarshal(w, v[5:], &ev); err != nil {
					t.Fatalf("row %d: hamba: %v", i, err)
				}
				add := kinds == nil || kinds[i] == arrowflow.Insert || kinds[i] == arrowflow.UpdateAfter
				// hamba reads a ["null", T] union as T.
				op := map[string]any{"string": ev["op"]}
				switch {
				case add && (ev["before"] != nil || ev["after"] == nil || op["string"] != "c"):
					t.Fatalf("row %d (insert): event %v", i, ev)
				case !add && (ev["before"] == nil || ev["after"] != nil || op["string"] != "d"):
					t.Fatalf("row %d (delete): event %v", i, ev)
				}
				k := arrowflow.Insert
				if !add {
					k = arrowflow.Delete
				}
				want = append(want, changeRow{k, row})
			}
			b := mustChangeDecoder(t, cfg).NewChangeBuilder(mem)
			defer b.Release()
			for i, v := range values {
				if n, err := b.AppendChange(v); err != nil || n != 1 {
					t.Fatalf("event %d: %d rows, %v", i, n, err)
				}
			}
			diffChanges(t, want, finishChanges(t, b, schema))
		})
	}
}

// TestDebeziumAvroSchemaText checks the envelope schema the encoder
// registers: Flink's, from AvroSchemaConverter of ROW<before ROW<...>,
// after ROW<...>, op STRING>, with its record names.
func TestDebeziumAvroSchemaText(t *testing.T) {
	_, cl := newRegistry(t)
	mustEncoder(t, Config{Name: DebeziumAvroConfluent, Schema: productsSchema, Registry: cl,
		Options: map[string]string{"debezium-avro-confluent.subject": "products-value"}})
	ss, err := cl.SchemaByVersion(context.Background(), "products-value", -1)
	if err != nil {
		t.Fatal(err)
	}
	row := func(name string) string {
		return `{"type":"record","name":"org.apache.flink.avro.generated.record_` + name + `","fields":[` +
			`{"name":"id","type":"long"},{"name":"name","type":["null","string"],"default":null},` +
			`{"name":"description","type":["null","string"],"default":null},{"name":"weight","type":["null","double"],"default":null}]}`
	}
	want := `{"type":"record","name":"org.apache.flink.avro.generated.record","fields":[` +
		`{"name":"before","type":["null",` + row("before") + `],"default":null},` +
		`{"name":"after","type":["null",` + row("after") + `],"default":null},` +
		`{"name":"op","type":["null","string"],"default":null}]}`
	if ss.Schema.Schema != want {
		t.Fatalf("registered\n%s\nwant\n%s", ss.Schema.Schema, want)
	}
}

// TestDebeziumAvroEvolution decodes events written with two versions of
// a table's envelope, the later one with an added nullable column and a
// widened one, into the old columns (the new column skipped) and into the
// new ones (null in old events), taken from the subject's latest version.
func TestDebeziumAvroEvolution(t *testing.T) {
	url, cl := newRegistry(t)
	v1row := `{"type":"record","name":"Value","namespace":"db.t","fields":[{"name":"id","type":"long"},{"name":"price","type":"int"}]}`
	v2row := `{"type":"record","name":"Value","namespace":"db.t","fields":[{"name":"id","type":"long"},{"name":"price","type":"long"},` +
		`{"name":"color","type":["null","string"],"default":null}]}`
	v1, v2 := debeziumEnvelope(v1row, "db.t.Value"), debeziumEnvelope(v2row, "db.t.Value")
	w1, w2 := mustParseAvro(t, v1), mustParseAvro(t, v2)
	id1 := register(t, cl, "t-value", v1)
	id2 := register(t, cl, "t-value", v2)
	if id1 == id2 {
		t.Fatal("one id for both versions")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	ev := func(w avro.Schema, id int, op string, before, after map[string]any) []byte {
		e := map[string]any{"before": nil, "after": nil, "source": debeziumSourceValue(rng), "op": op, "ts_ms": nil, "transaction": nil}
		if before != nil {
			e["before"] = map[string]any{"db.t.Value": before}
		}
		if after != nil {
			e["after"] = map[string]any{"db.t.Value": after}
		}
		return marshalEvent(t, w, id, e)
	}
	values := [][]byte{
		ev(w1, id1, "c", nil, map[string]any{"id": int64(1), "price": 10}),
		ev(w2, id2, "u", map[string]any{"id": int64(1), "price": int64(10), "color": nil},
			map[string]any{"id": int64(1), "price": int64(1) << 40, "color": map[string]any{"string": "red"}}),
		ev(w1, id1, "d", map[string]any{"id": int64(2), "price": -5}, nil),
	}
	mem := testutil.CheckedAllocator(t)
	old := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "price", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	b := mustChangeDecoder(t, Config{Name: DebeziumAvroConfluent, Schema: old, Registry: cl}).NewChangeBuilder(mem)
	appendChanges(t, b, []string{string(values[0]), string(values[1]), string(values[2])}, []int{1, 2, 1})
	diffChanges(t, []changeRow{
		{arrowflow.Insert, []any{int64(1), int64(10)}},
		{arrowflow.UpdateBefore, []any{int64(1), int64(10)}},
		{arrowflow.UpdateAfter, []any{int64(1), int64(1) << 40}},
		{arrowflow.Delete, []any{int64(2), int64(-5)}},
	}, finishChanges(t, b, old))
	b.Release()

	dec := mustChangeDecoder(t, Config{Name: DebeziumAvroConfluent, Options: map[string]string{
		"debezium-avro-confluent.schema-registry.url": url, "debezium-avro-confluent.subject": "t-value"}})
	latest := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "price", Type: arrow.PrimitiveTypes.Int64},
		{Name: "color", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	if !dec.Schema().Equal(latest) {
		t.Fatalf("schema %s, want %s", dec.Schema(), latest)
	}
	b = dec.NewChangeBuilder(mem)
	defer b.Release()
	appendChanges(t, b, []string{string(values[0]), string(values[1]), string(values[2])}, []int{1, 2, 1})
	diffChanges(t, []changeRow{
		{arrowflow.Insert, []any{int64(1), int64(10), nil}},
		{arrowflow.UpdateBefore, []any{int64(1), int64(10), nil}},
		{arrowflow.UpdateAfter, []any{int64(1), int64(1) << 40, "red"}},
		{arrowflow.Delete, []any{int64(2), int64(-5), nil}},
	}, finishChanges(t, b, latest))
	closeIdle(dec.(*debeziumAvroDecoder).conf)
}

// Hand-made events of the envelope Flink registers for productsSchema:
// before and after ["null", row], op ["null", "string"].
func flinkEvent(id int, before, after []byte, op string) []byte {
	v := confluentPrefix(id)
	for _, img := range [][]byte{before, after} {
		if img == nil {
			v = append(v, 0)
		} else {
			v = append(append(v, 2), img...)
		}
	}
	return append(append(v, 2), appendAvroString(nil, op)...)
}

func appendAvroString(dst []byte, s string) []byte {
	return append(appendAvroLong(dst, int64(len(s))), s...)
}

// productImage is a products row: id and name, description and weight null.
func productImage(id int64, name string) []byte {
	b := appendAvroLong(nil, id)
	b = appendAvroString(append(b, 2), name)
	return append(b, 0, 0)
}

func TestDebeziumAvroRecordErrors(t *testing.T) {
	_, cl := newRegistry(t)
	envelope, err := AvroSchema(debeziumAvroEnvelope(productsSchema))
	if err != nil {
		t.Fatal(err)
	}
	id := register(t, cl, "p-value", envelope)
	plain := register(t, cl, "plain-value", `{"type":"record","name":"r","fields":[{"name":"id","type":"long"}]}`)
	wrongRow := register(t, cl, "w-value", debeziumEnvelope(`{"type":"record","name":"V","fields":[{"name":"id","type":"string"}]}`, "V"))
	jsonID, err := cl.RegisterSchema(context.Background(), "j-value", sr.Schema{Schema: `{}`, Type: sr.TypeJSON}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	mem := testutil.CheckedAllocator(t)
	dec := mustChangeDecoder(t, Config{Name: DebeziumAvroConfluent, Schema: productsSchema, Registry: cl})
	b := dec.NewChangeBuilder(mem)
	defer b.Release()
	a, bb := productImage(1, "a"), productImage(1, "b")
	good := flinkEvent(id, a, bb, "u")
	// Offsets: the header is 5 bytes, before's union index is at 5.
	afterAt := 5 + 1 + len(a) // after's union index in an event with before
	opAt := func(v []byte) int { return len(v) - 3 }
	withOp := flinkEvent(id, nil, bb, "x")
	badUTF8 := flinkEvent(id, nil, append(append(appendAvroLong(nil, 1), 2, 2, 0xff), 0, 0), "c")
	for _, c := range []struct {
		value  []byte
		field  string
		offset int
		msg    string
	}{
		{[]byte{0, 0, 0}, "", 0, "fewer than the 5-byte Confluent header"},
		{append([]byte{1}, good[1:]...), "", 0, "magic byte 0x01"},
		{[]byte(`{"before":null,"after":{"id":1},"op":"c"}`), "", 0, "magic byte 0x7b"},
		{flinkEvent(99, nil, bb, "c"), "", 1, "schema id 99 is not in the registry"},
		{flinkEvent(plain, nil, bb, "c"), "", 1, "has no field op"},
		{flinkEvent(wrongRow, nil, bb, "c"), "", 1, "does not resolve"},
		{flinkEvent(jsonID, nil, bb, "c"), "", 1, "a JSON schema, not Avro"},
		{withOp, "op", opAt(withOp), `unknown op "x"`},
		{flinkEvent(id, nil, bb, "create"), "op", 5 + 1 + 1 + len(bb), `unknown op "create"`},
		{flinkEvent(id, nil, bb, "u"), "before", 5, "REPLICA IDENTITY FULL"},
		{flinkEvent(id, nil, nil, "d"), "before", 5, "REPLICA IDENTITY FULL"},
		{flinkEvent(id, a, nil, "u"), "after", afterAt, `op "u" (update) has no "after" row`},
		{flinkEvent(id, nil, nil, "c"), "after", 6, `op "c" (insert) has no "after" row`},
		{flinkEvent(id, nil, nil, "r"), "after", 6, `op "r" (insert) has no "after" row`},
		{badUTF8, "after.name", 5 + 1 + 1 + 1 + 1 + 1, "invalid UTF-8"},
		{append(bytes.Clone(good), 0), "", len(good), "bytes after the end"},
		{good[:len(good)-1], "op", len(good) - 2, "unexpected end"},
		{good[:8], "before.name", 8, "unexpected end"},
		{append(confluentPrefix(id), 4), "before", 5, "union branch 2 out of 2"},
		{append(append(confluentPrefix(id), 0, 0), 0), "op", 7, "op is null"},
		{append(append(confluentPrefix(id), 0, 0), 6), "op", 7, "union branch 3 out of 2"},
	} {
		appendChanges(t, b, []string{string(good)}, []int{2})
		n, err := b.AppendChange(c.value)
		if n != 0 {
			t.Errorf("% x: %d rows with an error", c.value, n)
		}
		wantRecordError(t, err, DebeziumAvroConfluent, c.field, c.offset, c.msg)
		if b.Len() != 2 {
			t.Fatalf("% x: Len %d after a rejected event", c.value, b.Len())
		}
		appendChanges(t, b, []string{string(good)}, []int{2})
		before, after := []any{int64(1), "a", nil, nil}, []any{int64(1), "b", nil, nil}
		diffChanges(t, []changeRow{
			{arrowflow.UpdateBefore, before}, {arrowflow.UpdateAfter, after},
			{arrowflow.UpdateBefore, before}, {arrowflow.UpdateAfter, after},
		}, finishChanges(t, b, productsSchema))
	}

	// A registry that cannot be reached is not the record's fault.
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	down, err := sr.NewClient(sr.URLs(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	b2 := mustChangeDecoder(t, Config{Name: DebeziumAvroConfluent, Schema: productsSchema, Registry: down}).NewChangeBuilder(mem)
	defer b2.Release()
	n, err := b2.AppendChange(good)
	var re *RecordError
	if err == nil || errors.As(err, &re) || n != 0 || b2.Len() != 0 {
		t.Fatalf("unreachable registry: %d rows, %v; want an error that is not a RecordError", n, err)
	}
	if !strings.HasPrefix(err.Error(), "debezium-avro-confluent: ") {
		t.Fatalf("unreachable registry: %v, want the format's name first", err)
	}
}

func TestDebeziumAvroOptions(t *testing.T) {
	url, _ := newRegistry(t, registry.BasicAuth("user", "secret"))
	ctx := context.Background()
	opts := map[string]string{
		"debezium-avro-confluent.url":                  url,
		"debezium-avro-confluent.subject":              "p-value",
		"debezium-avro-confluent.basic-auth.user-info": "user:secret",
	}
	enc, err := NewEncoder(ctx, Config{Name: DebeziumAvroConfluent, Schema: productsSchema, Options: opts})
	if err != nil {
		t.Fatalf("with credentials: %v", err)
	}
	if e, ok := enc.(*debeziumAvroEncoder); !ok || len(e.prefix) != 5 {
		t.Fatalf("encoder %T", enc)
	}
	opts["debezium-avro-confluent.basic-auth.user-info"] = "user:wrong"
	if _, err := NewEncoder(ctx, Config{Name: DebeziumAvroConfluent, Schema: productsSchema, Options: opts}); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("wrong credentials: %v", err)
	}
	envelope, _ := AvroSchema(debeziumAvroEnvelope(productsSchema))
	for _, c := range []struct {
		opts    map[string]string
		decoder bool
		msg     string
	}{
		{map[string]string{"debezium-avro-confluent.subject": "s"}, false, "debezium-avro-confluent: option debezium-avro-confluent.url (the schema registry's URL) is required"},
		{map[string]string{"debezium-avro-confluent.subject": "s"}, true, "debezium-avro-confluent: option debezium-avro-confluent.url (the schema registry's URL) is required"},
		{map[string]string{"debezium-avro-confluent.url": url}, false, "debezium-avro-confluent.subject is required"},
		{map[string]string{"debezium-avro-confluent.url": url, "debezium-avro-confluent.subject": "s", "debezium-avro-confluent.colour": "red"}, false, "unknown option debezium-avro-confluent.colour"},
		{map[string]string{"debezium-avro-confluent.url": url, "avro-confluent.subject": "s"}, true, "unknown option avro-confluent.subject"},
		{map[string]string{"debezium-avro-confluent.url": url, "debezium-avro-confluent.schema-registry.url": url + "x"}, true, "options url and schema-registry.url disagree"},
		{map[string]string{"debezium-avro-confluent.url": url, "debezium-avro-confluent.subject": "a", "debezium-avro-confluent.schema-registry.subject": "b"}, false, "options subject and schema-registry.subject disagree"},
		{map[string]string{"debezium-avro-confluent.url": url, "debezium-avro-confluent.basic-auth.credentials-source": "URL"}, true, `basic-auth.credentials-source: "URL" is not supported`},
		{map[string]string{"debezium-avro-confluent.url": url, "debezium-avro-confluent.schema": `{"type":"record","name":"r","fields":[{"name":"id","type":"long"}]}`}, true, "the envelope schema has no field op"},
		{map[string]string{"debezium-avro-confluent.url": url, "debezium-avro-confluent.schema": strings.ReplaceAll(envelope, `"double"`, `"string"`)}, true, "does not resolve against the schema"},
		{map[string]string{"debezium-avro-confluent.url": url, "debezium-avro-confluent.subject": "s", "debezium-avro-confluent.schema": strings.ReplaceAll(envelope, `"double"`, `"string"`)}, false, "cannot be written as Avro string"},
	} {
		cfg := Config{Name: DebeziumAvroConfluent, Schema: productsSchema, Options: c.opts}
		if c.decoder {
			_, err = NewDecoder(ctx, cfg)
		} else {
			_, err = NewEncoder(ctx, cfg)
		}
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%v (decoder %v): error %v, want %q", c.opts, c.decoder, err, c.msg)
		}
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}
