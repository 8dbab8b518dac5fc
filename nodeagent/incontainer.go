package nodeagent

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/internal/cliwire"
	"github.com/phalanx-hpc/phalanx/runtime"
)

// Slurm's commands in a container job. A plain-process job finds scontrol,
// squeue, sbatch, scancel, sinfo and sacct on its PATH as links to the phx
// client, a host path. An image has no such path, so the agent mounts the
// whole client, phx-full (a static binary, which runs in any image), over an empty
// <job>/bin/phx, the links' target there, and with it what the client
// needs to reach the controllers as the job's user: the node's credential
// socket (Config.AuthSocket), cluster CA (Config.CACert) and DefaultConfig,
// read-only but the socket. The files mounted are the agent's own, never
// paths the job names (a root-made mount of a user-named file would hand
// over what the file system denies the user); they go where the client
// in the job looks for them: its $PHX_AUTH_SOCKET and $PHX_CA_CERT, else
// the defaults. Without PHX_SERVER in the job's environment, the agent's
// controllers are set there. The container shares the node's network.

// Where the phx client looks by default (cli's defaults).
const (
	DefaultCACert = "/etc/phalanx/tls/ca.crt"
	DefaultConfig = "/etc/phalanx/phalanx.conf"
)

// containerClient returns the mounts and variables that give a container
// task the phx client under bin (writeJobBin's links) and its access to
// the controllers; env is the task's environment.
func (a *Agent) containerClient(bin string, env []string) ([]runtime.Mount, []string) {
	mounts := []runtime.Mount{{Source: wholeClient(a.cfg.ClientBinary), Target: filepath.Join(bin, "phx"), ReadOnly: true}}
	for _, f := range []struct{ source, target string }{
		{a.cfg.AuthSocket, orDefault(envValue(env, "PHX_AUTH_SOCKET"), auth.DefaultSocket)},
		{a.cfg.CACert, orDefault(envValue(env, "PHX_CA_CERT"), DefaultCACert)},
		{DefaultConfig, DefaultConfig},
	} {
		if f.source == "" || !filepath.IsAbs(f.target) {
			continue
		}
		if fi, err := os.Stat(f.source); err == nil {
			// A socket is connected to, which a read-only mount may refuse.
			mounts = append(mounts, runtime.Mount{Source: f.source, Target: f.target, ReadOnly: fi.Mode()&os.ModeSocket == 0})
		}
	}
	var extra []string
	if envValue(env, "PHX_SERVER") == "" && len(a.cfg.Controllers) > 0 {
		extra = append(extra, "PHX_SERVER="+strings.Join(a.cfg.Controllers, ","))
	}
	return mounts, extra
}

// wholeClient is the client a container job gets: phx-full, the whole
// CLI, installed with the phx front end at client (beside it, or in
// ../libexec/phalanx/), since an image has neither phx-full for phx to
// become nor the node's CLI server for it to hand commands to; client
// itself when there is none (it is the whole CLI then).
func wholeClient(client string) string {
	if filepath.Base(client) != "phx" {
		return client
	}
	for _, p := range cliwire.FullCandidates(client) {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return client
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

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
