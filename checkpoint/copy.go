package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

const (
	// chunk is how much is copied between checks of the context and of
	// the throttle.
	chunk = 256 << 10
	// dirPerm is the mode of the directories this package creates.
	dirPerm = 0o755
)

// copyData copies src to dst a chunk at a time, hashing what it copies;
// before each chunk it checks ctx, after each it waits on t (nil: no
// limit). It returns the number of bytes copied and their SHA-256 in hex.
func copyData(ctx context.Context, dst io.Writer, src io.Reader, t *throttle) (int64, string, error) {
	h := sha256.New()
	buf := make([]byte, chunk)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, "", err
		}
		k, rerr := src.Read(buf)
		if k > 0 {
			if _, err := dst.Write(buf[:k]); err != nil {
				return n, "", err
			}
			h.Write(buf[:k])
			n += int64(k)
			if err := t.wait(ctx, k); err != nil {
				return n, "", err
			}
		}
		if rerr == io.EOF {
			return n, hex.EncodeToString(h.Sum(nil)), nil
		}
		if rerr != nil {
			return n, "", rerr
		}
	}
}

// openRegular opens name under root for reading, refusing anything but a
// regular file: a symbolic link at the end of name is not followed, and
// a named pipe swapped in since the caller looked does not block the open.
func openRegular(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errors.New(irregular(fi.Mode()))
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// irregular says what a file that a checkpoint may not hold is, and what
// to do about it.
func irregular(m fs.FileMode) string {
	what := "not a regular file"
	switch {
	case m&fs.ModeSymlink != 0:
		what = "a symbolic link"
	case m&fs.ModeDevice != 0:
		what = "a device"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	}
	return "is " + what + ": a checkpoint holds only regular files and directories; write the data itself into the step"
}

// createFile creates name under root, with its directories, for writing:
// it must not exist.
func createFile(root *os.Root, name string, mode fs.FileMode) (*os.File, error) {
	if dir := filepath.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, dirPerm); err != nil {
			return nil, err
		}
	}
	return root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
}

// syncDir makes the entries of dir, under root, durable.
func syncDir(root *os.Root, dir string) error {
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
