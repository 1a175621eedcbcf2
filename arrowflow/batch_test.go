package arrowflow_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/weirflow/weir/arrowflow"
)

// int64RecordRow is the oracle of int64Record's row i (keys key values).
func int64RecordRow(i, keys int) []any {
	return []any{int64(i), int64(i % keys), float64(i) / 2}
}

func TestBatchRowsWithAndWithoutSelection(t *testing.T) {
	mem := checkedAlloc(t)
	const n, keys = 10, 3
	rec := int64Record(mem, n, keys)
	defer rec.Release()

	var zero arrowflow.Batch
	if !zero.IsZero() || zero.NumRows() != 0 || zero.Validate() != nil {
		t.Fatalf("zero batch: IsZero %v, NumRows %d, Validate %v", zero.IsZero(), zero.NumRows(), zero.Validate())
	}
	zero.Release() // releasing nothing is allowed

	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	for _, c := range []struct {
		sel  []int32
		want []int // physical rows
	}{
		{nil, all},
		{[]int32{}, nil},
		{[]int32{0}, []int{0}},
		{[]int32{1, 4, 9}, []int{1, 4, 9}},
		{[]int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, all},
	} {
		t.Run(fmt.Sprintf("sel=%v", c.sel), func(t *testing.T) {
			b := arrowflow.Batch{Record: rec, Sel: c.sel}
			if b.IsZero() {
				t.Fatal("a batch with a record reports IsZero")
			}
			if err := b.Validate(); err != nil {
				t.Fatal(err)
			}
			if b.NumRows() != len(c.want) {
				t.Fatalf("NumRows %d, want %d", b.NumRows(), len(c.want))
			}
			for k, i := range c.want {
				if b.Row(k) != i {
					t.Fatalf("Row(%d) = %d, want %d", k, b.Row(k), i)
				}
				if got, want := b.RowValues(k), int64RecordRow(i, keys); !slices.Equal(got, want) {
					t.Fatalf("RowValues(%d) = %v, want %v", k, got, want)
				}
			}
			if b.Schema() != rec.Schema() {
				t.Fatal("Schema is not the record's")
			}
		})
	}
	b := arrowflow.NewBatch(rec)
	if b.Record != rec || b.Sel != nil {
		t.Fatalf("NewBatch: record %p sel %v", b.Record, b.Sel)
	}
}

func TestBatchShare(t *testing.T) {
	const keys = 4
	for _, sel := range [][]int32{nil, {0, 2, 5}, {7}} {
		t.Run(fmt.Sprintf("sel=%v", sel), func(t *testing.T) {
			mem := checkedAlloc(t)
			orig := arrowflow.Batch{Record: int64Record(mem, 8, keys), Sel: slices.Clone(sel)}
			shared := orig.Share()
			released := false
			defer func() {
				if !released {
					orig.Release()
					shared.Release()
				}
			}()
			if shared.Record != orig.Record {
				t.Fatal("Share changed the record")
			}
			if (shared.Sel == nil) != (sel == nil) || !slices.Equal(shared.Sel, sel) {
				t.Fatalf("shared selection %v, want %v", shared.Sel, sel)
			}
			// Narrowing one owner's selection leaves the other's alone.
			if len(shared.Sel) > 0 {
				shared.Sel[0] = 1
				shared.Sel = shared.Sel[:1]
				if !slices.Equal(orig.Sel, sel) {
					t.Fatalf("original selection became %v after the share was narrowed", orig.Sel)
				}
			}
			// Each owner holds a reference: the record outlives the first
			// release and goes with the second.
			released = true
			orig.Release()
			if mem.CurrentAlloc() == 0 {
				t.Fatal("record freed while the share still holds it")
			}
			for k := 0; k < shared.NumRows(); k++ {
				if got, want := shared.RowValues(k), int64RecordRow(shared.Row(k), keys); !slices.Equal(got, want) {
					t.Fatalf("shared row %d: %v, want %v", k, got, want)
				}
			}
			shared.Release()
			if n := mem.CurrentAlloc(); n != 0 {
				t.Fatalf("%d bytes left after both owners released", n)
			}
		})
	}
}

// An empty selection means no row is alive; a share must say the same,
// not turn it into nil (every row alive).
func TestBatchShareKeepsEmptySelection(t *testing.T) {
	mem := checkedAlloc(t)
	orig := arrowflow.Batch{Record: int64Record(mem, 8, 4), Sel: []int32{}}
	defer orig.Release()
	shared := orig.Share()
	defer shared.Release()
	if shared.Sel == nil || shared.NumRows() != 0 {
		t.Fatalf("share of an empty selection: Sel %#v, %d rows; want an empty selection, 0 rows", shared.Sel, shared.NumRows())
	}
}

