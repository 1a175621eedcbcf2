package iceberg_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	iceberggo "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/weirflow/weir/sinks/iceberg"

	"github.com/weirflow/weir/internal/testutil"
)

// pgBin holds PostgreSQL's server programs (Debian's postgresql-15).
const pgBin = "/usr/lib/postgresql/15/bin"

// startPostgres starts a throwaway PostgreSQL server on a free loopback
// port, stopped in t.Cleanup, and returns a URL of its "postgres"
// database. PostgreSQL refuses to run as root: as root, the server runs as
// the postgres OS user. The test is skipped when the programs or that
// user are missing.
func startPostgres(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no PostgreSQL server")
	}
	for _, prog := range []string{"initdb", "pg_ctl", "postgres"} {
		if _, err := os.Stat(filepath.Join(pgBin, prog)); err != nil {
			t.Skipf("PostgreSQL 15 is not installed (%v)", err)
		}
	}
	var cred *syscall.Credential
	uid, gid := -1, -1
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skipf("running as root and there is no postgres OS user to run PostgreSQL as: %v", err)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}

	dir, err := os.MkdirTemp("", "weir-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data, sock, logFile := filepath.Join(dir, "data"), filepath.Join(dir, "sock"), filepath.Join(dir, "server.log")
	if err := os.Mkdir(sock, 0o700); err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		for _, p := range []string{dir, sock} {
			if err := os.Chown(p, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func(timeout time.Duration, name string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(pgBin, name), args...)
		cmd.Dir = dir
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		// pg_ctl's server keeps the output pipes open: log to a file.
		out, err := os.CreateTemp(dir, name+"-*.out")
		if err != nil {
			return "", err
		}
		defer out.Close()
		if cred != nil {
			out.Chown(uid, gid)
		}
		cmd.Stdout, cmd.Stderr = out, out
		cmd.WaitDelay = time.Second
		err = cmd.Run()
		text, _ := os.ReadFile(out.Name())
		return string(text), err
	}

	if out, err := run(60*time.Second, "initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port := testutil.FreeLoopbackPort(t)
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off", port, sock)
	// Stop the server whatever happens from here on.
	t.Cleanup(func() {
		if out, err := run(20*time.Second, "pg_ctl", "stop", "-D", data, "-m", "immediate", "-w", "-t", "15"); err != nil {
			t.Errorf("pg_ctl stop: %v\n%s", err, out)
			killPostmaster(t, data)
		}
	})
	if out, err := run(60*time.Second, "pg_ctl", "start", "-D", data, "-l", logFile, "-o", opts, "-w", "-t", "30"); err != nil {
		log, _ := os.ReadFile(logFile)
		t.Fatalf("pg_ctl start: %v\n%s\nserver log:\n%s", err, out, log)
	}

	uri := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	db, err := sql.Open("pgx", uri)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile)
			t.Fatalf("PostgreSQL does not accept connections on port %d: %v\nserver log:\n%s", port, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return uri
}

// killPostmaster kills the server this test started, by the pid in its
// data directory, when pg_ctl could not stop it.
func killPostmaster(t *testing.T, data string) {
	raw, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[0]))
	if err != nil || pid <= 1 {
		return
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Logf("kill postmaster %d: %v", pid, err)
	}
}

