package cliwire

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRequestRoundTrip(t *testing.T) {
	for _, r := range []*Request{
		{Version: Version, Args: []string{"phx", "sbatch", "-N", "2", "job.sh"}, Env: []string{"A=1", "EMPTY=", "MULTI=a=b"}, Dir: "/home/u"},
		{Version: 7, Args: []string{"sbatch"}, Env: []string{}, Dir: "/"},
		{Version: Version, Args: []string{"phx", "squeue", "ünïcode", ""}, Env: []string{"X=" + strings.Repeat("y", 70000)}, Dir: "/tmp/a b"},
	} {
		got, err := ParseRequest(r.Marshal())
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("round trip: got %+v, want %+v", got, r)
		}
	}
}

func TestParseRequestRefusesDamage(t *testing.T) {
	good := (&Request{Version: Version, Args: []string{"phx", "sbatch"}, Env: []string{"A=1"}, Dir: "/d"}).Marshal()
	for n := 0; n < len(good); n++ {
		if _, err := ParseRequest(good[:n]); err == nil {
			t.Errorf("a request cut to %d of %d bytes parsed", n, len(good))
		}
	}
	if _, err := ParseRequest(append(good, 0)); err == nil {
		t.Error("a request with a trailing byte parsed")
	}
	// A count that claims more strings than there are bytes for must not
	// make it allocate them.
	huge := []byte{0, 0, 0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	if _, err := ParseRequest(huge); err == nil {
		t.Error("a request claiming 4 billion arguments parsed")
	}
}

func TestFrames(t *testing.T) {
	var b bytes.Buffer
	for _, f := range []struct {
		kind    byte
		payload string
	}{{KindStdout, "hello\n"}, {KindExit, "\x00\x00\x00\x03"}, {KindStdin, ""}} {
		if err := WriteFrame(&b, f.kind, []byte(f.payload)); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"O:hello\n", "X:\x00\x00\x00\x03", "i:"} {
		kind, payload, err := ReadFrame(&b)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(kind) + ":" + string(payload); got != want {
			t.Errorf("frame %q, want %q", got, want)
		}
	}
	if _, _, err := ReadFrame(&b); err != io.EOF {
		t.Errorf("after the last frame: %v, want io.EOF", err)
	}
	if _, _, err := ReadFrame(bytes.NewReader([]byte{'O', 0, 0, 0, 9, 'a'})); err != io.ErrUnexpectedEOF {
		t.Errorf("a frame cut short: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, _, err := ReadFrame(bytes.NewReader([]byte{'O', 0xff, 0xff, 0xff, 0xff})); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("a frame over MaxFrame: %v", err)
	}
}

func TestCommand(t *testing.T) {
	for args, want := range map[string]string{
		"phx sbatch job.sh":        "sbatch",
		"/usr/bin/phx squeue -u x": "squeue",
		"/usr/bin/sbatch job.sh":   "sbatch",
		"sinfo":                    "sinfo",
		"phx scancel 3":            "scancel",
		"phx sacct -j 3":           "sacct",
		"phx scontrol show job 3":  "", // writes files (backup) and more: phx-full
		"phx --server h:1 sbatch":  "", // global options: phx-full
		"phx srun hostname":        "", // runs tasks here
		"phx dev":                  "",
		"phx":                      "",
		"srun sbatch":              "", // srun's argument, not a command
		"/opt/x/phx-full sbatch":   "", // not phx
	} {
		if got := Command(strings.Fields(args)); got != want {
			t.Errorf("Command(%q) = %q, want %q", args, got, want)
		}
	}
}

func TestSocketPath(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "/run/phalanx/cli.sock"},
		{map[string]string{"PHX_AUTH_SOCKET": "/tmp/dev/auth.sock"}, "/tmp/dev/cli.sock"},
		{map[string]string{"PHX_AUTH_SOCKET": "/tmp/dev/auth.sock", "PHX_CLI_SOCKET": "/x/c.sock"}, "/x/c.sock"},
		{map[string]string{"PHX_CLI_SOCKET": "none"}, ""},
	} {
		if got := SocketPath(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("SocketPath(%v) = %q, want %q", c.env, got, c.want)
		}
	}
}

// TestCall plays the daemon's side by hand: output, an ask for a file (one
// there, one missing), an ask for stdin, the exit status.
func TestCall(t *testing.T) {
	front, daemon := net.Pipe()
	dir := t.TempDir()
	os.WriteFile(dir+"/job.sh", []byte("#!/bin/sh\n"), 0o644)
	type result struct {
		code int
		err  error
	}
	done := make(chan result)
	var stdout, stderr bytes.Buffer
	go func() {
		code, err := Call(front, &Request{Version: Version, Args: []string{"phx", "sbatch"}, Dir: dir}, Local{
			Stdin: strings.NewReader("from stdin"), Stdout: &stdout, Stderr: &stderr,
			ReadFile: func(p string) ([]byte, error) { return os.ReadFile(dir + "/" + p) },
		})
		front.Close()
		done <- result{code, err}
	}()
	expect := func(kind byte, payload string) {
		t.Helper()
		k, p, err := ReadFrame(daemon)
		if err != nil || k != kind || string(p) != payload {
			t.Fatalf("got %q %q %v, want %q %q", k, p, err, kind, payload)
		}
	}
	k, p, err := ReadFrame(daemon)
	if err != nil || k != KindRequest {
		t.Fatalf("first frame %q %v", k, err)
	}
	if r, err := ParseRequest(p); err != nil || r.Dir != dir {
		t.Fatalf("request %+v %v", r, err)
	}
	WriteFrame(daemon, KindAlive, nil)
	WriteFrame(daemon, KindStdout, []byte("out "))
	WriteFrame(daemon, KindAlive, nil)
	WriteFrame(daemon, KindReadFile, []byte("job.sh"))
	expect(KindFile, "\x00#!/bin/sh\n")
	WriteFrame(daemon, KindReadFile, []byte("missing.sh"))
	_, p, _ = ReadFrame(daemon)
	if err := FileErr("missing.sh", p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file's answer: %q, read as %v", p, err)
	}
	WriteFrame(daemon, KindReadStdin, Uint32(4))
	expect(KindStdin, "from")
	WriteFrame(daemon, KindStderr, []byte("err"))
	WriteFrame(daemon, KindExit, Uint32(3))
	r := <-done
	if r.err != nil || r.code != 3 || stdout.String() != "out " || stderr.String() != "err" {
		t.Errorf("Call = %d %v, stdout %q stderr %q", r.code, r.err, stdout.String(), stderr.String())
	}
}

