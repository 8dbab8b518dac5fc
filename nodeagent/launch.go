package nodeagent

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime"
)

// prepare turns an assignment into a runtime Spec: it writes the job
// script under the state directory, and resolves the environment and
// output files (the pre-start gate checks the working directory, after
// the prolog: gate.go). cleanup removes what it wrote, once
// the task has ended. Its errors are one-line messages for the user.
func (a *Agent) prepare(key taskKey, as assignment) (spec runtime.Spec, cleanup func(), err error) {
	job := as.job
	rank := int(key.rank)
	if err := a.checkAssignment(as); err != nil {
		return runtime.Spec{}, nil, err
	}
	container := job.image != ""
	if container && a.cfg.Runtime.Name() == "process" {
		return runtime.Spec{}, nil, fmt.Errorf("job needs image %q but node %s runs plain processes (start its agent with --runtime containerd): %w",
			job.image, a.cfg.Name, cluster.ErrUnsatisfiable)
	}
	workDir := job.workDir
	if !filepath.IsAbs(workDir) {
		return runtime.Spec{}, nil, fmt.Errorf("working directory %q is not an absolute path: %w", workDir, cluster.ErrInvalid)
	}
	jobDir := a.jobDir(key)
	script, err := writeScript(jobDir, job.script, job.uid, job.gid)
	if err != nil {
		return runtime.Spec{}, nil, err
	}
	bin, err := writeJobBin(jobDir, a.cfg.ClientBinary, container)
	if err != nil {
		return runtime.Spec{}, nil, err
	}
	steps, err := stepDir(jobDir, job)
	if err != nil {
		return runtime.Spec{}, nil, err
	}
	var ckptEnv map[string]string
	if job.ckpt.dir != "" {
		if ckptEnv, err = a.prepareCheckpoint(key, job); err != nil {
			os.RemoveAll(jobDir)
			return runtime.Spec{}, nil, err
		}
	}
	cleanup = func() {
		for _, dir := range []string{jobDir, a.ckptDirs(key).base} {
			if err := os.RemoveAll(dir); err != nil {
				a.log.Warn("removing job directory", "dir", dir, "err", err)
			}
		}
	}
	uid, gid := taskIDs(job)
	spec = runtime.Spec{
		ID:      key.id(),
		Argv:    append(scriptArgv(script, job.script), job.scriptArgs...),
		Env:     prependPath(taskEnv(envInput{job: job, rank: rank, container: container, cluster: a.cluster(), nodeCPUs: a.cfg.CPUs, uid: uid, gid: gid}), bin),
		WorkDir: workDir,
		Image:   job.image,
		GPUs:    slices.Clone(job.ranks[rank].gpus),
		UID:     idOrKeep(job.uid),
		GID:     idOrKeep(job.gid),
	}
	spec.Env = append(spec.Env, "PHX_STEP_DIR="+steps)
	for _, k := range slices.Sorted(maps.Keys(ckptEnv)) {
		spec.Env = append(spec.Env, k+"="+ckptEnv[k])
	}
	spec.Stdout, spec.Stderr = cluster.OutputPaths(job.output, job.errPattern, workDir, cluster.OutputVars{
		Array: job.array,
		JobID: key.job, Name: job.name, User: job.user, Node: a.cfg.Name, Rank: rank,
	})
	if container {
		spec.Devices = a.cfg.RDMADevices
		spec.Mounts = []runtime.Mount{
			{Source: jobDir, Target: jobDir, ReadOnly: true},
			{Source: steps, Target: steps}, // over the read-only job directory
			{Source: workDir, Target: workDir},
		}
		if a.cfg.ClientBinary != "" {
			mounts, env := a.containerClient(bin, spec.Env)
			spec.Mounts, spec.Env = append(spec.Mounts, mounts...), append(spec.Env, env...)
		}
		if job.ckpt.dir != "" {
			base := a.ckptDirs(key).base
			spec.Mounts = append(spec.Mounts, runtime.Mount{Source: base, Target: base},
				runtime.Mount{Source: job.ckpt.dir, Target: job.ckpt.dir, ReadOnly: true})
		}
	}
	return spec, cleanup, nil
}

// checkAssignment checks that the assignment is well formed and for this
// node.
func (a *Agent) checkAssignment(as assignment) error {
	job, rank := as.job, int(as.key.rank)
	switch {
	case !as.hasJob:
		return fmt.Errorf("assignment carries no job: %w", cluster.ErrInvalid)
	case rank < 0 || rank >= len(job.ranks):
		return fmt.Errorf("rank %d outside the job's %d nodes: %w", rank, len(job.ranks), cluster.ErrInvalid)
	case job.ranks[rank].node != a.cfg.Name:
		return fmt.Errorf("rank %d is allocated on node %s, not %s: %w", rank, job.ranks[rank].node, a.cfg.Name, cluster.ErrInvalid)
	case job.script == "":
		return fmt.Errorf("job has no script: %w", cluster.ErrInvalid)
	}
	return nil
}

// writeScript writes the job script as <dir>/script, mode 0700, owned by
// the job's user (uid and gid above 0; else the agent's, as the task runs):
// no other local user may read what a job runs.
func writeScript(dir, body string, uid, gid int) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("job directory: %w", err)
	}
	path := filepath.Join(dir, "script")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o700)
	if err == nil && uid > 0 {
		err = f.Chown(uid, max(gid, 0))
	}
	if err == nil {
		err = f.Chmod(0o700) // OpenFile's mode is masked by umask
	}
	if err == nil {
		_, err = f.WriteString(body)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("job script: %w", err)
	}
	return path, nil
}

// writeExecutable writes body to path with mode 0755 whatever the umask.
func writeExecutable(path, body string) error {
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		return err
	}
	return os.Chmod(path, 0o755) // WriteFile's mode is masked by umask
}

// scriptArgv runs a script through the interpreter of its #! line, split
// as the kernel splits it (the interpreter, then at most one argument: the
// rest of the line), else through /bin/sh, as sbatch does. The agent runs
// the interpreter rather than the script itself: exec of a file just
// written fails with ETXTBSY while another goroutine's fork still holds
// the write descriptor, and an agent starts tasks concurrently.
func scriptArgv(path, body string) []string {
	line, ok := strings.CutPrefix(body, "#!")
	if !ok {
		return []string{"/bin/sh", path}
	}
	line, _, _ = strings.Cut(line, "\n")
	line = strings.Trim(line, " \t\r")
	interp, arg := line, ""
	if i := strings.IndexAny(line, " \t"); i >= 0 {
		interp, arg = line[:i], strings.Trim(line[i+1:], " \t")
	}
	switch {
	case interp == "":
		return []string{"/bin/sh", path}
	case arg != "":
		return []string{interp, arg, path}
	}
	return []string{interp, path}
}

// idOrKeep maps an unset (zero) user or group ID to -1, the agent's own:
// the agent never makes a task root on its own accord.
func idOrKeep(id int) int {
	if id <= 0 {
		return -1
	}
	return id
}
