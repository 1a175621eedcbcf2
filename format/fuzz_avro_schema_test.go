package format

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Fuzz targets for Avro schemas: the parser, the Arrow form of a schema,
// and decoding arbitrary bytes against an arbitrary schema. Schemas reach
// weir from users (avro.schema) and from schema registries, so a schema
// must never panic the parser or a compiler, and the Arrow form of a
// schema must decode and encode what that schema writes.

// avroSchemaSeeds are schema texts covering every kind of type, named
// references, logical types, unions in both orders, and schemas that must
// fail (recursive, not a record, invalid).
var avroSchemaSeeds = []string{
	`{"type":"record","name":"r","namespace":"n.s","doc":"d","aliases":["q"],"fields":[` +
		`{"name":"a","type":"string","default":"x","aliases":["b"],"order":"descending"},` +
		`{"name":"i","type":"int"},{"name":"l","type":"long"},{"name":"f","type":"float"},{"name":"d","type":"double"},` +
		`{"name":"z","type":"boolean"},{"name":"y","type":"bytes"},{"name":"n","type":["null","string"],"default":null},` +
		`{"name":"u","type":["long","null"]}]}`,
	`{"type":"record","name":"r","fields":[{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"],"default":"A"}},` +
		`{"name":"fx","type":{"type":"fixed","name":"F","size":3}},` +
		`{"name":"dec","type":{"type":"fixed","name":"D","size":8,"logicalType":"decimal","precision":10,"scale":2}},` +
		`{"name":"decb","type":{"type":"bytes","logicalType":"decimal","precision":38,"scale":38}},` +
		`{"name":"ts","type":{"type":"long","logicalType":"timestamp-nanos"}},` +
		`{"name":"tsm","type":{"type":"long","logicalType":"timestamp-millis"}},` +
		`{"name":"lts","type":{"type":"long","logicalType":"local-timestamp-micros"}},` +
		`{"name":"tm","type":{"type":"int","logicalType":"time-millis"}},` +
		`{"name":"tu","type":{"type":"long","logicalType":"time-micros"}},` +
		`{"name":"dt","type":{"type":"int","logicalType":"date"}},` +
		`{"name":"uuid","type":{"type":"string","logicalType":"uuid"}}]}`,
	`{"type":"record","name":"r","namespace":"n","fields":[` +
		`{"name":"m","type":{"type":"map","values":{"type":"array","items":{"type":"record","name":"in","fields":[` +
		`{"name":"x","type":"int"},{"name":"y","type":["null","double"],"default":null}]}}}},` +
		`{"name":"again","type":"in"},{"name":"ea","type":{"type":"array","items":{"type":"enum","name":"E2","symbols":["X"]}}}]}`,
	`{"type":"record","name":"node","fields":[{"name":"v","type":"long"},{"name":"next","type":["null","node"]}]}`,
	`{"type":"record","name":"r","fields":[{"name":"u","type":["int","string"]}]}`,
	`{"type":"record","name":"r","fields":[{"name":"n","type":"null"}]}`,
	`{"type":"record","name":"r","fields":[]}`,
	`"string"`,
	`{"type":"array","items":"int"}`,
	`{"type":"record","name":"r","fields":[{"name":"a","type":"nope"}]}`,
	`{"type":"enum","name":"E","symbols":[]}`,
	`{"type":"record","name":"r","fields":[{"name":"a","type":"int"},{"name":"a","type":"long"}]}`,
	`{`,
}

