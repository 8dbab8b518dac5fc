package cluster

import (
	"path/filepath"
	"strings"
	"time"
)

// Unkillable is what an agent does with a task that outlives SIGKILL, with
// Slurm's keys UnkillableStepTimeout and UnkillableStepProgram. A process
// the kernel keeps in uninterruptible sleep (a GPU driver call that never
// returns after an XID, a hung file system) cannot be killed; it may still
// hold its GPUs' memory. Once a task is still there Timeout after its
// SIGKILL, its agent drains the node with Slurm's reason, "Kill task
// failed" (before it reports the task's end, so that nothing is placed on
// GPUs that may still be in use), runs Program, if any, and reports the
// task ended, so its job goes on (ends, or restarts elsewhere). The node
// stays drained until an administrator resumes it. The controller reads
// the keys from its config and hands them to every agent with each
// heartbeat's reply.
type Unkillable struct {
	Timeout time.Duration // zero: DefaultUnkillableTimeout
	Program string        // absolute path; empty: none
}

// DefaultUnkillableTimeout is Slurm's default UnkillableStepTimeout.
const DefaultUnkillableTimeout = 60 * time.Second

// MaxUnkillableTimeout bounds UnkillableStepTimeout: a task's end is not
// reported before it, so its job cannot end or restart before it either.
const MaxUnkillableTimeout = time.Hour

// UnkillableProgramTimeout is how long one run of UnkillableStepProgram
// may take before it is killed.
const UnkillableProgramTimeout = 60 * time.Second

// WaitAfterKill is how long a task may outlive its SIGKILL before it is
// taken as unkillable.
func (u Unkillable) WaitAfterKill() time.Duration {
	if u.Timeout == 0 {
		return DefaultUnkillableTimeout
	}
	return u.Timeout
}

// Validate says what is wrong with u.
func (u Unkillable) Validate() error {
	switch {
	case u.Timeout < 0 || u.Timeout > MaxUnkillableTimeout || u.Timeout%time.Second != 0:
		return Errorf(ErrInvalid, "UnkillableStepTimeout %v: give whole seconds from 1 to %d (default %d)",
			u.Timeout, int(MaxUnkillableTimeout/time.Second), int(DefaultUnkillableTimeout/time.Second))
	case u.Program != "" && !filepath.IsAbs(u.Program):
		return Errorf(ErrInvalid, "UnkillableStepProgram=%s: give an absolute path", u.Program)
	case strings.ContainsAny(u.Program, "\n\r\x00"):
		return Errorf(ErrInvalid, "UnkillableStepProgram: one line, no NUL")
	}
	return nil
}
