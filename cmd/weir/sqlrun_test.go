package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/weirflow/weir/internal/failpoint"
	"github.com/weirflow/weir/internal/kafkatest"
	icebergsink "github.com/weirflow/weir/sinks/iceberg"
	"github.com/weirflow/weir/sinks/parquet"
)

// Tests of `weir run JOB.sql`: SQL scripts in Flink's dialect run as
// child processes (the test binary, see TestMain) with durable
// checkpoints. The outputs are read back with independent readers
// (iceberg-go's scan, pqarrow) and compared with results computed in
// plain Go from the input, so that a wrong plan fails as surely as a
// non-deterministic one.

// renderScript fills in the template testdata/sql/name with data and
// writes the script into dir, named after the template (the script's
// name is the job's default name).
func renderScript(t *testing.T, dir, name string, data any) string {
	t.Helper()
	tmpl, err := template.ParseFiles(filepath.Join("testdata", "sql", name))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, data); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runArgs are the arguments of `weir run script` on checkpoint folder cp.
// --http= turns the status server off: child processes running at the
// same time would race for its default port.
func runArgs(script, cp string, extra ...string) []string {
	return append(append([]string{"run", "--checkpoint-dir", cp, "--http="}, extra...), script)
}

// sqlCrashJob is the Kafka -> SQL windowed aggregate -> Iceberg job of
// testdata/sql/kafka_windows_iceberg.sql: its 'pipeline.name', which
// the Iceberg snapshots carry as weir.job-id.
const (
	sqlCrashJob   = "sql-crash"
	sqlCrashTable = "db.stats"
	// sqlCrashRows is the input: 200 s of event time at 1000 rows per
	// second over 1000 keys, so about 10 rows per key and ten-second
	// window; a crash-free run takes about a second.
	sqlCrashRows = 200_000
)

// sqlCrashRig is a broker with the input topic filled, and the
// crash-free run's table (checked against a plain Go computation over the
// input).
type sqlCrashRig struct {
	broker *kafkatest.Broker
	want   []string
	// killWithin bounds how long after its start a run is killed: a
	// little more than the crash-free run took, within [300ms, 1.5s].
	killWithin time.Duration
}

func newSQLCrashRig(t *testing.T) *sqlCrashRig {
	t.Helper()
	r := &sqlCrashRig{broker: kafkatest.Start(t, "", 4)}
	out, err := runCLI(t, "gen", "--brokers", r.broker.Addr(), "--topic", "events", "--count", fmt.Sprint(sqlCrashRows), "--seed", "7")
	if err != nil {
		t.Fatalf("weir gen: %v\n%s", err, out)
	}
	input := kafkatest.ReadCommitted(t, []string{r.broker.Addr()}, "events")
	if len(input) != sqlCrashRows {
		t.Fatalf("the topic holds %d records, weir gen said it produced %d", len(input), sqlCrashRows)
	}
	oracle := windowsOfGenRecords(t, input)

	script, wh, cp := r.fresh(t)
	var took time.Duration
	took, r.killWithin = crashFreeRun(t, r.args(script, cp), 1500*time.Millisecond)
	t.Logf("crash-free run: %.2fs after its start", took.Seconds())
	r.want = sqlStatsRows(t, wh)
	sameRows(t, "the crash-free run against the plain Go windows of the input", r.want, oracle)

	// Run again, the job resumes after its last epoch: no new snapshot.
	snapshots := len(loadTableNamed(t, wh, sqlCrashTable).Metadata().Snapshots())
	c := startWeir(t, nil, r.args(script, cp)...)
	if err := c.wait(t); err != nil || !strings.Contains(c.out.String(), "recovering from the checkpoint") {
		t.Fatalf("running the finished job again: %v\n%s", err, c.out.String())
	}
	sameRows(t, "after running the finished job again", sqlStatsRows(t, wh), r.want)
	if n := len(loadTableNamed(t, wh, sqlCrashTable).Metadata().Snapshots()); n != snapshots {
		t.Fatalf("running the finished job again made %d snapshots", n-snapshots)
	}
	return r
}

