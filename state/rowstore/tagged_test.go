package rowstore_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/state/rowstore"
)

// TestTaggedSnapshotRestoresByKeyGroupAndTag writes several stores (one
// per "pane", tagged with it, some rows per-row tagged) to one table and
// restores it at other parallelisms, one store per tag: every live row
// comes back once, in the store of its tag, only in the subtask of its key
// group.
func TestTaggedSnapshotRestoresByKeyGroupAndTag(t *testing.T) {
	const maxPar = 128
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(11, 3))
	var live []string
	ms := state.NewMemoryStore()
	w, err := ms.Create(state.SnapshotID{Job: "j", Epoch: 1, Operator: "op"}, state.KeyGroupRange{Start: 0, End: maxPar})
	if err != nil {
		t.Fatal(err)
	}
	for pane := range int64(5) {
		st, err := rowstore.New(schema, mem)
		if err != nil {
			t.Fatal(err)
		}
		perRow := pane == 4 // the last store tags each row by its id's parity
		tagOf := func(id rowstore.RowID) int64 {
			if perRow {
				return 100 + int64(id%2)
			}
			return pane * 1000
		}
		for range 1 + rng.IntN(40) {
			rec, rows := randomBatch(mem, rng, 1+rng.IntN(30))
			hashes := make([]uint64, len(rows))
			for i, r := range rows {
				hashes[i] = r.hash
			}
			first, err := st.Append(rec, nil, hashes)
			rec.Release()
			if err != nil {
				t.Fatal(err)
			}
			for i := range rows {
				id := first + rowstore.RowID(i)
				if rng.IntN(3) == 0 {
					st.Delete(id)
				} else {
					live = append(live, fmt.Sprintf("%s@%d", rows[i], tagOf(id)))
				}
			}
		}
		if st.NumChunks() == 0 || len(st.Hashes()) != st.IDs() {
			t.Fatalf("store of pane %d: %d chunks, %d hashes for %d ids", pane, st.NumChunks(), len(st.Hashes()), st.IDs())
		}
		for c := range st.NumChunks() {
			rec, first := st.Chunk(c)
			if st.ChunkOf(first) != c || st.ChunkOf(first+rowstore.RowID(rec.NumRows())-1) != c {
				t.Fatalf("ChunkOf disagrees with Chunk(%d)", c)
			}
		}
		if err := st.SnapshotTagged(w, "rows", maxPar, tagOf); err != nil {
			t.Fatal(err)
		}
		st.Release()
	}
	h, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	for _, par := range []int{1, 2, 4} {
		var got []string
		for sub := range par {
			kgs := state.RangeOf(sub, maxPar, par)
			r, err := ms.Open(h, mem)
			if err != nil {
				t.Fatal(err)
			}
			stores := map[int64]*rowstore.Store{}
			into := func(tag int64) (*rowstore.Store, error) {
				if stores[tag] == nil {
					s, err := rowstore.New(schema, mem)
					if err != nil {
						return nil, err
					}
					stores[tag] = s
				}
				return stores[tag], nil
			}
			err = rowstore.RestoreTagged(r, "rows", schema, kgs, into, func(tag int64, s *rowstore.Store, first rowstore.RowID, rec arrow.RecordBatch) error {
				if s != stores[tag] {
					return fmt.Errorf("rows of tag %d appended to another store", tag)
				}
				for _, x := range rowsOf(rec, func(i int) uint64 { return s.Hash(first + rowstore.RowID(i)) }) {
					if !kgs.Contains(kernels.KeyGroupOf(x.hash, maxPar)) {
						return fmt.Errorf("row %s of key group %d restored into %s", x, kernels.KeyGroupOf(x.hash, maxPar), kgs)
					}
					got = append(got, fmt.Sprintf("%s@%d", x, tag))
				}
				return nil
			})
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			for tag, s := range stores {
				// The stores hold the rows fn saw, readable by id.
				ids := make([]rowstore.RowID, s.IDs())
				for i := range ids {
					ids[i] = rowstore.RowID(i)
				}
				rec, err := s.Gather(ids)
				if err != nil {
					t.Fatal(err)
				}
				if int(rec.NumRows()) != s.Len() {
					t.Fatalf("store of tag %d: gathered %d rows, Len %d", tag, rec.NumRows(), s.Len())
				}
				rec.Release()
				s.Release()
			}
		}
		want := slices.Sorted(slices.Values(live))
		slices.Sort(got)
		if !slices.Equal(want, got) {
			t.Fatalf("parallelism %d: restored %d rows, %d were live", par, len(got), len(want))
		}
	}
}

