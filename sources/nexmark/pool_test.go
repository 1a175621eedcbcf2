package nexmark

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestRecycler(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	p := newRecycler(mem)
	a := p.Allocate(1024)
	p.Free(a)
	if b := p.Allocate(1024); &b[0] != &a[0] {
		t.Fatal("a freed buffer of the same size is not handed out again")
	} else {
		p.Free(b)
	}
	c := p.Allocate(2048) // fresh
	p.close()
	if got := mem.CurrentAlloc(); got != 2048 {
		t.Fatalf("after close, %d bytes allocated, want 2048 (the one in use)", got)
	}
	p.Free(c) // after close: straight back
	mem.AssertSize(t, 0)
}
