package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/phalanx-hpc/phalanx/internal/cliwire"
)

// session is one served command's exchange with the caller's phx: output
// frames out, asks for files and stdin out and their answers in. The
// command asks one thing at a time (ask holds a lock), and a reader
// goroutine takes every frame the caller sends: an answer goes to the ask
// waiting for it; the end of the connection (the caller interrupted)
// cancels the command.
type session struct {
	c      net.Conn
	cancel context.CancelFunc

	wmu     sync.Mutex // one frame at a time on c
	ask     sync.Mutex // one ask outstanding
	answers chan frame
	gone    chan struct{} // closed when the caller's side ended
}

type frame struct {
	kind    byte
	payload []byte
}

func newSession(c net.Conn, cancel context.CancelFunc) *session {
	return &session{c: c, cancel: cancel, answers: make(chan frame, 1), gone: make(chan struct{})}
}

// read takes the caller's frames until the connection ends.
func (s *session) read() {
	defer close(s.gone)
	defer s.cancel()
	for {
		kind, payload, err := cliwire.ReadFrame(s.c)
		if err != nil {
			return
		}
		if kind != cliwire.KindFile && kind != cliwire.KindStdin {
			return // not an answer: the caller is confused; end it
		}
		select {
		case s.answers <- frame{kind, payload}:
		default:
			return // an answer nobody asked for
		}
	}
}

// keepAlive tells the caller the command runs: KindAlive now and every
// interval until the returned stop is called.
func (s *session) keepAlive(interval time.Duration) (stop func()) {
	s.send(cliwire.KindAlive, nil)
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-s.gone:
				return
			case <-t.C:
				s.send(cliwire.KindAlive, nil)
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

func (s *session) send(kind byte, payload []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return cliwire.WriteFrame(s.c, kind, payload)
}

var errCallerGone = errors.New("phx that asked for this command has gone away")

// request sends an ask and waits for its answer, of kind want.
func (s *session) request(kind byte, payload []byte, want byte) ([]byte, error) {
	s.ask.Lock()
	defer s.ask.Unlock()
	if err := s.send(kind, payload); err != nil {
		return nil, errCallerGone
	}
	select {
	case f := <-s.answers:
		if f.kind != want {
			s.c.Close()
			return nil, fmt.Errorf("phx answered %q to %q", f.kind, kind)
		}
		return f.payload, nil
	case <-s.gone:
		return nil, errCallerGone
	}
}

// readFile has the caller read path, relative to its working directory.
func (s *session) readFile(path string) ([]byte, error) {
	b, err := s.request(cliwire.KindReadFile, []byte(path), cliwire.KindFile)
	if err != nil {
		return nil, err
	}
	if err := cliwire.FileErr(path, b); err != nil {
		return nil, err
	}
	return b[1:], nil
}

// stdin reads the caller's stdin.
func (s *session) stdin() io.Reader { return stdinReader{s} }

type stdinReader struct{ s *session }

// stdinChunk bounds one ask for stdin.
const stdinChunk = 1 << 20

func (r stdinReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	b, err := r.s.request(cliwire.KindReadStdin, cliwire.Uint32(uint32(min(len(p), stdinChunk))), cliwire.KindStdin)
	if err != nil {
		return 0, err
	}
	if len(b) == 0 {
		return 0, io.EOF
	}
	return copy(p, b), nil
}

// writer sends what is written as frames of kind (stdout or stderr).
func (s *session) writer(kind byte) io.Writer { return frameWriter{s, kind} }

type frameWriter struct {
	s    *session
	kind byte
}

func (w frameWriter) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		n := min(len(rest), cliwire.MaxFrame)
		if err := w.s.send(w.kind, rest[:n]); err != nil {
			return len(p) - len(rest), errCallerGone
		}
		rest = rest[n:]
	}
	return len(p), nil
}
