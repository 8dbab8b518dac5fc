package devcluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/phalanx-hpc/phalanx/config"
)

// The dev cluster's node health program. Its controllers read
// Dir/phalanx.conf, which names Dir/healthcheck as HealthCheckProgram, run
// by every agent every healthCheckInterval seconds. The program fails a
// node (printing NHC's ERROR: line) while the node's health-fail file
// exists: `phx dev fault health-fail` writes it, health-pass removes it.

// healthCheckInterval is the dev health program's HealthCheckInterval, in
// seconds: short, so that drills see their effect soon.
const healthCheckInterval = 2

// configFile is the dev controllers' config.
func configFile(dir string) string { return filepath.Join(dir, "phalanx.conf") }

// healthFail is the file whose presence fails node's health program.
func healthFail(dir, node string) string { return filepath.Join(dir, "agents", node, "health-fail") }

// writeHealthCheck writes the health program and the config that names
// it (again at every start: they follow the directory if it moved).
// With include (a config the cluster was made from: phx dev --config),
// the config includes it, and names the dev health program only when it
// names none of its own.
func writeHealthCheck(dir, include string) error {
	prog := filepath.Join(dir, "healthcheck")
	script := fmt.Sprintf(`#!/bin/sh
# phx dev's node health program: the node fails while
# %s exists (phx dev fault health-fail; health-pass mends it).
f=%q/agents/"$SLURMD_NODENAME"/health-fail
if [ -e "$f" ]; then
	echo "ERROR: dev health check: $(head -c 200 "$f")"
	exit 1
fi
`, healthFail(dir, "NODE"), dir)
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		return err
	}
	conf := "# Written by phx dev at every start.\n"
	own := false
	if include != "" {
		c, err := config.Load(include)
		if err != nil {
			return fmt.Errorf("--config: %w", err)
		}
		own = c.HealthCheck.Program != ""
		conf += "Include " + include + "\n"
	}
	if !own {
		conf += fmt.Sprintf("HealthCheckProgram=%s\nHealthCheckInterval=%d\n", prog, healthCheckInterval)
	}
	if err := linkGres(dir, include); err != nil {
		return err
	}
	return os.WriteFile(configFile(dir), []byte(conf), 0o644)
}

// linkGres makes the gres.conf beside the included config (Slurm reads it
// from beside slurm.conf) the one beside the dev controllers' config,
// which is where they read it, at start and at scontrol reconfigure: a
// link, so that what reconfigure reads is the file as it is then (one
// written later included: while there is none, the link leads nowhere,
// which the config package reads as no gres.conf).
func linkGres(dir, include string) error {
	link := filepath.Join(dir, "gres.conf")
	if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if include == "" {
		return nil
	}
	return os.Symlink(filepath.Join(filepath.Dir(include), "gres.conf"), link)
}
