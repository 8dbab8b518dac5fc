package nodeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
)

// sbatch --signal=USR1@60 on a 5-minute job: USR1 to the job's processes
// a minute before the limit (at 4 minutes), then TERM at the limit.
func TestSignalBeforeTheTimeLimit(t *testing.T) {
	rt := fake.New()
	h := newHarness(t, rt, func(c *Config) {
		c.Clock = scaledClock{start: time.Now(), factor: 200}
		c.HeartbeatInterval, c.KillGrace = 2*time.Second, 5*time.Second
	})
	as := wireAssignment(50, t.TempDir(), script)
	as.Job.TimeLimitSeconds = 300
	as.Job.Spec.Signal, as.Job.Spec.SignalSeconds = int32(syscall.SIGUSR1), 60
	h.srv.set(as)
	task := waitStarted(t, rt, "phx-50-0-0")
	h.srv.waitReport(t, 50, "TIMEOUT")
	if got := task.JobSignals(); !reflect.DeepEqual(got, []fake.JobSignal{{Signal: syscall.SIGUSR1}}) {
		t.Errorf("job signals %v, want USR1 to the steps", got)
	}
	if got := task.Signals(); !reflect.DeepEqual(got, []syscall.Signal{syscall.SIGTERM}) {
		t.Errorf("signals %v, want TERM at the limit", got)
	}
}

// A preempted job gets its --signal at once (B: here: the batch script),
// the preemption grace to act on it, and only then TERM.
func TestSignalAtPreemption(t *testing.T) {
	rt := fake.New()
	h := newHarness(t, rt, func(c *Config) { c.KillGrace = time.Second })
	as := wireAssignment(51, t.TempDir(), script)
	as.Job.Spec.Signal, as.Job.Spec.SignalSeconds, as.Job.Spec.SignalBatch = int32(syscall.SIGUSR2), 90, true
	h.srv.set(as)
	task := waitStarted(t, rt, "phx-51-0-0")
	h.srv.waitReport(t, 51, "RUNNING")
	begin := time.Now()
	h.srv.set(withStop(as, 1, "PREEMPTED"))
	eventually(t, 5*time.Second, func() error {
		if got := task.JobSignals(); !reflect.DeepEqual(got, []fake.JobSignal{{Signal: syscall.SIGUSR2, Batch: true}}) {
			return fmt.Errorf("job signals %v", got)
		}
		return nil
	})
	if got := task.Signals(); len(got) != 0 {
		t.Errorf("signals %v before the grace period ran out", got)
	}
	h.srv.waitReport(t, 51, "KILLED")
	if d := time.Since(begin); d < time.Second {
		t.Errorf("TERM came %v after the preemption, before its 1s grace", d)
	}
	if got := task.Signals(); !reflect.DeepEqual(got, []syscall.Signal{syscall.SIGTERM}) {
		t.Errorf("signals %v, want TERM after the grace", got)
	}
}

// scancel JOBID.STEP: the agent marks the step's signal in the task's
// step directory (for an srun of the step that has not started its tasks
// here yet), then signals the step's processes alone.
func TestStepSignal(t *testing.T) {
	rt := fake.New()
	h := newHarness(t, rt, nil)
	as := wireAssignment(52, t.TempDir(), script)
	h.srv.set(as)
	task := waitStarted(t, rt, "phx-52-0-0")
	h.srv.waitReport(t, 52, "RUNNING")
	as.Signals = []*phalanxv1.SignalRequest{{Seq: 1, Signal: int32(syscall.SIGTERM), Scope: phalanxv1.SignalScope_SIGNAL_SCOPE_STEP, Step: 2}}
	h.srv.set(as)
	eventually(t, 5*time.Second, func() error {
		if got := task.JobSignals(); !reflect.DeepEqual(got, []fake.JobSignal{{Signal: syscall.SIGTERM, OnStep: true, Step: 2}}) {
			return fmt.Errorf("job signals %v; want TERM to step 2", got)
		}
		return nil
	})
	mark := filepath.Join(h.cfg.StateDir, "jobs", "52.0", "steps", "signal.2.1.15")
	if _, err := os.Lstat(mark); err != nil {
		t.Errorf("the step's mark: %v", err)
	}
	if got := task.Signals(); len(got) != 0 {
		t.Errorf("the task itself got %v; want nothing but the step's signal", got)
	}
}

// After a preempted job's --signal and the preemption grace, TERM is
// followed by KILL after the controllers' kill grace (the running
// assignment's), not the agent's own: the scheduler frees the nodes on
// the controllers' timing.
func TestPreemptionKillGraceIsTheControllers(t *testing.T) {
	rt, h := stubbornTasks(t, 600*time.Second)
	as := wireAssignment(53, t.TempDir(), script)
	as.GraceSeconds = 2 // the controllers' --kill-grace
	as.Job.Spec.Signal, as.Job.Spec.SignalSeconds = int32(syscall.SIGUSR1), 60
	h.srv.set(as)
	waitStarted(t, rt, "phx-53-0-0")
	running := h.srv.waitReport(t, 53, "RUNNING")
	h.srv.set(withStop(as, 3, "PREEMPTED"))
	r := h.srv.waitReport(t, 53, "KILLED")
	if d := r.Time.AsTime().Sub(running.Time.AsTime()); d > 120*time.Second {
		t.Errorf("killed %s after its start: want the 3 s preemption grace and the controllers' 2 s kill grace, not the agent's 600 s", d.Round(time.Second))
	}
}
