package format

import (
	"context"
	"strings"
	"testing"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/testutil"
)

func maxwellEvent(typ, data, old string) string {
	ev := `{"database":"inventory","table":"products","type":"` + typ + `","ts":1477053217,"xid":23396,"commit":true,"position":"master.000006:800911","server_id":23042,"thread_id":108,"primary_key":[111],"primary_key_columns":["id"],"data":` + data
	if old != "" {
		ev += `,"old":` + old
	}
	return ev + "}"
}

// Events as Maxwell writes them, checked against their rows.
func TestMaxwellJSONDecodeEvents(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	dec := mustChangeDecoder(t, Config{Name: MaxwellJSON, Schema: productsSchema})
	b := dec.NewChangeBuilder(mem)
	defer b.Release()
	events := []string{
		maxwellEvent("insert", `{"id":111,"name":"scooter","description":"Big 2-wheel scooter","weight":5.15}`, ""),
		maxwellEvent("update", `{"id":111,"name":"scooter","description":"Big 2-wheel scooter","weight":5.18}`, `{"weight":5.15}`),
		maxwellEvent("update", `{"id":111,"name":"bike","description":null,"weight":5.18}`, `{"name":"scooter","description":"Big 2-wheel scooter"}`),
		maxwellEvent("update", `{"id":111,"name":"bike","description":"new","weight":5.18}`, `{"description":null}`),
		maxwellEvent("delete", `{"id":111,"name":"bike","description":"new","weight":5.18}`, ""),
		// The members in other orders.
		`{"old":{"weight":1},"data":{"id":1,"weight":2},"type":"update"}`,
		`{"data":{"id":2},"type":"delete"}`,
		``,
	}
	appendChanges(t, b, events, []int{1, 2, 2, 2, 1, 2, 1, 0})
	diffChanges(t, []changeRow{
		{arrowflow.Insert, product(111, "scooter", "Big 2-wheel scooter", 5.15)},
		{arrowflow.UpdateBefore, product(111, "scooter", "Big 2-wheel scooter", 5.15)},
		{arrowflow.UpdateAfter, product(111, "scooter", "Big 2-wheel scooter", 5.18)},
		{arrowflow.UpdateBefore, product(111, "scooter", "Big 2-wheel scooter", 5.18)},
		{arrowflow.UpdateAfter, []any{int64(111), "bike", nil, 5.18}},
		{arrowflow.UpdateBefore, []any{int64(111), "bike", nil, 5.18}},
		{arrowflow.UpdateAfter, product(111, "bike", "new", 5.18)},
		{arrowflow.Delete, product(111, "bike", "new", 5.18)},
		{arrowflow.UpdateBefore, []any{int64(1), nil, nil, 1.0}},
		{arrowflow.UpdateAfter, []any{int64(1), nil, nil, 2.0}},
		{arrowflow.Delete, []any{int64(2), nil, nil, nil}},
	}, finishChanges(t, b, productsSchema))
}

// Bad events are *RecordErrors naming the field; the builder stays usable.
func TestMaxwellJSONBadEvents(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	dec := mustChangeDecoder(t, Config{Name: MaxwellJSON, Schema: productsSchema})
	b := dec.NewChangeBuilder(mem)
	defer b.Release()
	good := `{"type":"update","data":{"id":1,"name":"b"},"old":{"name":"a"}}`
	for _, c := range []struct {
		value  string
		field  string
		offset int
		msg    string
	}{
		{`{"type":"bootstrap-insert","data":{"id":1}}`, "type", 8, `unknown type "bootstrap-insert"`},
		{`{"data":{"id":1}}`, "type", -1, `no "type" field`},
		{`{"type":"insert","data":null}`, "data", 8, `type "insert" without a "data" row`},
		{`{"type":"delete"}`, "data", 8, `type "delete" without a "data" row`},
		{`{"type":"update","data":{"id":1}}`, "old", 8, `type "update" without "old" values`},
		{`{"type":"update","data":{"id":1},"old":null}`, "old", 8, `type "update" without "old" values`},
		{`{"type":"insert","data":{"id":1,"weight":"w"}}`, "data.weight", 42, "is not a number"},
		{`{"type":"update","data":{"id":1,"weight":2},"old":{"weight":"w"}}`, "old.weight", 61, "is not a number"},
		{`{"type":"update","data":{"id":"one"},"old":{}}`, "data.id", 31, "is not an integer"},
		{`{"type":"update","data":{"id":1},"old":[]}`, "old", 39, "expected an object (the row), found an array"},
		{`{"type":"insert","data":"row"}`, "data", 24, "expected an object (the row), found a string"},
		{`{"type":"insert","data":{"id":1},"data":{"id":1}}`, "data", 33, "duplicate field"},
		{`{"type":"insert","data":{"id":1}}x`, "", 33, "data after the top-level object"},
		{`{"type":"insert","data":{"id":1}`, "", 32, "expected ',' or '}', found the end of the value"},
	} {
		appendChanges(t, b, []string{good}, []int{2})
		n, err := b.AppendChange([]byte(c.value))
		if n != 0 {
			t.Errorf("%s: %d rows with an error", c.value, n)
		}
		wantRecordError(t, err, MaxwellJSON, c.field, c.offset, c.msg)
		appendChanges(t, b, []string{good}, []int{2})
		before, after := []any{int64(1), "a", nil, nil}, []any{int64(1), "b", nil, nil}
		diffChanges(t, []changeRow{
			{arrowflow.UpdateBefore, before}, {arrowflow.UpdateAfter, after},
			{arrowflow.UpdateBefore, before}, {arrowflow.UpdateAfter, after},
		}, finishChanges(t, b, productsSchema))
	}
}

