package arrowflow_test

import (
	"context"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/sinks/print"
	"github.com/weirflow/weir/sources/datagen"
)

// Build a job as a graph, plan it and run it: generated rows are filtered
// in the source's task, exchanged by key, counted per key, and the top
// keys are printed when the bounded input ends.
func Example() {
	src, err := datagen.New(datagen.Config{Seed: 1, Rows: 10000, Fields: []datagen.Field{
		{Name: "key", Type: arrow.PrimitiveTypes.Int64, Min: 0, Max: 4},
		{Name: "price", Type: arrow.PrimitiveTypes.Float64, Min: 1, Max: 100, Decimals: 2},
	}})
	if err != nil {
		panic(err)
	}
	g := arrowflow.NewGraph("example")
	gen := g.Source("gen", src, 2)
	cheap := g.Operator("cheap", ops.Filter(func(rec arrow.RecordBatch, i int) bool {
		return arrowflow.ValueAt(rec.Column(1), i).(float64) < 50
	}), 2, arrowflow.Forward(gen))
	count := g.Operator("count", ops.CountByKey{Key: "key", Value: "price"}.Factory(), 2,
		arrowflow.KeyBy(cheap, "key"))
	top := g.Operator("top", ops.TopN{By: "count", TieBreak: "key", N: 2}.Factory(), 1,
		arrowflow.Rebalance(count))
	// Keep key and count: float sums depend on the order rows arrive in.
	project := g.Operator("project", ops.MapRecords(func(rec arrow.RecordBatch, _ memory.Allocator) (arrow.RecordBatch, error) {
		schema := arrow.NewSchema(rec.Schema().Fields()[:2], nil)
		return array.NewRecordBatch(schema, []arrow.Array{rec.Column(0), rec.Column(1)}, rec.NumRows()), nil
	}), 1, arrowflow.Forward(top))
	g.Sink("print", print.New(print.Options{Writer: os.Stdout}), 1, arrowflow.Forward(project))

	job, err := g.Plan(arrowflow.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Print(job.Explain())
	if err := job.Run(context.Background()); err != nil {
		panic(err)
	}
	// Output:
	// job "example": 6 nodes in 3 chained tasks, max parallelism 128
	// task 1: gen -> cheap (parallelism 2)
	// task 2: count (parallelism 2)
	//   <- keyed by [key] over 128 key groups, append-only, from task 1 (cheap)
	// task 3: top -> project -> print (parallelism 1)
	//   <- rebalance, append-only, from task 2 (count)
	// +I[1, 1007]
	// +I[2, 1005]
}
