package sql

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format/registry"
	"github.com/weirflow/weir/internal/cdcgen"
	"github.com/weirflow/weir/internal/kafkatest"
	"github.com/weirflow/weir/sinks/collect"
)

// cdcAccount is a row of the tests' source table accounts(id, owner,
// balance).
type cdcAccount = cdcgen.Account

// cdcHistory makes n Debezium change events of a table of up to keys
// accounts (internal/cdcgen), each as a Kafka record keyed by the id as
// Debezium keys them, and returns them with the table's final state.
func cdcHistory(seed uint64, n, keys int) ([]*kgo.Record, map[int64]cdcAccount) {
	evs, state := cdcgen.History(cdcgen.Config{Keys: keys, Seed: seed}, n)
	recs := make([]*kgo.Record, len(evs))
	for i, e := range evs {
		recs[i] = &kgo.Record{Topic: "accounts", Key: e.Key, Value: e.Value}
	}
	return recs, state
}

// produceCDC writes recs (each dup times in a row, as Debezium repeats
// events after a connector restart) into a broker of partitions
// partitions, one key's events in one partition in order.
func produceCDC(t *testing.T, partitions int, recs []*kgo.Record, dup int) *kafkatest.Broker {
	t.Helper()
	b := kafkatest.Start(t, "", partitions)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var all []*kgo.Record
	for _, r := range recs {
		for range dup {
			c := *r
			all = append(all, &c)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, int32(partitions), 1, nil, "accounts"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, all...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// One key's events in one partition (the default partitioner hashes
	// the key), as the mirror's exactly-once argument needs.
	parts := map[string]int32{}
	for _, r := range all {
		if p, ok := parts[string(r.Key)]; ok && p != r.Partition {
			t.Fatalf("key %s in partitions %d and %d", r.Key, p, r.Partition)
		}
		parts[string(r.Key)] = r.Partition
	}
	return b
}

const cdcSourceDDL = `CREATE TABLE accounts (id BIGINT, owner STRING, balance BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = 'accounts', 'properties.bootstrap.servers' = '%s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'debezium-json');
`

// Debezium changes through a SQL job into an Iceberg upsert table at
// parallelism 1, 2 and 4 (6 partitions: more splits than subtasks): the
// table read by iceberg-go's scan equals the source table's final state.
func TestDebeziumIntoIcebergUpsertTable(t *testing.T) {
	recs, final := cdcHistory(1, 4000, 300)
	b := produceCDC(t, 6, recs, 1)
	var want []string
	for _, a := range final {
		want = append(want, fmt.Sprintf("%d | %s | %d", a.ID, a.Owner, a.Balance))
	}
	sort.Strings(want)
	for _, par := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("p%d", par), func(t *testing.T) {
			wh := filepath.Join(t.TempDir(), "wh")
			script := fmt.Sprintf(cdcSourceDDL, b.Addr()) + fmt.Sprintf(`
CREATE TABLE mirror (id BIGINT, owner STRING, balance BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'iceberg',
  'warehouse' = '%s', 'catalog-database' = 'db', 'format-version' = '2', 'write.upsert.enabled' = 'true');
INSERT INTO mirror SELECT * FROM accounts;`, wh)
			job, err := Compile(context.Background(), script, Options{Parallelism: par, ForceParallelism: true})
			if err != nil {
				t.Fatal(err)
			}
			runJob(t, job)
			got := icebergRows(t, wh, "mirror")
			if !slices.Equal(got, want) {
				t.Fatalf("the mirror differs from the source table: %s", cdcDiff(got, want))
			}
		})
	}
}

// An aggregation over a CDC table whose events come twice: with SET
// 'table.exec.source.cdc-events-duplicate' = 'true' a changelog-normalize
// keyed by the PRIMARY KEY makes a repeated event change nothing, and the
// sums equal the source table's; without it the sums count the
// repetitions (Flink's behaviour too).
func TestCDCEventsDuplicateNormalizes(t *testing.T) {
	recs, final := cdcHistory(2, 3000, 150)
	b := produceCDC(t, 4, recs, 2)
	want := ownerTotals(final)
	for _, dedup := range []bool{true, false} {
		for _, par := range []int{1, 2, 4} {
			if !dedup && par != 2 {
				continue
			}
			t.Run(fmt.Sprintf("dedup=%v/p%d", dedup, par), func(t *testing.T) {
				script := fmt.Sprintf(cdcSourceDDL, b.Addr()) + `
CREATE TABLE totals (owner STRING, total BIGINT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO totals SELECT owner, SUM(balance), COUNT(*) FROM accounts GROUP BY owner;`
				if dedup {
					script = "SET 'table.exec.source.cdc-events-duplicate' = 'true';\n" + script
				}
				out := collect.New()
				job, err := Compile(context.Background(), script, Options{Parallelism: par, ForceParallelism: true,
					Sinks: map[string]arrowflow.Sink{"totals": out}})
				if err != nil {
					t.Fatal(err)
				}
				if dedup && !strings.Contains(job.Plan, "changelog-normalize keyed by id") {
					t.Fatalf("plan without changelog-normalize:\n%s", job.Plan)
				}
				runJob(t, job)
				rows, err := out.Table()
				if dedup && err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range rows {
					got = append(got, fmt.Sprintf("%v %v %v", r[0], r[1], r[2]))
				}
				sort.Strings(got)
				if dedup && !slices.Equal(got, want) {
					t.Fatalf("sums over duplicated events: %s", cdcDiff(got, want))
				}
				if !dedup && err == nil && slices.Equal(got, want) {
					t.Fatal("without cdc-events-duplicate the repeated events should have counted twice")
				}
			})
		}
	}
}

