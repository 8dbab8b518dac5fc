package runtime

import (
	"errors"
	"io/fs"
	"os"
)

// OpenOutput opens a task's output file for append, creating it if needed.
// A file it creates is given to uid:gid (each kept when negative), so the
// job's user can read its own output. An empty path discards the stream.
func OpenOutput(path string, uid, gid int) (*os.File, error) {
	if path == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	}
	if err != nil {
		return nil, err
	}
	if uid >= 0 || gid >= 0 {
		if err := f.Chown(uid, gid); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}
