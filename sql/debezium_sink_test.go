package sql

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/kafkatest"
)

// An updating query may write a Kafka table whose format carries changes
// (debezium-json, through 'format' or 'value.format'); with an append-only
// format it is still refused, and so is a filesystem table.
func TestDebeziumSinkTakesUpdates(t *testing.T) {
	ins := &Insert{Pos: Pos{Line: 3, Col: 1}}
	upd := &relation{mode: arrowflow.Retract, updatedBy: "the GROUP BY at 2:1 (non-window aggregation)"}
	p := &planner{}
	for _, c := range []struct {
		connector string
		opts      map[string]string
		refused   bool
	}{
		{"kafka", map[string]string{"format": "debezium-json"}, false},
		{"kafka", map[string]string{"value.format": "debezium-json"}, false},
		{"kafka", map[string]string{"format": "debezium-json", "value.format": "debezium-json"}, false},
		{"kafka", map[string]string{"format": "json"}, true},
		{"kafka", map[string]string{"value.format": "avro"}, true},
		{"kafka", map[string]string{"format": "json", "value.format": "debezium-json"}, false}, // formatOptions refuses the mismatch when the sink opens
		{"kafka", map[string]string{}, true},
		{"filesystem", map[string]string{"format": "debezium-json"}, true},
		{"iceberg", map[string]string{"format": "debezium-json"}, true},
	} {
		var opts []*Option
		for k, v := range c.opts {
			opts = append(opts, &Option{Key: k, Value: v})
		}
		to, err := newTableOptions("out", Pos{Line: 1, Col: 1}, opts)
		if err != nil {
			t.Fatal(err)
		}
		err = p.checkSinkTakesChanges(ins, &tableDef{name: "out", connector: c.connector, opts: to}, upd)
		if (err != nil) != c.refused {
			t.Errorf("%s %v: error %v, want refused %v", c.connector, c.opts, err, c.refused)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), "debezium-json") {
			t.Errorf("%s %v: the refusal does not point at debezium-json: %v", c.connector, c.opts, err)
		}
		if len(to.used) != 0 {
			t.Errorf("%s %v: the check marked options used: %v", c.connector, c.opts, to.used)
		}
	}
}

// materializeDebezium reads topic read_committed and applies its events in
// order per partition (c adds "after", d removes one equal "before"),
// failing on the delete of a row the table does not hold, and returns the
// table's rows, each as the JSON text of its object with its fields
// decoded into a map and formatted by fmtRow in the given column order.
func materializeDebezium(t *testing.T, brokers []string, topic string, columns []string) (rows []string, deletes int) {
	t.Helper()
	rowOf := func(raw json.RawMessage) string {
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(string(raw)))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatalf("row %s: %v", raw, err)
		}
		if len(m) != len(columns) {
			t.Fatalf("row %s has %d fields, want %v", raw, len(m), columns)
		}
		vals := make([]any, len(columns))
		for i, c := range columns {
			v, ok := m[c]
			if !ok {
				t.Fatalf("row %s has no field %s", raw, c)
			}
			vals[i] = v
		}
		return fmtRow(vals...)
	}
	table := map[string]int{}
	events := kafkatest.ReadCommitted(t, brokers, topic)
	for _, r := range events {
		var ev struct {
			Before, After json.RawMessage
			Op            string
		}
		if err := json.Unmarshal([]byte(r.Value), &ev); err != nil {
			t.Fatalf("event %s: %v", r.Value, err)
		}
		switch {
		case ev.Op == "c" && string(ev.Before) == "null":
			table[rowOf(ev.After)]++
		case ev.Op == "d" && string(ev.After) == "null":
			row := rowOf(ev.Before)
			if table[row] == 0 {
				t.Fatalf("topic %s, partition %d offset %d: a delete of %s, which the table does not hold", topic, r.Partition, r.Offset, row)
			}
			table[row]--
			deletes++
		default:
			t.Fatalf("event %s is neither a create nor a delete", r.Value)
		}
	}
	for row, n := range table {
		for range n {
			rows = append(rows, row)
		}
	}
	slices.Sort(rows)
	t.Logf("topic %s: %d events, %d deletes, %d rows", topic, len(events), deletes, len(rows))
	return rows, deletes
}

