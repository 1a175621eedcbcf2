package parquet_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/parquet"
)

// Nested columns are written when no rows need gathering (no partitions,
// no selection or a consecutive one), and a gather names the column
// kernels.TakeRecord cannot take.
func TestNestedColumns(t *testing.T) {
	mem := newMem(t)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, nil)
	build := func() arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, sc)
		defer b.Release()
		lb := b.Field(1).(*array.ListBuilder)
		vb := lb.ValueBuilder().(*array.StringBuilder)
		for i := range 5 {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			if i == 2 {
				lb.AppendNull()
				continue
			}
			lb.Append(true)
			for j := range i {
				vb.Append(string(rune('a' + j)))
			}
		}
		return b.NewRecordBatch()
	}
	s := newSink(t, parquet.Options{PartitionBy: []string{}})
	ws := openWriters(t, s, mem, 1)
	in := arrowflow.NewBatch(build())
	var want [][]any
	for k := range in.NumRows() {
		if k >= 1 && k <= 3 {
			want = append(want, in.RowValues(k))
		}
	}
	in.Sel = []int32{1, 2, 3} // consecutive: sliced, not gathered
	if err := ws[0].Write(ctx, in); err != nil {
		t.Fatal(err)
	}
	p, err := ws[0].PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 1, [][]byte{p}); err != nil {
		t.Fatal(err)
	}
	sameRows(t, "ReadCommitted", readCommitted(t, s.Options().Path, sc, mem), want)

	gather := arrowflow.NewBatch(build())
	gather.Sel = []int32{0, 4}
	if err := ws[0].Write(ctx, gather); err == nil {
		t.Fatal("a gather of a list column succeeded; update the docs' limits")
	} else {
		t.Log(err)
	}
}