func TestCallFallbackAndLoss(t *testing.T) {
	run := func(daemonSide func(net.Conn)) (int, error) {
		front, daemon := net.Pipe()
		go func() {
			ReadFrame(daemon)
			daemonSide(daemon)
			daemon.Close()
		}()
		return Call(front, &Request{Version: Version, Args: []string{"sbatch"}, Dir: "/"}, Local{Stdout: io.Discard, Stderr: io.Discard})
	}
	if _, err := run(func(c net.Conn) { WriteFrame(c, KindFallback, []byte("PHX_TOKEN is set")) }); !errors.Is(err, ErrFallback) {
		t.Errorf("fallback first: %v, want ErrFallback", err)
	}
	_, err := run(func(c net.Conn) {
		WriteFrame(c, KindStdout, []byte("x"))
		WriteFrame(c, KindFallback, nil)
	})
	if err == nil || errors.Is(err, ErrFallback) {
		t.Errorf("fallback after output: %v, want an error that is not ErrFallback (the command began)", err)
	}
	if _, err := run(func(c net.Conn) { WriteFrame(c, KindStdout, []byte("x")) }); err == nil || errors.Is(err, ErrFallback) {
		t.Errorf("connection lost before the exit status: %v, want an error that is not ErrFallback", err)
	}
}

// TestCallSilence: a daemon that says nothing for the connection's
// timeout before the command began leaves it to phx-full; after it began,
// whether it was done is unknown.
func TestCallSilence(t *testing.T) {
	run := func(daemonSide func(net.Conn)) error {
		front, daemon := net.Pipe()
		defer daemon.Close()
		go func() {
			ReadFrame(daemon)
			daemonSide(daemon)
		}()
		front.SetDeadline(time.Now().Add(100 * time.Millisecond))
		_, err := Call(front, &Request{Version: Version, Args: []string{"sbatch"}, Dir: "/"}, Local{Stdin: strings.NewReader("abcd"), Stdout: io.Discard, Stderr: io.Discard})
		return err
	}
	if err := run(func(net.Conn) {}); !errors.Is(err, ErrFallback) {
		t.Errorf("no answer at all: %v, want ErrFallback", err)
	}
	if err := run(func(c net.Conn) { WriteFrame(c, KindAlive, nil) }); !errors.Is(err, ErrSilent) || errors.Is(err, ErrFallback) {
		t.Errorf("silent after it began: %v, want ErrSilent", err)
	}
	if err := run(func(c net.Conn) { WriteFrame(c, KindAlive, nil); WriteFrame(c, KindReadStdin, Uint32(4)) }); !errors.Is(err, ErrSilent) {
		t.Errorf("stdin's answer not taken: %v, want ErrSilent", err)
	}
}

func TestFileAnswers(t *testing.T) {
	_, notExist := os.ReadFile("/nonexistent/x")
	_, isDir := os.ReadFile("/")
	for _, c := range []struct {
		err  error
		want error // what the daemon's error must match with errors.Is
	}{{notExist, fs.ErrNotExist}, {isDir, syscall.EISDIR}, {errors.New("odd"), nil}} {
		path := "/nonexistent/x"
		if c.err == isDir {
			path = "/"
		}
		got := FileErr(path, FileAnswer(c.err))
		if got == nil || got.Error() != c.err.Error() {
			t.Errorf("%v came back as %v", c.err, got)
		}
		if c.want != nil && !errors.Is(got, c.want) {
			t.Errorf("%v came back as %v, which is not %v", c.err, got, c.want)
		}
	}
	if err := FileErr("/x", []byte{FileOK, 'a'}); err != nil {
		t.Errorf("FileOK: %v", err)
	}
	for _, bad := range [][]byte{nil, {FileErrno, 0}, {9}} {
		if FileErr("/x", bad) == nil {
			t.Errorf("answer %q read as success", bad)
		}
	}
}

func TestReadFrameMax(t *testing.T) {
	var b bytes.Buffer
	WriteFrame(&b, KindRequest, make([]byte, 100))
	if _, _, err := ReadFrameMax(bytes.NewReader(b.Bytes()), 99); err == nil {
		t.Error("a 100-byte frame read under a limit of 99")
	}
	if _, p, err := ReadFrameMax(bytes.NewReader(b.Bytes()), 100); err != nil || len(p) != 100 {
		t.Errorf("a 100-byte frame under a limit of 100: %d bytes, %v", len(p), err)
	}
}
