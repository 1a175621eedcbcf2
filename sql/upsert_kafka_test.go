package sql

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
	"github.com/weirflow/weir/internal/kafkatest"
	"github.com/weirflow/weir/sinks/collect"
	kafkasrc "github.com/weirflow/weir/sources/kafka"
)

// lastPerKey reads topic with a plain read_committed franz-go consumer up
// to the last stable offsets and returns each key's last value ("" for a
// tombstone) and how many records the topic holds.
func lastPerKey(t *testing.T, addr, topic string) (map[string]string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords(), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, next := map[int32]int64{}, map[int32]int64{}
	offs.Each(func(o kadm.ListedOffset) { end[o.Partition] = o.Offset })
	last, n := map[string]string{}, 0
	for {
		done := true
		for p, e := range end {
			done = done && next[p] >= e
		}
		if done {
			return last, n
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v", topic, ctx.Err())
		}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				next[r.Partition] = r.Offset + 1
				if r.Attrs.IsControl() || r.Offset >= end[r.Partition] {
					continue
				}
				n++
				last[string(r.Key)] = string(r.Value) // nil: a tombstone
				if r.Value != nil && len(r.Value) == 0 {
					t.Fatalf("key %s: an empty value that is not a tombstone", r.Key)
				}
			}
		})
	}
}

// An updating query into an upsert-kafka table and back: counts of counts
// (a two-level aggregation whose intermediate rows are deleted again) are
// written as upserts and tombstones; a plain consumer's last value per
// key is the final table (tombstones for the deleted rows), and an
// upsert-kafka source reading the topic (normalized by its PRIMARY KEY)
// gives the same table.
func TestUpsertKafkaRoundTrip(t *testing.T) {
	b := kafkatest.Start(t, "", 3)
	const rows, keys = 6000, 12
	for _, tc := range []struct {
		name, with string
	}{
		{"ALL", ""},
		{"EXCEPT_KEY", ", 'value.fields-include' = 'EXCEPT_KEY'"},
		{"buffered", ", 'sink.buffer-flush.max-rows' = '1000', 'sink.buffer-flush.interval' = '1 h'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "counts-" + strings.ToLower(strings.ReplaceAll(tc.name, "_", "-"))
			// One table for writing and reading back, as in Flink: the
			// sink leaves the scan options to the source and the source
			// the sink's.
			table := fmt.Sprintf(`CREATE TABLE counts (c BIGINT, n BIGINT, PRIMARY KEY (c) NOT ENFORCED) WITH ('connector' = 'upsert-kafka',
  'topic' = '%s', 'properties.bootstrap.servers' = '%s', 'key.format' = 'json', 'value.format' = 'json',
  'scan.bounded.mode' = 'latest-offset'%s);
`, topic, b.Addr(), tc.with)
			script := fmt.Sprintf(`CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '5000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%d');
`, rows-1) + table + fmt.Sprintf(`INSERT INTO counts SELECT c, COUNT(*) FROM (SELECT k, COUNT(*) AS c FROM (SELECT id %% %d AS k FROM src) GROUP BY k) GROUP BY c;`, keys)
			job, err := Compile(context.Background(), script, Options{Parallelism: 2, ForceParallelism: true, JobName: "up-" + tc.name})
			if err != nil {
				t.Fatal(err)
			}
			runJob(t, job)
			last, n := lastPerKey(t, b.Addr(), topic)
			final := fmt.Sprintf(`{"c":%d}`, rows/keys)
			var live []string
			tombstones := 0
			for k, v := range last {
				if v == "" {
					tombstones++
					continue
				}
				live = append(live, k+" "+v)
			}
			wantValue := fmt.Sprintf(`{"c":%d,"n":%d}`, rows/keys, keys)
			if tc.name == "EXCEPT_KEY" {
				wantValue = fmt.Sprintf(`{"n":%d}`, keys)
			}
			if want := []string{final + " " + wantValue}; !slices.Equal(live, want) {
				t.Fatalf("live keys %q, want %q", live, want)
			}
			if tombstones == 0 {
				t.Errorf("no tombstone among %d keys: the intermediate counts were never deleted", len(last))
			}
			t.Logf("%d records, %d keys, %d tombstones", n, len(last), tombstones)

			// Read back with upsert-kafka.
			out := collect.New()
			readBack := table + `
CREATE TABLE result (c BIGINT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO result SELECT * FROM counts;`
			job, err = Compile(context.Background(), readBack, Options{Parallelism: 2, ForceParallelism: true, Sinks: map[string]arrowflow.Sink{"result": out}})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(job.Plan, "changelog-normalize keyed by c") {
				t.Fatalf("plan without changelog-normalize:\n%s", job.Plan)
			}
			runJob(t, job)
			got, err := out.Table()
			if err != nil {
				t.Fatal(err)
			}
			var rowsGot []string
			for _, r := range got {
				rowsGot = append(rowsGot, fmt.Sprint(r...))
			}
			sort.Strings(rowsGot)
			if want := []string{fmt.Sprint(int64(rows/keys), int64(keys))}; !slices.Equal(rowsGot, want) {
				t.Fatalf("read back %q, want %q", rowsGot, want)
			}
		})
	}
}

