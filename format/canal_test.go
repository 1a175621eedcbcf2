package format

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/testutil"
)

// Canal writes every value as a string (the JSON decoder reads numbers
// from strings, as Flink's does).
const canalUpdateSample = `{
  "data": [{"id": "111", "name": "scooter", "description": "Big 2-wheel scooter", "weight": "5.18"}],
  "database": "inventory",
  "es": 1589373560000,
  "id": 9,
  "isDdl": false,
  "mysqlType": {"id": "INTEGER", "name": "VARCHAR(255)", "description": "VARCHAR(512)", "weight": "FLOAT"},
  "old": [{"weight": "5.15"}],
  "pkNames": ["id"],
  "sql": "",
  "sqlType": {"id": 4, "name": 12, "description": 12, "weight": 7},
  "table": "products",
  "ts": 1589373560798,
  "type": "UPDATE"
}`

func canalEvent(typ, db, table, data, old string) string {
	return `{"data":` + data + `,"database":"` + db + `","es":1589373515000,"id":3,"isDdl":false,"mysqlType":{"id":"INTEGER","name":"VARCHAR(255)","description":"VARCHAR(512)","weight":"FLOAT"},"old":` + old + `,"pkNames":["id"],"sql":"","sqlType":{"id":4,"name":12,"description":12,"weight":7},"table":"` + table + `","ts":1589373515477,"type":"` + typ + `"}`
}

// Events as Canal writes them, checked against their rows: inserts and
// deletes of several rows, updates whose "old" holds the changed columns
// (an explicit null included), DDL events skipped.
func TestCanalJSONDecodeEvents(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	dec := mustChangeDecoder(t, Config{Name: CanalJSON, Schema: productsSchema})
	b := dec.NewChangeBuilder(mem)
	defer b.Release()
	events := []string{
		canalEvent("INSERT", "inventory", "products",
			`[{"id":"101","name":"scooter","description":"Small 2-wheel scooter","weight":"3.14"},{"id":"102","name":"car battery","description":"12V car battery","weight":"8.1"}]`, `null`),
		canalUpdateSample,
		canalEvent("UPDATE", "inventory", "products",
			`[{"id":"101","name":"scooter","description":"Small 2-wheel scooter","weight":"3.5"},{"id":"102","name":"car battery","description":null,"weight":"8.1"}]`,
			`[{"weight":"3.14"},{"description":"12V car battery","name":null}]`),
		canalEvent("DELETE", "inventory", "products", `[{"id":"111","name":"scooter","description":"Big 2-wheel scooter","weight":"5.18"}]`, `null`),
		`{"data":null,"database":"inventory","es":1589373515000,"id":1,"isDdl":true,"mysqlType":null,"old":null,"pkNames":null,"sql":"CREATE TABLE products (id INT)","sqlType":null,"table":"products","ts":1589373515477,"type":"CREATE"}`,
		`{"data":null,"database":"inventory","isDdl":true,"old":null,"sql":"ALTER TABLE products ADD COLUMN x INT","table":"products","type":"ALTER"}`,
		`{"type":"INSERT","data":[]}`,
		``,
	}
	appendChanges(t, b, events, []int{2, 2, 4, 1, 0, 0, 0, 0})
	diffChanges(t, []changeRow{
		{arrowflow.Insert, product(101, "scooter", "Small 2-wheel scooter", 3.14)},
		{arrowflow.Insert, product(102, "car battery", "12V car battery", 8.1)},
		{arrowflow.UpdateBefore, product(111, "scooter", "Big 2-wheel scooter", 5.15)},
		{arrowflow.UpdateAfter, product(111, "scooter", "Big 2-wheel scooter", 5.18)},
		{arrowflow.UpdateBefore, product(101, "scooter", "Small 2-wheel scooter", 3.14)},
		{arrowflow.UpdateAfter, product(101, "scooter", "Small 2-wheel scooter", 3.5)},
		{arrowflow.UpdateBefore, []any{int64(102), nil, "12V car battery", 8.1}},
		{arrowflow.UpdateAfter, []any{int64(102), "car battery", nil, 8.1}},
		{arrowflow.Delete, product(111, "scooter", "Big 2-wheel scooter", 5.18)},
	}, finishChanges(t, b, productsSchema))
}

