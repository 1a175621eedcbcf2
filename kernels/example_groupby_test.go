package kernels_test

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/kernels"
)

// Group rows by user and aggregate them, then snapshot the state and
// rebuild a second GroupBy from it, as a restored (or rescaled) operator
// would.
func ExampleGroupBy() {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user", Type: arrow.BinaryTypes.String},
		{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	ub := array.NewStringBuilder(mem)
	ub.AppendValues([]string{"ann", "bob", "ann", "cy", "bob"}, nil)
	pb := array.NewFloat64Builder(mem)
	pb.AppendValues([]float64{10, 4, 30, 0, 6}, []bool{true, true, true, false, true})
	tb := array.NewInt64Builder(mem)
	tb.AppendValues([]int64{5, 1, 3, 2, 9}, nil)
	cols := []arrow.Array{ub.NewArray(), pb.NewArray(), tb.NewArray()}
	rec := array.NewRecordBatch(schema, cols, 5)
	defer rec.Release()
	for _, c := range cols {
		c.Release()
	}

	aggs := []kernels.AggregateSpec{
		{Func: kernels.AggCountStar, Name: "n"},
		{Func: kernels.AggAvg, Args: []int{1}, Name: "avg_price"},
		{Func: kernels.AggLast, Args: []int{1, 2}, Name: "latest_price"},
	}
	g, err := kernels.NewGroupBy(schema, []int{0}, aggs)
	if err != nil {
		panic(err)
	}
	// Rows 0..3 only: a filter upstream dropped row 4.
	if err := g.Update(rec, []int32{0, 1, 2, 3}); err != nil {
		panic(err)
	}
	out, err := g.Finish(mem)
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Schema().Fields()[1:])
	for i, c := range out.Columns() {
		fmt.Println(out.ColumnName(i), c)
	}
	out.Release()

	// Snapshot and restore.
	state, err := g.ExportState(mem)
	if err != nil {
		panic(err)
	}
	restored, err := kernels.NewGroupBy(schema, []int{0}, aggs)
	if err != nil {
		panic(err)
	}
	if err := restored.Merge(state, nil); err != nil {
		panic(err)
	}
	state.Release()
	fmt.Println("restored groups:", restored.Groups())
	// Output:
	// [n: type=int64 avg_price: type=float64, nullable latest_price: type=float64, nullable]
	// user ["ann" "bob" "cy"]
	// n [2 1 1]
	// avg_price [20 4 (null)]
	// latest_price [10 4 (null)]
	// restored groups: 3
}
