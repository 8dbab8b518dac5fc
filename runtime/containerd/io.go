package containerd

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/containerd/containerd/cio"

	"github.com/phalanx-hpc/phalanx/runtime"
)

// ioCreator returns how the task's output reaches the Spec's files. One
// file for both streams is written by the shim itself (file:// log URI);
// two files are fed from FIFOs by copiers in this process, and the returned
// files must be closed once the task is deleted.
func ioCreator(spec runtime.Spec) (cio.Creator, []*os.File, error) {
	if spec.Stdout == "" && spec.Stderr == "" {
		return cio.NullIO, nil, nil
	}
	if filepath.Clean(spec.Stdout) == filepath.Clean(spec.Stderr) {
		path, err := filepath.Abs(spec.Stdout)
		if err != nil {
			return nil, nil, err
		}
		if err := precreate(path, spec.UID, spec.GID); err != nil {
			return nil, nil, fmt.Errorf("task %q: output: %w", spec.ID, err)
		}
		return cio.LogFile(path), nil, nil
	}
	stdout, err := runtime.OpenOutput(spec.Stdout, spec.UID, spec.GID)
	if err != nil {
		return nil, nil, fmt.Errorf("task %q: stdout: %w", spec.ID, err)
	}
	stderr, err := runtime.OpenOutput(spec.Stderr, spec.UID, spec.GID)
	if err != nil {
		stdout.Close()
		return nil, nil, fmt.Errorf("task %q: stderr: %w", spec.ID, err)
	}
	return cio.NewCreator(cio.WithStreams(nil, stdout, stderr)), []*os.File{stdout, stderr}, nil
}

// precreate creates path, if missing, readable by the task's user, so that
// the shim (which would create it 0600 for root) appends to it.
func precreate(path string, uid, gid int) error {
	f, err := runtime.OpenOutput(path, uid, gid)
	if err != nil {
		return err
	}
	return f.Close()
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
