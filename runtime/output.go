package runtime

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// OpenOutput opens a task's output file for append, creating it if needed,
// as the task's user (AsUser): a user can name as output only a file it
// may write, or create one where it may, and a file created is the user's.
// An empty path discards the stream. A FIFO or a socket is refused: an
// open for writing would block until a reader came, and the task with it.
func OpenOutput(path string, uid, gid int) (*os.File, error) {
	if path == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	var f *os.File
	err := AsUser(uid, gid, func() (err error) {
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|unix.O_NONBLOCK, 0o644)
		return err
	})
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0 {
		err = fmt.Errorf("%s is a FIFO or a socket: name a file", path)
	}
	if err == nil {
		err = unix.SetNonblock(int(f.Fd()), false)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// outputMark is the extended attribute that names the job which last
// emptied an output file (TruncateOnce).
const outputMark = "user.phalanx.job"

// ErrNoMark: the file system keeps no user extended attributes, so
// TruncateOnce cannot tell whether a node of the job emptied the file
// already; it left the file as it was.
var ErrNoMark = errors.New("the file system keeps no extended attributes")

// TruncateOnce empties a job's output file once, however many of the job's
// nodes write into it and in whatever order they start: as the task's user,
// it opens the file (creating it), takes an exclusive lock on it (flock,
// which the kernel's NFS client maps to a POSIX lock), and empties it
// unless its user.phalanx.job attribute already names mark, which it then
// sets. A node that comes later finds the mark and appends to what the
// first wrote; so does a later attempt of the same job (mark names the
// job, not the attempt). It reports whether it emptied the file. A file
// that is not a regular file (/dev/null, a FIFO) is left alone. ErrNoMark:
// the file system keeps no user attributes or has no locks (emptied says
// whether it emptied the file: it never does without its mark).
func TruncateOnce(path string, uid, gid int, mark string) (emptied bool, err error) {
	err = AsUser(uid, gid, func() error {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|unix.O_NONBLOCK, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			return err
		}
		fd := int(f.Fd())
		if err := lockWithin(fd, lockWait); err != nil {
			if noSupport(err) { // Lustre mounted without flock, for one
				return ErrNoMark
			}
			return fmt.Errorf("lock %s: %w", path, err)
		}
		defer unix.Flock(fd, unix.LOCK_UN)
		buf := make([]byte, 256)
		n, err := unix.Fgetxattr(fd, outputMark, buf)
		switch {
		case err == nil && string(buf[:n]) == mark:
			return nil // a node of this job emptied it already
		case err != nil && noSupport(err):
			return ErrNoMark
		case err != nil && !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.ERANGE):
			return fmt.Errorf("read %s of %s: %w", outputMark, path, err)
		}
		// The mark first: a file emptied but left unmarked would be
		// emptied again by the next node, its first lines lost.
		if err := unix.Fsetxattr(fd, outputMark, []byte(mark), 0); err != nil {
			if noSupport(err) || errors.Is(err, unix.EPERM) {
				return ErrNoMark
			}
			return fmt.Errorf("mark %s: %w", path, err)
		}
		if err := f.Truncate(0); err != nil {
			return err
		}
		emptied = true
		return nil
	})
	return emptied, err
}

// lockWait bounds the wait for an output file's lock: the nodes of a job
// hold it for a moment each; a lock held longer (the user's own, a hung
// lock daemon) must not keep the task from starting.
const lockWait = 30 * time.Second

// lockWithin takes an exclusive flock on fd, trying again until wait has
// passed.
func lockWithin(fd int, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("held by another process for over %s", wait)
		}
		time.Sleep(delay)
	}
}

// noSupport: a file system without locks or user attributes.
func noSupport(err error) bool {
	return errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.ENOLCK)
}

// Truncate empties a task's output file as its user, when it is a regular
// file: for a file that one node alone writes, where no mark is needed.
func Truncate(path string, uid, gid int) error {
	return AsUser(uid, gid, func() error {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|unix.O_NONBLOCK, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			return err
		}
		return f.Truncate(0)
	})
}
