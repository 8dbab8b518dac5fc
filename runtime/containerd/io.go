package containerd

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/containerd/containerd/cio"

	"github.com/phalanx-hpc/phalanx/runtime"
)

// ioCreator returns how the task's output reaches the Spec's files: they
// are opened here, as the task's user (runtime.OpenOutput), and fed from
// the task's FIFOs by copiers in this process; the returned files must be
// closed once the task is deleted. The shim is never given a path: it
// would open it as root, after the user had a chance to swap it for a
// link to a file of root's. (So output written while the agent is down is
// lost, until a logger outlives the agent: issue "Fault recovery".)
func ioCreator(spec runtime.Spec) (cio.Creator, []*os.File, error) {
	if spec.Stdout == "" && spec.Stderr == "" {
		return cio.NullIO, nil, nil
	}
	stdout, err := runtime.OpenOutput(spec.Stdout, spec.UID, spec.GID)
	if err != nil {
		return nil, nil, fmt.Errorf("task %q: stdout: %w", spec.ID, err)
	}
	if filepath.Clean(spec.Stdout) == filepath.Clean(spec.Stderr) {
		return cio.NewCreator(cio.WithStreams(nil, stdout, stdout)), []*os.File{stdout}, nil
	}
	stderr, err := runtime.OpenOutput(spec.Stderr, spec.UID, spec.GID)
	if err != nil {
		stdout.Close()
		return nil, nil, fmt.Errorf("task %q: stderr: %w", spec.ID, err)
	}
	return cio.NewCreator(cio.WithStreams(nil, stdout, stderr)), []*os.File{stdout, stderr}, nil
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
