package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/weirflow/weir/internal/failpoint"
	"github.com/weirflow/weir/internal/kafkatest"
)

// The crash test of an updating query: `weir run` of a SQL script whose
// non-window GROUP BY updates every key's row again and again, written to
// Kafka as debezium-json change events in transactions (exactly once),
// killed with SIGKILL at random moments and at named points of the commit
// protocol. A read_committed reader applies the events (op c adds
// "after", op d removes one equal "before") and must find the table of a
// crash-free run, which equals the query computed in plain Go over the
// input; no event may delete a row the table does not hold.

// updatingCrashScript is the job. Its input is a paced datagen sequence
// (so that a run spreads its rows over many epochs, and every key's row
// is updated in most of them), turned by a view into rows of 1000 keys
// (spread by a multiplicative hash; a third of the rows go to 37 hot
// keys), a price (NULL one row in 50) and
// one of eight categories. per_key holds, per key, COUNT(*), SUM(id),
// MIN and MAX of price (NULLs skipped), COUNT(DISTINCT category) and
// COUNT(price); hist the histogram of the per-key counts with the
// smallest and largest key of each count: an aggregation over
// retractions, whose rows are deleted as keys move from one count to the
// next. Each table is keyed by its group key, so that a key's events stay
// in one partition, in order.
const updatingCrashScript = `SET 'pipeline.name' = 'updating-crash';
SET 'execution.checkpointing.interval' = '50 ms';

CREATE TABLE seq (id BIGINT) WITH (
    'connector' = 'datagen',
    'rows-per-second' = '{{.Rate}}',
    'fields.id.kind' = 'sequence',
    'fields.id.start' = '0',
    'fields.id.end' = '{{.Last}}'
);

CREATE VIEW events AS
SELECT id,
       CASE WHEN id % 3 = 0 THEN id % 37 ELSE (id * 7919) % 1000 END AS k,
       CASE WHEN id % 50 = 7 THEN CAST(NULL AS DOUBLE) ELSE CAST((id * 31) % 100000 AS DOUBLE) / 100 END AS price,
       CONCAT('c', CAST((id / 13) % 8 AS STRING)) AS category
FROM seq;

CREATE TABLE per_key (
    k        BIGINT,
    n        BIGINT,
    id_sum   BIGINT,
    lo       DOUBLE,
    hi       DOUBLE,
    cats     BIGINT,
    priced   BIGINT
) WITH (
    'connector' = 'kafka',
    'topic' = '{{.Out}}-per-key',
    'properties.bootstrap.servers' = '{{.Brokers}}',
    'format' = 'debezium-json',
    'key.fields' = 'k',
    'sink.transactional-id-prefix' = 'updating-crash-per-key'
);

CREATE TABLE hist (
    n        BIGINT,
    keys     BIGINT,
    min_key  BIGINT,
    max_key  BIGINT
) WITH (
    'connector' = 'kafka',
    'topic' = '{{.Out}}-hist',
    'properties.bootstrap.servers' = '{{.Brokers}}',
    'value.format' = 'debezium-json',
    'key.fields' = 'n',
    'sink.transactional-id-prefix' = 'updating-crash-hist'
);

INSERT INTO per_key
SELECT k, COUNT(*), SUM(id), MIN(price), MAX(price), COUNT(DISTINCT category), COUNT(price)
FROM events GROUP BY k;

INSERT INTO hist
SELECT n, COUNT(*), MIN(k), MAX(k)
FROM (SELECT k, COUNT(*) AS n FROM events GROUP BY k)
GROUP BY n;
`

// updatingCrashRows is the input, 100 rows for each of the 1000 keys and
// 1350 more for each hot key, paced at updatingCrashRate rows per second:
// a crash-free run takes about 2.5 s.
const (
	updatingCrashRows = 150_000
	updatingCrashRate = 60_000
)

// updatingCrashTables are the job's output tables and their columns, in
// the order the rows are formatted.
var updatingCrashTables = []struct {
	name    string
	columns []string
}{
	{"per-key", []string{"k", "n", "id_sum", "lo", "hi", "cats", "priced"}},
	{"hist", []string{"n", "keys", "min_key", "max_key"}},
}

