package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/cdcgen"
	"github.com/weirflow/weir/internal/ctxsleep"
	icebergsink "github.com/weirflow/weir/sinks/iceberg"
	kafkasrc "github.com/weirflow/weir/sources/kafka"
	"github.com/weirflow/weir/sql"
	"github.com/weirflow/weir/state"
)

const (
	// cdcDemoTopic is named as Debezium names a table's topic:
	// <server>.<schema>.<table>.
	cdcDemoTopic  = "bank.public.accounts"
	cdcDemoMirror = "bank.accounts"
	cdcDemoTotals = "bank.owner_totals"
	// cdcDemoSeed chooses the generated history; the same for every run,
	// so that a run resumed after an interruption continues the topic.
	cdcDemoSeed = 2026
)

type cdcDemoOptions struct {
	dir         string
	events      int64
	keys        int
	parallelism int
	partitions  int
	checkpoint  time.Duration
	rate        float64
	fresh       bool
}

func newDemoCDCCommand() *cobra.Command {
	o := cdcDemoOptions{}
	cmd := &cobra.Command{
		Use:   "cdc",
		Short: "Run the CDC demo: a database table's Debezium changes mirrored into an Iceberg upsert table, exactly once",
		Long: `Mirrors a changing database table into Iceberg, with no flags needed:

  an embedded Kafka-protocol broker (kfake), persisted in DIR/kafka
  the change history of a table accounts(id, owner, balance): inserts,
  updates, deletes and re-inserts, the same id changing many times,
  as Debezium JSON events (with tombstones after deletes) in the topic
  "bank.public.accounts", keyed by id, at --rate events per second
  a SQL job (Flink SQL, written to DIR/cdc-demo.sql)  weir run, in process
    accounts: 'format' = 'debezium-json'            an updating table
    -> INSERT INTO the Iceberg table bank.accounts  upsert mode: equality
       ('write.upsert.enabled', PRIMARY KEY (id))   deletes and data files,
                                                    one snapshot per epoch
    -> INSERT INTO bank.owner_totals                an updating GROUP BY
       SELECT owner, COUNT(*), SUM(balance)         into a second upsert
       FROM accounts GROUP BY owner                 table

At the end it reads both tables back with iceberg-go's scan (which
applies the equality deletes) and checks that bank.accounts equals the
source table, as the generator left it, row for row, and that
bank.owner_totals equals the totals computed again from it. Interrupt it
(Ctrl-C, or kill it) and run it again: it resumes from its checkpoints
in DIR/checkpoints, and the checks hold as after an uninterrupted run.
--fresh starts over.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCDCDemo(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "weir-demo-cdc", "folder of the demo's broker data, checkpoints and Iceberg warehouse")
	f.Int64Var(&o.events, "events", 300_000, "change events to generate")
	f.IntVar(&o.keys, "keys", 20_000, "ids of the accounts table (fewer ids, more changes per id)")
	f.IntVar(&o.parallelism, "parallelism", runtime.NumCPU(), "subtasks per operator")
	f.IntVar(&o.partitions, "partitions", 4, "partitions of the changes topic")
	f.DurationVar(&o.checkpoint, "checkpoint-interval", time.Second, "how often an epoch closes and its changes commit to the tables")
	f.Float64Var(&o.rate, "rate", 50_000, "change events per second the producer generates (0: as fast as it can)")
	f.BoolVar(&o.fresh, "fresh", false, "delete DIR first and start over")
	return cmd
}

func runCDCDemo(cmd *cobra.Command, o cdcDemoOptions) error {
	out := cmd.OutOrStdout()
	ctx := cmd.Context()
	switch {
	case o.events < 1:
		return errors.New("demo cdc: --events must be at least 1")
	case o.keys < 1:
		return errors.New("demo cdc: --keys must be at least 1")
	case o.parallelism < 1 || o.parallelism > state.DefaultMaxParallelism:
		return fmt.Errorf("demo cdc: --parallelism must be in [1, %d], got %d", state.DefaultMaxParallelism, o.parallelism)
	case o.partitions < 1:
		return errors.New("demo cdc: --partitions must be at least 1")
	case o.rate < 0:
		return errors.New("demo cdc: --rate must not be negative")
	case o.checkpoint <= 0:
		return errors.New("demo cdc: --checkpoint-interval must be positive")
	}
	if o.fresh {
		if err := os.RemoveAll(o.dir); err != nil {
			return fmt.Errorf("demo cdc: --fresh: %w", err)
		}
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	o.dir = dir
	broker, err := kfake.NewCluster(mustKfakeOptions(kafkaOptions{port: 0, dataDir: filepath.Join(o.dir, "kafka"), partitions: o.partitions})...)
	if err != nil {
		return fmt.Errorf("demo cdc: start the embedded broker: %w", err)
	}
	defer broker.Close()
	brokers := broker.ListenAddrs()
	fmt.Fprintf(out, "demo cdc: embedded Kafka on %s, data in %s\n", strings.Join(brokers, ","), filepath.Join(o.dir, "kafka"))
	if err := createTopic(ctx, brokers, cdcDemoTopic, o.partitions); err != nil {
		return fmt.Errorf("demo cdc: %w", err)
	}

	// The job reads each partition up to the records the whole history
	// puts there, and ends.
	ends := cdcDemoEndOffsets(o)
	script, err := cdcDemoScript(brokers, o, ends)
	if err != nil {
		return err
	}
	scriptPath := filepath.Join(o.dir, "cdc-demo.sql")
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		return fmt.Errorf("demo cdc: %w", err)
	}
	fmt.Fprintf(out, "demo cdc: the job is %s (Flink SQL; the broker's address changes with each run)\n", scriptPath)

	pctx, stopProducer := context.WithCancel(ctx)
	defer stopProducer()
	type produced struct {
		state map[int64]cdcgen.Account
		err   error
	}
	done := make(chan produced, 1)
	go func() {
		st, err := produceChanges(pctx, out, brokers, o, ends)
		done <- produced{st, err}
	}()
	start := time.Now()
	j, records, err := runCDCDemoJob(ctx, out, script, o)
	if err != nil {
		stopProducer()
		<-done
		if ctx.Err() != nil {
			fmt.Fprintln(out, "\ninterrupted; run `weir demo cdc` again: it resumes where it stopped, and its checks hold as after an uninterrupted run")
			return nil
		}
		return err
	}
	p := <-done
	if p.err != nil {
		return p.err
	}
	fmt.Fprintf(out, "\njob: %d changelog rows (+I, -U/+U, -D) read in %.2fs, %d epochs committed\n", records, time.Since(start).Seconds(), j.EpochsCompleted())
	return cdcDemoSummary(ctx, out, o, p.state)
}

// cdcDemoPartition is the partition of an id's changes: all changes of
// an id in one partition, in order, as a keyed producer writes them.
func cdcDemoPartition(id int64, partitions int) int32 { return int32(id % int64(partitions)) }

// cdcDemoRecords calls fn with each record of the topic's history, in
// order: each change event, and a tombstone (nil value) after each
// delete, as Debezium writes them (tombstones.on.delete).
func cdcDemoRecords(o cdcDemoOptions, fn func(ev cdcgen.Event, tombstone bool) bool) *cdcgen.Generator {
	g := cdcgen.New(cdcgen.Config{Keys: o.keys, Seed: cdcDemoSeed})
	for g.Events() < int(o.events) {
		ev := g.Next()
		if !fn(ev, false) {
			break
		}
		if ev.Op == "d" && !fn(ev, true) {
			break
		}
	}
	return g
}

// cdcDemoEndOffsets are the partitions' end offsets once the whole
// history is in the topic.
func cdcDemoEndOffsets(o cdcDemoOptions) []int64 {
	ends := make([]int64, o.partitions)
	cdcDemoRecords(o, func(ev cdcgen.Event, _ bool) bool {
		ends[cdcDemoPartition(ev.ID, o.partitions)]++
		return true
	})
	return ends
}

var cdcDemoTemplate = template.Must(template.New("cdc-demo.sql").Parse(`-- weir demo cdc: the accounts table's Debezium changes, mirrored into
-- an Iceberg upsert table, and totals per owner kept in a second one.
SET 'pipeline.name' = 'cdc-demo';
SET 'execution.checkpointing.interval' = '{{.Interval}}';

CREATE TABLE accounts (
    id      BIGINT,
    owner   STRING,
    balance BIGINT,
    PRIMARY KEY (id) NOT ENFORCED
) WITH (
    'connector' = 'kafka',
    'topic' = '{{.Topic}}',
    'properties.bootstrap.servers' = '{{.Brokers}}',
    'scan.startup.mode' = 'earliest-offset',
    -- the demo's history ends here; a real mirror runs unbounded
    'scan.bounded.mode' = 'specific-offsets',
    'scan.bounded.specific-offsets' = '{{.Ends}}',
    'format' = 'debezium-json'
);

CREATE TABLE accounts_mirror (
    id      BIGINT,
    owner   STRING,
    balance BIGINT,
    PRIMARY KEY (id) NOT ENFORCED
) WITH (
    'connector' = 'iceberg',
    'warehouse' = '{{.Warehouse}}',
    'catalog-database' = 'bank',
    'catalog-table' = 'accounts',
    'format-version' = '2',
    'write.upsert.enabled' = 'true',
    -- the job compacts the table every 5 commits: readers need not
    -- apply every epoch's equality deletes
    'flink-maintenance.rewrite.enabled' = 'true',
    'flink-maintenance.rewrite.schedule.commit-count' = '5',
    'flink-maintenance.rewrite.min-input-files' = '2'
);

CREATE TABLE owner_totals (
    owner    STRING,
    accounts BIGINT,
    balance  BIGINT,
    PRIMARY KEY (owner) NOT ENFORCED
) WITH (
    'connector' = 'iceberg',
    'warehouse' = '{{.Warehouse}}',
    'catalog-database' = 'bank',
    'catalog-table' = 'owner_totals',
    'format-version' = '2',
    'write.upsert.enabled' = 'true'
);

INSERT INTO accounts_mirror SELECT id, owner, balance FROM accounts;

INSERT INTO owner_totals SELECT owner, COUNT(*), SUM(balance) FROM accounts GROUP BY owner;
`))

func cdcDemoScript(brokers []string, o cdcDemoOptions, ends []int64) (string, error) {
	var spec []string
	for p, end := range ends {
		spec = append(spec, fmt.Sprintf("partition:%d,offset:%d", p, end))
	}
	var b strings.Builder
	err := cdcDemoTemplate.Execute(&b, map[string]string{
		"Interval": o.checkpoint.String(), "Topic": cdcDemoTopic, "Brokers": strings.Join(brokers, ","),
		"Ends": strings.Join(spec, ";"), "Warehouse": filepath.Join(o.dir, "warehouse"),
	})
	return b.String(), err
}

// produceChanges writes the history's records into the topic, resuming
// after the records the partitions already hold (an interrupted run
// leaves a prefix of each partition's records), and returns the source
// table after the whole history.
func produceChanges(ctx context.Context, out io.Writer, brokers []string, o cdcDemoOptions, ends []int64) (map[int64]cdcgen.Account, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(1<<16))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	have, err := topicEndOffsets(ctx, cl, cdcDemoTopic, o.partitions)
	if err != nil {
		return nil, fmt.Errorf("demo cdc: %w", err)
	}
	for p, h := range have {
		if h > ends[p] {
			return nil, fmt.Errorf("demo cdc: partition %d of %s holds %d records, more than the %d of this history: %s was made with other --events, --keys or --partitions; start over with --fresh",
				p, cdcDemoTopic, h, ends[p], o.dir)
		}
	}
	var (
		n, sent  int64
		seen     = make([]int64, o.partitions)
		mu       sync.Mutex
		firstErr error
	)
	started := time.Now()
	g := cdcDemoRecords(o, func(ev cdcgen.Event, tombstone bool) bool {
		p := cdcDemoPartition(ev.ID, o.partitions)
		seen[p]++
		if seen[p] <= have[p] {
			return true // produced by an earlier run
		}
		r := &kgo.Record{Topic: cdcDemoTopic, Partition: p, Key: ev.Key}
		if !tombstone {
			r.Value = ev.Value
		}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
		sent++
		if n++; o.rate > 0 && n%1024 == 0 {
			if wait := time.Duration(float64(n)/o.rate*float64(time.Second)) - time.Since(started); wait > 0 {
				if ctxsleep.Sleep(ctx, wait) != nil {
					return false
				}
			}
		}
		return ctx.Err() == nil
	})
	if err := cl.Flush(ctx); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if firstErr != nil {
		return nil, fmt.Errorf("demo cdc: produce changes: %w", firstErr)
	}
	fmt.Fprintf(out, "demo cdc: producer done: %d of the %d records (%d change events and their tombstones) sent in this run (%.2fs)\n",
		sent, sum64(ends), g.Events(), time.Since(started).Seconds())
	return g.State(), nil
}

func sum64(s []int64) int64 {
	var t int64
	for _, v := range s {
		t += v
	}
	return t
}

// runCDCDemoJob compiles the demo's script and runs it as weir run does,
// with a line of progress every second; it returns the changelog rows
// the source read (+I, -U and +U of an update, -D).
func runCDCDemoJob(ctx context.Context, out io.Writer, script string, o cdcDemoOptions) (*arrowflow.Job, int64, error) {
	job, err := sql.Compile(ctx, script, sql.Options{Parallelism: o.parallelism, ForceParallelism: true, JobName: "cdc-demo"})
	if err != nil {
		return nil, 0, fmt.Errorf("demo cdc: %w", err)
	}
	defer closeSinks(job.Graph)
	var src *kafkasrc.Source
	for _, s := range job.Sources {
		if k, ok := s.(*kafkasrc.Source); ok {
			src = k
		}
	}
	if src == nil {
		return nil, 0, errors.New("BUG: demo cdc: the job has no Kafka source")
	}
	flags := checkpointFlags{dir: filepath.Join(o.dir, "checkpoints"), interval: o.checkpoint, retain: 3}
	j, err := runWithProgress(ctx, out, job.Graph, flags, func(j *arrowflow.Job) string {
		lag := "?"
		lctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		if l, err := src.Lag(lctx); err == nil {
			lag = fmt.Sprint(l)
		}
		var upserts int64
		for _, s := range j.Stats() {
			// A sink ends its task's chain ("a -> b -> sink [retract]").
			last := s.Task
			if i := strings.LastIndex(last, " -> "); i >= 0 {
				last = last[i+len(" -> "):]
			}
			if strings.TrimSuffix(last, " [retract]") == "accounts_mirror" {
				upserts += s.RowsOut
			}
		}
		return fmt.Sprintf("  changes in %9d | to %s %9d | epochs committed %4d | lag %s",
			src.Stats().Records, cdcDemoMirror, upserts, j.EpochsCompleted(), lag)
	})
	return j, src.Stats().Records, err
}

// runWithProgress runs g as runWithCheckpoints does, printing line(job)
// every second while it runs.
func runWithProgress(ctx context.Context, out io.Writer, g *arrowflow.Graph, flags checkpointFlags, line func(*arrowflow.Job) string) (*arrowflow.Job, error) {
	var (
		jobMu sync.Mutex
		job   *arrowflow.Job
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			jobMu.Lock()
			j := job
			jobMu.Unlock()
			if j != nil {
				fmt.Fprintln(out, line(j))
			}
		}
	}()
	j, err := runWithCheckpointsHook(ctx, out, g, flags, arrowflow.Options{Allocator: memory.DefaultAllocator}, func(j *arrowflow.Job) {
		jobMu.Lock()
		job = j
		jobMu.Unlock()
	})
	close(stop)
	<-done
	return j, err
}

// ownerTotal is a row of bank.owner_totals.
type ownerTotal struct{ accounts, balance int64 }

// cdcDemoSummary reads both tables back with iceberg-go's scan and
// checks them against the source table's final state.
func cdcDemoSummary(ctx context.Context, out io.Writer, o cdcDemoOptions, want map[int64]cdcgen.Account) error {
	wh := filepath.Join(o.dir, "warehouse")
	cat, err := icebergsink.OpenCatalog(ctx, icebergsink.CatalogOptions{Warehouse: wh})
	if err != nil {
		return err
	}
	defer closeCatalogIfCloser(cat)
	mirror, files, err := readAccounts(ctx, cat, cdcDemoMirror)
	if err != nil {
		return err
	}
	totals, _, err := readOwnerTotals(ctx, cat, cdcDemoTotals)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\ntable %s (warehouse %s): %d rows; %s\n", cdcDemoMirror, wh, len(mirror), files)
	ids := slices.Sorted(maps.Keys(mirror))
	fmt.Fprintf(out, "  %8s  %-6s %8s\n", "id", "owner", "balance")
	for _, id := range ids[:min(5, len(ids))] {
		a := mirror[id]
		fmt.Fprintf(out, "  %8d  %-6s %8d\n", a.ID, a.Owner, a.Balance)
	}
	fmt.Fprintf(out, "\ntable %s: %d rows\n", cdcDemoTotals, len(totals))
	fmt.Fprintf(out, "  %-6s %8s %10s\n", "owner", "accounts", "balance")
	for _, owner := range slices.Sorted(maps.Keys(totals)) {
		fmt.Fprintf(out, "  %-6s %8d %10d\n", owner, totals[owner].accounts, totals[owner].balance)
	}

	if err := compareAccounts(mirror, want); err != nil {
		return fmt.Errorf("demo cdc: check failed: %s is not the source table: %w", cdcDemoMirror, err)
	}
	fmt.Fprintf(out, "\ncheck: %s equals the source table after its %d changes, row for row (%d rows)\n", cdcDemoMirror, o.events, len(want))
	if err := compareTotals(totals, ownerTotalsOf(want)); err != nil {
		return fmt.Errorf("demo cdc: check failed: %s is not the totals of the source table: %w", cdcDemoTotals, err)
	}
	fmt.Fprintf(out, "check: %s equals the accounts and balance per owner of the source table, computed again here\n", cdcDemoTotals)
	fmt.Fprintln(out, "look further:")
	fmt.Fprintf(out, "  go run ./cmd/weir table snapshots --warehouse %s --table %s\n", wh, cdcDemoMirror)
	fmt.Fprintf(out, "  go run ./cmd/weir table compact --warehouse %s --table %s   (applies the deletes)\n", wh, cdcDemoMirror)
	return nil
}

// loadAndScan loads a table of cat and reads its current snapshot with
// iceberg-go's scan, which applies the delete files; files describes the
// snapshot's data and delete files.
func loadAndScan(ctx context.Context, cat catalog.Catalog, name string, row func(arrow.RecordBatch) error) (files string, err error) {
	ident, err := icebergsink.ParseIdentifier(name)
	if err != nil {
		return "", err
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return "", fmt.Errorf("demo cdc: load %s: %w", name, err)
	}
	if tbl.CurrentSnapshot() == nil {
		return "no snapshot", nil
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return "", fmt.Errorf("demo cdc: plan the scan of %s: %w", name, err)
	}
	deletes := map[string]bool{}
	for _, t := range tasks {
		for _, p := range append(icebergsink.DeleteFilePaths(t), icebergsink.FilePaths(t.EqualityDeleteFiles)...) {
			deletes[p] = true
		}
	}
	files = fmt.Sprintf("%d snapshots, %d data files and %d delete files", len(tbl.Metadata().Snapshots()), len(tasks), len(deletes))
	return files, scanRecords(ctx, tbl, name, row)
}

// scanRecords calls fn with each record batch of tbl's scan.
func scanRecords(ctx context.Context, tbl *table.Table, name string, fn func(arrow.RecordBatch) error) error {
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		return fmt.Errorf("demo cdc: scan %s: %w", name, err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		if err := fn(tr.RecordBatch()); err != nil {
			return err
		}
	}
	return tr.Err()
}

// readAccounts reads a table of accounts by id; an id found twice is an
// error.
func readAccounts(ctx context.Context, cat catalog.Catalog, name string) (map[int64]cdcgen.Account, string, error) {
	rows := map[int64]cdcgen.Account{}
	files, err := loadAndScan(ctx, cat, name, func(rec arrow.RecordBatch) error {
		var (
			id, balance *array.Int64
			owner       *array.String
		)
		if err := errors.Join(demoColumn(rec, name, "id", &id), demoColumn(rec, name, "owner", &owner), demoColumn(rec, name, "balance", &balance)); err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			a := cdcgen.Account{ID: id.Value(i), Owner: owner.Value(i), Balance: balance.Value(i)}
			if prev, dup := rows[a.ID]; dup {
				return fmt.Errorf("demo cdc: check failed: %s holds id %d twice: %+v and %+v", name, a.ID, prev, a)
			}
			rows[a.ID] = a
		}
		return nil
	})
	return rows, files, err
}

// readOwnerTotals reads bank.owner_totals by owner; an owner found twice
// is an error.
func readOwnerTotals(ctx context.Context, cat catalog.Catalog, name string) (map[string]ownerTotal, string, error) {
	rows := map[string]ownerTotal{}
	files, err := loadAndScan(ctx, cat, name, func(rec arrow.RecordBatch) error {
		var (
			owner             *array.String
			accounts, balance *array.Int64
		)
		if err := errors.Join(demoColumn(rec, name, "owner", &owner), demoColumn(rec, name, "accounts", &accounts), demoColumn(rec, name, "balance", &balance)); err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			if _, dup := rows[owner.Value(i)]; dup {
				return fmt.Errorf("demo cdc: check failed: %s holds owner %s twice", name, owner.Value(i))
			}
			rows[owner.Value(i)] = ownerTotal{accounts.Value(i), balance.Value(i)}
		}
		return nil
	})
	return rows, files, err
}

// ownerTotalsOf is GROUP BY owner over a table of accounts: owners
// without accounts have no row.
func ownerTotalsOf(accounts map[int64]cdcgen.Account) map[string]ownerTotal {
	t := map[string]ownerTotal{}
	for _, a := range accounts {
		o := t[a.Owner]
		o.accounts++
		o.balance += a.Balance
		t[a.Owner] = o
	}
	return t
}

// compareAccounts describes the differences of got from want: missing
// ids, extra ids and changed rows, a few of each, with their counts.
func compareAccounts(got, want map[int64]cdcgen.Account) error {
	var missing, extra, changed []int64
	for id, w := range want {
		if g, ok := got[id]; !ok {
			missing = append(missing, id)
		} else if g != w {
			changed = append(changed, id)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			extra = append(extra, id)
		}
	}
	if len(missing)+len(extra)+len(changed) == 0 {
		return nil
	}
	var parts []string
	describe := func(what string, ids []int64, show func(int64) string) {
		if len(ids) == 0 {
			return
		}
		slices.Sort(ids)
		var s []string
		for _, id := range ids[:min(3, len(ids))] {
			s = append(s, show(id))
		}
		parts = append(parts, fmt.Sprintf("%d %s (%s)", len(ids), what, strings.Join(s, ", ")))
	}
	describe("ids missing", missing, func(id int64) string { return fmt.Sprintf("%+v", want[id]) })
	describe("ids that should not be there", extra, func(id int64) string { return fmt.Sprintf("%+v", got[id]) })
	describe("rows different", changed, func(id int64) string { return fmt.Sprintf("%+v, want %+v", got[id], want[id]) })
	return errors.New(strings.Join(parts, "; "))
}

// compareTotals describes the differences of got from want.
func compareTotals(got, want map[string]ownerTotal) error {
	var diffs []string
	owners := maps.Clone(want)
	maps.Copy(owners, got)
	for _, owner := range slices.Sorted(maps.Keys(owners)) {
		g, gok := got[owner]
		w, wok := want[owner]
		if g != w || gok != wok {
			diffs = append(diffs, fmt.Sprintf("owner %s: %d accounts, balance %d; want %d, %d", owner, g.accounts, g.balance, w.accounts, w.balance))
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	return errors.New(strings.Join(diffs, "; "))
}