// A non-window GROUP BY (COUNT, SUM, MIN, MAX, COUNT DISTINCT, NULLs in
// the aggregated column) and an aggregation of its counts (whose rows
// are deleted as counts move) run from a paced datagen sequence into
// Kafka tables with 'value.format' and 'format' debezium-json, keyed by
// the group key, checkpointing every few milliseconds so that groups
// update across epochs: applying the committed events gives exactly the
// plain Go answer, and no event deletes a row the table does not hold.
// Records of one key go to one partition, so a reader applying each
// partition in order sees every key's changes in order. (Two Kafka sinks
// of one job need transactional id prefixes of their own: both default to
// the job's name.)
func TestDebeziumSinkGroupByThroughKafka(t *testing.T) {
	b := kafkatest.Start(t, "", 3)
	const rows, keys = 30_000, 61
	script := fmt.Sprintf(`CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '20000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%[2]d');
CREATE VIEW ev AS SELECT id %% %[3]d AS k,
  CASE WHEN id %% 8 = 3 OR id %% %[3]d = 7 THEN CAST(NULL AS BIGINT) ELSE (id * 7919) %% 2000 - 1000 END AS v,
  CONCAT('n', CAST((id / 7) %% 6 AS STRING)) AS name
FROM src;
CREATE TABLE per_key (k BIGINT, n BIGINT, total BIGINT, lo BIGINT, hi BIGINT, names BIGINT) WITH ('connector' = 'kafka', 'topic' = 'per_key',
  'properties.bootstrap.servers' = '%[1]s', 'value.format' = 'debezium-json', 'key.fields' = 'k', 'debezium-json.timestamp-format.standard' = 'SQL',
  'sink.transactional-id-prefix' = 'per-key');
CREATE TABLE hist (n BIGINT, keys BIGINT) WITH ('connector' = 'kafka', 'topic' = 'hist',
  'properties.bootstrap.servers' = '%[1]s', 'format' = 'debezium-json', 'key.fields' = 'n',
  'sink.transactional-id-prefix' = 'hist');
INSERT INTO per_key SELECT k, COUNT(*), SUM(v), MIN(v), MAX(v), COUNT(DISTINCT name) FROM ev GROUP BY k;
INSERT INTO hist SELECT n, COUNT(*) FROM (SELECT k, COUNT(*) AS n FROM ev GROUP BY k) GROUP BY n;
`, b.Addr(), rows-1, keys)
	job, err := Compile(context.Background(), script, Options{Parallelism: 2, ForceParallelism: true, JobName: "debezium"})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	run, err := job.Graph.Plan(arrowflow.Options{Allocator: mem, CheckpointInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := run.Run(ctx); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)

	// The plain answer, row at a time.
	type acc struct {
		n, total, nv int64
		lo, hi       int64
		names        map[string]bool
	}
	per := map[int64]*acc{}
	for id := range int64(rows) {
		k := id % keys
		a := per[k]
		if a == nil {
			a = &acc{names: map[string]bool{}}
			per[k] = a
		}
		a.n++
		a.names[fmt.Sprintf("n%d", (id/7)%6)] = true
		if id%8 == 3 || k == 7 {
			continue
		}
		v := (id*7919)%2000 - 1000
		if a.nv == 0 || v < a.lo {
			a.lo = v
		}
		if a.nv == 0 || v > a.hi {
			a.hi = v
		}
		a.nv++
		a.total += v
	}
	var wantPer, wantHist []string
	hist := map[int64]int64{}
	for k, a := range per {
		total, lo, hi := any(a.total), any(a.lo), any(a.hi)
		if a.nv == 0 {
			total, lo, hi = nil, nil, nil
		}
		wantPer = append(wantPer, fmtRow(k, a.n, total, lo, hi, len(a.names)))
		hist[a.n]++
	}
	for n, c := range hist {
		wantHist = append(wantHist, fmtRow(n, c))
	}
	slices.Sort(wantPer)
	slices.Sort(wantHist)
	if len(wantPer) != keys {
		t.Fatalf("the input has %d keys, want %d", len(wantPer), keys)
	}
	brokers := []string{b.Addr()}
	for _, c := range []struct {
		topic   string
		columns []string
		want    []string
	}{
		{"per_key", []string{"k", "n", "total", "lo", "hi", "names"}, wantPer},
		{"hist", []string{"n", "keys"}, wantHist},
	} {
		got, deletes := materializeDebezium(t, brokers, c.topic, c.columns)
		if deletes == 0 {
			t.Errorf("%s: no delete event: retractions are not tested", c.topic)
		}
		if !slices.Equal(got, c.want) {
			i := 0
			for i < min(len(got), len(c.want)) && got[i] == c.want[i] {
				i++
			}
			t.Errorf("%s: %d rows, the answer has %d; first difference at row %d: %q, answer %q", c.topic, len(got), len(c.want), i, first(got[i:]), first(c.want[i:]))
		}
	}
}

// An updating query into a Kafka table of an append-only format fails to
// compile, pointing at debezium-json; the filesystem sink has no
// debezium-json; debezium-json is no key format.
func TestDebeziumSinkRefusals(t *testing.T) {
	for _, c := range []struct{ table, msg string }{
		{`CREATE TABLE out (k BIGINT, n BIGINT) WITH ('connector' = 'kafka', 'topic' = 'o', 'properties.bootstrap.servers' = '127.0.0.1:1', 'format' = 'debezium-json',
  'key.fields' = 'k', 'key.format' = 'debezium-json');`,
			"option 'key.format': debezium-json writes changes, not a key"},
		{`CREATE TABLE out (k BIGINT, n BIGINT) WITH ('connector' = 'kafka', 'topic' = 'o', 'properties.bootstrap.servers' = '127.0.0.1:1', 'format' = 'debezium-json',
  'debezium-json.schema-include' = 'true');`,
			"debezium-json.schema-include = true is not supported yet"},
		{`CREATE TABLE out (k BIGINT, n BIGINT) WITH ('connector' = 'kafka', 'topic' = 'o', 'properties.bootstrap.servers' = '127.0.0.1:1', 'format' = 'json');`,
			"can only append rows"},
		{`CREATE TABLE out (k BIGINT, n BIGINT) WITH ('connector' = 'filesystem', 'path' = '/nonexistent/x', 'format' = 'debezium-json');`,
			"can only append rows"},
	} {
		script := `CREATE TABLE src (k BIGINT, v BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '10');
` + c.table + `
INSERT INTO out SELECT k, COUNT(*) FROM src GROUP BY k;`
		_, err := Compile(context.Background(), script, Options{})
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %v, want %q", c.table, err, c.msg)
			continue
		}
		if !strings.Contains(err.Error(), "debezium-json") {
			t.Errorf("%s: the error's hint does not name debezium-json: %v", c.table, err)
		}
	}
}
