package ops_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/kernels"
)

func TestWhereMatchesRowOracle(t *testing.T) {
	// key % 2 = 0 AND val > -100: NULL keys or values drop the row.
	pred := kernels.And(kernels.Eq(kernels.Mod(kernels.Col("key"), kernels.Lit(2)), kernels.Lit(0)),
		kernels.Greater(kernels.Col("val"), kernels.Lit(-100.0)))
	keep := func(r inRow) bool { return r.key != nil && *r.key%2 == 0 && r.val != nil && *r.val > -100 }
	for _, n := range batchSizes {
		for _, mode := range []selMode{selNone, selRandom, selEmpty, selAll} {
			t.Run(fmt.Sprintf("rows=%d/sel=%s", n, mode), func(t *testing.T) {
				mem := newMem(t)
				out := newEmitter(t)
				rng := rand.New(rand.NewPCG(uint64(n), uint64(mode)+10))
				rows := randomRows(rng, 0, n, 7)
				sel := makeSel(rng, n, mode)
				rec := buildRecord(mem, rows)
				var want []int
				for _, i := range selected(n, sel) {
					if keep(rows[i]) {
						want = append(want, i)
					}
				}
				op := openOp(t, ops.Where(pred), taskInfo(mem))
				if err := op.ProcessBatch(0, arrowflow.Batch{Record: rec, Sel: sel}, out); err != nil {
					t.Fatal(err)
				}
				if len(want) == 0 {
					if len(out.batches) != 0 {
						t.Fatalf("emitted %d batches with no row passing", len(out.batches))
					}
					return
				}
				if len(out.batches) != 1 || out.batches[0].Record != rec {
					t.Fatalf("want the same record back, narrowed")
				}
				if got := batchRows(out.batches[0]); !slices.Equal(got, want) {
					t.Fatalf("rows %v, want %v", got, want)
				}
			})
		}
	}
}

func TestProjectComputesSelectedRows(t *testing.T) {
	mem := newMem(t)
	out := newEmitter(t)
	rng := rand.New(rand.NewPCG(4, 4))
	rows := randomRows(rng, 100, 500, 9)
	rec := buildRecord(mem, rows)
	sel := makeSel(rng, len(rows), selRandom)
	op := openOp(t, ops.Project([]kernels.Expr{kernels.Col("id"), kernels.Mul(kernels.Col("val"), kernels.Lit(2.0))}, []string{"id", "twice"}), taskInfo(mem))
	if err := op.ProcessBatch(0, arrowflow.Batch{Record: rec, Sel: sel}, out); err != nil {
		t.Fatal(err)
	}
	b := out.batches[0]
	if b.Sel != nil || b.NumRows() != len(sel) {
		t.Fatalf("want a dense batch of %d rows", len(sel))
	}
	ids, twice := b.Record.Column(0).(*array.Int64), b.Record.Column(1).(*array.Float64)
	for k, i := range sel {
		r := rows[i]
		if ids.Value(k) != r.id {
			t.Fatalf("row %d: id %d, want %d", k, ids.Value(k), r.id)
		}
		if (r.val == nil) != twice.IsNull(k) || (r.val != nil && twice.Value(k) != 2**r.val) {
			t.Fatalf("row %d: twice wrong", k)
		}
	}
	// A bad expression fails the operator with the expression named.
	bad := openOp(t, ops.Project([]kernels.Expr{kernels.Add(kernels.Col("tag"), kernels.Lit(1))}, nil), taskInfo(mem))
	rec2 := buildRecord(mem, rows[:3])
	err := bad.ProcessBatch(0, arrowflow.NewBatch(rec2), out)
	if err == nil || !strings.Contains(err.Error(), "(tag + 1)") {
		t.Fatalf("got %v, want an error naming (tag + 1)", err)
	}
}