// fresh renders the job's script for a new warehouse and returns it with
// the warehouse and a new checkpoint folder.
func (r *sqlCrashRig) fresh(t *testing.T) (script, wh, cp string) {
	t.Helper()
	dir := t.TempDir()
	wh, cp = filepath.Join(dir, "wh"), filepath.Join(dir, "cp")
	script = renderScript(t, dir, "kafka_windows_iceberg.sql", map[string]string{
		"Brokers": r.broker.Addr(), "Topic": "events", "Warehouse": wh,
	})
	return script, wh, cp
}

func (r *sqlCrashRig) args(script, cp string) []string {
	return runArgs(script, cp, "--parallelism", "2")
}

// sqlStatsRows reads the job's table with iceberg-go's scan, formatted
// and sorted as tableRows does, after checking that the job committed
// snapshots and none of its epochs twice.
func sqlStatsRows(t *testing.T, wh string) []string {
	t.Helper()
	tbl := loadTableNamed(t, wh, sqlCrashTable)
	ours := 0
	for _, snap := range tbl.Metadata().Snapshots() {
		if snap.Summary != nil && snap.Summary.Properties[icebergsink.SummaryJobID] == sqlCrashJob {
			ours++
		}
	}
	if ours == 0 {
		t.Fatalf("no snapshot of %s carries weir.job-id %s: the check for epochs committed twice would check nothing", sqlCrashTable, sqlCrashJob)
	}
	return tableRowsChecked(t, tbl, sqlCrashJob)
}

// windowsOfGenRecords is the job's query computed row at a time from the
// JSON records of `weir gen`: per key and tumbling ten-second window of
// ts, COUNT(*), MIN(price), MAX(price) (over the non-NULL prices; NULL
// when there are none) and COUNT(*) FILTER (WHERE price > 50), formatted
// as tableRows formats the table's rows. No row is late: each
// partition's rows are at most 100 ms out of order, and the watermark
// trails by a second.
func windowsOfGenRecords(t *testing.T, recs []kafkatest.Record) []string {
	t.Helper()
	type window struct{ key, startMs int64 }
	type stats struct {
		n, over50 int64
		min, max  *float64
	}
	acc := map[window]*stats{}
	nullPrices := 0
	for _, rec := range recs {
		var row struct {
			Key   *int64   `json:"key"`
			Price *float64 `json:"price"`
			TS    string   `json:"ts"`
		}
		if err := json.Unmarshal([]byte(rec.Value), &row); err != nil {
			t.Fatalf("record %d/%d: %v: %s", rec.Partition, rec.Offset, err, rec.Value)
		}
		ts, err := time.Parse(time.RFC3339Nano, row.TS)
		if row.Key == nil || err != nil {
			t.Fatalf("record %d/%d has no key or no RFC 3339 ts (%v): %s", rec.Partition, rec.Offset, err, rec.Value)
		}
		ms := ts.UnixMilli()
		w := window{*row.Key, ms - ((ms%10_000)+10_000)%10_000}
		s := acc[w]
		if s == nil {
			s = &stats{}
			acc[w] = s
		}
		s.n++
		if row.Price == nil {
			nullPrices++
			continue
		}
		p := *row.Price
		if s.min == nil || p < *s.min {
			s.min = &p
		}
		if s.max == nil || p > *s.max {
			s.max = &p
		}
		if p > 50 {
			s.over50++
		}
	}
	if nullPrices == 0 {
		t.Fatal("no record has a NULL price: MIN and MAX skipping NULLs is not tested")
	}
	orNull := func(p *float64) any {
		if p == nil {
			return nil
		}
		return *p
	}
	rows := make([]string, 0, len(acc))
	for w, s := range acc {
		rows = append(rows, fmt.Sprintf("key=%v window_start=%v window_end=%v n=%v min_price=%v max_price=%v over_50=%v ",
			w.key, time.UnixMilli(w.startMs).UTC(), time.UnixMilli(w.startMs+10_000).UTC(), s.n, orNull(s.min), orNull(s.max), s.over50))
	}
	slices.Sort(rows)
	return rows
}

