package devcluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A running phx dev takes requests from `phx dev start` on dev.sock in its
// directory, mode 0600: only the user who runs it can ask. The exchange is
// one line each way: "start NAME", then "ok PID" or "error MESSAGE".

// ControlSocket is the running dev cluster's socket in dir.
func ControlSocket(dir string) string { return filepath.Join(dir, "dev.sock") }

// serveControl serves the control socket until Close.
func (c *Cluster) serveControl() error {
	path := ControlSocket(c.Dir)
	os.Remove(path) // a previous phx dev's, killed; the directory's lock is ours
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return fmt.Errorf("control socket: %w", err)
	}
	c.stopCtl = func() { l.Close(); os.Remove(path) }
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go c.control(conn)
		}
	}()
	return nil
}

// control answers one request.
func (c *Cluster) control(conn net.Conn) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(io.LimitReader(conn, 4096)).ReadString('\n')
	if err != nil {
		return
	}
	verb, name, _ := strings.Cut(strings.TrimSpace(line), " ")
	if verb != "start" || name == "" {
		fmt.Fprintf(conn, "error unknown request %q\n", strings.TrimSpace(line))
		return
	}
	pid, err := c.StartAgain(name)
	if err != nil {
		fmt.Fprintf(conn, "error %s\n", err)
		return
	}
	fmt.Fprintf(conn, "ok %d\n", pid)
}

// StartComponent asks the phx dev running on dir to start one of its
// components again (see Cluster.StartAgain), and returns its process ID.
func StartComponent(dir, name string) (int, error) {
	conn, err := net.DialTimeout("unix", ControlSocket(dir), 5*time.Second)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) { // none, or a killed one's
			return 0, fmt.Errorf("no phx dev is running on %s (nothing answers on %s)", dir, ControlSocket(dir))
		}
		return 0, fmt.Errorf("phx dev on %s: %w", dir, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := fmt.Fprintf(conn, "start %s\n", name); err != nil {
		return 0, fmt.Errorf("phx dev on %s: %w", dir, err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("phx dev on %s gave no answer: %w", dir, err)
	}
	line = strings.TrimSuffix(line, "\n")
	if msg, ok := strings.CutPrefix(line, "error "); ok {
		return 0, errors.New(msg)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(line, "ok "))
	if err != nil {
		return 0, fmt.Errorf("phx dev on %s answered %q", dir, line)
	}
	return pid, nil
}
