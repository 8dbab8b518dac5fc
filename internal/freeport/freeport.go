// Package freeport finds a TCP port that is free now, for a process (or a
// test's server) started next to bind, perhaps again after a restart.
//
// It picks below the kernel's ephemeral range (32768 and up on Linux),
// where port 0 listeners and outgoing connections take theirs, so that a
// port found free is not taken by one of those meanwhile, and a client
// dialling it before anything listens cannot connect to itself.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
)

// The range Addr picks from.
const (
	lowest  = 20000
	highest = 32000
)

// Addr returns host:port with a port free now on host.
func Addr(host string) (string, error) {
	var err error
	for try := 0; try < 100; try++ {
		port := strconv.Itoa(lowest + rand.IntN(highest-lowest))
		var l net.Listener
		if l, err = net.Listen("tcp", net.JoinHostPort(host, port)); err == nil {
			l.Close()
			return l.Addr().String(), nil
		}
	}
	return "", fmt.Errorf("no free port on %s: %w", host, err)
}
