package freeport

import (
	"net"
	"testing"
)

func TestAddrNeverRepeatsAPort(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 300; i++ {
		addr, err := Addr("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(addr)
		if seen[port] {
			t.Fatalf("port %s handed out twice", port)
		}
		seen[port] = true
	}
}

// Another process's reservation is an flock on the port's file; a second
// open file description conflicts with it just as another process's does.
func TestPortLockedElsewhereIsSkipped(t *testing.T) {
	port := lowest + 7
	for {
		mu.Lock()
		_, taken := reserved[port]
		mu.Unlock()
		if !taken {
			break
		}
		port++
	}
	f, err := lockFile(port)
	if err != nil {
		t.Fatalf("lock port file: %v", err)
	}
	defer f.Close()
	if reserve(port) {
		t.Fatalf("port %d reserved although another holder locks it", port)
	}
	f.Close()
	if !reserve(port) {
		t.Fatalf("port %d not reserved once its other holder let go", port)
	}
	if reserve(port) {
		t.Fatalf("port %d reserved twice in one process", port)
	}
}
