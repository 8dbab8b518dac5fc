package process

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/phalanx-hpc/phalanx/runtime"
)

// openOutputs opens the task's output files for append. When both name the
// same file the same *os.File is returned twice, so the child gets one open
// file description. An empty path discards the stream.
func openOutputs(spec runtime.Spec, cred *syscall.Credential) (stdout, stderr *os.File, err error) {
	stdout, err = openAppend(spec.Stdout, cred)
	if err != nil {
		return nil, nil, fmt.Errorf("task %q: stdout: %w", spec.ID, err)
	}
	if sameFile(spec.Stdout, spec.Stderr) {
		return stdout, stdout, nil
	}
	stderr, err = openAppend(spec.Stderr, cred)
	if err != nil {
		stdout.Close()
		return nil, nil, fmt.Errorf("task %q: stderr: %w", spec.ID, err)
	}
	return stdout, stderr, nil
}

func sameFile(a, b string) bool {
	return filepath.Clean(a) == filepath.Clean(b)
}

// openAppend opens path for append, creating it if needed. A file it creates
// is given to the task's user, so that the user can read their own output.
func openAppend(path string, cred *syscall.Credential) (*os.File, error) {
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
	if cred != nil {
		if err := f.Chown(int(cred.Uid), int(cred.Gid)); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close() // the child holds its own copies; a second Close of a shared file only returns an error
		}
	}
}