// canal-json.database.include and canal-json.table.include keep the events
// whose whole database and table names match; the others are no rows and
// are not decoded.
func TestCanalJSONInclude(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	dec := mustChangeDecoder(t, Config{Name: CanalJSON, Schema: productsSchema, Options: map[string]string{
		"canal-json.database.include": "inv.*",
		"canal-json.table.include":    "products|orders",
	}})
	b := dec.NewChangeBuilder(mem)
	defer b.Release()
	row := `[{"id":"1"}]`
	for _, c := range []struct {
		db, table string
		rows      int
	}{
		{"inventory", "products", 1},
		{"inv", "orders", 1},
		{"shop", "products", 0},
		{"inventory", "products2", 0}, // the whole name must match
		{"xinventory", "products", 0},
	} {
		if n, err := b.AppendChange([]byte(canalEvent("INSERT", c.db, c.table, row, "null"))); err != nil || n != c.rows {
			t.Errorf("%s.%s: %d rows, %v; want %d", c.db, c.table, n, err, c.rows)
		}
	}
	// A filtered-out event is not decoded: a bad row there is no error.
	if n, err := b.AppendChange([]byte(canalEvent("INSERT", "shop", "products", `[{"id":"x"}]`, "null"))); err != nil || n != 0 {
		t.Errorf("filtered bad row: %d rows, %v", n, err)
	}
	_, err := b.AppendChange([]byte(`{"data":[{"id":"1"}],"table":"products","type":"INSERT"}`))
	wantRecordError(t, err, CanalJSON, "database", -1, `no "database" field`)
	_, err = b.AppendChange([]byte(canalEvent("INSERT", "inventory", "products", `[{"id":"x"}]`, "null")))
	wantRecordError(t, err, CanalJSON, "data[0].id", 16, "is not an integer")
	diffChanges(t, []changeRow{
		{arrowflow.Insert, []any{int64(1), nil, nil, nil}},
		{arrowflow.Insert, []any{int64(1), nil, nil, nil}},
	}, finishChanges(t, b, productsSchema))

	_, err = NewDecoder(context.Background(), Config{Name: CanalJSON, Schema: productsSchema, Options: map[string]string{"canal-json.table.include": "(?<=a)b"}})
	if err == nil || !strings.Contains(err.Error(), "canal-json.table.include") || !strings.Contains(err.Error(), "RE2") {
		t.Errorf("a look-behind: %v", err)
	}
}