func TestBatchMaterialize(t *testing.T) {
	mem := checkedAlloc(t)
	cols := valueColumns()
	for _, c := range []struct {
		name       string
		from, to   int64 // the batch's record is rows [from, to) of the built one
		sel        []int32
		wantSource []int // rows of the built record the result must hold
	}{
		{"no selection", 0, valueRows, nil, []int{0, 1, 2, 3}},
		{"selection", 0, valueRows, []int32{1, 3}, []int{1, 3}},
		{"every row selected", 0, valueRows, []int32{0, 1, 2, 3}, []int{0, 1, 2, 3}},
		{"empty selection", 0, valueRows, []int32{}, nil},
		{"selection over a slice", 1, valueRows, []int32{0, 2}, []int{1, 3}},
		{"slice without selection", 1, 3, nil, []int{1, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			built := buildValueRecord(t, mem, cols)
			rec := built.NewSlice(c.from, c.to)
			built.Release()
			b := arrowflow.Batch{Record: rec, Sel: c.sel}
			got, err := b.Materialize(mem)
			if err != nil {
				t.Fatal(err)
			}
			if c.sel == nil && got != rec {
				t.Fatal("without a selection Materialize must return the batch's own record")
			}
			if c.sel != nil && got == rec {
				t.Fatal("with a selection Materialize returned the unselected record")
			}
			if !got.Schema().Equal(rec.Schema()) {
				t.Fatalf("schema %s, want %s", got.Schema(), rec.Schema())
			}
			if int(got.NumRows()) != len(c.wantSource) {
				t.Fatalf("%d rows, want %d", got.NumRows(), len(c.wantSource))
			}
			// The result has its own reference: the batch's record stays
			// usable after it is released, and vice versa.
			b.Release()
			for k, i := range c.wantSource {
				for ci, col := range cols {
					if v := arrowflow.ValueAt(got.Column(ci), k); !sameGoValue(v, col.want[i]) {
						t.Errorf("row %d column %s: %#v, want %#v", k, col.field.Name, v, col.want[i])
					}
				}
			}
			got.Release()
			if n := mem.CurrentAlloc(); n != 0 {
				t.Fatalf("%d bytes left after releasing the batch and the result", n)
			}
		})
	}
}

func TestBatchValidate(t *testing.T) {
	mem := checkedAlloc(t)
	rec := int64Record(mem, 5, 2)
	defer rec.Release()
	for _, c := range []struct {
		b    arrowflow.Batch
		want string // empty: valid
	}{
		{arrowflow.Batch{Record: rec}, ""},
		{arrowflow.Batch{Record: rec, Sel: []int32{}}, ""},
		{arrowflow.Batch{Record: rec, Sel: []int32{0, 1, 2, 3, 4}}, ""},
		{arrowflow.Batch{Record: rec, Sel: []int32{4}}, ""},
		{arrowflow.Batch{Record: rec, Sel: []int32{1, 1}}, "not strictly increasing at 1: 1 then 1"},
		{arrowflow.Batch{Record: rec, Sel: []int32{0, 3, 2}}, "not strictly increasing at 2: 3 then 2"},
		{arrowflow.Batch{Record: rec, Sel: []int32{5}}, "selection[0] = 5 out of range [0, 5)"},
		{arrowflow.Batch{Record: rec, Sel: []int32{0, 2, 7}}, "selection[2] = 7 out of range [0, 5)"},
		{arrowflow.Batch{Record: rec, Sel: []int32{-1, 0}}, "selection[0] = -1 out of range [0, 5)"},
		{arrowflow.Batch{}, ""},
		{arrowflow.Batch{Sel: []int32{}}, "batch without record has a selection vector"},
	} {
		err := c.b.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("sel %v: unexpected error %v", c.b.Sel, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("sel %v: error %v, want one containing %q", c.b.Sel, err, c.want)
		}
	}
}

// A selection over a record slice indexes the slice's rows, not the
// parent's.
func TestBatchSelectionOverSlice(t *testing.T) {
	mem := checkedAlloc(t)
	const keys = 3
	parent := int64Record(mem, 20, keys)
	rec := parent.NewSlice(5, 15)
	parent.Release()
	b := arrowflow.Batch{Record: rec, Sel: []int32{0, 4, 9}}
	defer b.Release()
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	ids := rec.Column(0).(*array.Int64)
	for k, want := range []int{5, 9, 14} {
		if got := b.RowValues(k); !slices.Equal(got, int64RecordRow(want, keys)) || ids.Value(b.Row(k)) != int64(want) {
			t.Fatalf("selected row %d: %v, want parent row %d", k, got, want)
		}
	}
	if err := (arrowflow.Batch{Record: rec, Sel: []int32{10}}).Validate(); err == nil {
		t.Fatal("row 10 of a 10-row slice passed validation")
	}
}