// TestRestoreTaggedRefusesOtherLayouts: a table of the untagged layout (or
// of other columns) fails with a *SchemaError that tells the two apart.
func TestRestoreTaggedRefusesOtherLayouts(t *testing.T) {
	const maxPar = 16
	mem := testutil.CheckedAllocator(t)
	st, err := rowstore.New(schema, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Release()
	rng := rand.New(rand.NewPCG(1, 2))
	rec, rows := randomBatch(mem, rng, 10)
	hashes := make([]uint64, len(rows))
	for i, r := range rows {
		hashes[i] = r.hash
	}
	if _, err := st.Append(rec, nil, hashes); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	ms := state.NewMemoryStore()
	w, err := ms.Create(state.SnapshotID{Job: "j", Epoch: 1, Operator: "op"}, state.KeyGroupRange{Start: 0, End: maxPar})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Snapshot(w, "untagged", maxPar); err != nil {
		t.Fatal(err)
	}
	if err := st.SnapshotTagged(w, "tagged", maxPar, nil); err != nil {
		t.Fatal(err)
	}
	h, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	r, err := ms.Open(h, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	all := state.KeyGroupRange{Start: 0, End: maxPar}
	into := func(int64) (*rowstore.Store, error) { return nil, errors.New("nothing may be restored") }
	var se *rowstore.SchemaError
	err = rowstore.RestoreTagged(r, "untagged", schema, all, into, nil)
	if !errors.As(err, &se) || se.Tagged() || se.Table != "untagged" {
		t.Fatalf("untagged table: got %v", err)
	}
	other := arrow.NewSchema(schema.Fields()[:2], nil)
	err = rowstore.RestoreTagged(r, "tagged", other, all, into, nil)
	if !errors.As(err, &se) || !se.Tagged() {
		t.Fatalf("tagged table of other columns: got %v", err)
	}
	// Tag nil writes 0 for every row.
	dst, err := rowstore.New(schema, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Release()
	err = rowstore.RestoreTagged(r, "tagged", schema, all, func(tag int64) (*rowstore.Store, error) {
		if tag != 0 {
			return nil, fmt.Errorf("tag %d, want 0", tag)
		}
		return dst, nil
	}, nil)
	if err != nil || dst.Len() != 10 {
		t.Fatalf("restored %d rows: %v", dst.Len(), err)
	}
	if err := rowstore.RestoreTagged(r, "missing", schema, all, into, nil); err != nil {
		t.Fatalf("a missing table: %v", err)
	}
}

// TestAppendSharedAndCompactChunks: stores fed with AppendShared (large
// batches kept by reference, small ones copied) and compacted with
// CompactChunks hold the reference's rows, and the input batches stay
// intact and are released with the store.
func TestAppendSharedAndCompactChunks(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(5, 8))
	st, err := rowstore.New(schema, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Release()
	ref := map[rowstore.RowID]row{}
	for round := range 60 {
		n := 1 + rng.IntN(20)
		if rng.IntN(3) == 0 {
			n = 1024 + rng.IntN(600)
		}
		rec, rows := randomBatch(mem, rng, n)
		hashes := make([]uint64, len(rows))
		for i, r := range rows {
			hashes[i] = r.hash
		}
		chunks := st.NumChunks()
		first, err := st.AppendShared(rec, hashes)
		if err != nil {
			t.Fatal(err)
		}
		if n >= 1024 {
			if got, _ := st.Chunk(st.NumChunks() - 1); st.NumChunks() != chunks+1 || got != rec {
				t.Fatalf("a batch of %d rows was not kept by reference", n)
			}
		}
		rec.Release()
		for i, r := range rows {
			ref[first+rowstore.RowID(i)] = r
		}
		// Rows die about in order, like expiry by time, with some
		// stragglers.
		for id := range ref {
			if int(id) < st.IDs()/2 && rng.IntN(3) > 0 || rng.IntN(40) == 0 {
				st.Delete(id)
				delete(ref, id)
			}
		}
		if round%5 == 4 {
			remap, err := st.CompactChunks()
			if err != nil {
				t.Fatal(err)
			}
			if remap != nil {
				next := map[rowstore.RowID]row{}
				for id, r := range ref {
					if remap[id] < 0 {
						t.Fatalf("live row %d dropped by CompactChunks", id)
					}
					next[remap[id]] = r
				}
				ref = next
			}
			if st.Garbage() != 0 || st.IDs() != len(ref) {
				t.Fatalf("after CompactChunks: %d deleted rows, %d ids for %d rows", st.Garbage(), st.IDs(), len(ref))
			}
			if again, err := st.CompactChunks(); err != nil || again != nil {
				t.Fatalf("compacting a compact store: %v, %v", again, err)
			}

		}
		check(t, st, ref)
	}

	// A dead prefix, as expiry by time leaves: the first chunk is
	// dropped, the second (half live, in one run) becomes a slice of
	// itself, the third is kept as it is.
	st.Reset()
	ref = map[rowstore.RowID]row{}
	for range 3 {
		rec, rows := randomBatch(mem, rng, 2000)
		hashes := make([]uint64, len(rows))
		for i, r := range rows {
			hashes[i] = r.hash
		}
		first, err := st.AppendShared(rec, hashes)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rows {
			ref[first+rowstore.RowID(i)] = r
		}
	}
	for id := range rowstore.RowID(3000) {
		st.Delete(id)
		delete(ref, id)
	}
	remap, err := st.CompactChunks()
	if err != nil {
		t.Fatal(err)
	}
	next := map[rowstore.RowID]row{}
	for id, r := range ref {
		next[remap[id]] = r
	}
	check(t, st, next)
	if st.NumChunks() != 2 {
		t.Fatalf("%d chunks after dropping a dead prefix of 3000 of 6000 rows, want 2", st.NumChunks())
	}
	if rec, first := st.Chunk(0); first != 0 || rec.NumRows() != 1000 || rec.Column(0).Data().Offset() != 1000 {
		t.Fatalf("the half-live chunk is not a slice of itself: %d rows from id %d, offset %d", rec.NumRows(), first, rec.Column(0).Data().Offset())
	}
}
