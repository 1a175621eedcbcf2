package parquet_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/parquet"
)

// The two-phase commit by hand, as the runtime drives it: a subtask's
// writer writes and pre-commits an epoch, the coordinator commits it, and
// only then are the rows part of the table.
func Example() {
	dir, _ := os.MkdirTemp("", "weir-parquet-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	mem := memory.DefaultAllocator

	sink, err := parquet.New(parquet.Options{Path: filepath.Join(dir, "orders"), PartitionBy: []string{"region"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	w, _ := sink.Open(&arrowflow.TaskInfo{Job: "orders", Subtask: 0, Parallelism: 1, Allocator: mem})
	defer w.Close()

	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "region", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"eu", "us/east", "eu"}, nil)
	rec := b.NewRecordBatch()
	b.Release()

	if err := w.Write(ctx, arrowflow.NewBatch(rec)); err != nil {
		fmt.Println(err)
		return
	}
	payload, _ := w.PreCommit(ctx, 1)
	files, _ := parquet.CommittedFiles(filepath.Join(dir, "orders"))
	fmt.Println("committed files before the commit:", len(files))
	if err := sink.Commit(ctx, 1, [][]byte{payload}); err != nil {
		fmt.Println(err)
		return
	}

	table, _ := parquet.ReadCommitted(filepath.Join(dir, "orders"), mem)
	for _, f := range table.Files {
		fmt.Println(f.Path, f.Rows)
	}
	for rec, err := range table.Records(ctx) {
		if err != nil {
			fmt.Println(err)
			return
		}
		for i := range int(rec.NumRows()) {
			fmt.Println(rec.Column(0).ValueStr(i), rec.Column(1).ValueStr(i))
		}
		rec.Release()
	}
	// Output:
	// committed files before the commit: 0
	// region=eu/part-orders-00000000000000000001-00000-00000.parquet 2
	// region=us%2Feast/part-orders-00000000000000000001-00000-00001.parquet 1
	// 1 eu
	// 3 eu
	// 2 us/east
}
