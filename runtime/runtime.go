// Package runtime defines how the node agent runs a task, whatever runs it:
// a plain process group (runtime/process), a containerd container
// (runtime/containerd), or an in-memory fake for tests (runtime/fake).
//
// The agent prepares everything a task needs (script file, environment,
// output paths, GPU indices) into a Spec; a Runtime turns a Spec into a
// running Task. Stopping policy (SIGTERM, grace period, SIGKILL) belongs to
// the agent; a runtime only delivers signals to everything the task spawned.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Spec is everything a runtime needs to start one task.
type Spec struct {
	// ID is unique on the node and stable for the task's life, e.g.
	// "phx-12-0-1" for job 12, attempt 0, rank 1. Containerd uses it as the
	// container ID.
	ID string
	// Argv is the command; Argv[0] is an absolute path inside the task's
	// filesystem (the host for a process, the image for a container).
	Argv []string
	// Env is the complete environment, KEY=VALUE.
	Env []string
	// WorkDir is the working directory (created by the agent beforehand).
	WorkDir string
	// Stdout and Stderr are host file paths, opened for append; they may be
	// the same file.
	Stdout, Stderr string
	// Image is the OCI image reference; only container runtimes use it.
	Image string
	// GPUs lists the host GPU indices the task may use. Container runtimes
	// inject the matching CDI devices; a process sees CUDA_VISIBLE_DEVICES.
	GPUs []int
	// Devices are more CDI devices (qualified names, e.g.
	// phalanx.dev/rdma=mlx5_0) a container gets next to its GPUs: the
	// node's RDMA devices. A process sees the host's /dev.
	Devices []string
	// UID and GID to run as; -1 keeps the agent's own.
	UID, GID int
	// Mounts are bind mounts from the host into the task's filesystem
	// (containers only; a process sees the host).
	Mounts []Mount
}

// Validate checks what every runtime needs of a Spec: an ID and a command.
func (s Spec) Validate() error {
	if s.ID == "" || len(s.Argv) == 0 {
		return fmt.Errorf("task %q: empty ID or argv: %w", s.ID, cluster.ErrInvalid)
	}
	return nil
}

// Mount is a bind mount.
type Mount struct {
	Source, Target string
	ReadOnly       bool
}

// ExitStatus is how a task ended: by exit code, or by a signal.
type ExitStatus struct {
	Code   int            // exit code; 128+signal when killed, as a shell reports it
	Signal syscall.Signal // the signal that killed it, or 0
}

// Runtime starts tasks.
type Runtime interface {
	// Name is "process", "containerd" or "fake".
	Name() string
	// Start starts the task and returns once it runs. The task keeps running
	// after ctx ends; ctx bounds only the start.
	Start(ctx context.Context, spec Spec) (Task, error)
}

// Task is a started task.
type Task interface {
	ID() string
	// Wait blocks until the task has exited and every process it spawned is
	// gone, or ctx ends.
	Wait(ctx context.Context) (ExitStatus, error)
	// Signal delivers sig to every process of the task.
	Signal(ctx context.Context, sig syscall.Signal) error
	// SignalJob delivers a job's own signal (sbatch --signal): with batch,
	// to the batch script's process alone (the container's init); else to
	// every other process of the task, as Slurm sends it to the job's
	// steps and not to the batch shell, which would die of a signal it
	// does not trap.
	SignalJob(ctx context.Context, sig syscall.Signal, batch bool) error
	// SignalStep delivers sig to the processes of one step srun runs in
	// the task (scancel JOBID.STEP): those whose environment says
	// SLURM_STEP_ID=step (InStep); never the batch script.
	SignalStep(ctx context.Context, sig syscall.Signal, step uint32) error
	// Close releases what the runtime holds for the task (container, shim,
	// snapshot) once it has exited.
	Close(ctx context.Context) error
}

// Recoverer is a Runtime whose tasks outlive the agent that started them.
type Recoverer interface {
	// Recover returns every task an earlier run of the agent started and
	// did not Close: those still running, those that ended meanwhile (Wait
	// returns how at once), and those whose fate is unknown (Wait returns
	// ErrLost). The agent calls it once, before it starts anything.
	Recover(ctx context.Context) ([]Task, error)
}

// ErrLost is what Wait returns when how a task ended cannot be known: its
// supervisor ended without recording it. What was left of the task has
// been killed.
var ErrLost = errors.New("the task's supervisor ended without recording how the task ended")
