package kernels_test

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/kernels"
)

// bids is a small batch of auction bids: auction id, price in cents and
// bidder name (one unknown).
func bids(mem memory.Allocator) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "auction", Type: arrow.PrimitiveTypes.Int64},
		{Name: "price", Type: arrow.PrimitiveTypes.Int64},
		{Name: "bidder", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 1, 3, 2}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{500, 12000, 700, 90, 15000}, nil)
	b.Field(2).(*array.StringBuilder).AppendValues([]string{"ann", "bo", "", "cy", "bo"}, []bool{true, true, false, true, true})
	return b.NewRecordBatch()
}

// Filter narrows a selection vector without copying any row: here to the
// bids above one dollar whose bidder is known. A NULL predicate (the
// unknown bidder) drops the row, as SQL's WHERE does.
func ExampleCompileFilter() {
	mem := memory.NewGoAllocator()
	rec := bids(mem)
	defer rec.Release()

	pred := kernels.And(
		kernels.Greater(kernels.Col("price"), kernels.Lit(100)),
		kernels.NotEq(kernels.Col("bidder"), kernels.Lit("")),
	)
	f, err := kernels.CompileFilter(pred, rec.Schema())
	if err != nil {
		panic(err)
	}
	sel, err := f.Select(rec, nil, nil) // nil: start from every row
	if err != nil {
		panic(err)
	}
	fmt.Println(f, "keeps rows", sel)
	// Output:
	// ((price > 100) AND (bidder <> '')) keeps rows [0 1 4]
}

// Projection computes new columns for the selected rows and materialises
// them as a dense batch: Nexmark's currency conversion, with a CASE.
func ExampleCompileProjection() {
	mem := memory.NewGoAllocator()
	rec := bids(mem)
	defer rec.Release()

	p, err := kernels.CompileProjection([]kernels.Expr{
		kernels.Col("auction"),
		kernels.Mul(kernels.Col("price"), kernels.Lit(0.908)),
		kernels.Case(kernels.Greater(kernels.Col("price"), kernels.Lit(10000)), kernels.Lit("high")).
			Otherwise(kernels.Lit("low")),
	}, []string{"auction", "euros", "band"}, rec.Schema())
	if err != nil {
		panic(err)
	}
	out, err := p.Project(mem, rec, []int32{1, 3, 4}) // rows kept by an earlier filter
	if err != nil {
		panic(err)
	}
	defer out.Release()
	for i, f := range out.Schema().Fields() {
		fmt.Printf("%s %s: %v\n", f.Name, f.Type, out.Column(i))
	}
	// Output:
	// auction int64: [2 3 2]
	// euros float64: [10896 81.72 13620]
	// band utf8: ["high" "low" "high"]
}

// Integer overflow is an error naming the expression and the row, never a
// silently wrapped value.
func ExampleCompile_overflow() {
	mem := memory.NewGoAllocator()
	rec := bids(mem)
	defer rec.Release()

	prog, err := kernels.Compile(kernels.Mul(kernels.Col("price"), kernels.Lit(int64(1)<<60)), rec.Schema())
	if err != nil {
		panic(err)
	}
	_, err = prog.Eval(mem, rec, nil)
	fmt.Println(err)
	// Output:
	// expression (price * 1152921504606846976): row 0: integer overflow: 500 * 1152921504606846976 does not fit in int64
}
