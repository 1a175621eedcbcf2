package sql

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fuzzSeeds returns the inputs of the other tests, as seeds for FuzzParse.
func fuzzSeeds(t testing.TB) []string {
	var seeds []string
	for _, s := range nexmarkScripts(t) {
		seeds = append(seeds, s)
	}
	for _, c := range canonicalCases {
		seeds = append(seeds, c.src)
	}
	for _, c := range statementCases {
		seeds = append(seeds, c.src)
	}
	for _, c := range queryCases {
		seeds = append(seeds, c.src)
	}
	for _, c := range exprCases {
		seeds = append(seeds, "SELECT "+c.src+" FROM t")
	}
	for _, c := range errorCases {
		seeds = append(seeds, c.src)
	}
	return seeds
}

// FuzzParse checks that Parse never panics, that its errors carry a
// position, and that a script that parses prints to canonical SQL which
// parses to the same tree and prints the same again.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not an *Error: %v", err, err)
			}
			if !e.Pos.IsValid() || e.Msg == "" {
				t.Fatalf("error without a position or message: %#v", e)
			}
			_ = e.Error()
			return
		}
		out := Format(s)
		s2, err := Parse(out)
		if err != nil {
			t.Fatalf("canonical form does not parse: %v\ninput:  %q\noutput: %q", err, src, out)
		}
		if out2 := Format(s2); out2 != out {
			t.Fatalf("canonical form not stable:\ninput: %q\n1: %q\n2: %q", src, out, out2)
		}
		if d := diffIgnoringPos(s, s2); d != "" {
			t.Fatalf("tree changed by a round trip at %s\ninput:  %q\noutput: %q", d, src, out)
		}
	})
}

// compileDDL declares a datagen source with a watermark, a computed
// column and most scalar types, a second one to join with, a view and
// blackhole sinks: the seeds of FuzzCompile plan deep from it.
const compileDDL = `CREATE TABLE src (
    id BIGINT,
    k INT,
    price DOUBLE,
    name STRING,
    flag BOOLEAN,
    ts TIMESTAMP(3),
    doubled AS id * 2,
    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'datagen', 'number-of-rows' = '100', 'seed' = '7',
    'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '100',
    'fields.k.min' = '0', 'fields.k.max' = '9', 'fields.name.length' = '4');
CREATE TABLE dim (k INT, label STRING, ts TIMESTAMP(3), PRIMARY KEY (k) NOT ENFORCED,
    WATERMARK FOR ts AS ts) WITH ('connector' = 'datagen', 'number-of-rows' = '10');
CREATE VIEW cheap AS SELECT id, k, price, name, ts FROM src WHERE price < 100;
CREATE TABLE out1 (a BIGINT) WITH ('connector' = 'blackhole');
CREATE TABLE out2 (a BIGINT, b STRING) WITH ('connector' = 'blackhole');
CREATE TABLE out3 (a BIGINT, b BIGINT, c TIMESTAMP(3)) WITH ('connector' = 'blackhole');
`

