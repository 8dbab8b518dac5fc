package nodeagent

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/runtime"
)

// Slurm's commands in a container job. A plain-process job finds scontrol,
// squeue, sbatch, scancel, sinfo and sacct on its PATH as links to the phx
// client, a host path. An image has no such path, so the agent mounts the
// client (a static binary, which runs in any image) over an empty
// <job>/bin/phx, the links' target there, and with it, read-only, what the
// client needs to reach the controllers as the job's user, at the paths it
// looks for them: the local credential socket (the job's PHX_AUTH_SOCKET,
// else auth.DefaultSocket), the cluster CA (PHX_CA_CERT, else
// DefaultCACert) and the config naming the controllers (DefaultConfig),
// where the node has them; without PHX_SERVER in the job's environment,
// the agent's own controllers are set there. The container shares the
// node's network, so the addresses are the node's.

// Where the phx client looks by default (cli's defaults).
const (
	DefaultCACert = "/etc/phalanx/tls/ca.crt"
	DefaultConfig = "/etc/phalanx/phalanx.conf"
)

// containerClient returns the mounts and variables that give a container
// task the phx client under bin (writeJobBin's links) and its access to
// the controllers; env is the task's environment.
func (a *Agent) containerClient(bin string, env []string) ([]runtime.Mount, []string) {
	mounts := []runtime.Mount{{Source: a.cfg.ClientBinary, Target: filepath.Join(bin, "phx"), ReadOnly: true}}
	for _, f := range []struct{ path, fallback string }{
		{envValue(env, "PHX_AUTH_SOCKET"), auth.DefaultSocket},
		{envValue(env, "PHX_CA_CERT"), DefaultCACert},
		{"", DefaultConfig},
	} {
		path := f.path
		if path == "" {
			path = f.fallback
		}
		if !filepath.IsAbs(path) {
			continue
		}
		if fi, err := os.Stat(path); err == nil {
			// A socket is connected to, which a read-only mount may refuse.
			mounts = append(mounts, runtime.Mount{Source: path, Target: path, ReadOnly: fi.Mode()&os.ModeSocket == 0})
		}
	}
	var extra []string
	if envValue(env, "PHX_SERVER") == "" && len(a.cfg.Controllers) > 0 {
		extra = append(extra, "PHX_SERVER="+strings.Join(a.cfg.Controllers, ","))
	}
	return mounts, extra
}

// envValue is the value of variable name in env ("" when unset).
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if rest, ok := strings.CutPrefix(kv, name+"="); ok {
			v = rest // the last one wins, as in os/exec
		}
	}
	return v
}