// updatingCrashRig is a broker for the output topics and the plain Go
// answer, which the crash-free run was checked against.
type updatingCrashRig struct {
	broker *kafkatest.Broker
	want   map[string][]string // by table: the rows, sorted
	// killWithin bounds how long after its start a run is killed (see
	// killSQLRound).
	killWithin time.Duration
	outs       int
}

func newUpdatingCrashRig(t *testing.T) *updatingCrashRig {
	t.Helper()
	r := &updatingCrashRig{broker: kafkatest.Start(t, "", 4), want: updatingAnswer(t)}
	script, cp, prefix := r.fresh(t)
	var took time.Duration
	took, r.killWithin = crashFreeRun(t, r.args(script, cp), 1500*time.Millisecond)
	got, deletes := r.tables(t, prefix)
	t.Logf("crash-free run: %.2fs after its start; deletes applied: %v", took.Seconds(), deletes)
	for _, tbl := range updatingCrashTables {
		sameRows(t, "the crash-free run's "+tbl.name+" against the plain Go answer", got[tbl.name], r.want[tbl.name])
		if deletes[tbl.name] == 0 {
			t.Fatalf("the crash-free run deleted no row of %s: every key's row was written once, the test checks no update", tbl.name)
		}
	}
	return r
}

// fresh renders the script for new output topics and returns it with a
// new checkpoint folder and the topics' prefix.
func (r *updatingCrashRig) fresh(t *testing.T) (script, cp, out string) {
	t.Helper()
	r.outs++
	out = fmt.Sprintf("changes-%d", r.outs)
	dir := t.TempDir()
	tmpl := template.Must(template.New("job").Parse(updatingCrashScript))
	var b strings.Builder
	data := map[string]any{"Brokers": r.broker.Addr(), "Out": out, "Rate": updatingCrashRate, "Last": updatingCrashRows - 1}
	if err := tmpl.Execute(&b, data); err != nil {
		t.Fatal(err)
	}
	script = filepath.Join(dir, "updating_crash.sql")
	if err := os.WriteFile(script, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return script, filepath.Join(dir, "cp"), out
}

func (r *updatingCrashRig) args(script, cp string) []string {
	return runArgs(script, cp, "--parallelism", "2")
}

// tables materializes the committed events of the output topics under
// prefix out: each table's rows, sorted, and how many deletes applied.
func (r *updatingCrashRig) tables(t *testing.T, out string) (rows map[string][]string, deletes map[string]int) {
	t.Helper()
	rows, deletes = map[string][]string{}, map[string]int{}
	for _, tbl := range updatingCrashTables {
		rows[tbl.name], deletes[tbl.name] = applyDebezium(t, r.broker.Addr(), out+"-"+tbl.name, tbl.columns)
	}
	return rows, deletes
}

// applyDebezium reads topic read_committed and applies its debezium-json
// events partition by partition in offset order: op c adds "after", op d
// removes one row equal to "before", and a delete of a row the table does
// not hold fails the test (an epoch written twice, or lost, shows so). It
// returns the table's rows, each its columns' JSON texts joined by " | ",
// sorted, and the number of deletes.
func applyDebezium(t *testing.T, broker, topic string, columns []string) ([]string, int) {
	t.Helper()
	format := func(where string, raw json.RawMessage) string {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil || len(m) != len(columns) {
			t.Fatalf("%s: row %s: %v, want the columns %v", where, raw, err, columns)
		}
		vals := make([]string, len(columns))
		for i, c := range columns {
			v, ok := m[c]
			if !ok {
				t.Fatalf("%s: row %s has no column %s", where, raw, c)
			}
			vals[i] = string(v)
		}
		return strings.Join(vals, " | ")
	}
	table := map[string]int{}
	deletes := 0
	for _, rec := range kafkatest.ReadCommitted(t, []string{broker}, topic) {
		where := fmt.Sprintf("%s partition %d offset %d", topic, rec.Partition, rec.Offset)
		var ev struct {
			Before, After json.RawMessage
			Op            string
		}
		if err := json.Unmarshal([]byte(rec.Value), &ev); err != nil {
			t.Fatalf("%s: %v: %s", where, err, rec.Value)
		}
		switch {
		case ev.Op == "c" && string(ev.Before) == "null":
			table[format(where, ev.After)]++
		case ev.Op == "d" && string(ev.After) == "null":
			row := format(where, ev.Before)
			if table[row] == 0 {
				t.Fatalf("%s: a delete of %s, a row the table does not hold", where, row)
			}
			table[row]--
			deletes++
		default:
			t.Fatalf("%s: neither a create nor a delete event: %s", where, rec.Value)
		}
	}
	var rows []string
	for row, n := range table {
		for range n {
			rows = append(rows, row)
		}
	}
	slices.Sort(rows)
	return rows, deletes
}

// updatingAnswer computes the job's two tables row at a time from the
// definition of its input, formatted as applyDebezium formats the events'
// rows (numbers as the json format writes them, NULL as null).
func updatingAnswer(t *testing.T) map[string][]string {
	t.Helper()
	type acc struct {
		n, idSum, priced int64
		lo, hi           float64
		cats             map[string]bool
	}
	per := map[int64]*acc{}
	for id := range int64(updatingCrashRows) {
		k := (id * 7919) % 1000
		if id%3 == 0 {
			k = id % 37
		}
		a := per[k]
		if a == nil {
			a = &acc{cats: map[string]bool{}}
			per[k] = a
		}
		a.n++
		a.idSum += id
		a.cats[fmt.Sprintf("c%d", (id/13)%8)] = true
		if id%50 == 7 {
			continue
		}
		p := float64((id*31)%100000) / 100
		if a.priced == 0 || p < a.lo {
			a.lo = p
		}
		if a.priced == 0 || p > a.hi {
			a.hi = p
		}
		a.priced++
	}
	float := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	type hist struct{ keys, lo, hi int64 }
	byCount := map[int64]*hist{}
	var perKey []string
	for k, a := range per {
		lo, hi := "null", "null"
		if a.priced > 0 {
			lo, hi = float(a.lo), float(a.hi)
		}
		perKey = append(perKey, strings.Join([]string{
			fmt.Sprint(k), fmt.Sprint(a.n), fmt.Sprint(a.idSum), lo, hi, fmt.Sprint(len(a.cats)), fmt.Sprint(a.priced)}, " | "))
		h := byCount[a.n]
		if h == nil {
			h = &hist{lo: k, hi: k}
			byCount[a.n] = h
		}
		h.keys++
		h.lo, h.hi = min(h.lo, k), max(h.hi, k)
	}
	var counts []string
	for n, h := range byCount {
		counts = append(counts, fmt.Sprintf("%d | %d | %d | %d", n, h.keys, h.lo, h.hi))
	}
	slices.Sort(perKey)
	slices.Sort(counts)
	if len(perKey) != 1000 {
		t.Fatalf("the input has %d keys, want 1000", len(perKey))
	}
	return map[string][]string{"per-key": perKey, "hist": counts}
}

// The crash test of an updating aggregate: the job above killed
// with SIGKILL at random moments (at least max(10, -chaos.kills/2) times,
// in rounds of at most 5 kills on fresh topics and checkpoint folders,
// each round then run to its end), then at the protocol points where
// Kafka and the checkpoints disagree (the epoch's manifest written but its
// transactions not committed; some committed and not others; records of
// the next epoch in an open transaction). Every round's materialized
// tables equal the plain Go answer, and no event deletes a row that is
// not there.
func TestSQLRunUpdatingAggregateToDebeziumCrashIsExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: runs child processes")
	}
	r := newUpdatingCrashRig(t)
	check := func(what, out string) {
		t.Helper()
		got, _ := r.tables(t, out)
		for _, tbl := range updatingCrashTables {
			sameRows(t, what+": "+tbl.name, got[tbl.name], r.want[tbl.name])
		}
	}
	killSQLRounds(t, rand.New(rand.NewPCG(31, 7)), max(10, *chaosKills/2), r.killWithin, func() ([]string, func(string)) {
		script, cp, out := r.fresh(t)
		return r.args(script, cp), func(what string) { check(what, out) }
	})

	for _, point := range []string{failpoint.AfterManifest, failpoint.MidCommit, failpoint.NextEpochWritten} {
		script, cp, out := r.fresh(t)
		killAtFailpoint(t, point+"@3", r.args(script, cp))
		check("killed at "+point, out)
	}
}
