package runtime

import (
	"fmt"
	"os"

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
