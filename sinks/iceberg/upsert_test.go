package iceberg_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/iceberg"
)

// row is a row of testSchema: key k, s (null when !ok), ts.
type row struct {
	k  int64
	s  string
	ok bool
	ts int64
}

func (r row) String() string {
	if !r.ok {
		return fmt.Sprintf("%d|null|%d", r.k, r.ts)
	}
	return fmt.Sprintf("%d|%s|%d", r.k, r.s, r.ts)
}

type change struct {
	kind arrowflow.RowKind
	row  row
}

// changeBatch builds a batch of the changes; with junk, every other
// physical row is a junk row left out by the selection vector.
func changeBatch(mem memory.Allocator, cs []change, junk bool) arrowflow.Batch {
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	var kinds []arrowflow.RowKind
	var sel []int32
	put := func(r row, kind arrowflow.RowKind) {
		b.Field(0).(*array.Int64Builder).Append(r.k)
		if r.ok {
			b.Field(1).(*array.StringBuilder).Append(r.s)
		} else {
			b.Field(1).(*array.StringBuilder).AppendNull()
		}
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts))
		kinds = append(kinds, kind)
	}
	for _, c := range cs {
		if junk {
			put(row{k: c.row.k, s: "junk", ok: true, ts: -1}, arrowflow.Delete)
		}
		sel = append(sel, int32(len(kinds)))
		put(c.row, c.kind)
	}
	bt := arrowflow.NewChangeBatch(b.NewRecordBatch(), kinds)
	if junk {
		bt.Sel = sel
	}
	return bt
}

// scanRows reads db.events with iceberg-go's scan (which applies the
// equality deletes) and fails on a key seen twice.
func scanRows(t *testing.T, warehouse string) map[int64]row {
	t.Helper()
	ctx := context.Background()
	cat, err := iceberg.OpenCatalog(ctx, iceberg.CatalogOptions{Warehouse: warehouse})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]row{}
	if tbl.CurrentSnapshot() == nil {
		return out
	}
	_, recs, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		ks := rec.Column(0).(*array.Int64)
		ss := rec.Column(1).(*array.String)
		ts := rec.Column(2).(*array.Timestamp)
		for i := 0; i < int(rec.NumRows()); i++ {
			r := row{k: ks.Value(i), ts: int64(ts.Value(i))}
			if ss.IsValid(i) {
				r.s, r.ok = ss.Value(i), true
			}
			if old, dup := out[r.k]; dup {
				t.Fatalf("key %d twice: %v and %v", r.k, old, r)
			}
			out[r.k] = r
		}
		rec.Release()
	}
	return out
}

