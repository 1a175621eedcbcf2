package rowstore_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/state/rowstore"
)

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
}, nil)

// row is the reference's copy of a stored row.
type row struct {
	k    *int64
	s    *string
	b    bool
	hash uint64
}

func (r row) String() string {
	k, s := "null", "null"
	if r.k != nil {
		k = fmt.Sprint(*r.k)
	}
	if r.s != nil {
		s = *r.s
	}
	return fmt.Sprintf("%s|%s|%v|%x", k, s, r.b, r.hash)
}

func randomBatch(mem memory.Allocator, rng *rand.Rand, n int) (arrow.RecordBatch, []row) {
	kb := array.NewInt64Builder(mem)
	sb := array.NewStringBuilder(mem)
	bb := array.NewBooleanBuilder(mem)
	defer kb.Release()
	defer sb.Release()
	defer bb.Release()
	rows := make([]row, n)
	for i := range n {
		var r row
		if rng.IntN(7) == 0 {
			kb.AppendNull()
		} else {
			v := rng.Int64N(50)
			r.k = &v
			kb.Append(v)
		}
		if rng.IntN(5) == 0 {
			sb.AppendNull()
		} else {
			v := fmt.Sprintf("s%d", rng.IntN(1000))
			r.s = &v
			sb.Append(v)
		}
		r.b = rng.IntN(2) == 0
		bb.Append(r.b)
		rows[i] = r
	}
	cols := []arrow.Array{kb.NewArray(), sb.NewArray(), bb.NewArray()}
	rec := array.NewRecordBatch(schema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	hashes := make([]uint64, n)
	if err := kernels.HashColumns(rec.Columns()[:1], nil, hashes); err != nil {
		panic(err)
	}
	for i := range rows {
		rows[i].hash = hashes[i]
	}
	return rec, rows
}

func rowsOf(rec arrow.RecordBatch, hash func(i int) uint64) []row {
	k := rec.Column(0).(*array.Int64)
	s := rec.Column(1).(*array.String)
	b := rec.Column(2).(*array.Boolean)
	out := make([]row, rec.NumRows())
	for i := range out {
		if k.IsValid(i) {
			v := k.Value(i)
			out[i].k = &v
		}
		if s.IsValid(i) {
			v := s.Value(i)
			out[i].s = &v
		}
		out[i].b = b.Value(i)
		out[i].hash = hash(i)
	}
	return out
}

func strs(rs []row) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}

