package cliwire

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrFallback is Call's answer when the daemon does not serve the request:
// nothing was printed, and the front end runs phx-full instead.
var ErrFallback = errors.New("not served by the CLI server")

// ErrSilent is Call's answer, wrapped, when the daemon sent nothing for
// longer than the connection's timeout (the front end sets AliveTimeout)
// after it began the command: whether the command was done is unknown.
// Silence before it began is ErrFallback.
var ErrSilent = errors.New("the CLI server stopped answering")

// Local is what the front end gives the daemon from its own process.
type Local struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// ReadFile reads a file the command needs, as the user (os.ReadFile).
	ReadFile func(path string) ([]byte, error)
}

// Call sends req on conn and serves the daemon's asks until the command
// ends; it returns the command's exit status. An error other than
// ErrFallback means the command's end is unknown (the daemon went away
// in the middle): the caller must not run it again, it may have been done.
func Call(conn io.ReadWriter, req *Request, l Local) (int, error) {
	// A request the daemon did not get whole was not run: phx-full may.
	b := req.Marshal()
	if len(b) > MaxRequest {
		return 0, fmt.Errorf("%w: a request of %d bytes (arguments and environment) is over the limit of %d", ErrFallback, len(b), MaxRequest)
	}
	if err := WriteFrame(conn, KindRequest, b); err != nil {
		return 0, fmt.Errorf("%w: sending the request: %v", ErrFallback, err)
	}
	for frames := 0; ; frames++ {
		kind, payload, err := ReadFrame(conn)
		if err != nil {
			switch {
			case timedOut(err) && frames == 0:
				return 0, fmt.Errorf("%w: no answer to the request (%v)", ErrFallback, err)
			case timedOut(err):
				return 0, lost(err)
			case frames == 0 && err == io.EOF:
				return 0, fmt.Errorf("the CLI server closed the connection without an answer")
			}
			return 0, fmt.Errorf("the CLI server went away before the command ended: %w", err)
		}
		switch kind {
		case KindAlive: // the command runs; the read's timeout starts again
		case KindStdout:
			l.Stdout.Write(payload)
		case KindStderr:
			l.Stderr.Write(payload)
		case KindReadFile:
			data, rerr := l.ReadFile(string(payload))
			reply := append([]byte{FileOK}, data...)
			if rerr != nil {
				reply = FileAnswer(rerr)
			}
			if err := WriteFrame(conn, KindFile, reply); err != nil {
				return 0, lost(err)
			}
		case KindReadStdin:
			n, perr := ParseUint32(payload)
			if perr != nil || n == 0 || n > MaxFrame {
				return 0, fmt.Errorf("the CLI server asked for stdin wrongly: %v", perr)
			}
			buf := make([]byte, n)
			got, _ := io.ReadAtLeast(l.Stdin, buf, 1)
			if err := WriteFrame(conn, KindStdin, buf[:got]); err != nil {
				return 0, lost(err)
			}
		case KindExit:
			code, perr := ParseUint32(payload)
			if perr != nil {
				return 0, fmt.Errorf("the CLI server's exit status: %v", perr)
			}
			return int(code), nil
		case KindFallback:
			if frames > 0 {
				return 0, fmt.Errorf("the CLI server declined the command after it began")
			}
			return 0, ErrFallback
		default:
			return 0, fmt.Errorf("the CLI server sent a frame of unknown kind %q", kind)
		}
	}
}

// lost is the error of a read or write in the middle of a command.
func lost(err error) error {
	if timedOut(err) {
		return fmt.Errorf("%w (%v)", ErrSilent, err)
	}
	return err
}

// timedOut reports whether err is a read or write that timed out: a
// deadline (net.Conn), or SO_RCVTIMEO or SO_SNDTIMEO on a blocking socket
// (EAGAIN).
func timedOut(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, syscall.EAGAIN)
}

// FileAnswer is the KindFile answer for a failed read.
func FileAnswer(err error) []byte {
	var pe *fs.PathError
	var errno syscall.Errno
	if errors.As(err, &pe) && errors.As(pe.Err, &errno) {
		return append(append([]byte{FileErrno}, Uint32(uint32(errno))...), pe.Op...)
	}
	return append([]byte{FileError}, err.Error()...)
}

// FileErr is the error a KindFile answer for path carries, nil for
// FileOK: for FileErrno the *fs.PathError os.ReadFile returned, so that
// it reads and compares (errors.Is(err, fs.ErrNotExist)) the same.
func FileErr(path string, answer []byte) error {
	if len(answer) == 0 {
		return fmt.Errorf("no answer for %s", path)
	}
	switch answer[0] {
	case FileOK:
		return nil
	case FileErrno:
		if len(answer) >= 5 {
			errno, _ := ParseUint32(answer[1:5])
			return &fs.PathError{Op: string(answer[5:]), Path: path, Err: syscall.Errno(errno)}
		}
	case FileError:
		return errors.New(string(answer[1:]))
	}
	return fmt.Errorf("an answer of unknown kind %d for %s", answer[0], path)
}