// pgScanKeys reads the table's current snapshot with iceberg-go's scan,
// through a catalog opened independently of the sink's, and returns the
// sorted keys.
func pgScanKeys(t *testing.T, co iceberg.CatalogOptions) []int64 {
	t.Helper()
	ctx := context.Background()
	cat, err := iceberg.OpenCatalog(ctx, co)
	if err != nil {
		t.Fatal(err)
	}
	defer closeCat(cat)
	tbl, err := cat.LoadTable(ctx, table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.CurrentSnapshot() == nil {
		return nil
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var keys []int64
	rdr := array.NewTableReader(at, 1024)
	defer rdr.Release()
	for rdr.Next() {
		keys = append(keys, rdr.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
	}
	slices.Sort(keys)
	return keys
}

func closeCat(cat catalog.Catalog) {
	if c, ok := cat.(interface{ Close() error }); ok {
		c.Close()
	}
}

// lockedBuffer collects a logger's output across goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The sink on iceberg-go's SQL catalog on a real PostgreSQL server:
// epochs commit once, a crash's uncommitted epoch is cleaned up, and a
// commit that loses a race to another writer is retried.
func TestPostgresCatalog(t *testing.T) {
	ctx := context.Background()
	uri := startPostgres(t)
	wh := t.TempDir()
	co := iceberg.CatalogOptions{Type: "sql", URI: uri, Warehouse: wh}
	logs := &lockedBuffer{}
	opts := func(o *iceberg.Options) {
		o.Catalog = co
		// iceberg-go retries a commit that lost a race itself: without
		// that, the conflict reaches the sink's own retry loop.
		o.Properties = map[string]string{table.CommitNumRetriesKey: "0"}
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}

	// Two epochs from two writers.
	s := newSink(t, wh, opts)
	ws := openWriters(t, s, "job", 2, 1)
	p1 := writeEpoch(t, ws, 1, 0, 1000)
	if got := pgScanKeys(t, co); len(got) != 0 {
		t.Fatalf("pre-committed rows are visible: %d", len(got))
	}
	if err := s.Commit(ctx, 1, p1); err != nil {
		t.Fatal(err)
	}
	p2 := writeEpoch(t, ws, 2, 1000, 2000)
	if err := s.Commit(ctx, 2, p2); err != nil {
		t.Fatal(err)
	}
	if got := pgScanKeys(t, co); !slices.Equal(got, keyRange(0, 2000)) {
		t.Fatalf("after epochs 1-2: %d keys, want 0..1999", len(got))
	}
	snaps := s.Table().Metadata().Snapshots()
	if len(snaps) != 2 {
		t.Fatalf("%d snapshots, want 2", len(snaps))
	}
	for i, snap := range snaps {
		if p := snap.Summary.Properties; p[iceberg.SummaryJobID] != "job" || p[iceberg.SummaryEpoch] != strconv.Itoa(i+1) || p[iceberg.SummaryCommitID] == "" {
			t.Fatalf("snapshot %d summary %v, want job %q epoch %d and a commit id", i, p, "job", i+1)
		}
	}
	// A recovery commits the restored epoch again: nothing changes.
	for e, p := range [][][]byte{p1, p2} {
		if err := s.Commit(ctx, uint64(e+1), p); err != nil {
			t.Fatal(err)
		}
	}
	if got := weirSnapshots(t, s, "job"); !slices.Equal(got, []string{"1", "2"}) {
		t.Fatalf("weir snapshots after repeated commits: %v, want epochs 1 and 2", got)
	}

	// Epoch 3 is pre-committed, then the process dies.
	before := dataFiles(t, wh)
	writeEpoch(t, ws, 3, 2000, 3000)
	if after := dataFiles(t, wh); len(after) <= len(before) {
		t.Fatalf("epoch 3 wrote no data files (%d before, %d after)", len(before), len(after))
	}
	again := newSink(t, wh, opts)
	if last, err := again.LastCommittedEpoch(ctx, "job"); err != nil || last != 2 {
		t.Fatalf("last committed epoch %d (%v), want 2", last, err)
	}
	if err := again.Recover(ctx, "job", 2); err != nil {
		t.Fatal(err)
	}
	if after := dataFiles(t, wh); !slices.Equal(after, before) {
		t.Fatalf("after recovery %d data files, want the %d of epochs 1-2", len(after), len(before))
	}
	if manifests, _ := filepath.Glob(filepath.Join(wh, "*", "*", "metadata", "weir-*.avro")); len(manifests) != 0 {
		t.Fatalf("pre-commit manifests left after recovery: %v", manifests)
	}
	if got := pgScanKeys(t, co); !slices.Equal(got, keyRange(0, 2000)) {
		t.Fatalf("after recovery: %d keys, want epochs 1-2's 0..1999", len(got))
	}

	// Epoch 3 again, and another writer appends between its pre-commit
	// and its commit. A row lock held here orders the two commits in the
	// database: the other writer's commit is queued first, the sink's
	// behind it with a table as it was before, so the sink's conditional
	// update of the metadata location finds it moved.
	ws = openWriters(t, again, "job", 2, 3)
	p3 := writeEpoch(t, ws, 3, 3000, 4000)
	otherCat, err := iceberg.OpenCatalog(ctx, co)
	if err != nil {
		t.Fatal(err)
	}
	defer closeCat(otherCat)
	otherTbl, err := otherCat.LoadTable(ctx, table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", uri)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lockCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	lock, err := db.BeginTx(lockCtx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	var loc string
	if err := lock.QueryRowContext(lockCtx, `SELECT metadata_location FROM iceberg_tables WHERE table_namespace = 'db' AND table_name = 'events' FOR UPDATE`).Scan(&loc); err != nil {
		t.Fatal(err)
	}
	waitForLockWaiters := func(n int) {
		t.Helper()
		var got int
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if err := db.QueryRowContext(lockCtx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE%iceberg_tables%'`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got >= n {
				return
			}
		}
		t.Fatalf("%d commits wait for the row lock, want %d", got, n)
	}
	appended := make(chan error, 1)
	go func() {
		rec := batch(memory.DefaultAllocator, 9000, 9010).Record
		defer rec.Release()
		rdr, err := array.NewRecordReader(testSchema, []arrow.RecordBatch{rec})
		if err != nil {
			appended <- err
			return
		}
		defer rdr.Release()
		_, err = otherTbl.Append(lockCtx, rdr, iceberggo.Properties{"writer": "other"})
		appended <- err
	}()
	waitForLockWaiters(1)
	committed := make(chan error, 1)
	go func() { committed <- again.Commit(lockCtx, 3, p3) }()
	waitForLockWaiters(2)
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []chan error{appended, committed} {
		select {
		case err := <-ch:
			if err != nil {
				t.Fatalf("concurrent commits: %v\nsink log:\n%s", err, logs)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("concurrent commits did not finish\nsink log:\n%s", logs)
		}
	}
	var conflicts []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "commit conflict") {
			conflicts = append(conflicts, line)
		}
	}
	if len(conflicts) == 0 {
		t.Fatalf("the sink's commit did not retry after the other writer's\nsink log:\n%s", logs)
	}
	t.Logf("conflicts the sink retried:\n%s", strings.Join(conflicts, "\n"))
	want := append(keyRange(0, 2000), keyRange(3000, 4000)...)
	want = append(want, keyRange(9000, 9010)...)
	if got := pgScanKeys(t, co); !slices.Equal(got, want) {
		t.Fatalf("after the concurrent commits: %d keys, want %d (epochs 1-3 and the other writer's 10)", len(got), len(want))
	}
	cur := again.Table().CurrentSnapshot()
	if cur.Summary.Properties[iceberg.SummaryEpoch] != "3" || cur.ParentSnapshotID == nil {
		t.Fatalf("current snapshot %v, want epoch 3's on top of the other writer's", cur.Summary)
	}
	if parent := again.Table().Metadata().SnapshotByID(*cur.ParentSnapshotID); parent == nil || parent.Summary.Properties["writer"] != "other" {
		t.Fatalf("epoch 3's parent snapshot is not the other writer's")
	}
	if last, err := again.LastCommittedEpoch(ctx, "job"); err != nil || last != 3 {
		t.Fatalf("last committed epoch %d (%v), want 3", last, err)
	}
}