// Bad events are *RecordErrors naming the field; the builder stays usable.
func TestCanalJSONBadEvents(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	dec := mustChangeDecoder(t, Config{Name: CanalJSON, Schema: productsSchema})
	b := dec.NewChangeBuilder(mem)
	defer b.Release()
	good := `{"data":[{"id":"1","name":"b"}],"old":[{"name":"a"}],"type":"UPDATE"}`
	for _, c := range []struct {
		value  string
		field  string
		offset int
		msg    string
	}{
		{`{"data":[{"id":"1"}],"type":"UPSERT"}`, "type", 28, `unknown type "UPSERT"`},
		{`{"data":[{"id":"1"}]}`, "type", -1, `no "type" field`},
		{`{"data":null,"type":"INSERT"}`, "data", 20, `type "INSERT" without "data" rows`},
		{`{"type":"DELETE"}`, "data", 8, `type "DELETE" without "data" rows`},
		{`{"data":[{"id":"1"},null],"type":"INSERT"}`, "data[1]", 20, "a null row"},
		{`{"data":[{"id":"1"}],"type":"UPDATE"}`, "old", 28, `type "UPDATE" with 1 "data" rows and 0 "old" rows`},
		{`{"data":[{"id":"1"},{"id":"2"}],"old":[{}],"type":"UPDATE"}`, "old", 50, `2 "data" rows and 1 "old" rows`},
		{`{"data":[{"id":"1"}],"old":[null],"type":"UPDATE"}`, "old[0]", 28, "a null row"},
		{`{"data":[{"id":"1"},{"id":"2","weight":"w"}],"type":"INSERT"}`, "data[1].weight", 40, "is not a number"},
		// A bad old value: named and placed in "old".
		{`{"data":[{"id":"1","weight":"1"}],"old":[{"weight":"w"}],"type":"UPDATE"}`, "old[0].weight", 52, "is not a number"},
		// A bad new value of an update: found in the merged old row, named in "data".
		{`{"data":[{"id":"1","weight":"w"}],"old":[{"name":"a"}],"type":"UPDATE"}`, "data[0].weight", 29, "is not a number"},
		{`{"data":[{"id":"1","id":"2"}],"old":[{}],"type":"UPDATE"}`, "data[0].id", 19, "duplicate field"},
		{`{"data":{"id":"1"},"type":"INSERT"}`, "data", 8, "expected an array of rows, found an object"},
		{`{"data":[1],"type":"INSERT"}`, "data[0]", 9, "expected an object (the row), found a number"},
		{`{"data":[{"id":"1"}],"type":"INSERT","type":"INSERT"}`, "type", 37, "duplicate field"},
		{`{"data":[{"id":"1"}],"type":"INSERT"}]`, "", 37, "data after the top-level object"},
		{`{"data":[{"id":"1"}],"isDdl":"no","type":"INSERT"}`, "isDdl", 29, "expected a boolean, found a string"},
		{`{"data":[{"id":"1"}],"type":INSERT}`, "type", 28, "expected a string, found 'I'"},
	} {
		appendChanges(t, b, []string{good}, []int{2})
		n, err := b.AppendChange([]byte(c.value))
		if n != 0 {
			t.Errorf("%s: %d rows with an error", c.value, n)
		}
		wantRecordError(t, err, CanalJSON, c.field, c.offset, c.msg)
		appendChanges(t, b, []string{good}, []int{2})
		before, after := []any{int64(1), "a", nil, nil}, []any{int64(1), "b", nil, nil}
		diffChanges(t, []changeRow{
			{arrowflow.UpdateBefore, before}, {arrowflow.UpdateAfter, after},
			{arrowflow.UpdateBefore, before}, {arrowflow.UpdateAfter, after},
		}, finishChanges(t, b, productsSchema))
	}
}

