// Package cliwire is the protocol between phx, the small front end users
// run, and the CLI server of a Phalanx daemon on the same host.
//
// Why: every phx command is a new process, and the whole CLI (gRPC, TLS,
// protobuf, the command set) costs a Go process 3-4 ms to start and a TLS
// handshake to reach a controller before the first byte of its work. A
// daemon on the host (the node agent, phx dev) keeps the CLI loaded and one
// connection to the controllers open, so phx (cmd/phx) is a front end of the
// standard library only: it hands its command line, environment and working
// directory to the daemon over a Unix socket, and the daemon runs the
// command as that user would (package cli, Server). Bazel's client and
// server, Nailgun, and PBS's qsub daemon do the same for the same reason.
//
// Who the caller is comes from the kernel (SO_PEERCRED on the socket), as
// on the auth socket beside it; what the caller sends (arguments,
// environment) is what a user could give phx anyway. Files are read by the
// front end, as the user: the daemon asks for each file the command reads
// (KindReadFile) and never opens one itself. stdin is read the same way.
//
// The wire is frames: a kind byte, a 4-byte big-endian length, the payload.
// The front end sends KindRequest, then answers the daemon's KindReadFile
// and KindReadStdin; the daemon sends KindAlive when it starts the command
// and now and then while it runs, output as KindStdout and KindStderr, and
// ends with KindExit, or answers the request with KindFallback when it
// does not serve it (a command it does not run, another cluster named,
// $PHX_TOKEN set): the front end then runs the whole CLI itself, phx-full,
// having printed nothing. Only the package's own two ends speak it, both
// built from this tree, so a version byte in the request is enough.
package cliwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"
)

// Version is the protocol's version; a daemon answers a request of another
// with KindFallback. Version 2 added KindAlive.
const Version = 2

// Frame kinds.
const (
	KindRequest   byte = 'R' // front end: the command (Request)
	KindFile      byte = 'f' // front end: a file's content, or why it could not be read (see FileOK)
	KindStdin     byte = 'i' // front end: bytes of stdin; none at its end
	KindStdout    byte = 'O' // daemon: bytes for stdout
	KindStderr    byte = 'E' // daemon: bytes for stderr
	KindReadFile  byte = 'F' // daemon: read this file (its path)
	KindReadStdin byte = 'I' // daemon: up to N bytes of stdin (4-byte N)
	KindExit      byte = 'X' // daemon: the command ended with this status (4 bytes)
	KindFallback  byte = 'N' // daemon: not served here; the front end runs phx-full
	KindAlive     byte = 'A' // daemon: still running the command (see AliveInterval)
)

// A command may run long and print nothing meanwhile (sbatch --wait). The
// daemon sends KindAlive when it starts running the command and every
// AliveInterval after, and the front end gives up on a daemon it has heard
// nothing from for AliveTimeout (stopped, wedged), as Slurm's commands give
// up on slurmctld after MessageTimeout. Before the first KindAlive nothing
// of the command has run, so the front end runs it in phx-full instead;
// after it, whether the command was done is unknown, and it is not run
// again.
const (
	AliveInterval = 5 * time.Second
	AliveTimeout  = 15 * time.Second
)

// The first byte of a KindFile answer: FileOK and the content; FileErrno,
// the 4-byte errno and the operation that failed (open, read), for the
// daemon to make the same *fs.PathError os.ReadFile returned; FileError
// and the error's text, for any other.
const (
	FileOK    byte = 0
	FileErrno byte = 1
	FileError byte = 2
)

// MaxFrame bounds a frame's payload (a file the command reads, the request).
const MaxFrame = 64 << 20

// DefaultAuthSocket is auth.DefaultSocket (kept equal by a test: this
// package links nothing of the project, to keep phx small).
const DefaultAuthSocket = "/run/phalanx/auth.sock"

// SocketName is the CLI socket's file name, in the directory of the auth
// socket: the daemon that vouches for local users also runs their commands.
const SocketName = "cli.sock"

// SocketPath is where phx looks for the CLI server: $PHX_CLI_SOCKET, else
// cli.sock beside the auth socket ($PHX_AUTH_SOCKET or the default). It is
// "" when PHX_CLI_SOCKET=none: every command then runs in phx-full.
func SocketPath(getenv func(string) string) string {
	if p := getenv("PHX_CLI_SOCKET"); p != "" {
		if p == "none" {
			return ""
		}
		return p
	}
	auth := getenv("PHX_AUTH_SOCKET")
	if auth == "" {
		auth = DefaultAuthSocket
	}
	return filepath.Join(filepath.Dir(auth), SocketName)
}

// The install layout of the two programs: phx-full beside phx (make
// build's bin/), or a package's /usr/bin/phx and
// /usr/libexec/phalanx/phx-full.