// compileQueries are INSERTs over compileDDL's tables: every kind of
// operator the planner builds, and expressions of every kind.
var compileQueries = []string{
	"INSERT INTO out1 SELECT id + k * 2 - CAST(price AS BIGINT) FROM src WHERE flag AND NOT name LIKE 'a%'",
	"INSERT INTO out2 SELECT id, UPPER(TRIM(name)) || '-' || CAST(k AS STRING) FROM src WHERE k IN (1, 2, 3) OR id BETWEEN 5 AND 9",
	"INSERT INTO out2 SELECT id, CASE WHEN k = 0 THEN 'zero' WHEN k < 5 THEN 'low' ELSE COALESCE(name, '?') END FROM cheap",
	"INSERT INTO out3 SELECT k, COUNT(*), window_start FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end",
	"INSERT INTO out3 SELECT k, SUM(id), window_end FROM TABLE(HOP(TABLE src, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end",
	"INSERT INTO out3 SELECT k, MAX(id), window_start FROM TABLE(CUMULATE(TABLE src, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end",
	"INSERT INTO out3 SELECT k, COUNT(DISTINCT id) FILTER (WHERE price > 1), window_start FROM TABLE(SESSION(TABLE src PARTITION BY k, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY k, window_start, window_end HAVING COUNT(*) > 1",
	"INSERT INTO out3 SELECT k, COUNT(*), TUMBLE_START(ts, INTERVAL '5' SECOND) FROM src GROUP BY k, TUMBLE(ts, INTERVAL '5' SECOND)",
	"INSERT INTO out3 SELECT id, rn, window_start FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rn FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '10' SECOND))) WHERE rn <= 3",
	"INSERT INTO out3 SELECT a.id, b.id, a.window_start FROM (SELECT * FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '5' SECOND))) a JOIN (SELECT * FROM TABLE(TUMBLE(TABLE cheap, DESCRIPTOR(ts), INTERVAL '5' SECOND))) b ON a.k = b.k AND a.window_start = b.window_start AND a.window_end = b.window_end",
	"INSERT INTO out3 SELECT a.id, b.id, a.ts FROM src a JOIN cheap b ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '1' SECOND AND b.ts + INTERVAL '1' SECOND",
	"INSERT INTO out2 SELECT s.id, d.label FROM src s JOIN dim FOR SYSTEM_TIME AS OF s.ts AS d ON s.k = d.k",
	"INSERT INTO out1 SELECT id FROM src UNION ALL SELECT id FROM cheap UNION ALL SELECT k FROM dim",
	"INSERT INTO out2 WITH w AS (SELECT id, name FROM src WHERE id > 3) SELECT id, name FROM w WHERE name IS NOT NULL",
	"INSERT INTO out1 SELECT EXTRACT(SECOND FROM ts) + CHAR_LENGTH(name) + ABS(k) + MOD(id, 7) FROM src",
	"INSERT INTO out2 SELECT id, DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss') FROM src WHERE ts > TIMESTAMP '2026-01-01 00:00:00'",
	"INSERT INTO out2 SELECT CAST(FLOOR(price) AS BIGINT), SUBSTRING(name FROM 1 FOR 2) FROM src",
	"INSERT INTO out1 SELECT CAST(price * 2 AS BIGINT) / NULLIF(k, 0) FROM src",
	"INSERT INTO out1 SELECT doubled FROM src",
	"SET 'parallelism.default' = '2';\nINSERT INTO out1 SELECT id FROM src",
	"EXECUTE STATEMENT SET BEGIN INSERT INTO out1 SELECT id FROM src; INSERT INTO out2 SELECT id, name FROM src; END",
}

// plannableSeeds returns scripts that plan: the Nexmark queries of
// bench/queries (weir's own versions), and compileDDL with each of
// compileQueries.
func plannableSeeds(t testing.TB) []string {
	ddl, err := os.ReadFile(filepath.Join("..", "bench", "queries", "sql", "nexmark_ddl.sql"))
	if err != nil {
		t.Fatal(err)
	}
	bddl := strings.NewReplacer("'EVENTS'", "'1000'", "'SEED'", "'1'", "'SPLITS'", "'2'").Replace(string(ddl))
	files, err := filepath.Glob(filepath.Join("..", "bench", "queries", "sql", "q*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	var seeds []string
	for _, f := range files {
		q, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, bddl+"\n"+string(q))
	}
	for _, q := range compileQueries {
		seeds = append(seeds, compileDDL+q+";")
	}
	return seeds
}

// compileSeeds returns the seeds of FuzzCompile: plannableSeeds, the
// Nexmark queries of sql/testdata in Flink's own SQL (some use what weir
// refuses, with an error), compileDDL with each expression of the
// parser's tests, and the parser's seeds (they reach the planner's
// checks, most of them to fail there).
func compileSeeds(t testing.TB) []string {
	seeds := plannableSeeds(t)
	nx := nexmarkScripts(t)
	for _, n := range slices.Sorted(maps.Keys(nx)) {
		seeds = append(seeds, nx[n])
	}
	for _, c := range exprCases {
		seeds = append(seeds, compileDDL+"INSERT INTO out1 SELECT "+c.src+" FROM src;")
	}
	return append(seeds, fuzzSeeds(t)...)
}

// TestPlannableSeedsPlan checks that FuzzCompile's seeds reach deep: the
// scripts of plannableSeeds plan without error.
func TestPlannableSeedsPlan(t *testing.T) {
	for i, s := range plannableSeeds(t) {
		if _, err := Compile(context.Background(), s, Options{DryRun: true}); err != nil {
			t.Errorf("seed %d: %v", i, err)
		}
	}
}

// FuzzCompile feeds scripts to Compile with DryRun (no table, folder,
// topic or connection is touched: TestDryRunTouchesNothing) and checks
// that it never panics or crashes, that a script that does not parse
// does not compile, and that a script that compiles compiles the same
// from its canonical form.
func FuzzCompile(f *testing.F) {
	for _, s := range compileSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		job, err := Compile(ctx, src, Options{DryRun: true})
		script, perr := Parse(src)
		if perr != nil {
			if err == nil {
				t.Fatalf("compiled a script that does not parse (%v)", perr)
			}
			return
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("an empty error (%T)", err)
			}
			return
		}
		if job == nil || job.Graph == nil {
			t.Fatalf("no error and no job")
		}
		canon := Format(script)
		job2, err := Compile(ctx, canon, Options{DryRun: true})
		if err != nil {
			t.Fatalf("the canonical form does not compile: %v\ncanonical: %q", err, canon)
		}
		if job2.Plan != job.Plan {
			t.Fatalf("the canonical form plans differently:\n%s\n---\n%s\ncanonical: %q", job.Plan, job2.Plan, canon)
		}
	})
}

