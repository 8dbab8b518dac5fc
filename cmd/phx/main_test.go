package main

import (
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/internal/cliwire"
)

// A CLI server that says nothing: before the command began, phx leaves it
// to phx-full; after, it gives up; a server that keeps saying the command
// runs is waited for as long as it takes (each word restarts the
// socket's timeout).
func TestViaServerSilence(t *testing.T) {
	old := silence
	silence = 150 * time.Millisecond
	t.Cleanup(func() { silence = old })
	for _, c := range []struct {
		name   string
		daemon func(net.Conn)
		want   error // nil: exit status 0
	}{
		{"no answer", func(net.Conn) { time.Sleep(time.Second) }, cliwire.ErrFallback},
		{"silent once begun", func(c net.Conn) {
			cliwire.WriteFrame(c, cliwire.KindAlive, nil)
			time.Sleep(time.Second)
		}, cliwire.ErrSilent},
		{"runs long", func(c net.Conn) {
			for end := time.Now().Add(600 * time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				cliwire.WriteFrame(c, cliwire.KindAlive, nil)
			}
			cliwire.WriteFrame(c, cliwire.KindExit, cliwire.Uint32(0))
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), cliwire.SocketName)
			l, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			go func() {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				defer conn.Close()
				if _, _, err := cliwire.ReadFrameMax(conn, cliwire.MaxRequest); err == nil {
					c.daemon(conn)
				}
			}()
			start := time.Now()
			code, err := viaServer(path)
			took := time.Since(start)
			switch {
			case c.want == nil && (err != nil || code != 0):
				t.Errorf("status %d, error %v; want 0", code, err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Errorf("error %v; want %v", err, c.want)
			case c.want != nil && took > 900*time.Millisecond:
				t.Errorf("gave up after %s; want about %s", took, silence)
			}
		})
	}
}

// phx hands its environment and files only to a CLI server that root or
// the caller runs; and it connects to one it runs itself.
func TestTrustedServer(t *testing.T) {
	for _, tc := range []struct {
		uid, self int
		want      bool
	}{{0, 1000, true}, {1000, 1000, true}, {1001, 1000, false}, {0, 0, true}, {1001, 0, false}} {
		if got := trustedServer(tc.uid, tc.self); got != tc.want {
			t.Errorf("server of uid %d for caller %d: trusted %v; want %v", tc.uid, tc.self, got, tc.want)
		}
	}
	path := filepath.Join(t.TempDir(), "cli.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f, err := dial(path)
	if err != nil {
		t.Fatalf("dial a server this process runs: %v", err)
	}
	f.Close()
}
