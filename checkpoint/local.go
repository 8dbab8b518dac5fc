package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Committed lists the steps in local (a task's $PHX_CKPT_DIR) whose
// directory holds the Marker, ascending. Directories whose name is not a
// decimal step are ignored; a local that does not exist has none.
func Committed(local string) ([]int64, error) {
	entries, err := os.ReadDir(local)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: committed steps: %w", err)
	}
	var steps []int64
	for _, e := range entries {
		step, ok := parseStep(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		_, err := os.Lstat(filepath.Join(local, e.Name(), Marker))
		switch {
		case err == nil:
			steps = append(steps, step)
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("checkpoint: committed steps: %w", err)
		}
	}
	slices.Sort(steps)
	return steps, nil
}
