package changelog_test

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/changelog"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/window"
)

// rankPrinter prints each row an operator emits with its row kind.
type rankPrinter struct{}

func (rankPrinter) Emit(b arrowflow.Batch) error {
	defer b.Release()
	for k := range b.NumRows() {
		fmt.Println(b.Kind(k), b.RowValues(k))
	}
	return nil
}

func (rankPrinter) EmitWatermark(arrowflow.EventTime) error { return nil }

// The two highest bids of each auction, with their row numbers:
//
//	SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rn FROM bid)
//	WHERE rn <= 2
//
// Changes are folded per epoch: the second epoch's two bids on auction 1
// leave one pair of updates per changed row (the old first becomes the
// second), and auction 2 gains a second row.
func ExampleRank() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "auction", Type: arrow.PrimitiveTypes.Int64},
		{Name: "price", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	top2 := changelog.Rank{
		Input:       schema,
		PartitionBy: []string{"auction"},
		OrderBy:     []window.OrderKey{{Column: "price", Desc: true}},
		Func:        changelog.RowNumber,
		N:           2,
		RankColumn:  "rn",
	}
	op := top2.Factory()()
	info := &arrowflow.TaskInfo{Name: "top2", Parallelism: 1, MaxParallelism: 128,
		KeyGroups: state.KeyGroupRange{Start: 0, End: 128}, Allocator: memory.DefaultAllocator}
	if err := op.Open(info); err != nil {
		panic(err)
	}
	defer op.Close()
	bids := func(auction, price []int64) arrowflow.Batch {
		a, p := array.NewInt64Builder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
		a.AppendValues(auction, nil)
		p.AppendValues(price, nil)
		cols := []arrow.Array{a.NewArray(), p.NewArray()}
		rec := array.NewRecordBatch(schema, cols, int64(len(auction)))
		for _, c := range cols {
			c.Release()
		}
		return arrowflow.NewBatch(rec)
	}
	flusher := op.(arrowflow.EpochFlusher)
	out := rankPrinter{}

	fmt.Println("epoch 0")
	_ = op.ProcessBatch(0, bids([]int64{1, 1, 2}, []int64{10, 20, 5}), out)
	_ = flusher.FlushEpoch(0, out)
	fmt.Println("epoch 1")
	_ = op.ProcessBatch(0, bids([]int64{1, 1, 2}, []int64{15, 30, 1}), out)
	_ = flusher.FlushEpoch(1, out)
	// Output:
	// epoch 0
	// +I [1 20 1]
	// +I [1 10 2]
	// +I [2 5 1]
	// epoch 1
	// -U [1 20 1]
	// +U [1 30 1]
	// -U [1 10 2]
	// +U [1 20 2]
	// +I [2 1 2]
}