func diffRows(got, want map[int64]row) string {
	var d []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok {
			d = append(d, fmt.Sprintf("missing %v", want[k]))
		} else if g != want[k] {
			d = append(d, fmt.Sprintf("key %d = %v, want %v", k, g, want[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			d = append(d, fmt.Sprintf("extra %v", got[k]))
		}
	}
	if len(d) > 10 {
		d = append(d[:10], fmt.Sprintf("... %d differences", len(d)))
	}
	return strings.Join(d, "; ")
}

// upsertSink is a sink in upsert mode on k.
func upsertSink(t *testing.T, wh string, part []string) *iceberg.Sink {
	return newSink(t, wh, func(o *iceberg.Options) { o.UpsertKeys = []string{"k"}; o.PartitionBy = part })
}

func commitChanges(t *testing.T, s *iceberg.Sink, ws []arrowflow.SinkWriter, epoch uint64, per [][]change, junk bool) [][]byte {
	t.Helper()
	ctx := context.Background()
	payloads := make([][]byte, len(ws))
	for i, w := range ws {
		if len(per[i]) > 0 {
			if err := w.Write(ctx, changeBatch(memory.DefaultAllocator, per[i], junk)); err != nil {
				t.Fatal(err)
			}
		}
		p, err := w.PreCommit(ctx, epoch)
		if err != nil {
			t.Fatal(err)
		}
		payloads[i] = p
	}
	if err := s.Commit(ctx, epoch, payloads); err != nil {
		t.Fatal(err)
	}
	return payloads
}

// The cases of a changelog one by one: updates in order and out of order
// (-U after its +U), deletes of committed rows, a row added and deleted
// within an epoch, a re-insert after a delete, a delete-only epoch, and
// append-only batches (every row an upsert).
func TestUpsertAppliesRowKinds(t *testing.T) {
	ctx := context.Background()
	for name, part := range map[string][]string{"unpartitioned": nil, "bucket(k)": {"bucket(3, k)"}, "identity(k)": {"k"}} {
		t.Run(name, func(t *testing.T) {
			wh := t.TempDir()
			s := upsertSink(t, wh, part)
			ws := openWriters(t, s, "job", 1, 1)
			r := func(k int64, s string) row { return row{k: k, s: s, ok: true, ts: k} }
			I, UB, UA, D := arrowflow.Insert, arrowflow.UpdateBefore, arrowflow.UpdateAfter, arrowflow.Delete
			var e1 []change
			for k := int64(1); k <= 8; k++ {
				e1 = append(e1, change{I, r(k, "a")})
			}
			commitChanges(t, s, ws, 1, [][]change{e1}, false)
			commitChanges(t, s, ws, 2, [][]change{{
				{UB, r(1, "a")}, {UA, r(1, "b")}, // update
				{UA, r(2, "b")}, {UB, r(2, "a")}, // update, out of order
				{D, r(3, "a")},                                   // delete of a committed row
				{UB, r(4, "a")}, {UA, r(4, "b")}, {D, r(4, "b")}, // update then delete
				{I, r(9, "x")}, {D, r(9, "x")}, // added and deleted within the epoch
				{D, r(5, "a")}, {I, r(5, "c")}, // re-insert after a delete
				{UB, r(6, "a")}, {UA, r(6, "b")}, {UB, r(6, "b")}, {UA, r(6, "c")}, {UA, r(6, "d")}, {UB, r(6, "c")}, // updates, the last out of order
			}}, false)
			want := map[int64]row{1: r(1, "b"), 2: r(2, "b"), 5: r(5, "c"), 6: r(6, "d"), 7: r(7, "a"), 8: r(8, "a")}
			if d := diffRows(scanRows(t, wh), want); d != "" {
				t.Fatalf("after epoch 2: %s", d)
			}
			// A delete-only epoch, and deletes of keys never written.
			commitChanges(t, s, ws, 3, [][]change{{{D, r(7, "a")}, {D, r(100, "z")}}}, true)
			delete(want, 7)
			if d := diffRows(scanRows(t, wh), want); d != "" {
				t.Fatalf("after the delete-only epoch 3: %s", d)
			}
			// Append-only batches: each row replaces its key's row.
			if err := ws[0].Write(ctx, batch(memory.DefaultAllocator, 5, 7)); err != nil {
				t.Fatal(err)
			}
			if err := ws[0].Write(ctx, batch(memory.DefaultAllocator, 6, 8)); err != nil {
				t.Fatal(err)
			}
			p, err := ws[0].PreCommit(ctx, 4)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Commit(ctx, 4, [][]byte{p}); err != nil {
				t.Fatal(err)
			}
			for k := int64(5); k < 8; k++ {
				want[k] = row{k: k, s: fmt.Sprintf("s%d", k%5), ok: true, ts: int64(k%3) * 48 * 3600e6}
			}
			got := scanRows(t, wh)
			for k := range got { // batch's ts is relative to 2026-01-01
				if k >= 5 && k < 8 {
					r := got[k]
					r.ts -= 1767225600e6
					got[k] = r
				}
			}
			if d := diffRows(got, want); d != "" {
				t.Fatalf("after the append-only epoch 4: %s", d)
			}
		})
	}
}

// genChanges makes a valid retract changelog of n changes over keys
// [0, keys) from the state cur (updated in place): inserts of absent
// keys, updates (-U/+U, a fifth of them out of order) and deletes of
// present ones. Rows are all distinct (ts counts).
func genChanges(rng *rand.Rand, cur map[int64]row, n, keys int, seq *int64) []change {
	var out []change
	for range n {
		k := rng.Int64N(int64(keys))
		*seq++
		fresh := row{k: k, ts: *seq}
		if rng.IntN(5) > 0 {
			fresh.s, fresh.ok = fmt.Sprintf("v%d", *seq), true
		}
		old, present := cur[k]
		switch {
		case !present:
			out = append(out, change{arrowflow.Insert, fresh})
			cur[k] = fresh
		case rng.IntN(4) == 0:
			out = append(out, change{arrowflow.Delete, old})
			delete(cur, k)
		case rng.IntN(5) == 0:
			out = append(out, change{arrowflow.UpdateAfter, fresh}, change{arrowflow.UpdateBefore, old})
			cur[k] = fresh
		default:
			out = append(out, change{arrowflow.UpdateBefore, old}, change{arrowflow.UpdateAfter, fresh})
			cur[k] = fresh
		}
	}
	return out
}

// Random changelogs into 4 subtasks (each key on one, k % 4), several
// epochs, compared after every commit with a map applying the same
// changes, read back with iceberg-go's scan. Committed epochs are
// committed again (a recovery's repeated commit) and an uncommitted epoch
// is replayed by new writers after a crash: neither deletes nor inserts
// twice.
func TestUpsertChangelogMatchesReference(t *testing.T) {
	ctx := context.Background()
	for name, part := range map[string][]string{"unpartitioned": nil, "bucket(k)": {"bucket(4, k)"}} {
		t.Run(name, func(t *testing.T) {
			wh := t.TempDir()
			s := upsertSink(t, wh, part)
			const par, keys = 4, 60
			ws := openWriters(t, s, "job", par, 1)
			rng := rand.New(rand.NewPCG(7, 8))
			cur := map[int64]row{}
			var seq int64
			split := func(cs []change) [][]change {
				per := make([][]change, par)
				for _, c := range cs {
					per[c.row.k%par] = append(per[c.row.k%par], c)
				}
				return per
			}
			var prev [][]byte
			for epoch := uint64(1); epoch <= 12; epoch++ {
				per := split(genChanges(rng, cur, 80, keys, &seq))
				if epoch == 8 {
					// Crash after pre-commit, before the commit: new
					// writers replay the epoch from the checkpoint.
					stale := make([][]byte, par)
					for i, w := range ws {
						if err := w.Write(ctx, changeBatch(memory.DefaultAllocator, per[i], false)); err != nil {
							t.Fatal(err)
						}
						p, err := w.PreCommit(ctx, epoch)
						if err != nil {
							t.Fatal(err)
						}
						stale[i] = p
						w.Close()
					}
					if err := s.Recover(ctx, "job", epoch-1); err != nil {
						t.Fatal(err)
					}
					ws = openWriters(t, s, "job", par, epoch)
					commitChanges(t, s, ws, epoch, per, true)
					if err := s.Commit(ctx, epoch, stale); err != nil {
						t.Fatalf("the stale payloads of a committed epoch: %v", err)
					}
				} else {
					p := commitChanges(t, s, ws, epoch, per, epoch%3 == 0)
					if err := s.Commit(ctx, epoch, p); err != nil { // again
						t.Fatal(err)
					}
					if prev != nil {
						if err := s.Commit(ctx, epoch-1, prev); err != nil { // an older one again
							t.Fatal(err)
						}
					}
					prev = p
				}
				if d := diffRows(scanRows(t, wh), cur); d != "" {
					t.Fatalf("after epoch %d: %s", epoch, d)
				}
			}
			if got := weirSnapshots(t, s, "job"); len(got) != 12 {
				t.Fatalf("snapshots of epochs %v, want 12", got)
			}
		})
	}
}

// A table not in upsert mode refuses retractions rather than appending
// them as rows.
func TestAppendSinkRefusesRetractions(t *testing.T) {
	s := newSink(t, t.TempDir())
	w := openWriters(t, s, "job", 1, 1)[0]
	err := w.Write(context.Background(), changeBatch(memory.DefaultAllocator, []change{{arrowflow.Insert, row{k: 1}}, {arrowflow.Delete, row{k: 1}}}, false))
	if err == nil || !strings.Contains(err.Error(), "-D row") || !strings.Contains(err.Error(), "write.upsert.enabled") {
		t.Fatalf("err = %v, want a refusal naming the -D row and upsert mode", err)
	}
	// Inserts-only changelog batches append.
	if err := w.Write(context.Background(), changeBatch(memory.DefaultAllocator, []change{{arrowflow.Insert, row{k: 1}}, {arrowflow.UpdateAfter, row{k: 2}}}, false)); err != nil {
		t.Fatal(err)
	}
}

// An epoch of many changes to few keys: the buffer gathers its live rows
// and releases the spent batches as it goes (200,000 changes of 300 keys
// in batches of 500), with the same result as the reference and every
// buffer freed.
func TestUpsertLargeEpochFoldsAsItGoes(t *testing.T) {
	ctx := context.Background()
	wh := t.TempDir()
	s := upsertSink(t, wh, nil)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	w, err := s.Open(&arrowflow.TaskInfo{Job: "job", Name: "sink", Parallelism: 1, FirstEpoch: 1, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	cur := map[int64]row{}
	var seq int64
	for epoch := uint64(1); epoch <= 2; epoch++ {
		for n := 0; n < 100_000; {
			cs := genChanges(rng, cur, 300, 300, &seq)
			n += len(cs)
			if err := w.Write(ctx, changeBatch(mem, cs, n%3 == 0)); err != nil {
				t.Fatal(err)
			}
		}
		p, err := w.PreCommit(ctx, epoch)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(ctx, epoch, [][]byte{p}); err != nil {
			t.Fatal(err)
		}
		if d := diffRows(scanRows(t, wh), cur); d != "" {
			t.Fatalf("after epoch %d: %s", epoch, d)
		}
	}
	w.Close()
	mem.AssertSize(t, 0)
}

// The sink's own compaction ('flink-maintenance.rewrite.enabled'), run in
// the background every 3 commits next to 30 epochs of upserts from 2
// subtasks: the table equals the reference after every epoch, the runs
// compact without failing, and the table ends with few files.
func TestSinkMaintenanceCompactsNextToUpserts(t *testing.T) {
	ctx := context.Background()
	wh := t.TempDir()
	s := newSink(t, wh, func(o *iceberg.Options) {
		o.UpsertKeys, o.PartitionBy = []string{"k"}, nil
		o.Rewrite = iceberg.RewriteOptions{Enabled: true, CommitCount: 3, MinInputFiles: 2}
	})
	const par, keys, epochs = 2, 200, 30
	ws := openWriters(t, s, "job", par, 1)
	rng := rand.New(rand.NewPCG(3, 9))
	cur := map[int64]row{}
	var seq int64
	for epoch := uint64(1); epoch <= epochs; epoch++ {
		per := make([][]change, par)
		for _, c := range genChanges(rng, cur, 150, keys, &seq) {
			per[c.row.k%par] = append(per[c.row.k%par], c)
		}
		commitChanges(t, s, ws, epoch, per, false)
		if d := diffRows(scanRows(t, wh), cur); d != "" {
			t.Fatalf("after epoch %d (%+v): %s", epoch, s.Maintenance(), d)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for s.Maintenance().Running && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	st := s.Maintenance()
	if st.Running || st.Failed > 0 || st.Compacted < 3 || st.Runs != st.Compacted+st.Nothing+st.Failed {
		t.Fatalf("maintenance after %d epochs: %+v", epochs, st)
	}
	if d := diffRows(scanRows(t, wh), cur); d != "" {
		t.Fatalf("at the end: %s", d)
	}
	tbl := s.Table()
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Without compaction: 2 files an epoch. A run leaves 1 file and the
	// files of the commits since.
	if len(tasks) > 3*par+1 {
		t.Errorf("%d data files after %d epochs with compaction every 3 commits (%+v)", len(tasks), epochs, st)
	}
	t.Logf("%+v; %d data files at the end", st, len(tasks))
}
