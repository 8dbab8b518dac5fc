package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/phalanx-hpc/phalanx/runtime/process"
)

// shimPath is the executable that supervises plain-process tasks: --shim,
// else phalanx-shim beside this executable, else "" (this executable,
// which runs as the supervisor when started as phalanx-shim).
func shimPath(flag string, log *slog.Logger) (string, error) {
	if flag != "" {
		fi, err := os.Stat(flag)
		switch {
		case err != nil:
			return "", fmt.Errorf("--shim %s: %w (make build puts phalanx-shim beside phalanx-agent)", flag, err)
		case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
			return "", fmt.Errorf("--shim %s: not an executable file", flag)
		}
		return flag, nil
	}
	exe, err := os.Executable()
	if err == nil {
		if p := process.ShimBeside(exe); p != "" {
			return p, nil
		}
	}
	log.Info("no phalanx-shim beside phalanx-agent: plain-process tasks are supervised by phalanx-agent itself (about 18 MiB each instead of 3)", "looked_in", exe)
	return "", nil
}
