package state

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func int64Record(mem memory.Allocator, name string, vals ...int64) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{{Name: name, Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(vals, nil)
	return b.NewRecordBatch()
}

func readAll(t *testing.T, r SnapshotReader, table string) []int64 {
	t.Helper()
	var out []int64
	if err := r.Read(table, func(rec arrow.RecordBatch) error {
		out = append(out, rec.Column(0).(*array.Int64).Int64Values()...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMemoryStoreRoundTripAndMultiReader(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	store := NewMemoryStore()

	write := func(sub int, tables map[string][]int64, order []string) Handle {
		w, err := store.Create(SnapshotID{Job: "j", Epoch: 3, Operator: "op", Subtask: sub}, RangeOf(sub, 128, 2))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range order {
			rec := int64Record(mem, "v", tables[name]...)
			if err := w.Write(name, rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
		h, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	h0 := write(0, map[string][]int64{"a": {1, 2}, "b": {3}}, []string{"a", "b"})
	h1 := write(1, map[string][]int64{"b": {4, 5}}, []string{"b"})
	if h0.IsZero() || h0.Bytes == 0 || h0.KeyGroups != RangeOf(0, 128, 2) {
		t.Fatalf("bad handle %+v", h0)
	}
	empty, err := store.Create(SnapshotID{Job: "j", Epoch: 3, Operator: "op", Subtask: 2}, KeyGroupRange{})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := empty.Finish(); err != nil || !h.IsZero() {
		t.Fatalf("empty snapshot: handle %+v, err %v", h, err)
	}

	r0, err := store.Open(h0, mem)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := store.Open(h1, mem)
	if err != nil {
		t.Fatal(err)
	}
	m := MultiReader(r0, r1)
	defer m.Close()
	if got := m.Tables(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("tables %v", got)
	}
	if got := readAll(t, m, "b"); len(got) != 3 || got[0] != 3 || got[1] != 4 || got[2] != 5 {
		t.Fatalf("table b = %v, want [3 4 5]", got)
	}
	if got := readAll(t, m, "a"); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("table a = %v", got)
	}
	if _, err := store.Open(Handle{ID: "nope"}, mem); err == nil {
		t.Fatal("opening an unknown handle succeeded")
	}
}

func TestMemoryStoreRejectsSchemaChangeWithinTable(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	w, _ := NewMemoryStore().Create(SnapshotID{Job: "j", Operator: "o"}, KeyGroupRange{0, 128})
	a := int64Record(mem, "a", 1)
	defer a.Release()
	b := int64Record(mem, "b", 1)
	defer b.Release()
	if err := w.Write("t", a); err != nil {
		t.Fatal(err)
	}
	if err := w.Write("t", b); err == nil {
		t.Fatal("writing a second schema into one table succeeded")
	}
	w.Abort()
}
