package status

import (
	"net"
	"sync"
)

// limitListener accepts at most cap(slots) connections at once: Accept
// waits for a slot before it takes a connection off the backlog, so that
// idle clients beyond the cap cost the process no file descriptor (they
// wait in the kernel's backlog until the server's timeouts free a slot).
// The same idea as golang.org/x/net/netutil.LimitListener, which weir
// does not otherwise depend on.
type limitListener struct {
	net.Listener
	slots chan struct{}
	done  chan struct{} // closed by Close: Accept stops waiting
	once  sync.Once
}

func newLimitListener(l net.Listener, n int) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{})}
}

// Accept waits for a free slot, then for a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

// Close stops listening and ends Accepts waiting for a slot.
func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn frees its slot when closed, once.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
