package kernels_test

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/kernels"
)

// Hash a two-column key of the rows selected by a selection vector: equal
// keys get equal hashes, and the hash is stable across processes.
func ExampleHashColumns() {
	mem := memory.NewGoAllocator()
	ib := array.NewInt64Builder(mem)
	ib.AppendValues([]int64{7, 8, 7, 7}, nil)
	ids := ib.NewArray()
	sb := array.NewStringBuilder(mem)
	sb.AppendValues([]string{"a", "b", "a", "b"}, nil)
	names := sb.NewArray()

	sel := []int32{0, 2, 3} // rows still alive after a filter
	hashes := make([]uint64, len(sel))
	if err := kernels.HashColumns([]arrow.Array{ids, names}, sel, hashes); err != nil {
		panic(err)
	}
	fmt.Println("row 0 and row 2 share a key:", hashes[0] == hashes[1])
	fmt.Println("row 0 and row 3 share a key:", hashes[0] == hashes[2])
	// Output:
	// row 0 and row 2 share a key: true
	// row 0 and row 3 share a key: false
}

// Gather rows by index, in any order and with repeats.
func ExampleTake() {
	mem := memory.NewGoAllocator()
	sb := array.NewStringBuilder(mem)
	sb.AppendValues([]string{"zero", "one", "two"}, []bool{true, false, true})
	arr := sb.NewArray()
	out, err := kernels.Take(mem, arr, []int32{2, 0, 1, 2})
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output: ["two" "zero" (null) "two"]
}

// Gather rows of several arrays into one, copying each value once: the
// rows listed for each part, or all of a part's rows for a nil list.
func ExampleGather() {
	mem := memory.NewGoAllocator()
	a := array.NewInt64Builder(mem)
	a.AppendValues([]int64{10, 11, 12}, nil)
	first := a.NewArray()
	a.AppendValues([]int64{20, 21}, []bool{true, false})
	second := a.NewArray()
	out, err := kernels.Gather(mem, []arrow.Array{first, second}, [][]int32{{2, 0}, nil})
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output: [12 10 20 (null)]
}