// killSQLRound runs `weir args...` on its folders and kills it with
// SIGKILL at a random moment, at most maxKills times, then lets it run to
// the end. One kill in five lands anywhere from the process start,
// start-up and recovery included; the others while the job runs, up to
// within after it printed how it starts (a little more than a crash-free
// run takes, so that the kills spread over the whole job, and a run
// that resumes near the end often completes). It returns the number of
// kills and whether some restart recovered from a checkpoint. Unlike
// killRound (crash_test.go), which kills until a run completes by
// itself, it bounds a round's runs: a restarted run may commit only an
// epoch or two in the time a crash-free run needs for all of them.
func killSQLRound(t *testing.T, rng *rand.Rand, args []string, maxKills int, within time.Duration) (kills int, recovered bool) {
	t.Helper()
	for kills < maxKills {
		c := startWeir(t, nil, args...)
		if rng.IntN(5) == 0 {
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		} else {
			c.waitStarted(t)
			time.Sleep(time.Duration(rng.Int64N(int64(within))))
		}
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
		err := c.wait(t)
		switch {
		case errors.Is(err, errKilled):
			kills++
			recovered = recovered || strings.Contains(c.out.String(), "recovering from the checkpoint")
			continue
		case err != nil:
			t.Fatalf("after %d kills: %v\n%s", kills, err, c.out.String())
		}
		return kills, recovered // the job completed before the kill
	}
	c := startWeir(t, nil, args...)
	if err := c.wait(t); err != nil {
		t.Fatalf("the run after %d kills failed: %v\n%s", kills, err, c.out.String())
	}
	return kills, recovered || strings.Contains(c.out.String(), "recovering from the checkpoint")
}

// killSQLRounds runs rounds of killSQLRound, each on fresh outputs that
// round returns (the job's arguments and a check of what the round left),
// until at least minKills kills; every round's outputs are checked after
// its completed run. Some restart must have recovered from a checkpoint.
func killSQLRounds(t *testing.T, rng *rand.Rand, minKills int, within time.Duration, round func() (args []string, check func(what string))) {
	t.Helper()
	kills, rounds, recovered := 0, 0, false
	start := time.Now()
	for kills < minKills {
		rounds++
		if rounds > 3*minKills {
			t.Fatalf("only %d kills in %d rounds: the job ends before the kills land", kills, rounds-1)
		}
		args, check := round()
		k, rec := killSQLRound(t, rng, args, min(5, minKills-kills), within)
		kills += k
		recovered = recovered || rec
		check(fmt.Sprintf("round %d, after %d kills in all", rounds, kills))
	}
	if !recovered {
		t.Fatal("no restart recovered from a checkpoint: the kills came too early to test recovery")
	}
	t.Logf("%d random kills in %d rounds, %.1fs", kills, rounds, time.Since(start).Seconds())
}

// crashFreeRun runs `weir args...` to its end, which must succeed, and
// returns how long it ran after its start and the window random kills
// should land in: a little longer than the run, at least 300 ms, at most
// maxWithin.
func crashFreeRun(t *testing.T, args []string, maxWithin time.Duration) (took, killWithin time.Duration) {
	t.Helper()
	c := startWeir(t, nil, args...)
	c.waitStarted(t)
	start := time.Now()
	if err := c.wait(t); err != nil {
		t.Fatalf("crash-free run failed: %v\n%s", err, c.out.String())
	}
	took = time.Since(start)
	return took, min(max(took*6/5, 300*time.Millisecond), maxWithin)
}

// killAtFailpoint runs args with WEIR_FAILPOINT=point ("name@n"), which
// must kill the job, then restarts it to its end, which must recover
// from a checkpoint.
func killAtFailpoint(t *testing.T, point string, args []string) {
	t.Helper()
	c := startWeir(t, []string{"WEIR_FAILPOINT=" + point}, args...)
	if err := c.wait(t); !errors.Is(err, errKilled) {
		t.Fatalf("%s: the job was not killed at the failpoint: %v\n%s", point, err, c.out.String())
	}
	c = startWeir(t, nil, args...)
	if err := c.wait(t); err != nil {
		t.Fatalf("%s: the restart failed: %v\n%s", point, err, c.out.String())
	}
	if !strings.Contains(c.out.String(), "recovering from the checkpoint") {
		t.Fatalf("%s: the restart did not recover from a checkpoint:\n%s", point, c.out.String())
	}
}