// check compares the store's live rows with the reference's, through
// Gather, Locate and Hash.
func check(t *testing.T, st *rowstore.Store, ref map[rowstore.RowID]row) {
	t.Helper()
	if st.Len() != len(ref) {
		t.Fatalf("Len %d, the reference holds %d rows", st.Len(), len(ref))
	}
	var ids []rowstore.RowID
	for id := range ref {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	// Gather in a shuffled order, to cross chunks back and forth.
	rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	rec, err := st.Gather(ids)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	got := rowsOf(rec, func(i int) uint64 { return st.Hash(ids[i]) })
	for i, id := range ids {
		if !st.Live(id) {
			t.Fatalf("row %d is not live", id)
		}
		if got[i].String() != ref[id].String() {
			t.Fatalf("row %d is %s, the reference %s", id, got[i], ref[id])
		}
		if i >= 20 {
			continue // Locate a sample: it converts a whole chunk
		}
		ch, r := st.Locate(id)
		if v := rowsOf(ch, func(int) uint64 { return ref[id].hash })[r]; v.String() != ref[id].String() {
			t.Fatalf("Locate(%d) reads %s, the reference %s", id, v, ref[id])
		}
	}
}

func TestStoreAgainstReference(t *testing.T) {
	for _, size := range []int{1, 7, 1500} {
		t.Run(fmt.Sprintf("batches of %d", size), func(t *testing.T) {
			mem := testutil.CheckedAllocator(t)
			rng := rand.New(rand.NewPCG(uint64(size), 1))
			st, err := rowstore.New(schema, mem)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Release()
			ref := map[rowstore.RowID]row{}
			for round := range 120 {
				rec, rows := randomBatch(mem, rng, size+rng.IntN(3))
				var sel []int32
				if rng.IntN(2) == 0 {
					for i := range rows {
						if rng.IntN(3) > 0 {
							sel = append(sel, int32(i))
						}
					}
				}
				var picked []row
				if sel == nil {
					picked = rows
				} else {
					for _, i := range sel {
						picked = append(picked, rows[i])
					}
				}
				hashes := make([]uint64, len(picked))
				for i, r := range picked {
					hashes[i] = r.hash
				}
				first, err := st.Append(rec, sel, hashes)
				rec.Release()
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range picked {
					ref[first+rowstore.RowID(i)] = r
				}
				for id := range ref {
					if rng.IntN(4) == 0 {
						st.Delete(id)
						delete(ref, id)
					}
				}
				if round%17 == 16 {
					remap, err := st.Compact()
					if err != nil {
						t.Fatal(err)
					}
					if remap != nil {
						next := map[rowstore.RowID]row{}
						for id, r := range ref {
							if remap[id] < 0 {
								t.Fatalf("live row %d dropped by Compact", id)
							}
							next[remap[id]] = r
						}
						ref = next
					}
					if st.Garbage() != 0 {
						t.Fatalf("%d deleted rows after Compact", st.Garbage())
					}
				}
				check(t, st, ref)
			}
		})
	}
}

// TestSnapshotRestoresByKeyGroup snapshots one store and restores it into
// stores owning parts of the key groups: together they hold every live
// row once, each only rows of its own key groups.
func TestSnapshotRestoresByKeyGroup(t *testing.T) {
	const maxPar = 128
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(7, 7))
	st, err := rowstore.New(schema, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Release()
	var live []row
	for range 40 {
		rec, rows := randomBatch(mem, rng, 1+rng.IntN(40))
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
			if rng.IntN(3) == 0 {
				st.Delete(first + rowstore.RowID(i))
			} else {
				live = append(live, rows[i])
			}
		}
	}
	ms := state.NewMemoryStore()
	w, err := ms.Create(state.SnapshotID{Job: "j", Epoch: 1, Operator: "op"}, state.KeyGroupRange{Start: 0, End: maxPar})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Snapshot(w, "rows", maxPar); err != nil {
		t.Fatal(err)
	}
	h, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	for _, par := range []int{1, 3, 4} {
		var got []row
		for sub := range par {
			kgs := state.RangeOf(sub, maxPar, par)
			r, err := ms.Open(h, mem)
			if err != nil {
				t.Fatal(err)
			}
			into, err := rowstore.New(schema, mem)
			if err != nil {
				t.Fatal(err)
			}
			err = into.Restore(r, "rows", kgs, func(first rowstore.RowID, rec arrow.RecordBatch) error {
				for i, x := range rowsOf(rec, func(i int) uint64 { return into.Hash(first + rowstore.RowID(i)) }) {
					if !kgs.Contains(kernels.KeyGroupOf(x.hash, maxPar)) {
						return fmt.Errorf("row %s of key group %d restored into %s", x, kernels.KeyGroupOf(x.hash, maxPar), kgs)
					}
					got = append(got, x)
					_ = i
				}
				return nil
			})
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			into.Release()
		}
		want := strs(live)
		have := strs(got)
		slices.Sort(want)
		slices.Sort(have)
		if !slices.Equal(want, have) {
			t.Fatalf("parallelism %d: restored %d rows, %d were live", par, len(have), len(want))
		}
	}
}

func TestNestedColumnsAreRefused(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, nil)
	if _, err := rowstore.New(s, nil); err == nil {
		t.Fatal("a list column was accepted")
	}
}
