package arrowflow

import (
	"errors"
	"sync"
	"time"
)

// errGateClosed is returned by a gate after the job was cancelled.
var errGateClosed = errors.New("input gate closed: job cancelled")

// gate is the input side of a task: one bounded FIFO queue per upstream
// channel (an upstream subtask on one input edge). Producers block while
// their queue is full, which is how backpressure travels upstream. The
// consumer takes messages round-robin from queues that are not blocked; a
// queue is blocked while barrier alignment waits for the other queues.
//
// A single mutex guards everything: a push or pop moves one whole batch,
// so the lock is taken once per batch, never per row.
type gate struct {
	mu       sync.Mutex
	readable sync.Cond // signalled when a message arrives or a queue unblocks
	writable sync.Cond // signalled when a full queue loses a message
	queues   []ring
	blocked  []bool
	capacity int
	next     int // round-robin start for the next pop
	closed   bool

	queued    int // messages in all queues
	maxQueued int // high-water mark of queued
}

func newGate(channels, capacity int) *gate {
	g := &gate{queues: make([]ring, channels), blocked: make([]bool, channels), capacity: capacity}
	for i := range g.queues {
		g.queues[i].buf = make([]Message, capacity)
	}
	g.readable.L = &g.mu
	g.writable.L = &g.mu
	return g
}

// push appends m to channel ch, blocking while the channel's queue is
// full. When the gate is closed it releases m and returns errGateClosed.
func (g *gate) push(ch int, m Message) error {
	g.mu.Lock()
	q := &g.queues[ch]
	for !g.closed && q.n == g.capacity {
		g.writable.Wait()
	}
	if g.closed {
		g.mu.Unlock()
		m.release()
		return errGateClosed
	}
	q.push(m)
	g.queued++
	if g.queued > g.maxQueued {
		g.maxQueued = g.queued
	}
	g.mu.Unlock()
	g.readable.Signal()
	return nil
}

// pop returns the next message from an unblocked channel, blocking until
// one is available.
func (g *gate) pop() (int, Message, error) {
	ch, m, _, err := g.popWithin(-1)
	return ch, m, err
}

// popWithin is pop waiting at most wait (negative: no limit); ok is false
// when the wait ran out before a message arrived.
func (g *gate) popWithin(wait time.Duration) (ch int, m Message, ok bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var (
		timer   *time.Timer
		expired bool
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if g.closed {
			return 0, Message{}, false, errGateClosed
		}
		n := len(g.queues)
		for k := 0; k < n; k++ {
			ch := (g.next + k) % n
			q := &g.queues[ch]
			if q.n == 0 || g.blocked[ch] {
				continue
			}
			wasFull := q.n == g.capacity
			m := q.pop()
			g.queued--
			g.next = ch + 1
			if wasFull {
				g.writable.Broadcast()
			}
			return ch, m, true, nil
		}
		if wait == 0 || expired {
			return 0, Message{}, false, nil
		}
		if wait > 0 && timer == nil {
			timer = time.AfterFunc(wait, func() {
				g.mu.Lock()
				expired = true
				g.mu.Unlock()
				g.readable.Broadcast()
			})
		}
		g.readable.Wait()
	}
}

// block stops pop from returning messages of channel ch.
func (g *gate) block(ch int) {
	g.mu.Lock()
	g.blocked[ch] = true
	g.mu.Unlock()
}

// unblockAll lets pop return messages of every channel again.
func (g *gate) unblockAll() {
	g.mu.Lock()
	clear(g.blocked)
	g.mu.Unlock()
}

// close wakes every waiter and releases every queued message. Pushes and
// pops after close fail with errGateClosed.
func (g *gate) close() {
	g.mu.Lock()
	if !g.closed {
		g.closed = true
		for i := range g.queues {
			q := &g.queues[i]
			for q.n > 0 {
				m := q.pop()
				m.release()
			}
		}
		g.queued = 0
	}
	g.mu.Unlock()
	g.readable.Broadcast()
	g.writable.Broadcast()
}

// stats returns the number of queued messages and its high-water mark.
func (g *gate) stats() (queued, maxQueued int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.queued, g.maxQueued
}

// ring is a fixed-capacity FIFO of messages.
type ring struct {
	buf  []Message
	head int
	n    int
}

func (r *ring) push(m Message) {
	r.buf[(r.head+r.n)%len(r.buf)] = m
	r.n++
}

func (r *ring) pop() Message {
	m := r.buf[r.head]
	r.buf[r.head] = Message{}
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return m
}
