package nexmark

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// recycler is the allocator a reader generates batches with: it hands
// out memory from the reader's allocator and keeps what the batches'
// consumers release, to hand it out again for later batches. Batches of
// the same size need buffers of the same sizes, so a steady stream of
// released batches is generated without fresh memory (with the Go
// allocator, without work for the garbage collector). Recycled memory is
// not zeroed: the builder writes every byte it hands over. String bytes
// are not recycled (strCol.finish allocates them from the underlying
// allocator): array.String.Value aliases them, and consumers commonly
// keep such strings after releasing a batch. Fixed-width values, offsets
// and validity bitmaps are recycled: a consumer must not use them after
// releasing the batch, as with any allocator that reuses memory.
//
// It keeps at most recycleMaxPerSize buffers of each size and
// recycleMaxBytes in all; the rest goes back to the underlying allocator,
// as does everything once the reader is closed. It is safe for concurrent
// use: batches are released on any goroutine.
type recycler struct {
	mem    memory.Allocator
	mu     sync.Mutex
	free   map[int][][]byte // by length
	held   int              // bytes in free
	closed bool
}

const (
	recycleMaxPerSize = 4
	recycleMaxBytes   = 64 << 20
)

var _ memory.Allocator = (*recycler)(nil)

func newRecycler(mem memory.Allocator) *recycler {
	return &recycler{mem: mem, free: make(map[int][][]byte)}
}

func (p *recycler) Allocate(size int) []byte {
	p.mu.Lock()
	if l := p.free[size]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		p.free[size] = l[:len(l)-1]
		p.held -= size
		p.mu.Unlock()
		return b
	}
	p.mu.Unlock()
	return p.mem.Allocate(size)
}

func (p *recycler) Reallocate(size int, b []byte) []byte {
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

func (p *recycler) Free(b []byte) {
	size := len(b)
	p.mu.Lock()
	if !p.closed && size > 0 && p.held+size <= recycleMaxBytes && len(p.free[size]) < recycleMaxPerSize {
		p.free[size] = append(p.free[size], b)
		p.held += size
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.mem.Free(b)
}

// close hands everything kept back to the underlying allocator; buffers
// freed later go straight back too.
func (p *recycler) close() {
	p.mu.Lock()
	free := p.free
	p.free, p.held, p.closed = nil, 0, true
	p.mu.Unlock()
	for _, l := range free {
		for _, b := range l {
			p.mem.Free(b)
		}
	}
}

// unrecycled is the allocator under mem when mem is a recycler.
func unrecycled(mem memory.Allocator) memory.Allocator {
	if p, ok := mem.(*recycler); ok {
		return p.mem
	}
	return mem
}
