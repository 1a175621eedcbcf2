//go:build duckdb

package iceberg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/internal/cdcgen"
	"github.com/weirflow/weir/internal/kafkatest"
	icebergsink "github.com/weirflow/weir/sinks/iceberg"
)

// cdcScript mirrors the Debezium events of topic accounts into an
// Iceberg upsert table, as docs/cdc.md's example.
const cdcScript = `SET 'pipeline.name' = 'cdc-duckdb';
SET 'execution.checkpointing.interval' = '50 ms';
CREATE TABLE accounts (id BIGINT, owner STRING, balance BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH (
    'connector' = 'kafka', 'topic' = 'accounts', 'properties.bootstrap.servers' = '%s',
    'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'debezium-json');
CREATE TABLE mirror (id BIGINT, owner STRING, balance BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH (
    'connector' = 'iceberg', 'warehouse' = '%s', 'catalog-database' = 'db', 'catalog-table' = 'mirror',
    'format-version' = '2', 'write.upsert.enabled' = 'true');
INSERT INTO mirror SELECT * FROM accounts;
`

// DuckDB applies an Iceberg upsert table's deletes itself: weir mirrors
// Debezium changes (internal/cdcgen: inserts, updates, deletes,
// re-inserts, many changes per id) into an upsert table at parallelism 4,
// killed with SIGKILL after an epoch's manifest and at random moments,
// restarted until it completes;
// then DuckDB reads the data, equality delete and position delete files
// the current snapshot's manifests list, with their sequence numbers
// from the manifests, and applies Iceberg's rules in SQL (an equality
// delete removes the rows of files with a lower data sequence number, a
// position delete those of its file with a lower or equal one). Its
// table must equal the source table's final state, each id once, as must
// iceberg-go's scan; and again after `weir table compact`, which must
// leave no delete file.
func TestDuckDBReadsIcebergUpsertTable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	weir := buildWeir(t, dir)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	b := kafkatest.Start(t, "", 6)
	evs, state := cdcgen.History(cdcgen.Config{Keys: 5000, Seed: 17}, 300_000)
	var want []string
	for _, a := range state {
		want = append(want, fmt.Sprintf("%d|%s|%d", a.ID, a.Owner, a.Balance))
	}
	slices.Sort(want)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(pctx, 6, 1, nil, "accounts"); err != nil {
		t.Fatal(err)
	}
	recs := make([]*kgo.Record, len(evs))
	for i, e := range evs {
		recs[i] = &kgo.Record{Key: e.Key, Value: e.Value}
	}
	if err := cl.ProduceSync(pctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	wh, cp := filepath.Join(dir, "wh"), filepath.Join(dir, "cp")
	script := filepath.Join(dir, "mirror.sql")
	if err := os.WriteFile(script, fmt.Appendf(nil, cdcScript, b.Addr(), wh), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--checkpoint-dir", cp, "--http=", "--parallelism", "4", script}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0xcdc))
	kills := 0
	for attempt := 0; ; attempt++ {
		if attempt == 20 {
			t.Fatalf("the job did not complete within 20 runs (%d kills)", kills)
		}
		// The first run is killed by weir's failpoint after the manifest of
		// its second epoch with output (its snapshot not committed yet);
		// the restarts at random moments.
		var env []string
		if attempt == 0 {
			env = []string{"WEIR_FAILPOINT=after-output-manifest@2"}
		}
		p := startWeir(t, env, weir, args...)
		if attempt > 0 && kills < 3 {
			p.waitStarted(t)
			select {
			case <-p.done:
			case <-time.After(time.Duration(50+rng.IntN(500)) * time.Millisecond):
				_ = p.cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		err := p.wait(t, 2*time.Minute)
		if err == nil {
			break
		}
		if !errors.Is(err, errKilled) {
			t.Fatalf("run %d: %v\n%s", attempt+1, err, p.out.String())
		}
		kills++
	}
	t.Logf("the job completed after %d kills (kill timing seed %d)", kills, seed)
	if kills == 0 {
		t.Fatal("the job completed before the first kill")
	}

	check := func(when string, wantNoDeletes bool) {
		t.Helper()
		tbl := loadMirror(ctx, t, wh)
		files := manifestFiles(t, tbl)
		got := duckUpsertRows(t, db, tbl, files)
		seen := map[string]bool{}
		for _, r := range got {
			id, _, _ := strings.Cut(r, "|")
			if seen[id] {
				t.Fatalf("%s: DuckDB reads id %s twice", when, id)
			}
			seen[id] = true
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: DuckDB reads %d rows, the source table has %d; first differences: %s", when, len(got), len(want), firstDiff(got, want))
		}
		scan := scanRows(ctx, t, tbl)
		if !slices.Equal(scan, want) {
			t.Fatalf("%s: iceberg-go's scan reads %d rows, the source table has %d; %s", when, len(scan), len(want), firstDiff(scan, want))
		}
		t.Logf("%s: %d data files, %d equality delete files, %d position delete files; DuckDB and iceberg-go read the %d rows of the source table",
			when, len(files.data), len(files.eq), len(files.pos), len(want))
		if wantNoDeletes && len(files.eq)+len(files.pos) > 0 {
			t.Fatalf("%s: %d equality and %d position delete files left", when, len(files.eq), len(files.pos))
		}
		if !wantNoDeletes && len(files.eq) == 0 {
			t.Fatalf("%s: no equality delete file: the test checks no delete", when)
		}
	}
	check("after the job", false)
	p := startWeir(t, nil, weir, "table", "compact", "--warehouse", wh, "--table", "db.mirror", "--min-input-files", "2")
	if err := p.wait(t, 2*time.Minute); err != nil {
		t.Fatalf("weir table compact: %v\n%s", err, p.out.String())
	}
	check("after weir table compact", true)
}

// upsertFile is a file of the snapshot with its data sequence number.
type upsertFile struct {
	path string // local path
	uri  string // as the manifest names it
	seq  int64
}

type upsertFiles struct{ data, eq, pos []upsertFile }

func loadMirror(ctx context.Context, t *testing.T, wh string) *table.Table {
	t.Helper()
	cat, err := icebergsink.OpenCatalog(ctx, icebergsink.CatalogOptions{Warehouse: wh})
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := cat.(interface{ Close() error }); ok {
		t.Cleanup(func() { c.Close() })
	}
	ident, _ := icebergsink.ParseIdentifier("db.mirror")
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// manifestFiles lists the live files of the current snapshot's manifests
// with their data sequence numbers, read from the manifests themselves.
func manifestFiles(t *testing.T, tbl *table.Table) upsertFiles {
	t.Helper()
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mans, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	idField, ok := tbl.Schema().FindFieldByName("id")
	if !ok {
		t.Fatal("the table has no column id")
	}
	var out upsertFiles
	for _, m := range mans {
		entries, err := m.FetchEntries(fs, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			df := e.DataFile()
			f := upsertFile{path: localPath(t, df.FilePath()), uri: df.FilePath(), seq: e.SequenceNum()}
			if df.FileFormat() != iceberg.ParquetFile {
				t.Fatalf("%s: format %s, not Parquet", df.FilePath(), df.FileFormat())
			}
			switch df.ContentType() {
			case iceberg.EntryContentData:
				out.data = append(out.data, f)
			case iceberg.EntryContentEqDeletes:
				if ids := df.EqualityFieldIDs(); !slices.Equal(ids, []int{idField.ID}) {
					t.Fatalf("%s: equality field ids %v, want [%d] (id)", df.FilePath(), ids, idField.ID)
				}
				out.eq = append(out.eq, f)
			case iceberg.EntryContentPosDeletes:
				out.pos = append(out.pos, f)
			}
		}
	}
	return out
}

// duckUpsertRows has DuckDB apply the deletes to the data files, as
// "id|owner|balance", sorted.
func duckUpsertRows(t *testing.T, db *sql.DB, tbl *table.Table, files upsertFiles) []string {
	t.Helper()
	list := func(fs []upsertFile) string {
		q := make([]string, len(fs))
		for i, f := range fs {
			q[i] = "'" + strings.ReplaceAll(f.path, "'", "''") + "'"
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	seqs := func(fs []upsertFile) string {
		var rows []string
		for _, f := range fs {
			rows = append(rows, fmt.Sprintf("('%s', '%s', %d)", strings.ReplaceAll(f.path, "'", "''"), strings.ReplaceAll(f.uri, "'", "''"), f.seq))
		}
		return "(VALUES " + strings.Join(rows, ", ") + ") AS s(path, uri, seq)"
	}
	q := `WITH data AS (
	SELECT d.id, d.owner, d.balance, s.uri, s.seq, d.file_row_number AS pos
	FROM read_parquet(` + list(files.data) + `, filename = true, file_row_number = true) d JOIN ` + seqs(files.data) + ` ON d.filename = s.path)`
	if len(files.eq) > 0 {
		q += `, eq AS (SELECT e.id, s.seq FROM read_parquet(` + list(files.eq) + `, filename = true) e JOIN ` + seqs(files.eq) + ` ON e.filename = s.path)`
	} else {
		q += `, eq AS (SELECT NULL::BIGINT AS id, 0::BIGINT AS seq WHERE false)`
	}
	if len(files.pos) > 0 {
		q += `, pos AS (SELECT p.file_path, p.pos, s.seq FROM read_parquet(` + list(files.pos) + `, filename = true) p JOIN ` + seqs(files.pos) + ` ON p.filename = s.path)`
	} else {
		q += `, pos AS (SELECT NULL::VARCHAR AS file_path, 0::BIGINT AS pos, 0::BIGINT AS seq WHERE false)`
	}
	q += `
SELECT id, owner, balance FROM data d
WHERE NOT EXISTS (SELECT 1 FROM eq WHERE eq.id = d.id AND eq.seq > d.seq)
  AND NOT EXISTS (SELECT 1 FROM pos WHERE pos.file_path = d.uri AND pos.pos = d.pos AND pos.seq >= d.seq)`
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("DuckDB: %v\n%s", err, q)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, balance int64
		var owner string
		if err := rows.Scan(&id, &owner, &balance); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d|%s|%d", id, owner, balance))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// scanRows reads the table with iceberg-go's scan, as duckUpsertRows
// formats its rows.
func scanRows(ctx context.Context, t *testing.T, tbl *table.Table) []string {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	var out []string
	for tr.Next() {
		rec := tr.RecordBatch()
		ids := rec.Column(0).(*array.Int64)
		owners := rec.Column(1).(*array.String)
		bal := rec.Column(2).(*array.Int64)
		for i := range int(rec.NumRows()) {
			out = append(out, fmt.Sprintf("%d|%s|%d", ids.Value(i), owners.Value(i), bal.Value(i)))
		}
	}
	slices.Sort(out)
	return out
}

// firstDiff names the first rows one list has and the other has not.
func firstDiff(got, want []string) string {
	var missing, extra []string
	for _, w := range want {
		if _, ok := slices.BinarySearch(got, w); !ok && len(missing) < 3 {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if _, ok := slices.BinarySearch(want, g); !ok && len(extra) < 3 {
			extra = append(extra, g)
		}
	}
	return fmt.Sprintf("missing %q, extra %q", missing, extra)
}