// upsert-kafka's options follow Flink's rules.
func TestUpsertKafkaOptions(t *testing.T) {
	const cols = "c BIGINT, n BIGINT"
	for _, tc := range []struct {
		name, cols, with, want string
	}{
		{"no primary key", cols, "", "require to define a PRIMARY KEY constraint"},
		{"no key format", cols + ", PRIMARY KEY (c) NOT ENFORCED", "'value.format' = 'json'", "key.format"},
		{"changes as values", cols + ", PRIMARY KEY (c) NOT ENFORCED", "'key.format' = 'json', 'value.format' = 'debezium-json'", "is not in insert-only mode"},
		{"prefix with ALL", "k_c BIGINT, n BIGINT, PRIMARY KEY (k_c) NOT ENFORCED", "'key.format' = 'json', 'value.format' = 'json', 'key.fields-prefix' = 'k_'", "A key prefix is not allowed"},
		{"key without prefix", cols + ", PRIMARY KEY (c) NOT ENFORCED", "'key.format' = 'json', 'value.format' = 'json', 'key.fields-prefix' = 'k_', 'value.fields-include' = 'EXCEPT_KEY'", "must be prefixed"},
		{"startup mode", cols + ", PRIMARY KEY (c) NOT ENFORCED", "'key.format' = 'json', 'value.format' = 'json', 'scan.startup.mode' = 'latest-offset'", "earliest offset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			with := "'connector' = 'upsert-kafka', 'topic' = 't', 'properties.bootstrap.servers' = '127.0.0.1:1'"
			if tc.with != "" {
				with += ", " + tc.with
			}
			script := fmt.Sprintf("CREATE TABLE u (%s) WITH (%s);\nCREATE TABLE out (c BIGINT, n BIGINT) WITH ('connector' = 'blackhole');\nINSERT INTO out SELECT c, n FROM u;", tc.cols, with)
			if strings.HasPrefix(tc.cols, "k_c") {
				script = strings.Replace(script, "SELECT c, n", "SELECT k_c, n", 1)
			}
			_, err := Compile(context.Background(), script, Options{Parallelism: 1})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// kafkaKeyColumns, for the plain kafka connector: with
// 'key.format', 'key.fields', 'key.fields-prefix' and EXCEPT_KEY, a
// record's key fills the key column and its value the others, in the
// table's column order; a null key gives a NULL key column. 'key.format'
// without 'key.fields' is Flink's error.
func TestKafkaKeyColumns(t *testing.T) {
	b := kafkatest.Start(t, "", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("keyed"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "keyed"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(`{"id":7}`), Value: []byte(`{"text":"a"}`)},
		&kgo.Record{Value: []byte(`{"text":"b"}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	opts := func(kv ...string) *tableOptions {
		var ops []*Option
		for i := 0; i < len(kv); i += 2 {
			ops = append(ops, &Option{Key: kv[i], Value: kv[i+1]})
		}
		o, err := newTableOptions("keyed", Pos{}, ops)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	physical := []arrow.Field{{Name: "text", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "k_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}
	o := opts("key.format", "json", "key.fields", "k_id", "key.fields-prefix", "k_", "value.fields-include", "EXCEPT_KEY", "value.format", "json")
	ko := kafkasrc.Options{Brokers: []string{b.Addr()}, Topics: []string{"keyed"}, BoundedMode: kafkasrc.BoundedLatest}
	value, err := kafkaKeyColumns(ctx, o, physical, &ko)
	if err != nil {
		t.Fatal(err)
	}
	if len(value) != 1 || value[0].Name != "text" {
		t.Fatalf("value columns %v, want text", value)
	}
	if ko.Decoder, err = format.NewDecoder(ctx, format.Config{Name: "json", Schema: arrow.NewSchema(value, nil)}); err != nil {
		t.Fatal(err)
	}
	src, err := kafkasrc.NewSource(ko)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := src.Splits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var states []arrowflow.SplitState
	for _, id := range ids {
		states = append(states, arrowflow.SplitState{Split: id})
	}
	rd, err := src.Open(nil, states)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got []string
	for {
		bt, err := rd.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for k := range bt.NumRows() {
			got = append(got, fmt.Sprintf("%v %v", bt.RowValues(k)...))
		}
		bt.Release()
	}
	if want := []string{"a 7", "b <nil>"}; !slices.Equal(got, want) {
		t.Fatalf("rows %q, want %q", got, want)
	}
	if _, err := kafkaKeyColumns(ctx, opts("key.format", "json", "format", "json"), physical, &kafkasrc.Options{}); err == nil || !strings.Contains(err.Error(), "requires the declaration of one or more of key fields") {
		t.Fatalf("key.format without key.fields: %v", err)
	}
}

// The plain kafka connector with 'key.format': keys and values written by
// a franz-go producer over three partitions come back as rows at
// parallelism 2, key columns from the key (prefixed, EXCEPT_KEY) or the
// value (ALL), in the table's column order.
func TestKafkaSourceKeyFormat(t *testing.T) {
	b := kafkatest.Start(t, "", 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("keyed"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "keyed"); err != nil {
		t.Fatal(err)
	}
	var want []string
	var recs []*kgo.Record
	for i := range 300 {
		recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, `{"id":%d}`, i%17), Value: fmt.Appendf(nil, `{"id":%d,"v":"x%d"}`, 1000+i, i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, table, query string
		row                func(i int) string
	}{
		{"EXCEPT_KEY", `CREATE TABLE keyed (v STRING, k_id BIGINT)`, `SELECT v, CAST(k_id AS STRING) FROM keyed`,
			func(i int) string { return fmt.Sprintf("x%d %d", i, i%17) }},
		{"ALL", `CREATE TABLE keyed (id BIGINT, v STRING)`, `SELECT CAST(id AS STRING), v FROM keyed`,
			func(i int) string { return fmt.Sprintf("%d x%d", 1000+i, i) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			with := fmt.Sprintf(` WITH ('connector' = 'kafka', 'topic' = 'keyed', 'properties.bootstrap.servers' = '%s',
  'scan.bounded.mode' = 'latest-offset', 'key.format' = 'json', 'value.format' = 'json'`, b.Addr())
			if tc.name == "EXCEPT_KEY" {
				with += `, 'key.fields' = 'k_id', 'key.fields-prefix' = 'k_', 'value.fields-include' = 'EXCEPT_KEY');`
			} else {
				with += `, 'key.fields' = 'id');`
			}
			out := collect.New()
			script := tc.table + with + "\nCREATE TABLE result (a STRING, b STRING) WITH ('connector' = 'blackhole');\nINSERT INTO result " + tc.query + ";"
			job, err := Compile(ctx, script, Options{Parallelism: 2, ForceParallelism: true, Sinks: map[string]arrowflow.Sink{"result": out}})
			if err != nil {
				t.Fatal(err)
			}
			runJob(t, job)
			got, err := out.Table()
			if err != nil {
				t.Fatal(err)
			}
			var rows []string
			for _, r := range got {
				rows = append(rows, fmt.Sprintf("%v %v", r...))
			}
			want = want[:0]
			for i := range 300 {
				want = append(want, tc.row(i))
			}
			sort.Strings(rows)
			sort.Strings(want)
			if !slices.Equal(rows, want) {
				t.Fatalf("%d rows, want %d; first %q, want %q", len(rows), len(want), rows[:min(3, len(rows))], want[:3])
			}
		})
	}
}
