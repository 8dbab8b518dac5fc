// Package freeport finds a TCP port that is free now, for a process (or a
// test's server) started next to bind, perhaps again after a restart.
//
// It picks below the kernel's ephemeral range (32768 and up on Linux),
// where port 0 listeners and outgoing connections take theirs, so that a
// port found free is not taken by one of those meanwhile, and a client
// dialling it before anything listens cannot connect to itself.
//
// A port handed out stays reserved for the life of the process, so that
// the window between the pick and the bind (and a replica's restart, which
// binds its old ports again) cannot hand it to someone else: in this
// process by a set, in others that use this package (test packages run in
// parallel, `phx dev`) by an flock on a file named after the port.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// The range Addr picks from.
const (
	lowest  = 20000
	highest = 32000
)

var (
	mu       sync.Mutex
	reserved = map[int]*os.File{} // port → its held lock file (nil where none could be made)
)

// Addr returns host:port with a port free now on host, and reserved for
// this process.
func Addr(host string) (string, error) {
	var err error
	for try := 0; try < 200; try++ {
		port := lowest + rand.IntN(highest-lowest)
		if !reserve(port) {
			continue
		}
		var l net.Listener
		if l, err = net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port))); err == nil {
			l.Close()
			return l.Addr().String(), nil
		}
		// Busy on host: keep the reservation, the port stays unused here.
	}
	if err == nil {
		err = errors.New("every port tried is reserved")
	}
	return "", fmt.Errorf("no free port on %s: %w", host, err)
}

// reserve claims port for this process, or reports that this or another
// process already has.
func reserve(port int) bool {
	mu.Lock()
	defer mu.Unlock()
	if _, taken := reserved[port]; taken {
		return false
	}
	f, err := lockFile(port)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false
	}
	// Another error (no writable temp dir) leaves the in-process set alone
	// to guard.
	reserved[port] = f
	return true
}

// lockFile opens and locks the port's file, to be held until exit.
func lockFile(port int) (*os.File, error) {
	dir := filepath.Join(os.TempDir(), "phalanx-freeport")
	if err := os.MkdirAll(dir, os.ModeSticky|0o777); err != nil {
		return nil, err
	}
	_ = os.Chmod(dir, os.ModeSticky|0o777) // past the umask, for other users' tests; fails unless ours
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
