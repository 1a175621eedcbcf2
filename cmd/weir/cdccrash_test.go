package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/internal/cdcgen"
	"github.com/weirflow/weir/internal/failpoint"
	"github.com/weirflow/weir/internal/kafkatest"
	icebergsink "github.com/weirflow/weir/sinks/iceberg"
)

// The CDC crash test: `weir run` of testdata/sql/cdc_mirror.sql, which
// mirrors Debezium change events of a table (inserts, snapshot reads,
// updates, deletes, re-inserts, the same key changing many times within
// and across epochs) from a Kafka topic into an Iceberg upsert table and
// an upsert-kafka topic at parallelism 4, killed with SIGKILL at random
// moments and at the named points of the commit protocol. After every
// run, the Iceberg table read by iceberg-go's own scan (which applies the
// equality deletes) holds each id once and equals the source table's
// final state, and so does the topic read back read_committed by a plain
// franz-go consumer that keeps the last value per key (a tombstone
// deletes the key). The same job sums the balances per owner over the
// changes into a third topic, which a lost or repeated change would make
// wrong (the mirrors hold only each id's last change).

const (
	// cdcCrashEvents over cdcCrashKeys ids: about 67 changes per id,
	// many of them in one epoch.
	cdcCrashEvents = 1_000_000
	cdcCrashKeys   = 15_000
	cdcCrashJob    = "cdc-crash"
	cdcCrashTable  = "db.mirror"
)

// cdcCrashRig is a broker with the change events in the topic accounts
// (6 partitions: more splits than subtasks) and the source table's final
// state, formatted as tableRows formats the Iceberg table's rows.
type cdcCrashRig struct {
	broker     *kafkatest.Broker
	want       []string
	state      map[int64]cdcgen.Account
	killWithin time.Duration
	runs       int
	// compactions counts the replace snapshots of the tables checked.
	compactions int
}

// accountRows formats the table's rows as tableRows formats the Iceberg
// table's, sorted.
func accountRows(table map[int64]cdcgen.Account) []string {
	var rows []string
	for _, a := range table {
		rows = append(rows, fmt.Sprintf("id=%d owner=%s balance=%d ", a.ID, a.Owner, a.Balance))
	}
	slices.Sort(rows)
	return rows
}

func newCDCCrashRig(t *testing.T) *cdcCrashRig {
	t.Helper()
	r := &cdcCrashRig{broker: kafkatest.Start(t, "", 6)}
	evs, state := cdcgen.History(cdcgen.Config{Keys: cdcCrashKeys, Seed: 41}, cdcCrashEvents)
	r.state, r.want = state, accountRows(state)
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.broker.Addr()), kgo.DefaultProduceTopic("accounts"), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 6, 1, nil, "accounts"); err != nil {
		t.Fatal(err)
	}
	recs := make([]*kgo.Record, len(evs))
	for i, e := range evs {
		recs[i] = &kgo.Record{Key: e.Key, Value: e.Value}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	script, wh, cp, out := r.fresh(t)
	var took time.Duration
	took, r.killWithin = crashFreeRun(t, r.args(script, cp), 3*time.Second)
	epochs := r.check(t, "the crash-free run", wh, out)
	t.Logf("crash-free run: %.2fs after its start, %d epochs with changes, %d rows of %d ids", took.Seconds(), epochs, len(r.want), cdcCrashKeys)
	if epochs < 4 {
		t.Fatalf("the crash-free run committed %d epochs with changes: too few for kills between them", epochs)
	}
	return r
}

// fresh renders the job for a new warehouse, checkpoint folder and
// output topic.
func (r *cdcCrashRig) fresh(t *testing.T) (script, wh, cp, out string) {
	t.Helper()
	r.runs++
	dir := t.TempDir()
	wh, cp, out = filepath.Join(dir, "wh"), filepath.Join(dir, "cp"), fmt.Sprintf("latest-%d", r.runs)
	script = renderScript(t, dir, "cdc_mirror.sql", map[string]string{"Brokers": r.broker.Addr(), "Warehouse": wh, "Out": out})
	return script, wh, cp, out
}

func (r *cdcCrashRig) args(script, cp string) []string {
	return runArgs(script, cp, "--parallelism", "4")
}