// The crash test: a job file reading Kafka, aggregating in
// event-time windows in SQL and writing Iceberg, run with `weir run` and
// killed with SIGKILL at random moments (at least 10 times, in rounds of
// at most 5 kills on fresh tables and checkpoint folders, each round
// restarted on its folder until the job completes), then at named points
// of the protocol. Every table equals the crash-free run's row for row,
// which equals the windows computed in plain Go from the input records;
// no epoch is committed twice.
func TestSQLRunKafkaToIcebergCrashIsExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: runs child processes")
	}
	r := newSQLCrashRig(t)
	killSQLRounds(t, rand.New(rand.NewPCG(29, 4)), max(10, *chaosKills/2), r.killWithin, func() ([]string, func(string)) {
		script, wh, cp := r.fresh(t)
		return r.args(script, cp), func(what string) { sameRows(t, what, sqlStatsRows(t, wh), r.want) }
	})

	// The protocol points where the table and the checkpoints disagree:
	// the epoch's manifest is written but its snapshot not committed,
	// and the snapshot committed but the job not told. The second time:
	// a crash-free run commits as few as two or three epochs with rows.
	for _, point := range []string{failpoint.AfterManifest, failpoint.MidCommit} {
		script, wh, cp := r.fresh(t)
		killAtFailpoint(t, point+"@2", r.args(script, cp))
		sameRows(t, "killed at "+point, sqlStatsRows(t, wh), r.want)
	}
}

// datagenScriptRows are the rows of testdata/sql/datagen_parquet.sql's
// source: ids 0 .. datagenScriptRows-1, row r at 12:00:00 + r*10 ms.
const datagenScriptRows = 20_000

var datagenScriptStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// datagenScriptWant computes the script's two tables in plain Go from
// the source's definition, as committedRows formats them (partition
// folder first).
func datagenScriptWant() (windows, picked []string) {
	type acc struct{ n, total, lo, hi, evens, counted int64 }
	wins := map[[2]int64]*acc{} // (k, window) -> aggregates
	for id := int64(0); id < datagenScriptRows; id++ {
		w := [2]int64{id % 7, id * 10 / 1000}
		a := wins[w]
		if a == nil {
			a = &acc{lo: id, hi: id}
			wins[w] = a
		}
		a.n++
		a.total += id
		a.lo, a.hi = min(a.lo, id), max(a.hi, id)
		if id%2 == 0 {
			a.evens++
		}
		if id%4 != 0 {
			a.counted++
		}
		if id%5 == 2 && id < 10_000 {
			// The partition column is in the folder name, not the file.
			picked = append(picked, fmt.Sprintf("bucket=%d id=%v v=%v label=%v ts=%v ",
				id%3, id, id*3+1, fmt.Sprintf("ROW-%d", id), datagenScriptStart.Add(time.Duration(id)*10*time.Millisecond)))
		}
	}
	for w, a := range wins {
		start := datagenScriptStart.Add(time.Duration(w[1]) * time.Second)
		windows = append(windows, fmt.Sprintf(". k=%v window_start=%v window_end=%v n=%v total=%v lo=%v hi=%v evens=%v counted=%v ",
			w[0], start, start.Add(time.Second), a.n, a.total, a.lo, a.hi, a.evens, a.counted))
	}
	slices.Sort(windows)
	slices.Sort(picked)
	return windows, picked
}

