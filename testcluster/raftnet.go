package testcluster

import (
	"net"
	"sync"
	"testing"
)

// raftNet is the proxies between the replicas' Raft transports.
type raftNet struct {
	mu      sync.Mutex
	n       int
	blocked map[[2]int]bool // [from, to]
	lis     []net.Listener
	conns   map[[2]int]map[net.Conn]struct{}
}

func newRaftNet(n int) *raftNet {
	return &raftNet{n: n, blocked: map[[2]int]bool{}, conns: map[[2]int]map[net.Conn]struct{}{}}
}

// listen starts replica to's proxy, forwarding to target, and returns its
// address.
func (rn *raftNet) listen(t testing.TB, to int, target string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rn.lis = append(rn.lis, l)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go rn.forward(c, to, target)
		}
	}()
	return l.Addr().String()
}

// from identifies the calling replica by its loopback address.
func (rn *raftNet) from(c net.Conn) int {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		if ip := a.IP.To4(); ip != nil && ip[0] == 127 && int(ip[3]) >= 11 && int(ip[3]) < 11+rn.n {
			return int(ip[3]) - 11
		}
	}
	return -1
}

func (rn *raftNet) forward(c net.Conn, to int, target string) {
	link := [2]int{rn.from(c), to}
	rn.mu.Lock()
	blocked := link[0] < 0 || rn.blocked[link]
	rn.mu.Unlock()
	if blocked {
		c.Close()
		return
	}
	up, err := net.Dial("tcp", target)
	if err != nil {
		c.Close()
		return
	}
	rn.mu.Lock()
	if rn.blocked[link] {
		rn.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	if rn.conns[link] == nil {
		rn.conns[link] = map[net.Conn]struct{}{}
	}
	rn.conns[link][c], rn.conns[link][up] = struct{}{}, struct{}{}
	rn.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	c.Close()
	up.Close()
	<-done
	rn.mu.Lock()
	delete(rn.conns[link], c)
	delete(rn.conns[link], up)
	rn.mu.Unlock()
}

func (rn *raftNet) partition(groups [][]int) {
	side := map[int]int{}
	for g, members := range groups {
		for _, m := range members {
			side[m] = g + 1
		}
	}
	rn.mu.Lock()
	var cut []net.Conn
	for a := 0; a < rn.n; a++ {
		for b := 0; b < rn.n; b++ {
			if a == b {
				continue
			}
			link := [2]int{a, b}
			block := side[a] == 0 || side[a] != side[b]
			rn.blocked[link] = block
			if block {
				for c := range rn.conns[link] {
					cut = append(cut, c)
				}
			}
		}
	}
	rn.mu.Unlock()
	for _, c := range cut {
		c.Close()
	}
}

func (rn *raftNet) heal() {
	rn.mu.Lock()
	rn.blocked = map[[2]int]bool{}
	rn.mu.Unlock()
}

func (rn *raftNet) close() {
	for _, l := range rn.lis {
		l.Close()
	}
	rn.partition(nil)
}
