package ops_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
)

var (
	innerType = arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true})
	outerType = arrow.StructOf(
		arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: "in", Type: innerType, Nullable: true})
	nestedSchema = arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "o", Type: outerType, Nullable: true},
	}, nil)
)

// nestedRow is one row's reference values; nil is NULL.
type nestedRow struct {
	id *int64
	x  *int64
	s  *string
}

func nestedBatch(mem memory.Allocator, rng *rand.Rand, n int) (arrow.RecordBatch, []nestedRow) {
	kb := array.NewInt64Builder(mem)
	ob := array.NewStructBuilder(mem, outerType)
	defer kb.Release()
	defer ob.Release()
	idb := ob.FieldBuilder(0).(*array.Int64Builder)
	ib := ob.FieldBuilder(1).(*array.StructBuilder)
	xb := ib.FieldBuilder(0).(*array.Int64Builder)
	sb := ib.FieldBuilder(1).(*array.StringBuilder)
	rows := make([]nestedRow, n)
	for i := range n {
		kb.Append(int64(i))
		outerNull, innerNull := rng.IntN(4) == 0, rng.IntN(4) == 0
		// values are written under NULL parents too, as generators do
		id, x, s := int64(rng.IntN(100)), int64(rng.IntN(100)), strings.Repeat("a", rng.IntN(3))
		ob.AppendValues([]bool{!outerNull})
		idb.Append(id)
		ib.AppendValues([]bool{!innerNull})
		xNull, sNull := rng.IntN(3) == 0, rng.IntN(3) == 0
		if xNull {
			xb.AppendNull()
		} else {
			xb.Append(x)
		}
		if sNull {
			sb.AppendNull()
		} else {
			sb.Append(s)
		}
		if !outerNull {
			rows[i].id = &id
			if !innerNull {
				if !xNull {
					rows[i].x = &x
				}
				if !sNull {
					rows[i].s = &s
				}
			}
		}
	}
	k, o := kb.NewArray(), ob.NewArray()
	defer k.Release()
	defer o.Release()
	return array.NewRecordBatch(nestedSchema, []arrow.Array{k, o}, int64(n)), rows
}

// Extracted fields equal a row-at-a-time walk down the structs, where a
// NULL struct anywhere on the way makes the field NULL; also for sliced
// batches and with selection vectors, which pass through.
func TestExtractFieldsMatchesRowWalk(t *testing.T) {
	mem := newMem(t)
	op := openOp(t, ops.ExtractFields([]ops.FieldPath{
		{Path: []string{"o", "id"}, As: "o.id"},
		{Path: []string{"o", "in", "x"}, As: "o.in.x"},
		{Path: []string{"o", "in", "s"}, As: "o.in.s"},
	}), taskInfo(mem))
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := range 100 {
		n := 1 + rng.IntN(70)
		rec, rows := nestedBatch(mem, rng, n)
		if iter%3 == 1 && n > 2 { // a slice: offsets inside every buffer
			lo, hi := rng.IntN(n/2), n/2+rng.IntN(n/2)+1
			s := rec.NewSlice(int64(lo), int64(hi))
			rec.Release()
			rec, rows = s, rows[lo:hi]
			n = hi - lo
		}
		sel := makeSel(rng, n, selMode(rng.IntN(4)))
		out := newEmitter(t)
		if err := op.ProcessBatch(0, arrowflow.Batch{Record: rec, Sel: sel}, out); err != nil {
			t.Fatal(err)
		}
		b := out.batches[0]
		if got := b.Schema().NumFields(); got != 5 {
			t.Fatalf("%d columns", got)
		}
		if len(b.Sel) != len(sel) || (sel == nil) != (b.Sel == nil) {
			t.Fatalf("selection changed")
		}
		id := b.Record.Column(2).(*array.Int64)
		x := b.Record.Column(3).(*array.Int64)
		s := b.Record.Column(4).(*array.String)
		for i, r := range rows {
			check := func(name string, valid bool, want *int64, got int64) {
				if valid != (want != nil) || valid && got != *want {
					t.Fatalf("iter %d row %d %s: valid %v value %d, want %v", iter, i, name, valid, got, want)
				}
			}
			check("o.id", id.IsValid(i), r.id, id.Value(i))
			check("o.in.x", x.IsValid(i), r.x, x.Value(i))
			if s.IsValid(i) != (r.s != nil) || r.s != nil && s.Value(i) != *r.s {
				t.Fatalf("iter %d row %d o.in.s: %v %q, want %v", iter, i, s.IsValid(i), s.Value(i), r.s)
			}
		}
		wantNulls := 0
		for _, r := range rows {
			if r.x == nil {
				wantNulls++
			}
		}
		if x.NullN() != wantNulls {
			t.Fatalf("o.in.x null count %d, want %d", x.NullN(), wantNulls)
		}
		out.release()
	}
}

func TestExtractFieldsRejectsBadPaths(t *testing.T) {
	mem := newMem(t)
	for _, p := range []ops.FieldPath{
		{Path: []string{"nope", "x"}, As: "a"},
		{Path: []string{"o", "nope"}, As: "a"},
		{Path: []string{"k", "x"}, As: "a"},
		{Path: []string{"o"}, As: "a"},
	} {
		op := openOp(t, ops.ExtractFields([]ops.FieldPath{p}), taskInfo(mem))
		rec, _ := nestedBatch(mem, rand.New(rand.NewPCG(1, 1)), 3)
		err := op.ProcessBatch(0, arrowflow.NewBatch(rec), newEmitter(t))
		if err == nil || !strings.Contains(err.Error(), p.String()) {
			t.Errorf("%s: error %v", p, err)
		}
	}
}