func TestMaxwellJSONRoundTrip(t *testing.T) {
	changeRoundTrip(t, MaxwellJSON, "maxwell-json", func(old, new []byte) string {
		return `{"database":"db","table":"t","type":"update","ts":1,"data":` + string(new) + `,"old":` + string(old) + `}`
	})
}

// The encoder writes Flink's maxwell-json events.
func TestMaxwellJSONExactBytes(t *testing.T) {
	checkExactEvents(t, MaxwellJSON, []string{
		`{"data":{"id":1,"name":"a"},"type":"insert"}`,
		`{"data":{"id":2,"name":null},"type":"delete"}`,
		`{"data":{"id":3,"name":"q\""},"type":"insert"}`,
		`{"data":{"id":4,"name":""},"type":"delete"}`,
	})
}

// Options of canal-json and maxwell-json, as Flink names them.
func TestChangeJSONOptions(t *testing.T) {
	for _, c := range []struct {
		name string
		opts map[string]string
		msg  string // "" when accepted
	}{
		{MaxwellJSON, map[string]string{"maxwell-json.timestamp-format.standard": "SQL", "maxwell-json.map-null-key.mode": "LITERAL", "maxwell-json.map-null-key.literal": "n", "maxwell-json.encode.decimal-as-plain-number": "true"}, ""},
		{MaxwellJSON, map[string]string{"maxwell-json.timestamp-format.standard": "unix"}, `maxwell-json.timestamp-format.standard: "unix" is not SQL`},
		{MaxwellJSON, map[string]string{"maxwell-json.ignore-parse-errors": "true"}, "bad records are the connector's policy"},
		{MaxwellJSON, map[string]string{"canal-json.table.include": "t"}, "maxwell-json: unknown option canal-json.table.include"},
		{CanalJSON, map[string]string{"canal-json.database.include": "db", "canal-json.table.include": "t.*", "canal-json.timestamp-format.standard": "ISO-8601"}, ""},
		{CanalJSON, map[string]string{"canal-json.map-null-key.mode": "KEEP"}, "canal-json.map-null-key.mode"},
		{CanalJSON, map[string]string{"canal-json.database.include": "("}, "canal-json.database.include"},
		{CanalJSON, map[string]string{"debezium-json.schema-include": "true"}, "canal-json: unknown option debezium-json.schema-include"},
	} {
		_, err := NewDecoder(context.Background(), Config{Name: c.name, Schema: productsSchema, Options: c.opts})
		if c.msg == "" && err != nil || c.msg != "" && (err == nil || !strings.Contains(err.Error(), c.msg)) {
			t.Errorf("decoder %s %v: error %v, want %q", c.name, c.opts, err, c.msg)
		}
		if c.name == CanalJSON && strings.Contains(c.msg, "include") {
			continue // an encoder does not compile the expressions
		}
		_, err = NewEncoder(context.Background(), Config{Name: c.name, Schema: productsSchema, Options: c.opts})
		if c.msg == "" && err != nil || c.msg != "" && (err == nil || !strings.Contains(err.Error(), c.msg)) {
			t.Errorf("encoder %s %v: error %v, want %q", c.name, c.opts, err, c.msg)
		}
	}
	for _, name := range []string{CanalJSON, MaxwellJSON} {
		if !CarriesChanges(name) {
			t.Errorf("CarriesChanges(%s)", name)
		}
		if _, err := NewDecoder(context.Background(), Config{Name: name}); err == nil || !strings.Contains(err.Error(), "a schema is required") {
			t.Errorf("%s without a schema: %v", name, err)
		}
	}
}