// dryRunScript reads and writes every connector that can reach outside
// the process: Kafka (with the Confluent schema registry), files and
// Iceberg, with their addresses and folders under dir, broker and
// registry.
func dryRunScript(dir, broker, registry string) string {
	return fmt.Sprintf(`SET 'state.checkpoints.dir' = '%[1]s/checkpoints';
CREATE TABLE kin (id BIGINT, name STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'kafka', 'topic' = 'in',
    'properties.bootstrap.servers' = '%[2]s', 'properties.group.id' = 'g', 'format' = 'avro-confluent',
    'avro-confluent.url' = '%[3]s', 'avro-confluent.subject' = 'in-value', 'weir.on-error' = 'dlq', 'weir.dead-letter-topic' = 'dlq');
CREATE TABLE fin (id BIGINT, name STRING) WITH ('connector' = 'filesystem', 'path' = '%[1]s/in', 'format' = 'json',
    'weir.on-error' = 'dlq', 'weir.dead-letter-path' = '%[1]s/dlq');
CREATE TABLE kout (id BIGINT, name STRING) WITH ('connector' = 'kafka', 'topic' = 'out',
    'properties.bootstrap.servers' = '%[2]s', 'format' = 'avro-confluent', 'avro-confluent.url' = '%[3]s', 'avro-confluent.subject' = 'out-value');
CREATE TABLE fout (id BIGINT, name STRING) WITH ('connector' = 'filesystem', 'path' = '%[1]s/out', 'format' = 'parquet');
CREATE TABLE rel (id BIGINT, name STRING) WITH ('connector' = 'filesystem', 'path' = 'relative-out', 'format' = 'parquet');
CREATE TABLE ice (id BIGINT, name STRING) WITH ('connector' = 'iceberg', 'warehouse' = '%[1]s/warehouse', 'uri' = '%[1]s/catalog.db', 'catalog-database' = 'db');
EXECUTE STATEMENT SET BEGIN
INSERT INTO kout SELECT id, name FROM kin;
INSERT INTO fout SELECT id, name FROM fin;
INSERT INTO rel SELECT id, name FROM fin;
INSERT INTO ice SELECT id, name FROM kin UNION ALL SELECT id, name FROM fin;
END;`, dir, broker, registry)
}

// Compile with DryRun, as FuzzCompile and weir run --explain call it,
// creates no file or folder (absolute or relative) and connects to no
// broker or schema registry. Without DryRun the same probes see the
// Iceberg catalog created, so they can fail.
func TestDryRunTouchesNothing(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir(filepath.Join(dir, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	defer ln.Close()
	var requests atomic.Int64
	registry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer registry.Close()
	entries := func() []string {
		var names []string
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			names = append(names, p)
			return err
		})
		return names
	}
	before := entries()
	if _, err := Compile(context.Background(), dryRunScript(dir, ln.Addr().String(), registry.URL), Options{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if after := entries(); !slices.Equal(before, after) {
		t.Errorf("DryRun made files: before %q, after %q", before, after)
	}
	if n, m := conns.Load(), requests.Load(); n != 0 || m != 0 {
		t.Errorf("DryRun connected %d times to the broker and asked the registry %d times", n, m)
	}

	ice := fmt.Sprintf(`CREATE TABLE g (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '1');
CREATE TABLE ice (id BIGINT) WITH ('connector' = 'iceberg', 'warehouse' = '%[1]s/warehouse', 'uri' = '%[1]s/catalog.db', 'catalog-database' = 'db');
INSERT INTO ice SELECT id FROM g;`, dir)
	if _, err := Compile(context.Background(), ice, Options{}); err != nil {
		t.Fatal(err)
	}
	if after := entries(); slices.Equal(before, after) {
		t.Errorf("the probe sees no file made by an Iceberg sink without DryRun")
	}
}