// A datagen script with a view, a windowed aggregate and a filtered,
// computed projection into two filesystem (Parquet) sinks, one of them
// partitioned, run with `weir run`: the tables read back with pqarrow
// equal the plain Go results. Run again on the same checkpoint folder,
// the finished job resumes after its last epoch and writes nothing
// twice.
func TestSQLRunDatagenToParquet(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	dir := t.TempDir()
	out, cp := filepath.Join(dir, "out"), filepath.Join(dir, "cp")
	script := renderScript(t, dir, "datagen_parquet.sql", map[string]string{"Out": out})
	wantWindows, wantPicked := datagenScriptWant()

	c := startWeir(t, nil, runArgs(script, cp)...)
	if err := c.wait(t); err != nil {
		t.Fatalf("weir run: %v\n%s", err, c.out.String())
	}
	log := c.out.String()
	// SET 'parallelism.default' = '3' in the script.
	if !strings.Contains(log, "job datagen_parquet: parallelism 3, writes windows, picked") ||
		!regexp.MustCompile(`job datagen_parquet finished: [1-9]\d* epochs committed`).MatchString(log) {
		t.Fatalf("unexpected output:\n%s", log)
	}
	windows, picked := filepath.Join(out, "windows"), filepath.Join(out, "picked")
	sameRows(t, "windows against plain Go", committedRows(t, windows), wantWindows)
	sameRows(t, "picked against plain Go", committedRows(t, picked), wantPicked)
	files := func() int {
		n := 0
		for _, d := range []string{windows, picked} {
			f, err := parquet.CommittedFiles(d)
			if err != nil {
				t.Fatal(err)
			}
			n += len(f)
		}
		return n
	}
	before := files()

	c = startWeir(t, nil, runArgs(script, cp)...)
	if err := c.wait(t); err != nil {
		t.Fatalf("weir run again on the finished job's checkpoints: %v\n%s", err, c.out.String())
	}
	if !strings.Contains(c.out.String(), "recovering from the checkpoint of epoch") {
		t.Fatalf("the second run did not resume from the first one's checkpoint:\n%s", c.out.String())
	}
	sameRows(t, "windows after running the finished job again", committedRows(t, windows), wantWindows)
	sameRows(t, "picked after running the finished job again", committedRows(t, picked), wantPicked)
	if after := files(); after != before {
		t.Fatalf("running the finished job again committed %d more files", after-before)
	}

	// The same job name with another graph (the second INSERT removed) on
	// the same folder is refused, naming the difference; it resumes when
	// told to.
	text, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	cut := strings.Index(string(text), "INSERT INTO picked")
	if cut < 0 {
		t.Fatal("no INSERT INTO picked in the script")
	}
	if err := os.WriteFile(script, text[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	c = startWeir(t, nil, runArgs(script, cp)...)
	if err := c.wait(t); err == nil {
		t.Fatalf("the edited job resumed the first one's checkpoint:\n%s", c.out.String())
	}
	for _, w := range []string{"with another graph", `- sink "picked"`, "--allow-changed-job"} {
		if !strings.Contains(c.out.String(), w) {
			t.Fatalf("the refusal lacks %q:\n%s", w, c.out.String())
		}
	}
	c = startWeir(t, nil, runArgs(script, cp, "--allow-changed-job")...)
	if err := c.wait(t); err != nil {
		t.Fatalf("weir run --allow-changed-job: %v\n%s", err, c.out.String())
	}
	if !strings.Contains(c.out.String(), "recovering from the checkpoint of epoch") {
		t.Fatalf("--allow-changed-job did not resume:\n%s", c.out.String())
	}
	sameRows(t, "windows after the edited job resumed", committedRows(t, windows), wantWindows)
}

// explainParallelism returns the parallelism of every task of a
// --explain output.
func explainParallelism(t *testing.T, out string) []string {
	t.Helper()
	var ps []string
	for _, m := range regexp.MustCompile(`(?m)^task \d+: .*\(parallelism (\d+)\)$`).FindAllStringSubmatch(out, -1) {
		ps = append(ps, m[1])
	}
	if len(ps) < 2 {
		t.Fatalf("no tasks in the plan:\n%s", out)
	}
	return ps
}

// --explain prints the plan and runs nothing: no checkpoint folder (not
// the default one under the working folder either) and no output.
// SET 'parallelism.default' sets every task's parallelism (3: not the
// default, the number of CPUs, on the usual machine), and --parallelism
// overrides it.
func TestSQLRunExplain(t *testing.T) {
	dir := t.TempDir()
	// Relative to the working folder, as a user writes it.
	script := renderScript(t, dir, "datagen_parquet.sql", map[string]string{"Out": "out"})
	t.Chdir(dir)
	out, err := runCLI(t, "run", "--explain", script)
	if err != nil {
		t.Fatalf("weir run --explain: %v\n%s", err, out)
	}
	for _, want := range []string{
		"job datagen_parquet, parallelism 3, writes windows, picked",
		"insert into windows (filesystem connector)", "insert into picked (filesystem connector)",
		"source gen: datagen connector, parallelism 3", "window aggregate TUMBLE(size 1s)",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("the plan lacks %q:\n%s", want, out)
		}
	}
	for _, p := range explainParallelism(t, out) {
		if p != "3" {
			t.Fatalf("a task has parallelism %s; the script sets 'parallelism.default' = '3':\n%s", p, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "weir-checkpoints")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("--explain made the default checkpoint folder (%v)", err)
	}
	for _, table := range []string{"windows", "picked"} {
		if files, err := parquet.CommittedFiles(filepath.Join(dir, "out", table)); err == nil && len(files) > 0 {
			t.Fatalf("--explain committed output to %s", table)
		}
	}
	// Explaining opens no sink: not even the output folder exists.
	if _, err := os.Stat(filepath.Join(dir, "out")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("--explain created the sinks' output folder (%v)", err)
	}

	cp := filepath.Join(dir, "cp")
	out, err = runCLI(t, "run", "--explain", "--parallelism", "1", "--checkpoint-dir", cp, script)
	if err != nil {
		t.Fatalf("weir run --explain --parallelism 1: %v\n%s", err, out)
	}
	if !strings.Contains(out, "job datagen_parquet, parallelism 1,") {
		t.Fatalf("--parallelism 1 did not override the script's SET:\n%s", out)
	}
	for _, p := range explainParallelism(t, out) {
		if p != "1" {
			t.Fatalf("a task has parallelism %s with --parallelism 1:\n%s", p, out)
		}
	}
	if _, err := os.Stat(cp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("--explain made the checkpoint folder --checkpoint-dir (%v)", err)
	}
	if _, err := runCLI(t, "run", "--explain", "--parallelism", "0", script); err == nil {
		t.Fatal("--parallelism 0 was accepted")
	}
}

// A script with an error does not run: `weir run` fails with where the
// error is (line:column), the line with a caret under that column, and a
// hint; it makes no checkpoint folder. The process exits with status 1
// and prints the message after "weir: " (checked in a child process for
// the first case, in-process for the others).
func TestSQLRunReportsErrorsWithPosition(t *testing.T) {
	const gen = "CREATE TABLE gen (id BIGINT, price BIGINT) WITH (\n  'connector' = 'datagen',\n  'number-of-rows' = '10'\n);\n"
	const out = "CREATE TABLE out1 (id BIGINT) WITH ('connector' = 'blackhole');\n"
	cases := []struct {
		name   string
		script string
		at     string // the error is at the first byte of the first occurrence of at
		msg    string
		hint   string
	}{
		{"syntax error", gen + out + "INSERT INTO out1 SELECT id,, FROM gen;\n",
			", FROM", `expected an expression, found ","`, "remove the extra comma"},
		{"unknown column", gen + out + "INSERT INTO out1\nSELECT pricee FROM gen;\n",
			"pricee", "column pricee not found", "gen.price"},
		{"unknown connector option", strings.Replace(gen, "'number-of-rows' = '10'", "'number-of-rows' = '10',\n  'rows-per-secnd' = '5'", 1) + out + "INSERT INTO out1 SELECT id FROM gen;\n",
			"'rows-per-secnd'", "table gen: option 'rows-per-secnd': the datagen connector has no such option", "rows-per-second"},
		{"unknown connector", gen + strings.Replace(out, "blackhole", "blackhol", 1) + "INSERT INTO out1 SELECT id FROM gen;\n",
			"'connector' = 'blackhol'", `table out1: option 'connector': unknown connector "blackhol"`, "sinks: blackhole, filesystem, iceberg, kafka, print"},
	}
	for i, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			dir := t.TempDir()
			script, cp := filepath.Join(dir, "bad.sql"), filepath.Join(dir, "cp")
			if err := os.WriteFile(script, []byte(tc.script), 0o644); err != nil {
				t.Fatal(err)
			}
			off := strings.Index(tc.script, tc.at)
			if off < 0 {
				t.Fatalf("BUG: %q is not in the script", tc.at)
			}
			line := strings.Count(tc.script[:off], "\n") + 1
			col := off - strings.LastIndexByte(tc.script[:off], '\n')
			src := strings.Split(tc.script, "\n")[line-1]
			want := fmt.Sprintf("%s: line %d:%d: %s\n%s\n%s^\nhint: ", script, line, col, tc.msg, src, strings.Repeat(" ", col-1))

			var got string
			if i == 0 && !testing.Short() {
				c := startWeir(t, nil, runArgs(script, cp)...)
				err := c.wait(t)
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 1 {
					t.Fatalf("want exit status 1, got %v:\n%s", err, c.out.String())
				}
				got = c.out.String()
				want = "weir: " + want
			} else {
				out, err := runCLI(t, runArgs(script, cp)...)
				if err == nil {
					t.Fatalf("the script ran:\n%s", out)
				}
				got = err.Error()
			}
			if !strings.HasPrefix(got, want) {
				t.Fatalf("error:\n%s\nwant it to start with:\n%s", got, want)
			}
			if hint, _, _ := strings.Cut(got[len(want):], "\n"); !strings.Contains(hint, tc.hint) {
				t.Fatalf("hint %q does not mention %q", hint, tc.hint)
			}
			if _, err := os.Stat(cp); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the failed script made its checkpoint folder (%v)", err)
			}
		})
	}
}

