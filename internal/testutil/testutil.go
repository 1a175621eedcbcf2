// Package testutil holds helpers shared by weir's tests.
package testutil

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// CheckedAllocator returns an Arrow allocator that fails t if any byte is
// still allocated when the test (and its cleanups registered later) ends.
func CheckedAllocator(t testing.TB) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}
