package sql

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
)

type batchCatcher struct{ got []arrowflow.Batch }

func (c *batchCatcher) Emit(b arrowflow.Batch) error            { c.got = append(c.got, b); return nil }
func (c *batchCatcher) EmitWatermark(arrowflow.EventTime) error { return nil }

// A SELECT list of bare column references passes the batch's columns
// through with its selection (nothing copied); one with an expression
// computes the selected rows only. Both give the selected rows.
func TestProjectionKeepsSelectionOfBareReferences(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	rb := array.NewRecordBuilder(mem, schema)
	rb.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3, 4}, nil)
	rb.Field(1).(*array.StringBuilder).AppendValues([]string{"w", "x", "y", "z"}, nil)
	rec := rb.NewRecordBatch()
	rb.Release()
	defer rec.Release()
	for _, tc := range []struct {
		name    string
		exprs   []kernels.Expr
		through bool
		want    string
	}{
		{"refs", []kernels.Expr{kernels.Col("s"), kernels.Col("a")}, true, "z 4 | x 2"},
		{"expression", []kernels.Expr{kernels.Col("s"), kernels.Call("abs", kernels.Col("a"))}, false, "z 4 | x 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := projectFactory(tc.exprs, []string{"s", "n"})().(*projectOp)
			if err := op.Open(&arrowflow.TaskInfo{Allocator: mem}); err != nil {
				t.Fatal(err)
			}
			rec.Retain()
			var c batchCatcher
			if err := op.ProcessBatch(0, arrowflow.Batch{Record: rec, Sel: []int32{3, 1}}, &c); err != nil {
				t.Fatal(err)
			}
			if len(c.got) != 1 {
				t.Fatalf("%d batches", len(c.got))
			}
			b := c.got[0]
			defer b.Release()
			if through := b.Sel != nil && b.Record.Column(0) == rec.Column(1); through != tc.through {
				t.Fatalf("passed through: %t, want %t", through, tc.through)
			}
			got := ""
			for k := 0; k < b.NumRows(); k++ {
				if k > 0 {
					got += " | "
				}
				r := b.Row(k)
				got += b.Record.Column(0).ValueStr(r) + " " + b.Record.Column(1).ValueStr(r)
			}
			if got != tc.want {
				t.Fatalf("rows %q, want %q", got, tc.want)
			}
		})
	}
}
