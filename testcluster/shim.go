package testcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/phalanx-hpc/phalanx/runtime/process"
)

// Shim is the executable the clusters' plain-process runtimes start as
// each task's supervisor, as phalanx-agent starts the phalanx-shim
// installed beside it: set it from BuildShim in TestMain. Empty: the test
// binary itself, whose TestMain must then call process.RunShimIfAsked.
var Shim string

// BuildShim builds phalanx-shim (without cgo, as released) into dir and
// returns its path.
func BuildShim(dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, process.ShimName)
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/phalanx-shim")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build phalanx-shim: %v\n%s", err, out)
	}
	return bin, nil
}

// processRuntime is a plain-process runtime keeping its records in dir,
// its tasks supervised by Shim.
func processRuntime(dir string) *process.Runtime {
	return process.New(dir, process.WithShim(Shim))
}
