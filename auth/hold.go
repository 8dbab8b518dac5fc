package auth

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// holdPoll is how often a daemon waiting for a host socket checks whether
// the process serving it has gone.
const holdPoll = time.Second

// servedElsewhere is in Listen's answer for a socket another process
// serves: waiting mends it.
const servedElsewhere = "is served by another process"

// Hold serves the host-wide Unix socket at path with serve as soon as this
// process can: at once when no other process serves it, else once the one
// that does has stopped. Several Phalanx daemons may run on one host (a
// controller and an agent, an agent and a login node's authd); one serves
// the auth and CLI sockets, and when it stops another takes them over
// within holdPoll, instead of leaving local users without credentials.
//
// Which one serves is decided by an advisory lock on path.lock (flock),
// which the kernel releases when its holder exits, however it exits; the
// holder then replaces the socket it left. serve is called once, in its
// own goroutine, with the listener, and must return when the listener is
// closed. stop closes it, waits for serve, and lets the lock go. Hold fails
// only for what waiting cannot mend: the directory cannot be made, or a
// file that is not a socket is at path. what names the socket in logs.
func Hold(path, what string, log *slog.Logger, serve func(*net.UnixListener)) (stop func(), err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := ownLock(lock); err != nil {
		lock.Close()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	h := &holder{path: path, what: what, log: log, lock: lock, serve: serve, quit: make(chan struct{})}
	switch l, err := h.try(); {
	case l != nil:
		h.start(l)
		log.Info("serving the socket", "socket", path, "what", what)
	case err != nil && !strings.Contains(err.Error(), servedElsewhere):
		lock.Close()
		return nil, fmt.Errorf("%s: %w", what, err)
	default:
		log.Info("another process serves the socket; taking it over when it stops", "socket", path, "what", what)
		h.wg.Add(1)
		go h.wait()
	}
	return h.stop, nil
}

type holder struct {
	path, what string
	log        *slog.Logger
	lock       *os.File
	serve      func(*net.UnixListener)
	quit       chan struct{}
	wg         sync.WaitGroup // the waiting loop and serve

	mu     sync.Mutex
	l      *net.UnixListener // while serving
	locked bool
}

// try takes the lock and the socket; a nil listener and nil error: the
// lock is held by another process.
func (h *holder) try() (*net.UnixListener, error) {
	if !h.locked {
		switch err := unix.Flock(int(h.lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); {
		case errors.Is(err, unix.EWOULDBLOCK):
			return nil, nil
		case err != nil:
			return nil, err
		}
		h.locked = true
	}
	return Listen(h.path)
}

// start serves l unless stop was called; it reports whether it does.
func (h *holder) start(l *net.UnixListener) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if isClosed(h.quit) {
		l.Close()
		return false
	}
	h.l = l
	h.wg.Add(1) // the caller holds one count already, or runs before stop can
	go func() {
		defer h.wg.Done()
		h.serve(l)
	}()
	return true
}

// wait checks every holdPoll until it can serve, or stop is called.
func (h *holder) wait() {
	defer h.wg.Done()
	t := time.NewTicker(holdPoll)
	defer t.Stop()
	for {
		select {
		case <-h.quit:
			return
		case <-t.C:
		}
		l, err := h.try()
		if l == nil {
			if err != nil && !strings.Contains(err.Error(), servedElsewhere) {
				h.log.Warn("cannot take the socket over; trying again", "socket", h.path, "what", h.what, "err", err)
			}
			continue
		}
		if h.start(l) {
			h.log.Info("took the socket over: the process that served it stopped", "socket", h.path, "what", h.what)
		}
		return
	}
}

// stop closes the listener, waits for serve (or the waiting loop) to
// return, and lets the lock go.
func (h *holder) stop() {
	h.mu.Lock()
	if !isClosed(h.quit) {
		close(h.quit)
	}
	l := h.l
	h.mu.Unlock()
	if l != nil {
		l.Close()
	}
	h.wg.Wait()
	h.lock.Close() // lets the lock go
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// ownLock refuses a lock file that neither root nor this process's user
// owns: whoever made it could hold it, and serve the socket in a daemon's
// place. The socket's directory must be writable by root (or the daemon's
// user) only, as /run/phalanx is.
func ownLock(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, neither root nor this daemon's user: the socket's directory must be writable by root only (remove the file, and chmod the directory)", f.Name(), st.Uid)
	}
	return nil
}
