package testcluster

import (
	"context"
	"errors"
	"net"
	"sync"
)

// link is one node's network connection to the controllers: every
// connection its agent makes goes through dial, so a test can cut the node
// off (every connection closed, new ones refused) and heal it, while the
// agent and its tasks keep running. It cuts whatever address the agent
// dials, the leader it was redirected to included.
type link struct {
	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

func newLink() *link { return &link{conns: map[net.Conn]struct{}{}} }

var errCut = errors.New("network unreachable (cut by the test)")

func (l *link) dial(ctx context.Context, addr string) (net.Conn, error) {
	l.mu.Lock()
	cut := l.cut
	l.mu.Unlock()
	if cut {
		return nil, errCut
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut {
		c.Close()
		return nil, errCut
	}
	tc := &trackedConn{Conn: c, l: l}
	l.conns[tc] = struct{}{}
	return tc, nil
}

// setCut cuts (true) or heals (false) the link.
func (l *link) setCut(cut bool) {
	l.mu.Lock()
	l.cut = cut
	var open []net.Conn
	if cut {
		for c := range l.conns {
			open = append(open, c)
		}
	}
	l.mu.Unlock()
	for _, c := range open {
		c.Close()
	}
}

type trackedConn struct {
	net.Conn
	l    *link
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
