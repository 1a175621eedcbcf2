// Package testutil holds helpers shared by weir's tests.
package testutil

import (
	"net"
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

// FreeLoopbackPort returns a port on 127.0.0.1 that nothing listens on (a
// listener opened and closed): a server may bind it, and a connection to it
// is refused at once.
func FreeLoopbackPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