// FuzzAvroSchema parses arbitrary schema text. A schema that parses and
// has an Arrow form (ArrowSchemaFromAvro) must compile a decoder and an
// encoder against that form, and the Arrow form must be a fixed point:
// AvroSchema of it parses back to the same columns.
func FuzzAvroSchema(f *testing.F) {
	for _, s := range avroSchemaSeeds {
		f.Add(s)
	}
	if text, err := AvroSchema(fuzzSchema); err == nil {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		w, err := parseAvroSchema(text)
		if err != nil {
			return
		}
		schema, err := ArrowSchemaFromAvro(text)
		if err != nil {
			return
		}
		if _, err := newColumns(schema); err != nil {
			t.Fatalf("the Arrow form %s of %s has no columns: %v", schema, text, err)
		}
		if _, err := newAvroDecoder(schema, w); err != nil {
			t.Fatalf("the Arrow form of %s does not decode it: %v", text, err)
		}
		if _, err := newAvroEncoder("avro", w, schema, nil); err != nil {
			t.Fatalf("the Arrow form of %s does not encode it: %v", text, err)
		}
		again, err := AvroSchema(schema)
		if err != nil {
			t.Fatalf("AvroSchema(%s) (the Arrow form of %s): %v", schema, text, err)
		}
		schema2, err := ArrowSchemaFromAvro(again)
		if err != nil {
			t.Fatalf("AvroSchema wrote %s, which has no Arrow form: %v", again, err)
		}
		if !schema2.Equal(schema) {
			t.Fatalf("Arrow form %s, after AvroSchema and back %s", schema, schema2)
		}
		if again2, err := AvroSchema(schema2); err != nil || again2 != again {
			t.Fatalf("AvroSchema is not a fixed point: %s, then %s (%v)", again, again2, err)
		}
	})
}

// avroSchemaValueSeeds returns values of the seed schemas with an Arrow
// form, written by the avro encoder from rows the json decoder reads.
func avroSchemaValueSeeds(f *testing.F) (texts []string, values [][]byte) {
	rows := map[string][]string{
		avroSchemaSeeds[0]: {
			`{"a":"é","i":-1,"l":9007199254740993,"f":1.5,"d":"NaN","z":true,"y":"AP8=","n":null,"u":7}`,
			`{"a":"","i":0,"l":0,"f":0,"d":0,"z":false,"y":"","n":"x","u":null}`,
		},
		avroSchemaSeeds[1]: {
			`{"e":"B","fx":"AAEC","dec":"-12345678.91","decb":"0.5","ts":"2024-01-01T00:00:00.123456789Z","tsm":-1,"lts":"1969-12-31 23:59:59.999999","tm":"23:59:59.999","tu":"00:00:00.000001","dt":"2024-02-29","uuid":"00000000-0000-0000-0000-000000000000"}`,
		},
		avroSchemaSeeds[2]: {
			`{"m":{"k":[{"x":1,"y":2.5},{"x":-2}],"":[]},"again":{"x":3,"y":null},"ea":["X","X"]}`,
			`{"m":{},"again":{"x":0},"ea":[]}`,
		},
	}
	mem := memory.NewGoAllocator()
	for _, text := range avroSchemaSeeds {
		schema, err := ArrowSchemaFromAvro(text)
		if err != nil {
			texts, values = append(texts, text), append(values, []byte{0, 2, 4})
			continue
		}
		cfg := Config{Name: "avro", Schema: schema, Options: map[string]string{"avro.schema": text}}
		b := mustDecoder(f, Config{Name: "json", Schema: schema}).NewBuilder(mem)
		for _, r := range rows[text] {
			if err := b.Append([]byte(r)); err != nil {
				f.Fatalf("seed row %s: %v", r, err)
			}
		}
		rec := b.NewRecord()
		b.Release()
		for _, v := range encodeAll(f, mustEncoder(f, cfg), rec) {
			texts, values = append(texts, text), append(values, v)
			texts, values = append(texts, text), append(values, v[:len(v)/2])
		}
		rec.Release()
	}
	return texts, values
}

// FuzzAvroSchemaDecode decodes arbitrary bytes against an arbitrary
// schema's Arrow form: a rejection must be a *RecordError within the
// value that leaves no row; an accepted row must encode with the same
// writer schema and decode back to itself.
func FuzzAvroSchemaDecode(f *testing.F) {
	texts, values := avroSchemaValueSeeds(f)
	for i := range texts {
		f.Add(texts[i], values[i])
	}
	f.Fuzz(func(t *testing.T, text string, value []byte) {
		w, err := parseAvroSchema(text)
		if err != nil {
			return
		}
		schema, err := arrowSchemaOf(w)
		if err != nil {
			return
		}
		dec, err := newAvroDecoder(schema, w)
		if err != nil {
			t.Fatalf("the Arrow form of %s does not decode it: %v", text, err)
		}
		enc, err := newAvroEncoder("avro", w, schema, nil)
		if err != nil {
			t.Fatalf("the Arrow form of %s does not encode it: %v", text, err)
		}
		fuzzDecode(t, dec, enc, value)
	})
}
