package process

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/phalanx-hpc/phalanx/runtime"
)

// openOutputs opens the task's output files for append. When both name the
// same file the same *os.File is returned twice, so the child gets one open
// file description. An empty path discards the stream.
func openOutputs(spec runtime.Spec, cred *syscall.Credential) (stdout, stderr *os.File, err error) {
	uid, gid := -1, -1 // files it creates belong to the task's user
	if cred != nil {
		uid, gid = int(cred.Uid), int(cred.Gid)
	}
	stdout, err = runtime.OpenOutput(spec.Stdout, uid, gid)
	if err != nil {
		return nil, nil, fmt.Errorf("task %q: stdout: %w", spec.ID, err)
	}
	if sameFile(spec.Stdout, spec.Stderr) {
		return stdout, stdout, nil
	}
	stderr, err = runtime.OpenOutput(spec.Stderr, uid, gid)
	if err != nil {
		stdout.Close()
		return nil, nil, fmt.Errorf("task %q: stderr: %w", spec.ID, err)
	}
	return stdout, stderr, nil
}

func sameFile(a, b string) bool {
	return filepath.Clean(a) == filepath.Clean(b)
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close() // the child holds its own copies; a second Close of a shared file only returns an error
		}
	}
}
