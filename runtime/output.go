package runtime

import (
	"os"
)

// OpenOutput opens a task's output file for append, creating it if needed,
// as the task's user (AsUser): a user can name as output only a file it
// may write, or create one where it may, and a file created is the user's.
// An empty path discards the stream.
func OpenOutput(path string, uid, gid int) (*os.File, error) {
	if path == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	var f *os.File
	err := AsUser(uid, gid, func() (err error) {
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		return err
	})
	return f, err
}