// An unbounded job stops on SIGINT (Ctrl-C) with exit status 0 and says
// how to resume; run again on its checkpoint folder it resumes where the
// last committed epoch ended. The table then holds each split's rows
// (datagen's split s generates ids s, s+2, ...) as a prefix: nothing
// written twice, nothing skipped.
func TestSQLRunStopsOnInterruptAndResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	dir := t.TempDir()
	out, cp := filepath.Join(dir, "out"), filepath.Join(dir, "cp")
	script := filepath.Join(dir, "unbounded.sql")
	src := fmt.Sprintf(`CREATE TABLE gen (id BIGINT) WITH (
    'connector' = 'datagen', 'rows-per-second' = '5000', 'splits' = '2',
    'fields.id.kind' = 'sequence', 'fields.id.start' = '0');
CREATE TABLE ids (id BIGINT) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'parquet');
INSERT INTO ids SELECT id FROM gen;
`, out)
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	committed := func() int {
		files, _ := parquet.CommittedFiles(out)
		return len(files)
	}
	for run, want := range []string{"fresh start", "recovering from the checkpoint"} {
		before := committed()
		c := startWeir(t, nil, runArgs(script, cp, "--checkpoint-interval", "100ms", "--parallelism", "2")...)
		waitFor(t, "an epoch committed", func() bool { return committed() > before })
		if err := c.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		if err := c.wait(t); err != nil {
			t.Fatalf("run %d: SIGINT: %v\n%s", run+1, err, c.out.String())
		}
		log := c.out.String()
		if !strings.Contains(log, want) || !regexp.MustCompile(`job unbounded stopped after \d+ committed epochs; run it again with the same checkpoint folder \(.*\) to resume`).MatchString(log) {
			t.Fatalf("run %d: want %q and how to resume:\n%s", run+1, want, log)
		}
	}
	next := [2]int64{0, 1} // each split's next id
	rows := committedRows(t, out)
	ids := make([]int64, 0, len(rows))
	for _, r := range rows {
		var id int64
		if _, err := fmt.Sscanf(r, ". id=%d ", &id); err != nil {
			t.Fatalf("row %q: %v", r, err)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if id != next[id%2] {
			t.Fatalf("split %d: id %d after %d: a row written twice or skipped", id%2, id, next[id%2]-2)
		}
		next[id%2] += 2
	}
	t.Logf("%d rows in two runs", len(ids))
}

// With its default status address taken, weir run serves its status on
// another port instead of failing; the job runs.
func TestSQLRunStatusFallsBackToAFreePort(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	l, err := net.Listen("tcp", defaultStatusAddr)
	if err != nil {
		t.Skipf("cannot hold %s for the test: %v", defaultStatusAddr, err)
	}
	defer l.Close()
	dir := t.TempDir()
	script := renderScript(t, dir, "datagen_parquet.sql", map[string]string{"Out": filepath.Join(dir, "out")})
	c := startWeir(t, nil, "run", "--checkpoint-dir", filepath.Join(dir, "cp"), script)
	if err := c.wait(t); err != nil {
		t.Fatalf("weir run with port 8081 taken: %v\n%s", err, c.out.String())
	}
	m := regexp.MustCompile(`status: http://127\.0\.0\.1:(\d+)/`).FindStringSubmatch(c.out.String())
	if m == nil || m[1] == "8081" {
		t.Fatalf("no status address on another port:\n%s", c.out.String())
	}
}