// check compares the Iceberg table in wh and the upsert-kafka topic out
// with the source table, and returns how many of the job's snapshots
// changed the table.
func (r *cdcCrashRig) check(t *testing.T, what, wh, out string) int {
	t.Helper()
	tbl := loadTableNamed(t, wh, cdcCrashTable)
	rows := tableRowsChecked(t, tbl, cdcCrashJob)
	ids := map[string]int{}
	for _, row := range rows {
		id, _, _ := strings.Cut(row, " ")
		if ids[id]++; ids[id] == 2 {
			t.Fatalf("%s: Iceberg table: %s twice", what, id)
		}
	}
	sameRows(t, what+": the Iceberg table against the source table", rows, r.want)
	epochs := 0
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Properties[icebergsink.SummaryJobID] == cdcCrashJob {
			epochs++
		}
		if s.Summary != nil && s.Summary.Operation == table.OpReplace {
			r.compactions++ // the job's own ('flink-maintenance.rewrite.*')
		}
	}

	last := map[int64]cdcgen.Account{}
	for _, rec := range kafkatest.ReadCommitted(t, []string{r.broker.Addr()}, out) {
		where := fmt.Sprintf("%s partition %d offset %d", out, rec.Partition, rec.Offset)
		var key struct{ ID *int64 }
		if err := json.Unmarshal([]byte(rec.Key), &key); err != nil || key.ID == nil {
			t.Fatalf("%s: key %q: %v", where, rec.Key, err)
		}
		if rec.Value == "" {
			delete(last, *key.ID)
			continue
		}
		var a cdcgen.Account
		if err := json.Unmarshal([]byte(rec.Value), &a); err != nil || a.ID != *key.ID {
			t.Fatalf("%s: value %q of key %d: %v", where, rec.Value, *key.ID, err)
		}
		last[*key.ID] = a
	}
	if !maps.Equal(last, r.state) {
		sameRows(t, what+": the upsert-kafka topic's last value per key against the source table", accountRows(last), r.want)
	}

	// The totals per owner: the last value per owner of the topic.
	type total struct {
		Owner      string
		Balance, N int64
	}
	want := map[string]total{}
	for _, a := range r.state {
		w := want[a.Owner]
		w.Owner, w.Balance, w.N = a.Owner, w.Balance+a.Balance, w.N+1
		want[a.Owner] = w
	}
	totals := map[string]total{}
	for _, rec := range kafkatest.ReadCommitted(t, []string{r.broker.Addr()}, out+"-totals") {
		var key struct{ Owner string }
		if err := json.Unmarshal([]byte(rec.Key), &key); err != nil {
			t.Fatalf("%s-totals partition %d offset %d: key %q: %v", out, rec.Partition, rec.Offset, rec.Key, err)
		}
		if rec.Value == "" {
			delete(totals, key.Owner)
			continue
		}
		var v total
		if err := json.Unmarshal([]byte(rec.Value), &v); err != nil {
			t.Fatalf("%s-totals partition %d offset %d: value %q: %v", out, rec.Partition, rec.Offset, rec.Value, err)
		}
		totals[key.Owner] = v
	}
	if !maps.Equal(totals, want) {
		t.Fatalf("%s: the totals per owner over the changes\n%v\nwant (over the source table)\n%v", what, totals, want)
	}
	return epochs
}

func TestCDCMirrorCrashIsExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: runs child processes")
	}
	r := newCDCCrashRig(t)
	killSQLRounds(t, rand.New(rand.NewPCG(43, 5)), max(10, *chaosKills/2), r.killWithin, func() ([]string, func(string)) {
		script, wh, cp, out := r.fresh(t)
		return r.args(script, cp), func(what string) { r.check(t, what, wh, out) }
	})

	// The protocol points where the outputs and the checkpoints disagree:
	// the epoch's manifest written but nothing committed; the Iceberg
	// snapshot or some Kafka transactions committed and not the rest;
	// the next epoch's records in open transactions. Each Kafka sink
	// subtask hits next-epoch-written once an epoch: its sixth hit comes
	// after the first manifests.
	for _, point := range []string{failpoint.AfterManifest + "@3", failpoint.MidCommit + "@3", failpoint.NextEpochWritten + "@6"} {
		script, wh, cp, out := r.fresh(t)
		killAtFailpoint(t, point, r.args(script, cp))
		r.check(t, "killed at "+point, wh, out)
	}
	if r.compactions == 0 {
		t.Fatal("the job never compacted its table: the kills did not meet compactions")
	}
	t.Logf("%d compactions by the job in the tables checked", r.compactions)
}
