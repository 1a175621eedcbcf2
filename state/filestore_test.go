package state

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/weirflow/weir/internal/testutil"
)

// newTestFileStore returns a FileStore in a temporary folder whose writers
// allocate from mem, with small blocks (so that tests see merged and split
// key groups) unless sizes says otherwise.
func newTestFileStore(t *testing.T, mem memory.Allocator, sizes ...int) *FileStore {
	t.Helper()
	s, err := NewFileStore(t.TempDir(), WithWriteAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	s.minBlockRows, s.maxBlockRows = 40, 150
	if len(sizes) == 2 {
		s.minBlockRows, s.maxBlockRows = sizes[0], sizes[1]
	}
	return s
}

// writeSnapshot writes ws through store and returns the handle.
func writeSnapshot(t testing.TB, store Store, id SnapshotID, r KeyGroupRange, ws []write) Handle {
	t.Helper()
	w, err := store.Create(id, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ws {
		if err := w.Write(x.table, x.rec); err != nil {
			w.Abort()
			t.Fatal(err)
		}
	}
	h, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// filesIn lists the files (not folders) under dir, relative to it.
func filesIn(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFileStoreRoundTripMatchesInputAndMemoryStore(t *testing.T) {
	t.Parallel()
	mem := testutil.CheckedAllocator(t)
	store := newTestFileStore(t, mem)
	r := RangeOf(2, 128, 4)
	ws := genWrites(t, mem, rand.New(rand.NewPCG(10, 10)), r, 50)
	// A table whose only batch is empty exists, with no rows.
	empty := genBatch(mem, rand.New(rand.NewPCG(1, 0)), groupsSchema, 0, r, kgUniform)
	t.Cleanup(empty.Release)
	ws = append(ws, write{"nothing", empty})

	h := writeSnapshot(t, store, testID, r, ws)
	if h.ID != "job/7/count-2.snap" || h.KeyGroups != r {
		t.Fatalf("handle %+v", h)
	}
	st, err := os.Stat(filepath.Join(store.dir, "job", "7", "count-2.snap"))
	if err != nil || st.Size() != h.Bytes {
		t.Fatalf("file: %v, size %v, handle says %d", err, st, h.Bytes)
	}
	if got := filesIn(t, store.dir); !slices.Equal(got, []string{"job/7/count-2.snap"}) {
		t.Fatalf("files %v", got)
	}

	ms := NewMemoryStore()
	mh := writeSnapshot(t, ms, testID, r, ws)
	for _, open := range []func() (SnapshotReader, error){
		func() (SnapshotReader, error) { return store.Open(h, mem) },
		func() (SnapshotReader, error) { return store.OpenKeyGroups(h, KeyGroupRange{0, 128}, mem) },
		func() (SnapshotReader, error) { return OpenKeyGroups(store, h, r, mem) },
	} {
		rd, err := open()
		if err != nil {
			t.Fatal(err)
		}
		mrd, err := ms.Open(mh, mem)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := rd.Tables(), mrd.Tables(); !slices.Equal(got, want) || !slices.Equal(got, []string{"groups", "lists", "meta", "nothing"}) {
			t.Fatalf("tables %v, memory store %v", got, want)
		}
		for _, table := range rd.Tables() {
			got := readRows(t, rd, table)
			sameRows(t, table, got, expectRows(ws, table, r))
			sameRows(t, table+" (as a set, against the memory store)", sortedRows(got), sortedRows(readRows(t, mrd, table)))
		}
		if err := rd.Close(); err != nil {
			t.Fatal(err)
		}
		mrd.Close()
	}
}

// randomPartition splits [0, n) into k contiguous ranges at random points.
func randomPartition(rng *rand.Rand, n, k int) []KeyGroupRange {
	cuts := []int{0, n}
	for i := 1; i < k; i++ {
		cuts = append(cuts, rng.IntN(n+1))
	}
	slices.Sort(cuts)
	var out []KeyGroupRange
	for i := 1; i < len(cuts); i++ {
		out = append(out, KeyGroupRange{cuts[i-1], cuts[i]})
	}
	return out
}

func TestKeyGroupReadsPartitionTheRows(t *testing.T) {
	t.Parallel()
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(11, 11))
	all := KeyGroupRange{0, 128}
	ws := genWrites(t, mem, rng, all, 30)
	fstore := newTestFileStore(t, mem)
	mstore := NewMemoryStore()
	fh := writeSnapshot(t, fstore, testID, all, ws)
	mh := writeSnapshot(t, mstore, testID, all, ws)

	partitions := [][]KeyGroupRange{{all}, randomPartition(rng, 128, 2)}
	var singles []KeyGroupRange
	for kg := 0; kg < 128; kg++ {
		singles = append(singles, KeyGroupRange{kg, kg + 1})
	}
	partitions = append(partitions, singles)
	for range 4 {
		partitions = append(partitions, randomPartition(rng, 128, 1+rng.IntN(12)))
	}
	keyed := []string{"groups", "lists"}
	// readRange reads every table of one store's snapshot for range r.
	readRange := func(open func() (SnapshotReader, error)) map[string][]testRow {
		rd, err := open()
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		got := map[string][]testRow{}
		for _, table := range rd.Tables() {
			got[table] = readRows(t, rd, table)
		}
		return got
	}
	input := map[string][]testRow{}
	for _, table := range []string{"groups", "lists", "meta"} {
		input[table] = expectRows(ws, table, all)
	}
	for _, part := range partitions {
		union, munion := map[string][]testRow{}, map[string][]testRow{}
		for _, r := range part {
			got := readRange(func() (SnapshotReader, error) { return fstore.OpenKeyGroups(fh, r, mem) })
			mgot := readRange(func() (SnapshotReader, error) { return OpenKeyGroups(mstore, mh, r, mem) })
			for _, table := range []string{"groups", "lists", "meta"} {
				sameRows(t, fmt.Sprintf("table %q key groups %s", table, r), got[table], filterRows(input[table], r))
				sameRows(t, fmt.Sprintf("table %q key groups %s, memory store", table, r), sortedRows(mgot[table]), sortedRows(got[table]))
			}
			for _, table := range keyed {
				union[table] = append(union[table], got[table]...)
				munion[table] = append(munion[table], mgot[table]...)
			}
		}
		for _, table := range keyed {
			want := sortedRows(input[table])
			sameRows(t, fmt.Sprintf("table %q, union over %v", table, part), sortedRows(union[table]), want)
			sameRows(t, fmt.Sprintf("table %q, union over %v, memory store", table, part), sortedRows(munion[table]), want)
		}
	}
}

// openOnly hides a store's KeyGroupOpener, so OpenKeyGroups filters.
type openOnly struct{ Store }

func TestRescaleReadsEveryRowOnce(t *testing.T) {
	t.Parallel()
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(12, 12))
	for _, store := range []Store{newTestFileStore(t, mem), NewMemoryStore(), openOnly{NewMemoryStore()}} {
		t.Run(fmt.Sprintf("%T", store), func(t *testing.T) {
			const oldPar = 3
			var handles []Handle
			var input [][]write
			for s := range oldPar {
				ws := genWrites(t, mem, rng, RangeOf(s, 128, oldPar), 20)
				input = append(input, ws)
				handles = append(handles, writeSnapshot(t, store, SnapshotID{Job: "j", Epoch: 4, Operator: "agg", Subtask: s}, RangeOf(s, 128, oldPar), ws))
			}
			for _, newPar := range []int{1, 2, 4} {
				got := map[string][]testRow{}
				for s := range newPar {
					mine := RangeOf(s, 128, newPar)
					var readers []SnapshotReader
					var wantMeta []testRow
					for old, h := range handles {
						if !h.KeyGroups.Overlaps(mine) {
							continue
						}
						rd, err := OpenKeyGroups(store, h, mine, mem)
						if err != nil {
							t.Fatal(err)
						}
						readers = append(readers, rd)
						wantMeta = append(wantMeta, expectRows(input[old], "meta", mine)...)
					}
					rd := MultiReader(readers...)
					for _, table := range []string{"groups", "lists"} {
						rows := readRows(t, rd, table)
						for _, row := range rows {
							if !mine.Contains(row.kg) {
								t.Fatalf("parallelism %d subtask %d %s: got a row of key group %d", newPar, s, mine, row.kg)
							}
						}
						got[table] = append(got[table], rows...)
					}
					sameRows(t, fmt.Sprintf("parallelism %d subtask %d: unkeyed table", newPar, s), sortedRows(readRows(t, rd, "meta")), sortedRows(wantMeta))
					if err := rd.Close(); err != nil {
						t.Fatal(err)
					}
				}
				for _, table := range []string{"groups", "lists"} {
					var want []testRow
					for _, ws := range input {
						want = append(want, expectRows(ws, table, KeyGroupRange{0, 128})...)
					}
					sameRows(t, fmt.Sprintf("parallelism 3 -> %d: table %q", newPar, table), sortedRows(got[table]), sortedRows(want))
				}
			}
		})
	}
}

func TestFileStoreEmptySnapshot(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	store := newTestFileStore(t, mem)
	w, err := store.Create(testID, KeyGroupRange{0, 128})
	if err != nil {
		t.Fatal(err)
	}
	h, err := w.Finish()
	if err != nil || !h.IsZero() {
		t.Fatalf("empty snapshot: handle %+v, error %v", h, err)
	}
	if files := filesIn(t, store.dir); len(files) != 0 {
		t.Fatalf("an empty snapshot left files %v", files)
	}
	if _, err := store.Open(h, mem); err == nil {
		t.Fatal("opening a zero handle succeeded")
	}
	if _, err := w.Finish(); err == nil {
		t.Fatal("a second Finish succeeded")
	}
}

func TestFileStoreAbortRemovesTemporaryFile(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	store := newTestFileStore(t, mem)
	r := KeyGroupRange{0, 16}
	ws := genWrites(t, mem, rand.New(rand.NewPCG(13, 13)), r, 10)

	w, err := store.Create(testID, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ws {
		if err := w.Write(x.table, x.rec); err != nil {
			t.Fatal(err)
		}
	}
	if files := filesIn(t, store.dir); len(files) != 1 || !strings.HasPrefix(files[0], "job/7/count-2.snap.tmp-") {
		t.Fatalf("while writing: files %v, want one temporary file", files)
	}
	w.Abort()
	if files := filesIn(t, store.dir); len(files) != 0 {
		t.Fatalf("Abort left files %v", files)
	}
	if err := w.Write("groups", ws[0].rec); err == nil {
		t.Fatal("Write after Abort succeeded")
	}
	if _, err := w.Finish(); err == nil {
		t.Fatal("Finish after Abort succeeded")
	}

	// A write rejected halfway (a key group outside the subtask's), then
	// Abort, as arrowflow does when SnapshotState fails.
	w, _ = store.Create(testID, KeyGroupRange{0, 8})
	if err := w.Write(ws[2].table, ws[2].rec); err != nil { // "meta", unkeyed
		t.Fatal(err)
	}
	bad := genBatch(mem, rand.New(rand.NewPCG(1, 2)), groupsSchema, 10, KeyGroupRange{8, 9}, kgUniform)
	defer bad.Release()
	err = w.Write("groups", bad)
	if err == nil || !strings.Contains(err.Error(), "outside the subtask's key groups [0, 8)") {
		t.Fatalf("writing key group 8 into [0, 8): %v", err)
	}
	w.Abort()
	if files := filesIn(t, store.dir); len(files) != 0 {
		t.Fatalf("Abort left files %v", files)
	}
}

func TestFileStoreRejectsBadTables(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	store := newTestFileStore(t, mem)
	rec := func(fields []arrow.Field, fill func(b *array.RecordBuilder)) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
		defer b.Release()
		fill(b)
		r := b.NewRecordBatch()
		t.Cleanup(r.Release)
		return r
	}
	wrongType := rec([]arrow.Field{{Name: KeyGroupColumn, Type: arrow.PrimitiveTypes.Int32}}, func(b *array.RecordBuilder) {
		b.Field(0).(*array.Int32Builder).Append(1)
	})
	withNull := rec([]arrow.Field{{Name: KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16, Nullable: true}}, func(b *array.RecordBuilder) {
		b.Field(0).(*array.Uint16Builder).AppendNull()
	})
	ok := rec([]arrow.Field{{Name: KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16}}, func(b *array.RecordBuilder) {
		b.Field(0).(*array.Uint16Builder).Append(3)
	})
	other := rec([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, func(b *array.RecordBuilder) {
		b.Field(0).(*array.Int64Builder).Append(3)
	})
	for _, c := range []struct {
		name  string
		recs  []arrow.RecordBatch
		error string
	}{
		{"key-group column of the wrong type", []arrow.RecordBatch{wrongType}, `key-group column "_key_group" is int32, must be uint16`},
		{"null key group", []arrow.RecordBatch{withNull}, "has 1 nulls"},
		{"schema change within a table", []arrow.RecordBatch{ok, other}, "differs from the table's"},
	} {
		w, err := store.Create(testID, KeyGroupRange{0, 8})
		if err != nil {
			t.Fatal(err)
		}
		var werr error
		for _, r := range c.recs {
			if werr = w.Write("t", r); werr != nil {
				break
			}
		}
		if werr == nil || !strings.Contains(werr.Error(), c.error) || !strings.Contains(werr.Error(), `table "t"`) {
			t.Errorf("%s: error %v, want one saying %q", c.name, werr, c.error)
		}
		w.Abort()
	}
	if _, err := store.Create(testID, KeyGroupRange{0, 1 << 17}); err == nil {
		t.Error("Create accepted more key groups than a uint16 column can name")
	}
}

func TestFileStoreNeverOverwrites(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	store := newTestFileStore(t, mem)
	r := KeyGroupRange{0, 16}
	ws := genWrites(t, mem, rand.New(rand.NewPCG(14, 14)), r, 6)
	h := writeSnapshot(t, store, testID, r, ws)
	path := filepath.Join(store.dir, filepath.FromSlash(h.ID))
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	// A second writer of the same snapshot fails at its first Write ...
	w, _ := store.Create(testID, r)
	if err := w.Write(ws[0].table, ws[0].rec); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("writing an existing snapshot: %v", err)
	}
	w.Abort()

	// ... and two writers racing for a new one: the first Finish wins.
	id := testID
	id.Epoch++
	w1, _ := store.Create(id, r)
	w2, _ := store.Create(id, r)
	for _, w := range []SnapshotWriter{w1, w2} {
		if err := w.Write(ws[0].table, ws[0].rec); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w1.Finish(); err != nil {
		t.Fatal(err)
	}
	if _, err := w2.Finish(); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("the second Finish of one snapshot: %v", err)
	}
	after, err := os.ReadFile(path)
	if err != nil || string(after) != string(before) {
		t.Fatalf("the first snapshot changed (%v)", err)
	}
	if files := filesIn(t, store.dir); !slices.Equal(files, []string{"job/7/count-2.snap", "job/8/count-2.snap"}) {
		t.Fatalf("files %v", files)
	}
}

func TestFileStoreConcurrentWriters(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	mem := testutil.CheckedAllocator(t)
	store := newTestFileStore(t, mem)
	const par = 8
	inputs := make([][]write, par)
	for s := range par {
		inputs[s] = genWrites(t, mem, rand.New(rand.NewPCG(15, uint64(s))), RangeOf(s, 128, par), 8)
	}
	for epoch := uint64(1); epoch <= 3; epoch++ {
		handles := make([]Handle, par)
		errs := make([]error, par)
		var wg sync.WaitGroup
		for s := range par {
			wg.Go(func() {
				w, err := store.Create(SnapshotID{Job: "j", Epoch: epoch, Operator: "agg", Subtask: s}, RangeOf(s, 128, par))
				if err != nil {
					errs[s] = err
					return
				}
				for _, x := range inputs[s] {
					if err := w.Write(x.table, x.rec); err != nil {
						w.Abort()
						errs[s] = err
						return
					}
				}
				handles[s], errs[s] = w.Finish()
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		for s, h := range handles {
			rd, err := store.Open(h, mem)
			if err != nil {
				t.Fatal(err)
			}
			for _, table := range rd.Tables() {
				sameRows(t, fmt.Sprintf("epoch %d subtask %d table %q", epoch, s, table), readRows(t, rd, table), expectRows(inputs[s], table, KeyGroupRange{0, 128}))
			}
			rd.Close()
		}
	}
	if files := filesIn(t, store.dir); len(files) != 3*par {
		t.Fatalf("%d files, want %d: %v", len(files), 3*par, files)
	}
}

func TestFileStoreEscapesNames(t *testing.T) {
	names := []string{"", ".", "..", "a", "A", "a/b", "a\\b", "a b", "%", "%25", ".hidden", "a.b", "x-1", "é", "a\x00"}
	seen := map[string]string{}
	for _, n := range names {
		e := escapeName(n)
		if prev, dup := seen[e]; dup {
			t.Errorf("%q and %q both escape to %q", prev, n, e)
		}
		seen[e] = n
		if e == "." || e == ".." || strings.ContainsAny(e, "/\\\x00 ") || strings.HasPrefix(e, ".") {
			t.Errorf("%q escapes to unsafe %q", n, e)
		}
	}

	mem := testutil.CheckedAllocator(t)
	store := newTestFileStore(t, mem)
	ws := genWrites(t, mem, rand.New(rand.NewPCG(16, 16)), KeyGroupRange{0, 4}, 3)
	handles := map[string]Handle{}
	for _, job := range []string{"", "../..", "a/b"} {
		for _, op := range []string{"..", "count-1", "count"} {
			id := SnapshotID{Job: job, Epoch: 1, Operator: op, Subtask: 1}
			h := writeSnapshot(t, store, id, KeyGroupRange{0, 4}, ws)
			if !filepath.IsLocal(filepath.FromSlash(h.ID)) || strings.Count(h.ID, "/") != 2 {
				t.Errorf("%v: handle ID %q", id, h.ID)
			}
			handles[h.ID] = h
		}
	}
	if len(handles) != 9 || len(filesIn(t, store.dir)) != 9 {
		t.Fatalf("%d handles, files %v", len(handles), filesIn(t, store.dir))
	}
	for _, h := range handles {
		rd, err := store.Open(h, mem)
		if err != nil {
			t.Fatal(err)
		}
		sameRows(t, h.ID, readRows(t, rd, ws[0].table), expectRows(ws, ws[0].table, KeyGroupRange{0, 4}))
		rd.Close()
	}
}

func TestFileStoreOpenChecksTheHandleAndTheFile(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	store := newTestFileStore(t, mem)
	r := KeyGroupRange{0, 128}
	ws := genWrites(t, mem, rand.New(rand.NewPCG(17, 17)), r, 20)
	h := writeSnapshot(t, store, testID, r, ws)
	path := filepath.Join(store.dir, filepath.FromSlash(h.ID))

	for _, bad := range []Handle{
		{ID: "../outside.snap", Bytes: h.Bytes, KeyGroups: r},
		{ID: "/etc/passwd", Bytes: h.Bytes, KeyGroups: r},
		{ID: "job/7/missing.snap", Bytes: h.Bytes, KeyGroups: r},
		{ID: h.ID, Bytes: h.Bytes, KeyGroups: KeyGroupRange{0, 64}},
		{ID: h.ID, Bytes: h.Bytes + 1, KeyGroups: r},
	} {
		if rd, err := store.Open(bad, mem); err == nil {
			rd.Close()
			t.Errorf("opened bad handle %+v", bad)
		}
	}

	// A damaged block on disk: the error names the file, table and block.
	rd, err := store.Open(h, mem)
	if err != nil {
		t.Fatal(err)
	}
	b := rd.(*snapReader).footer.tables[0].blocks[2]
	rd.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, flip(data, b.offset+b.length/2), 0o644); err != nil {
		t.Fatal(err)
	}
	rd, err = store.Open(h, mem)
	if err != nil {
		t.Fatal(err)
	}
	err = rd.Read("groups", func(arrow.RecordBatch) error { return nil })
	rd.Close()
	want := fmt.Sprintf(`snapshot %s: block 2 of table "groups": checksum mismatch (stored %08x, computed `, path, b.crc)
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("reading a damaged block: %v\nwant an error containing %q", err, want)
	}

	// A truncated file.
	if err := os.WriteFile(path, data[:len(data)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Open(h, mem); err == nil || !errors.Is(err, ErrCorruptSnapshot) || !strings.Contains(err.Error(), path) {
		t.Fatalf("opening a truncated file: %v", err)
	}
}
