package nodeagent

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// Tasks that outlive their SIGKILL (cluster.Unkillable: Slurm's
// UnkillableStepTimeout and UnkillableStepProgram, as the controller's
// heartbeat replies give them). A task still there that long after its
// SIGKILL is stuck in the kernel and may still hold its GPUs: the agent
// holds a "Kill task failed" event against the node (which drains it until
// an administrator resumes it) and waits until the controller has it, so
// that nothing is placed on those GPUs; then it runs the program, if any,
// and reports the task's end, so that its job goes on: it ends, or
// restarts on other nodes.

// checkUnkillable names the event in problems and drain reasons.
const checkUnkillable = "unkillable"

// unkillableFromWire reads the settings from a heartbeat reply (nil: the
// defaults).
func unkillableFromWire(u *phalanxv1.Unkillable) (cluster.Unkillable, error) {
	if u == nil {
		return cluster.Unkillable{}, nil
	}
	out := cluster.Unkillable{Timeout: time.Duration(u.TimeoutSeconds) * time.Second, Program: u.Program}
	return out, out.Validate()
}

// setUnkillable takes the settings a heartbeat's reply gave.
func (a *Agent) setUnkillable(u cluster.Unkillable) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.unkillable != u {
		a.log.Info("settings for tasks that outlive SIGKILL", "timeout", u.WaitAfterKill(), "program", u.Program)
		a.unkillable = u
	}
}

// unkillableSettings returns the settings as last given.
func (a *Agent) unkillableSettings() cluster.Unkillable {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.unkillable
}

// killFailed deals with task t, still there after SIGKILL for the whole
// timeout: it drains the node, waits for the controller to know, and
// starts the program. The caller then reports the task's end.
func (a *Agent) killFailed(t *task, u cluster.Unkillable) {
	a.mu.Lock()
	gpus := t.gpus
	a.mu.Unlock()
	msg := fmt.Sprintf("Kill task failed: job %d rank %d still running %ds after SIGKILL", t.key.job, t.key.rank, int(u.WaitAfterKill()/time.Second))
	if len(gpus) > 0 {
		msg += fmt.Sprintf(" (GPUs %s may still be in use)", joinInts(gpus))
	}
	log := a.log.With("task", t.key)
	log.Error("a task outlived its SIGKILL: draining the node", "timeout", u.WaitAfterKill(), "gpus", gpus)
	if !a.waitHealthAck(a.health.hold(heldEvent{check: checkUnkillable, message: msg, gpu: -1, at: a.cfg.Clock.Now()}), healthAckWait) {
		log.Warn("the controller has not acknowledged the drain yet; reporting the task anyway")
	}
	if u.Program != "" {
		a.taskWG.Add(1)
		go func() {
			defer a.taskWG.Done()
			a.runUnkillableProgram(t.key, u.Program)
		}()
	}
}

// runUnkillableProgram runs the administrator's UnkillableStepProgram for
// the task key (as root, like the health program; Slurm's variables say
// which job), and logs how it went.
func (a *Agent) runUnkillableProgram(key taskKey, program string) {
	job := strconv.FormatUint(key.job, 10)
	env := []string{"PATH=" + defaultPath, "SLURMD_NODENAME=" + a.cfg.Name, "PHX_NODENAME=" + a.cfg.Name,
		"SLURM_JOB_ID=" + job, "SLURM_JOBID=" + job, "PHX_JOB_ID=" + job,
		"PHX_ATTEMPT=" + strconv.Itoa(int(key.attempt)), "SLURM_PROCID=" + strconv.Itoa(int(key.rank))}
	out, err, timedOut := runProgram(context.Background(), program, cluster.UnkillableProgramTimeout, env)
	if verdict := programVerdict(program, out, err, timedOut, cluster.UnkillableProgramTimeout, false); verdict != "" {
		a.log.Warn("UnkillableStepProgram failed", "task", key, "program", program, "problem", verdict)
		return
	}
	a.log.Info("UnkillableStepProgram ran", "task", key, "program", program, "output", strings.TrimSpace(string(out)))
}