// partialRow keeps a random subset of the members of the JSON object obj
// and returns it with the kept columns' indexes.
func partialRow(t testing.TB, rng *rand.Rand, obj []byte, names []string) ([]byte, []int) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		t.Fatal(err)
	}
	var kept []int
	for j, name := range names {
		if rng.IntN(2) == 0 {
			delete(m, name)
		} else {
			kept = append(kept, j)
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out, kept
}

// changeRoundTrip checks a change format's encoder against its decoder on
// random batches (every type the json format supports) with random row
// kinds (retractions read back as deletes, additions as inserts, as the
// encoders write them), then updates built from the json format's rows
// with a random part of the old row (update(old, new)): -U the new row
// with the old row's kept columns, +U the new row.
func changeRoundTrip(t *testing.T, name, prefix string, update func(old, new []byte) string) {
	for seed := range 50 {
		rng := rand.New(rand.NewPCG(uint64(seed), 29))
		schema := randomSchema(rng, jsonTypes)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			mem := testutil.CheckedAllocator(t)
			rec := randomBatch(rng, mem, schema, jsonTypes, 2+rng.IntN(40))
			defer rec.Release()
			opts, jsonOpts := map[string]string{}, map[string]string{}
			if seed%3 == 1 {
				opts[prefix+".timestamp-format.standard"] = "ISO-8601"
				jsonOpts["json.timestamp-format.standard"] = "ISO-8601"
			}
			cfg := Config{Name: name, Schema: schema, Options: opts}
			enc := mustEncoder(t, cfg).(ChangeEncoder)
			kinds := randomKinds(rng, int(rec.NumRows()))
			var events [][]byte
			if err := enc.EncodeChanges(rec, kinds, func(_ int, v []byte) error {
				events = append(events, bytes.Clone(v))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			b := mustChangeDecoder(t, cfg).NewChangeBuilder(mem)
			defer b.Release()
			rows := rowsOf(rec)
			var want []changeRow
			for i, v := range events {
				if n, err := b.AppendChange(v); err != nil || n != 1 {
					t.Fatalf("event %d %s: %d rows, %v", i, truncate(v), n, err)
				}
				k := arrowflow.Insert
				if kinds[i].IsRetraction() {
					k = arrowflow.Delete
				}
				want = append(want, changeRow{k, rows[i]})
			}
			diffChanges(t, want, finishChanges(t, b, schema))

			var names []string
			for _, f := range schema.Fields() {
				names = append(names, f.Name)
			}
			objs := jsonRowValues(t, rec, jsonOpts)
			want = want[:0]
			for i := 0; i+1 < len(objs); i += 2 {
				old, kept := partialRow(t, rng, objs[i], names)
				ev := update(old, objs[i+1])
				if n, err := b.AppendChange([]byte(ev)); err != nil || n != 2 {
					t.Fatalf("update %d %s: %d rows, %v", i, truncate([]byte(ev)), n, err)
				}
				before := slices.Clone(rows[i+1])
				for _, j := range kept {
					before[j] = rows[i][j]
				}
				want = append(want, changeRow{arrowflow.UpdateBefore, before}, changeRow{arrowflow.UpdateAfter, rows[i+1]})
			}
			diffChanges(t, want, finishChanges(t, b, schema))
		})
	}
}

func TestCanalJSONRoundTrip(t *testing.T) {
	changeRoundTrip(t, CanalJSON, "canal-json", func(old, new []byte) string {
		return `{"data":[` + string(new) + `],"database":"db","old":[` + string(old) + `],"table":"t","type":"UPDATE"}`
	})
}

// The encoder writes Flink's canal-json events: the row in "data", INSERT
// for additions, DELETE for retractions.
func TestCanalJSONExactBytes(t *testing.T) {
	checkExactEvents(t, CanalJSON, []string{
		`{"data":[{"id":1,"name":"a"}],"type":"INSERT"}`,
		`{"data":[{"id":2,"name":null}],"type":"DELETE"}`,
		`{"data":[{"id":3,"name":"q\""}],"type":"INSERT"}`,
		`{"data":[{"id":4,"name":""}],"type":"DELETE"}`,
	})
}

// checkExactEvents encodes the rows (1, "a"), (2, null), (3, `q"`), (4, "")
// as Insert, UpdateBefore, UpdateAfter and Delete with the format's
// encoder and compares the events with want; the events decode back.
func checkExactEvents(t *testing.T, name string, want []string) {
	mem := testutil.CheckedAllocator(t)
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
	enc := mustEncoder(t, Config{Name: name, Schema: schema}).(ChangeEncoder)
	var got []string
	kinds := []arrowflow.RowKind{arrowflow.Insert, arrowflow.UpdateBefore, arrowflow.UpdateAfter, arrowflow.Delete}
	if err := enc.EncodeChanges(rec, kinds, func(_ int, v []byte) error { got = append(got, string(v)); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	b := mustChangeDecoder(t, Config{Name: name, Schema: schema}).NewChangeBuilder(mem)
	defer b.Release()
	appendChanges(t, b, got, []int{1, 1, 1, 1})
	diffChanges(t, []changeRow{
		{arrowflow.Insert, []any{int64(1), "a"}},
		{arrowflow.Delete, []any{int64(2), nil}},
		{arrowflow.Insert, []any{int64(3), "q\""}},
		{arrowflow.Delete, []any{int64(4), ""}},
	}, finishChanges(t, b, schema))
	// Encode, without kinds, writes inserts.
	for i, v := range encodeAll(t, enc, rec) {
		if w := strings.Replace(want[i], "DELETE", "INSERT", 1); name == MaxwellJSON {
			w = strings.Replace(want[i], `"delete"`, `"insert"`, 1)
			if string(v) != w {
				t.Errorf("Encode row %d: %s, want %s", i, v, w)
			}
		} else if string(v) != w {
			t.Errorf("Encode row %d: %s, want %s", i, v, w)
		}
	}
}
