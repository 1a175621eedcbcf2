package nexmark_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sources/nexmark"
)

// Example reads the first 1,000 events of the reference workload with one
// reader and projects the bids of each batch into a flat batch, as a
// benchmark query would.
func Example() {
	src, err := nexmark.New(nexmark.Config{Events: 1_000, Splits: 2, BatchSize: 256})
	if err != nil {
		log.Fatal(err)
	}
	splits, _ := src.Splits(context.Background())
	var states []arrowflow.SplitState
	for _, s := range splits {
		states = append(states, arrowflow.SplitState{Split: s})
	}
	mem := memory.NewGoAllocator()
	rd, err := src.Open(&arrowflow.TaskInfo{Allocator: mem}, states)
	if err != nil {
		log.Fatal(err)
	}
	defer rd.Close()

	events, bids := 0, 0
	var maxPrice int64
	for {
		b, err := rd.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		events += b.NumRows()
		flat, err := nexmark.Bids(mem, b.Record)
		b.Release()
		if err != nil {
			log.Fatal(err)
		}
		bids += int(flat.NumRows())
		for _, p := range flat.Column(2).(*array.Int64).Int64Values() { // price
			maxPrice = max(maxPrice, p)
		}
		flat.Release()
	}
	fmt.Println("events:", events, "bids:", bids)
	fmt.Println("highest bid (cents):", maxPrice)
	fmt.Println("watermark after the end:", rd.Watermark())
	// Output:
	// events: 1000 bids: 920
	// highest bid (cents): 96122704
	// watermark after the end: +inf
}
