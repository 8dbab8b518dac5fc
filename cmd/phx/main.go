// Command phx is Phalanx's command line as users run it: a small front end
// of the standard library only, which starts in about a millisecond.
//
// The commands a daemon on this host can run for the caller (sbatch,
// squeue, sinfo, scancel, sacct; see internal/cliwire) go to its CLI socket,
// cli.sock beside the auth socket: the daemon runs them on the connection
// to the controllers it keeps open, and this process passes its output on,
// reads the files the command needs, and exits with its status. Every other
// command, and every command when no daemon serves one here (or declines:
// --server and the like, $PHX_TOKEN, another cluster's $PHX_SERVER), runs
// in phx-full, the whole CLI (package cli), which phx becomes with execve:
// phx-full beside phx, or in ../libexec/phalanx/. PHX_CLI_SOCKET=none
// always runs phx-full.
//
// A server that says nothing for cliwire.AliveTimeout (it tells a running
// command's phx that it runs every cliwire.AliveInterval) is given up on:
// before the command began, phx-full runs it; after, phx says so and exits
// 1, since whether the command was done is unknown.
package main

import (
	"errors"
	"os"
	"strconv"
	"syscall"

	"github.com/phalanx-hpc/phalanx/internal/cliwire"
)

func main() {
	// With $PHX_TOKEN the server would decline: never send it the token.
	if cliwire.Command(os.Args) != "" && os.Getenv("PHX_TOKEN") == "" {
		if path := cliwire.SocketPath(os.Getenv); path != "" {
			code, err := viaServer(path)
			switch {
			case err == nil:
				os.Exit(code)
			case errors.Is(err, errNoServer), errors.Is(err, cliwire.ErrFallback):
			case errors.Is(err, cliwire.ErrSilent):
				os.Stderr.WriteString("phx: the CLI server at " + path + " sent nothing for " + silence.String() +
					" while it ran the command: whether it was done is unknown; PHX_CLI_SOCKET=none runs phx without the server\n")
				os.Exit(1)
			default:
				// The command may have been done: never run it again.
				os.Stderr.WriteString("phx: " + err.Error() + "\n")
				os.Exit(1)
			}
		}
	}
	os.Exit(execFull())
}

var errNoServer = errors.New("no CLI server")

// silence is how long phx waits for a word from the CLI server: it sends
// one at least every cliwire.AliveInterval while it runs a command.
var silence = cliwire.AliveTimeout

// viaServer has the CLI server at path run the command.
func viaServer(path string) (int, error) {
	dir, err := os.Getwd()
	if err != nil {
		return 0, errNoServer // phx-full says why
	}
	f, err := dial(path)
	if err != nil {
		return 0, errNoServer
	}
	defer f.Close()
	req := &cliwire.Request{Version: cliwire.Version, Args: os.Args, Env: os.Environ(), Dir: dir}
	return cliwire.Call(f, req, cliwire.Local{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, ReadFile: os.ReadFile})
}

// dial connects to the Unix socket at path, with the system calls alone
// (package net would add to every start what it initialises). A read or
// write on it that waits longer than silence fails (EAGAIN).
func dial(path string) (*os.File, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	tv := syscall.NsecToTimeval(silence.Nanoseconds())
	for _, opt := range []int{syscall.SO_RCVTIMEO, syscall.SO_SNDTIMEO} {
		if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, opt, &tv); err != nil {
			syscall.Close(fd)
			return nil, err
		}
	}
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if err != syscall.EINTR {
			break
		}
	}
	if err == nil {
		err = trusted(fd, path)
	}
	if err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// trusted refuses a server that neither root nor the caller runs (the
// kernel says who, SO_PEERCRED): anyone who could put a socket there would
// be handed the caller's environment and the files the command reads.
func trusted(fd int, path string) error {
	cred, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	if err != nil {
		return err
	}
	if !trustedServer(int(cred.Uid), os.Getuid()) {
		os.Stderr.WriteString("phx: not using the CLI server at " + path + ": uid " + strconv.Itoa(int(cred.Uid)) +
			" runs it, neither root nor you (is its directory writable by others?)\n")
		return errNoServer
	}
	return nil
}

// execFull becomes phx-full with the same arguments and environment; it
// returns only when there is none to run.
// trustedServer reports whether a CLI server run by uid may serve a caller
// of uid self: root's (a daemon's) or the caller's own (phx dev's).
func trustedServer(uid, self int) bool { return uid == 0 || uid == self }

func execFull() int {
	exe, err := os.Executable()
	if err != nil {
		os.Stderr.WriteString("phx: cannot find its own executable: " + err.Error() + "\n")
		return 1
	}
	candidates := cliwire.FullCandidates(exe)
	for _, p := range candidates {
		err = syscall.Exec(p, os.Args, os.Environ())
		if !errors.Is(err, syscall.ENOENT) {
			os.Stderr.WriteString("phx: cannot run " + p + ": " + err.Error() + "\n")
			return 1
		}
	}
	os.Stderr.WriteString("phx: phx-full is not installed: looked for " + candidates[0] + " and " + candidates[1] + " (make build puts both phx and phx-full in bin/)\n")
	return 1
}