// ownerTotals is SELECT owner, SUM(balance), COUNT(*) GROUP BY owner over
// the table, each row "owner sum count", sorted.
func ownerTotals(table map[int64]cdcAccount) []string {
	type agg struct{ sum, n int64 }
	ref := map[string]agg{}
	for _, a := range table {
		g := ref[a.Owner]
		g.sum += a.Balance
		g.n++
		ref[a.Owner] = g
	}
	var want []string
	for o, g := range ref {
		want = append(want, fmt.Sprintf("%s %d %d", o, g.sum, g.n))
	}
	sort.Strings(want)
	return want
}

func cdcDiff(got, want []string) string {
	var missing, extra []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	return fmt.Sprintf("%d rows, want %d; missing %v; extra %v", len(got), len(want), missing[:min(len(missing), 10)], extra[:min(len(extra), 10)])
}

// debezium-avro-confluent through SQL and the schema registry: Debezium
// JSON changes copied by one job into a topic as debezium-avro-confluent
// (the envelope schema registered under the subject), read back by a
// second job with the same format and aggregated: the sums of the source
// table's final state, at parallelism 2.
func TestDebeziumAvroConfluentThroughSQL(t *testing.T) {
	srv := httptest.NewServer(registry.New().Handler())
	t.Cleanup(srv.Close)
	recs, final := cdcHistory(5, 2000, 100)
	b := produceCDC(t, 3, recs, 1)
	want := ownerTotals(final)
	avroTable := fmt.Sprintf(`CREATE TABLE avro_accounts (id BIGINT, owner STRING, balance BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = 'accounts-avro', 'properties.bootstrap.servers' = '%s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'key.fields' = 'id',
  'format' = 'debezium-avro-confluent', 'debezium-avro-confluent.url' = '%s', 'debezium-avro-confluent.subject' = 'accounts-avro-value');
`, b.Addr(), srv.URL)
	copyJob, err := Compile(context.Background(), fmt.Sprintf(cdcSourceDDL, b.Addr())+avroTable+`INSERT INTO avro_accounts SELECT * FROM accounts;`,
		Options{Parallelism: 2, ForceParallelism: true, JobName: "avro-copy"})
	if err != nil {
		t.Fatal(err)
	}
	runJob(t, copyJob)
	out := collect.New()
	readJob, err := Compile(context.Background(), avroTable+`CREATE TABLE totals (owner STRING, total BIGINT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO totals SELECT owner, SUM(balance), COUNT(*) FROM avro_accounts GROUP BY owner;`,
		Options{Parallelism: 2, ForceParallelism: true, Sinks: map[string]arrowflow.Sink{"totals": out}})
	if err != nil {
		t.Fatal(err)
	}
	runJob(t, readJob)
	rows, err := out.Table()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%v %v %v", r[0], r[1], r[2]))
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Fatalf("sums over the debezium-avro-confluent copy: %s", cdcDiff(got, want))
	}
}

// debezium-json's metadata as Flink's METADATA FROM 'value.*' columns:
// each row carries its event's source table and timestamps, and a key the
// format does not read is an error naming the ones it does.
func TestDebeziumMetadataColumns(t *testing.T) {
	recs, final := cdcHistory(9, 300, 40)
	b := produceCDC(t, 2, recs, 1)
	// The same with the record keys ({"id":N}) decoded by 'key.format'.
	for _, keyed := range []string{"", `, 'key.format' = 'json', 'key.fields' = 'id'`} {
		testDebeziumMetadataColumns(t, b.Addr(), keyed, len(final))
	}
}

func testDebeziumMetadataColumns(t *testing.T, addr, keyed string, final int) {
	ddl := fmt.Sprintf(`CREATE TABLE accounts (id BIGINT, owner STRING, balance BIGINT,
  origin_table STRING METADATA FROM 'value.source.table' VIRTUAL,
  origin_db STRING METADATA FROM 'value.source.database' VIRTUAL,
  ingested TIMESTAMP_LTZ(3) METADATA FROM 'value.ingestion-timestamp' VIRTUAL,
  part INT METADATA FROM 'partition' VIRTUAL,
  PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = 'accounts', 'properties.bootstrap.servers' = '%s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'debezium-json'%s);
`, addr, keyed)
	out := collect.New()
	job, err := Compile(context.Background(), ddl+`CREATE TABLE o (t STRING, db STRING, n BIGINT, lo BIGINT, hi BIGINT, parts BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO o SELECT origin_table, origin_db, COUNT(*), MIN(UNIX_TIMESTAMP(CAST(ingested AS STRING))), MAX(UNIX_TIMESTAMP(CAST(ingested AS STRING))), COUNT(DISTINCT part) FROM accounts GROUP BY origin_table, origin_db;`,
		Options{Parallelism: 2, ForceParallelism: true, Sinks: map[string]arrowflow.Sink{"o": out}})
	if err != nil {
		t.Fatal(err)
	}
	runJob(t, job)
	rows, err := out.Table()
	if err != nil {
		t.Fatal(err)
	}
	// The events' ts_ms are 1700000000000 and on, in the first second.
	if want := fmt.Sprintf("[[accounts bank %d 1700000000 1700000000 2]]", final); fmt.Sprint(rows) != want {
		t.Fatalf("%s: rows %v, want %s: the source table's rows, all of table accounts, database bank, over 2 partitions", keyed, rows, want)
	}
	_, err = Compile(context.Background(), strings.Replace(ddl, "value.source.database", "value.source.nope", 1)+`CREATE TABLE o (id BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO o SELECT id FROM accounts;`, Options{})
	if err == nil || !strings.Contains(err.Error(), `unknown metadata key "source.nope"`) || !strings.Contains(err.Error(), "source.table") {
		t.Fatalf("an unknown metadata key: %v", err)
	}
}
