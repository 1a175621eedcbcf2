package format

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// debeziumEvent is a message of the debezium-json format as a plain
// encoding/json reader sees it.
type debeziumEvent struct {
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
	Op     string          `json:"op"`
}

// parseDebezium reads value with encoding/json, insisting on exactly the
// three fields of the envelope.
func parseDebezium(t testing.TB, value []byte) debeziumEvent {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(value, &fields); err != nil {
		t.Fatalf("not JSON: %v: %s", err, truncate(value))
	}
	if len(fields) != 3 {
		t.Fatalf("the event has fields %v, want before, after, op: %s", fields, truncate(value))
	}
	var ev debeziumEvent
	if err := json.Unmarshal(value, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func randomKinds(rng *rand.Rand, n int) []arrowflow.RowKind {
	kinds := make([]arrowflow.RowKind, n)
	for i := range kinds {
		kinds[i] = arrowflow.RowKind(rng.IntN(4))
	}
	return kinds
}

// Every row of random batches (every type the json format writes, nulls,
// nesting, sliced batches) becomes one event: Insert and UpdateAfter
// {"before":null,"after":row,"op":"c"}, UpdateBefore and Delete
// {"before":row,"after":null,"op":"d"}, the row being exactly the json
// format's bytes for it, which the json decoder reads back to the row.
func TestDebeziumJSONEvents(t *testing.T) {
	for seed := range 80 {
		rng := rand.New(rand.NewPCG(uint64(seed), 19))
		schema := randomSchema(rng, jsonTypes)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			mem := testutil.CheckedAllocator(t)
			rec := randomBatch(rng, mem, schema, jsonTypes, 1+rng.IntN(40))
			defer rec.Release()
			if seed%3 == 1 && rec.NumRows() > 2 {
				sliced := rec.NewSlice(1, rec.NumRows()-1)
				defer sliced.Release()
				rec = sliced
			}
			opts := map[string]string{}
			jsonOpts := map[string]string{}
			if seed%4 == 2 {
				opts["debezium-json.timestamp-format.standard"] = "SQL"
				jsonOpts["json.timestamp-format.standard"] = "SQL"
			}
			enc := mustEncoder(t, Config{Name: DebeziumJSON, Schema: schema, Options: opts})
			ce, ok := enc.(ChangeEncoder)
			if !ok {
				t.Fatalf("the debezium-json encoder %T is not a ChangeEncoder", enc)
			}
			rows := mustEncoder(t, Config{Name: "json", Schema: schema, Options: jsonOpts})
			wantRows := encodeAll(t, rows, rec)
			kinds := randomKinds(rng, int(rec.NumRows()))
			if seed%5 == 0 {
				kinds = nil // every row an insert
			}
			var events [][]byte
			err := ce.EncodeChanges(rec, kinds, func(row int, value []byte) error {
				if row != len(events) {
					t.Fatalf("row %d, want %d", row, len(events))
				}
				events = append(events, bytes.Clone(value))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(events) != int(rec.NumRows()) {
				t.Fatalf("%d events for %d rows", len(events), rec.NumRows())
			}
			dec := mustDecoder(t, Config{Name: "json", Schema: schema, Options: jsonOpts})
			b := dec.NewBuilder(mem)
			defer b.Release()
			for i, v := range events {
				k := arrowflow.Insert
				if kinds != nil {
					k = kinds[i]
				}
				ev := parseDebezium(t, v)
				row, null, op := ev.After, ev.Before, "c"
				if k.IsRetraction() {
					row, null, op = ev.Before, ev.After, "d"
				}
				if ev.Op != op || string(null) != "null" {
					t.Fatalf("row %d (%v): event %s, want op %q and the other side null", i, k, truncate(v), op)
				}
				if !bytes.Equal(row, wantRows[i]) {
					t.Fatalf("row %d: the event's row\n%s\nis not the json format's\n%s", i, truncate(row), truncate(wantRows[i]))
				}
				if err := b.Append(row); err != nil {
					t.Fatalf("row %d: the json decoder rejects the event's row: %v", i, err)
				}
			}
			out := b.NewRecord()
			defer out.Release()
			diffRows(t, rowsOf(rec), rowsOf(out))

			// Encode, without kinds, writes inserts.
			for i, v := range encodeAll(t, enc, rec) {
				if ev := parseDebezium(t, v); ev.Op != "c" || !bytes.Equal(ev.After, wantRows[i]) {
					t.Fatalf("Encode row %d: %s", i, truncate(v))
				}
			}
		})
	}
}

// The events of a changelog, applied by a reader (c adds "after", d
// removes one equal "before"), give the same table as the changelog
// applied row by row in Go: updates of a few keys, over several batches
// of sizes 1 to large, with nulls.
func TestDebeziumJSONMaterializes(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		{Name: "total", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	enc := mustEncoder(t, Config{Name: DebeziumJSON, Schema: schema}).(ChangeEncoder)
	rng := rand.New(rand.NewPCG(3, 3))
	type row struct {
		k     *string
		n     int64
		total *float64
	}
	key := func(r row) string {
		k, tot := "null", "null"
		if r.k != nil {
			k = *r.k
		}
		if r.total != nil {
			tot = fmt.Sprint(*r.total)
		}
		return k + "|" + fmt.Sprint(r.n) + "|" + tot
	}
	// The reference: per key its current row; the changelog retracts the
	// old row and adds the new one.
	current := map[string]row{}
	want := map[string]int{}
	got := map[string]int{}
	for batch, size := range []int{1, 7, 1, 300, 2000, 1} {
		kb := array.NewStringBuilder(mem)
		nb := array.NewInt64Builder(mem)
		tb := array.NewFloat64Builder(mem)
		var kinds []arrowflow.RowKind
		add := func(r row, k arrowflow.RowKind) {
			if r.k == nil {
				kb.AppendNull()
			} else {
				kb.Append(*r.k)
			}
			nb.Append(r.n)
			if r.total == nil {
				tb.AppendNull()
			} else {
				tb.Append(*r.total)
			}
			kinds = append(kinds, k)
			if k.IsRetraction() {
				want[key(r)]--
			} else {
				want[key(r)]++
			}
		}
		for len(kinds) < size {
			var k *string
			if ki := rng.IntN(20); ki > 0 {
				s := fmt.Sprintf("key-%d", ki)
				k = &s
			}
			ks := "null"
			if k != nil {
				ks = *k
			}
			old, had := current[ks]
			switch {
			case had && rng.IntN(10) == 0:
				add(old, arrowflow.Delete)
				delete(current, ks)
			case had:
				nw := row{k: k, n: old.n + 1}
				if rng.IntN(4) != 0 {
					v := float64(rng.IntN(1000)) / 8
					nw.total = &v
				}
				add(old, arrowflow.UpdateBefore)
				add(nw, arrowflow.UpdateAfter)
				current[ks] = nw
			default:
				nw := row{k: k, n: 1}
				add(nw, arrowflow.Insert)
				current[ks] = nw
			}
		}
		rec := array.NewRecordBatch(schema, []arrow.Array{kb.NewArray(), nb.NewArray(), tb.NewArray()}, int64(len(kinds)))
		for _, b := range []array.Builder{kb, nb, tb} {
			b.Release()
		}
		for i := range schema.NumFields() {
			rec.Column(i).Release() // the record holds its own references
		}
		err := enc.EncodeChanges(rec, kinds, func(_ int, value []byte) error {
			ev := parseDebezium(t, value)
			var r struct {
				K     *string  `json:"k"`
				N     int64    `json:"n"`
				Total *float64 `json:"total"`
			}
			switch ev.Op {
			case "c":
				if err := json.Unmarshal(ev.After, &r); err != nil {
					return err
				}
				got[key(row{r.K, r.N, r.Total})]++
			case "d":
				if err := json.Unmarshal(ev.Before, &r); err != nil {
					return err
				}
				k := key(row{r.K, r.N, r.Total})
				if got[k] == 0 {
					return fmt.Errorf("a delete of %s, which the table does not hold", k)
				}
				got[k]--
			default:
				return fmt.Errorf("op %q", ev.Op)
			}
			return nil
		})
		rec.Release()
		if err != nil {
			t.Fatalf("batch %d: %v", batch, err)
		}
		for k, n := range want {
			if got[k] != n {
				t.Fatalf("after batch %d: row %s %d times, want %d", batch, k, got[k], n)
			}
		}
		for k, n := range got {
			if want[k] != n {
				t.Fatalf("after batch %d: row %s %d times, want %d", batch, k, n, want[k])
			}
		}
	}
	live := 0
	for _, n := range want {
		live += n
	}
	if live != len(current) || live == 0 {
		t.Fatalf("the reference holds %d rows for %d keys", live, len(current))
	}
}

// An exact event per kind, nulls in the row included.
func TestDebeziumJSONExactBytes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	ib := array.NewInt64Builder(mem)
	ib.AppendValues([]int64{1, 2, 3, 4}, nil)
	sb := array.NewStringBuilder(mem)
	sb.AppendValues([]string{"a", "", "q\"", ""}, []bool{true, false, true, true})
	ids, names := ib.NewArray(), sb.NewArray()
	ib.Release()
	sb.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{ids, names}, 4)
	ids.Release()
	names.Release()
	defer rec.Release()
	enc := mustEncoder(t, Config{Name: DebeziumJSON, Schema: schema}).(ChangeEncoder)
	var got []string
	kinds := []arrowflow.RowKind{arrowflow.Insert, arrowflow.UpdateBefore, arrowflow.UpdateAfter, arrowflow.Delete}
	if err := enc.EncodeChanges(rec, kinds, func(_ int, v []byte) error { got = append(got, string(v)); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"before":null,"after":{"id":1,"name":"a"},"op":"c"}`,
		`{"before":{"id":2,"name":null},"after":null,"op":"d"}`,
		`{"before":null,"after":{"id":3,"name":"q\""},"op":"c"}`,
		`{"before":{"id":4,"name":""},"after":null,"op":"d"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// An error from emit stops the encoding and is returned.
	stop := errors.New("stop")
	calls := 0
	err := enc.EncodeChanges(rec, kinds, func(int, []byte) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("emit error: %v after %d calls", err, calls)
	}
	// Kinds that do not match the rows, an unknown kind, another schema.
	if err := enc.EncodeChanges(rec, kinds[:3], func(int, []byte) error { return nil }); err == nil || !strings.Contains(err.Error(), "3 row kinds for a record of 4 rows") {
		t.Fatalf("short kinds: %v", err)
	}
	bad := []arrowflow.RowKind{0, 1, 2, 9}
	if err := enc.EncodeChanges(rec, bad, func(int, []byte) error { return nil }); err == nil || !strings.Contains(err.Error(), "row 3") {
		t.Fatalf("unknown kind: %v", err)
	}
	other := mustEncoder(t, Config{Name: DebeziumJSON, Schema: arrow.NewSchema(schema.Fields()[:1], nil)})
	if err := other.Encode(rec, func(int, []byte) error { return nil }); err == nil || !strings.Contains(err.Error(), "debezium-json: record has 2 columns") {
		t.Fatalf("other schema: %v", err)
	}
}

// Options: Flink's are taken or refused with a reason (schema-include for
// writing, as Flink's serializer refuses it); unknown ones are named.
func TestDebeziumJSONOptions(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}}}, nil)
	for _, c := range []struct {
		opts map[string]string
		msg  string // "" when accepted
	}{
		{map[string]string{"debezium-json.schema-include": "false"}, ""},
		{map[string]string{"debezium-json.schema-include": "true"}, "debezium-json.schema-include = true is not supported yet"},
		{map[string]string{"debezium-json.schema-include": "maybe"}, `debezium-json: option debezium-json.schema-include: "maybe" is not true or false`},
		{map[string]string{"debezium-json.timestamp-format.standard": "ISO-8601", "debezium-json.map-null-key.mode": "LITERAL", "debezium-json.map-null-key.literal": "x"}, ""},
		{map[string]string{"debezium-json.timestamp-format.standard": "unix"}, `option debezium-json.timestamp-format.standard: "unix" is not SQL, ISO-8601 or RFC-3339`},
		{map[string]string{"debezium-json.map-null-key.mode": "KEEP"}, "debezium-json.map-null-key.mode"},
		{map[string]string{"debezium-json.ignore-parse-errors": "true"}, "bad records are the connector's policy"},
		{map[string]string{"json.timestamp-format.standard": "SQL"}, "debezium-json: unknown option json.timestamp-format.standard"},
	} {
		_, err := NewEncoder(context.Background(), Config{Name: DebeziumJSON, Schema: schema, Options: c.opts})
		if c.msg == "" && err != nil || c.msg != "" && (err == nil || !strings.Contains(err.Error(), c.msg)) {
			t.Errorf("%v: error %v, want %q", c.opts, err, c.msg)
		}
	}
	if _, err := NewEncoder(context.Background(), Config{Name: DebeziumJSON}); err == nil || !strings.Contains(err.Error(), "a schema is required") {
		t.Errorf("no schema: %v", err)
	}
	if !CarriesChanges(DebeziumJSON) || CarriesChanges("json") {
		t.Error("CarriesChanges")
	}
}

// BenchmarkDebeziumJSON encodes batches of 4096 change rows (an int64, a
// string and a nullable float64 column; kinds cycling through all four).
func BenchmarkDebeziumJSON(b *testing.B) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	rng := rand.New(rand.NewPCG(1, 1))
	rec := randomBatch(rng, memory.DefaultAllocator, schema, jsonTypes, 4096)
	defer rec.Release()
	kinds := make([]arrowflow.RowKind, rec.NumRows())
	for i := range kinds {
		kinds[i] = arrowflow.RowKind(i % 4)
	}
	enc := mustEncoder(b, Config{Name: DebeziumJSON, Schema: schema}).(ChangeEncoder)
	var n int64
	emit := func(_ int, v []byte) error { n += int64(len(v)); return nil }
	if err := enc.EncodeChanges(rec, kinds, emit); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(n)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := enc.EncodeChanges(rec, kinds, emit); err != nil {
			b.Fatal(err)
		}
	}
}
