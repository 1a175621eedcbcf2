package optest

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/kernels"
)

type memoryAllocator = memory.Allocator

func newCheckedAllocator(t tester) *memory.CheckedAllocator { return testutil.CheckedAllocator(t) }

func takeRecord(mem memory.Allocator, rec arrow.RecordBatch, idx []int32) (arrow.RecordBatch, error) {
	return kernels.TakeRecord(mem, rec, idx)
}

// KeyGroups returns the key group of every row of rec by its columns
// keyBy, exactly as the runtime's keyed exchange computes it
// (kernels.HashColumns, then kernels.KeyGroupOf over maxParallelism key
// groups). Tests use it to write the key-group column of a snapshot or to
// check a restore filter.
func KeyGroups(rec arrow.RecordBatch, keyBy []string, maxParallelism int) ([]int, error) {
	cols := make([]arrow.Array, len(keyBy))
	for i, name := range keyBy {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) == 0 {
			return nil, fmt.Errorf("key column %q not in schema %s", name, rec.Schema())
		}
		cols[i] = rec.Column(idx[0])
	}
	hashes := make([]uint64, rec.NumRows())
	if err := kernels.HashColumns(cols, nil, hashes); err != nil {
		return nil, fmt.Errorf("key columns %v: %w", keyBy, err)
	}
	out := make([]int, len(hashes))
	for i, h := range hashes {
		out[i] = kernels.KeyGroupOf(h, maxParallelism)
	}
	return out, nil
}