// FullCandidates are where phx-full may be for the phx at front, in the
// order they are tried.
func FullCandidates(front string) []string {
	dir := filepath.Dir(front)
	return []string{filepath.Join(dir, "phx-full"), filepath.Join(dir, "..", "libexec", "phalanx", "phx-full")}
}

// FrontCandidates are where phx may be for the phx-full at full.
func FrontCandidates(full string) []string {
	dir := filepath.Dir(full)
	return []string{filepath.Join(dir, "phx"), filepath.Join(dir, "..", "..", "bin", "phx")}
}

// Served are the commands the CLI server runs: those that only talk to the
// controllers. The rest (srun runs tasks here and forwards signals; phx dev
// and phx sim start processes; backups write files) run in phx-full.
var Served = []string{"sbatch", "squeue", "sinfo", "scancel", "sacct"}

// Command is the served command args ask for, or "" when there is none:
// the program's own name when it is one (a sbatch link to phx), else the
// first argument of phx. Any other name (an srun link) and global options
// before the command (--server, ...) are left to phx-full, which knows
// them.
func Command(args []string) string {
	if len(args) == 0 {
		return ""
	}
	name := filepath.Base(args[0])
	if isServed(name) {
		return name
	}
	if name == "phx" && len(args) > 1 && isServed(args[1]) {
		return args[1]
	}
	return ""
}

func isServed(name string) bool {
	for _, s := range Served {
		if s == name {
			return true
		}
	}
	return false
}

// WriteFrame writes one frame.
func WriteFrame(w io.Writer, kind byte, payload []byte) error {
	if len(payload) > MaxFrame {
		return fmt.Errorf("frame of %d bytes is over the limit of %d", len(payload), MaxFrame)
	}
	buf := make([]byte, 5+len(payload))
	buf[0] = kind
	binary.BigEndian.PutUint32(buf[1:5], uint32(len(payload)))
	copy(buf[5:], payload)
	_, err := w.Write(buf)
	return err
}

// MaxRequest bounds a KindRequest frame: arguments and environment, which
// the kernel bounds far lower (ARG_MAX) for any process that has them.
const MaxRequest = 4 << 20

// ReadFrame reads one frame of at most MaxFrame bytes. io.EOF means the
// other end closed between frames; a frame cut short is
// io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader) (kind byte, payload []byte, err error) {
	return ReadFrameMax(r, MaxFrame)
}

// ReadFrameMax reads one frame of at most max bytes. Its buffer grows with
// the bytes that arrive, not with the length the frame claims.
func ReadFrameMax(r io.Reader, max int) (kind byte, payload []byte, err error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, nil, err
	}
	n := int64(binary.BigEndian.Uint32(head[1:]))
	if n > int64(max) {
		return 0, nil, fmt.Errorf("frame of %d bytes is over the limit of %d", n, max)
	}
	var buf bytes.Buffer
	buf.Grow(int(min(n, 64<<10)))
	if _, err := io.CopyN(&buf, r, n); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return head[0], buf.Bytes(), nil
}

// Uint32 is a 4-byte payload.
func Uint32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// ParseUint32 reads a 4-byte payload.
func ParseUint32(b []byte) (uint32, error) {
	if len(b) != 4 {
		return 0, fmt.Errorf("want 4 bytes, got %d", len(b))
	}
	return binary.BigEndian.Uint32(b), nil
}

// Request is what the front end asks: run Args (Args[0] is the program
// name, as in os.Args) in Dir with Env.
type Request struct {
	Version uint32
	Args    []string
	Env     []string // KEY=VALUE, as os.Environ
	Dir     string
}

// Marshal encodes r: the version, then Dir, then each list as a count and
// its strings, every string as a 4-byte length and its bytes.
func (r *Request) Marshal() []byte {
	b := binary.BigEndian.AppendUint32(nil, r.Version)
	b = appendString(b, r.Dir)
	for _, list := range [][]string{r.Args, r.Env} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(list)))
		for _, s := range list {
			b = appendString(b, s)
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

var errShort = errors.New("request cut short")

// ParseRequest decodes what Marshal wrote.
func ParseRequest(b []byte) (*Request, error) {
	d := decoder{b: b}
	r := &Request{Version: d.uint32()}
	r.Dir = d.string()
	r.Args = d.strings()
	r.Env = d.strings()
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%d bytes after the request", len(d.b))
	}
	return r, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uint32() uint32 {
	if d.err != nil || len(d.b) < 4 {
		d.err = errShort
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) string() string {
	n := d.uint32()
	if d.err != nil || uint64(n) > uint64(len(d.b)) {
		d.err = errShort
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) strings() []string {
	n := d.uint32()
	// each string takes at least its 4-byte length
	if d.err != nil || uint64(n)*4 > uint64(len(d.b)) {
		d.err = errShort
		return nil
	}
	out := make([]string, 0, n)
	for i := uint32(0); i < n && d.err == nil; i++ {
		out = append(out, d.string())
	}
	return out
}
