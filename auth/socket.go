package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultSocket is where daemons serve credentials, and phx asks for them.
const DefaultSocket = "/run/phalanx/auth.sock"

// socketTimeout bounds one exchange on the auth socket.
const socketTimeout = 5 * time.Second

// maxCredential bounds what a client reads from the socket.
const maxCredential = 8 << 10

// Server issues credentials on a Unix socket to whoever connects, for the
// uid and gid the kernel reports for the caller.
type Server struct {
	Keys     *Keyring
	Lifespan time.Duration // LocalLifespan when zero
	Now      func() time.Time
	Log      *slog.Logger
}

// Listen opens the auth socket at path, replacing a stale one, and makes
// it connectable by every local user (each gets a credential for itself
// only). The directory is created, mode 0755, if needed.
func Listen(path string) (*net.UnixListener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("auth socket: %w", err)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("auth socket %s is served by another process: stop it, or give another path", path)
	}
	// A socket nobody serves is a stale one: replace it. Anything else at
	// the path is not ours to remove.
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("auth socket %s: a file that is not a socket is there: give another path", path)
		}
		os.Remove(path)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("auth socket: %w", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		l.Close()
		return nil, fmt.Errorf("auth socket: %w", err)
	}
	return l, nil
}

// Serve answers connections on l until it is closed.
func (s *Server) Serve(l *net.UnixListener) error {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go s.answer(c)
	}
}

func (s *Server) answer(c *net.UnixConn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(socketTimeout))
	tok, err := s.issueFor(c)
	if err != nil {
		s.logger().Warn("auth socket: no credential issued", "err", err)
		fmt.Fprintf(c, "error: %v\n", err)
		return
	}
	io.WriteString(c, tok+"\n")
}

// issueFor signs a credential for the process at the other end of c.
func (s *Server) issueFor(c *net.UnixConn) (string, error) {
	id, err := Peer(c)
	if err != nil {
		return "", err
	}
	now, lifespan := time.Now, s.Lifespan
	if s.Now != nil {
		now = s.Now
	}
	if lifespan == 0 {
		lifespan = LocalLifespan
	}
	return Issue(s.Keys.Signing(), id, now(), lifespan)
}

// Peer is the local user at the other end of c, as the kernel reports it.
func Peer(c *net.UnixConn) (Identity, error) {
	cred, err := peerCred(c)
	if err != nil {
		return Identity{}, err
	}
	return Identity{User: userName(cred.Uid), UID: cred.Uid, GID: cred.Gid, Kind: KindLocal}, nil
}

// peerCred asks the kernel who is at the other end of c.
func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, fmt.Errorf("SO_PEERCRED: %w", serr)
	}
	return cred, nil
}

// userName is uid's name on this host, or the number when it has none.
func userName(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil {
		return u.Username
	}
	return id
}

func (s *Server) logger() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// Fetch asks the auth socket at path for a credential.
func Fetch(ctx context.Context, path string) (string, error) {
	d := net.Dialer{Timeout: socketTimeout}
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return "", fmt.Errorf("cannot get a credential: no Phalanx auth socket at %s (%v): run phx on a cluster host (phalanx-agent or phalanx-controller serves it), set PHX_AUTH_SOCKET, or set PHX_TOKEN to a token from `phx scontrol token`", path, unwrapOp(err))
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(socketTimeout))
	data, err := io.ReadAll(io.LimitReader(c, maxCredential))
	if err != nil {
		return "", fmt.Errorf("auth socket %s: %w", path, err)
	}
	line := strings.TrimSpace(string(data))
	if msg, ok := strings.CutPrefix(line, "error: "); ok {
		return "", fmt.Errorf("auth socket %s refused: %s", path, msg)
	}
	if line == "" {
		return "", fmt.Errorf("auth socket %s closed without a credential", path)
	}
	return line, nil
}

// unwrapOp drops net.OpError's "dial unix PATH:" prefix, already said.
func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

// ServeSocket serves credentials signed with keys on the Unix socket at
// path until the returned stop is called: at once, or, while another
// daemon on the host serves it, once that one stops (Hold).
func ServeSocket(path string, keys *Keyring, log *slog.Logger) (stop func(), err error) {
	return Hold(path, "auth socket", log, func(l *net.UnixListener) {
		(&Server{Keys: keys, Log: log}).Serve(l)
	})
}
