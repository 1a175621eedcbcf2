package format

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/weirflow/weir/internal/testutil"
)

// roundTrip encodes a random batch (built with arrow-go's builders) and
// decodes it back, in batches of random sizes, expecting the same rows.
func roundTrip(t *testing.T, cfg Config, ts typeSet, seeds int) {
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		schema := cfg.Schema
		if schema == nil {
			schema = randomSchema(rng, ts)
		}
		c := cfg
		c.Schema = schema
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			mem := testutil.CheckedAllocator(t)
			rec := randomBatch(rng, mem, schema, ts, 1+rng.IntN(40))
			defer rec.Release()
			if seed%3 == 1 && rec.NumRows() > 2 {
				// A sliced batch: the encoders must honour array offsets.
				sliced := rec.NewSlice(1, rec.NumRows()-1)
				defer sliced.Release()
				rec = sliced
			}
			enc := mustEncoder(t, c)
			values := encodeAll(t, enc, rec)
			dec := mustDecoder(t, c)
			want := rowsOf(rec)
			// Decode in two batches through one builder: the second batch
			// reuses the builder's scratch.
			b := dec.NewBuilder(mem)
			defer b.Release()
			split := rng.IntN(len(values) + 1)
			var got [][]any
			for _, part := range [][][]byte{values[:split], values[split:]} {
				for i, v := range part {
					if err := b.Append(v); err != nil {
						t.Fatalf("schema %s\nvalue %d %q: %v", schema, i, truncate(v), err)
					}
				}
				out := b.NewRecord()
				if err := array.ValidateRecordFull(out); err != nil {
					t.Fatalf("invalid batch: %v", err)
				}
				if !out.Schema().Equal(schema) {
					t.Fatalf("schema %s, want %s", out.Schema(), schema)
				}
				got = append(got, rowsOf(out)...)
				out.Release()
			}
			diffRows(t, want, got)
		})
	}
}

func TestRoundTripJSON(t *testing.T) {
	roundTrip(t, Config{Name: "json"}, jsonTypes, 150)
}

func TestRoundTripJSONOptions(t *testing.T) {
	for _, opts := range []map[string]string{
		{"json.timestamp-format.standard": "SQL"},
		{"json.timestamp-format.standard": "ISO-8601", "json.encode.ignore-null-fields": "true"},
	} {
		t.Run(fmt.Sprint(opts), func(t *testing.T) {
			roundTrip(t, Config{Name: "json", Options: opts}, jsonTypes, 30)
		})
	}
}

func TestRoundTripCSV(t *testing.T) {
	roundTrip(t, Config{Name: "csv"}, csvTypes, 150)
}

func TestRoundTripCSVOptions(t *testing.T) {
	for _, opts := range []map[string]string{
		{"csv.field-delimiter": ";", "csv.quote-character": "'", "csv.null-literal": "NULL"},
		{"csv.field-delimiter": `\t`, "csv.escape-character": "\\"},
		{"csv.disable-quote-character": "true", "csv.escape-character": "\\", "csv.null-literal": "\\N"},
	} {
		t.Run(fmt.Sprint(opts), func(t *testing.T) {
			ts := csvTypes
			if opts["csv.disable-quote-character"] == "true" {
				// Without quotes, strings with line breaks cannot be
				// written; keep to types whose text has none.
				schema := arrow.NewSchema([]arrow.Field{
					{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
					{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
					{Name: "c", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
					{Name: "d", Type: &arrow.Decimal128Type{Precision: 20, Scale: 4}},
				}, nil)
				roundTrip(t, Config{Name: "csv", Options: opts, Schema: schema}, ts, 30)
				return
			}
			roundTrip(t, Config{Name: "csv", Options: opts}, ts, 30)
		})
	}
}

func TestRoundTripRaw(t *testing.T) {
	for _, dt := range []arrow.DataType{arrow.BinaryTypes.Binary, arrow.BinaryTypes.String, arrow.BinaryTypes.LargeBinary, arrow.BinaryTypes.LargeString} {
		schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: dt, Nullable: true}}, nil)
		t.Run(dt.String(), func(t *testing.T) {
			roundTrip(t, Config{Name: "raw", Schema: schema}, csvTypes, 10)
		})
	}
}

func TestRoundTripAvro(t *testing.T) {
	roundTrip(t, Config{Name: "avro"}, avroTypes, 150)
}

func TestRawDefaultSchema(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	dec := mustDecoder(t, Config{Name: "raw"})
	if !dec.Schema().Equal(rawSchema) {
		t.Fatalf("schema %s", dec.Schema())
	}
	got := decodeAll(t, dec, mem, [][]byte{[]byte("abc"), nil, {}, {0xff}})
	diffRows(t, [][]any{{"abc"}, {nil}, {""}, {"\xff"}}, got)

	// A string column takes only UTF-8.
	str := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	b := mustDecoder(t, Config{Name: "raw", Schema: str}).NewBuilder(mem)
	defer b.Release()
	wantRecordError(t, b.Append([]byte("ok\xffno")), "raw", "s", 2, "invalid UTF-8")
	wantRecordError(t, b.Append(nil), "raw", "s", -1, "null in a non-nullable field")
	if err := b.Append([]byte("fine")); err != nil || b.Len() != 1 {
		t.Fatalf("Append: %v, Len %d", err, b.Len())
	}
	rec := b.NewRecord()
	defer rec.Release()
	diffRows(t, [][]any{{"fine"}}, rowsOf(rec))
}
