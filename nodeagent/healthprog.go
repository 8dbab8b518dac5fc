package nodeagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"syscall"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// The administrator's health program (Slurm's HealthCheckProgram, run as
// LBNL NHC expects). The controller's heartbeat replies say which program,
// how often, and in which node states (cluster.HealthCheck). The agent
// runs it as root once the settings arrive, then at a random point of the
// next interval (so that the nodes of a cluster do not all run it at the
// same instant), then every interval. A run that exits non-zero, prints a
// line with "ERROR:" (NHC's way), or takes longer than its timeout fails
// check "health-program", with the ERROR line's text (or the exit status
// and last line) as message; the next run that passes clears it.

// checkHealthProgram names the health program's check.
const checkHealthProgram = "health-program"

// maxProgramOutput bounds what is kept of one run's output.
const maxProgramOutput = 64 << 10

// healthCheckFromWire reads the health program's settings from a
// heartbeat reply (nil: none).
func healthCheckFromWire(hc *phalanxv1.HealthCheck) (cluster.HealthCheck, error) {
	if hc == nil {
		return cluster.HealthCheck{}, nil
	}
	states, err := cluster.ParseHealthCheckStates(hc.NodeState)
	if err != nil {
		return cluster.HealthCheck{}, err
	}
	h := cluster.HealthCheck{Program: hc.Program, Interval: time.Duration(hc.IntervalSeconds) * time.Second, States: states}
	return h, h.Validate()
}

// setHealthCheck takes the health program's settings, as a heartbeat's
// reply gave them; the runner starts over when they changed.
func (a *Agent) setHealthCheck(h cluster.HealthCheck, drained bool) {
	a.mu.Lock()
	changed := a.healthCheck != h
	a.healthCheck, a.drained = h, drained
	a.mu.Unlock()
	if changed {
		select {
		case a.healthCheckChanged <- struct{}{}:
		default:
		}
	}
}

// runHealthProgram runs the health program on its schedule until ctx ends.
func (a *Agent) runHealthProgram(ctx context.Context) {
	var next <-chan time.Time
	var hc cluster.HealthCheck
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.healthCheckChanged:
			a.mu.Lock()
			hc = a.healthCheck
			a.mu.Unlock()
			next = nil
			if !hc.Enabled() {
				a.setProgramProblem("")
				continue
			}
			a.log.Info("health program", "program", hc.Program, "interval", hc.Interval, "node_states", hc.States)
			a.checkWithProgram(ctx, hc)
			next = a.cfg.Clock.After(rand.N(hc.Interval) + 1) // somewhere in the next interval
		case <-next:
			a.checkWithProgram(ctx, hc)
			next = a.cfg.Clock.After(hc.Interval)
		}
	}
}

// checkWithProgram runs the program once, if the node's state is one it
// runs in, and records its verdict.
func (a *Agent) checkWithProgram(ctx context.Context, hc cluster.HealthCheck) {
	a.mu.Lock()
	busy, drained := len(a.tasks) > 0, a.drained
	a.mu.Unlock()
	if !hc.States.RunsIn(busy, drained) {
		return
	}
	timeout := a.cfg.HealthCheckTimeout
	if timeout <= 0 {
		timeout = cluster.HealthCheckTimeout
	}
	start := time.Now()
	msg := checkProgram(ctx, hc.Program, timeout, a.cfg.Name)
	if ctx.Err() != nil {
		return
	}
	a.log.Debug("health program ran", "program", hc.Program, "took", time.Since(start), "problem", msg)
	a.setProgramProblem(msg)
}

// setProgramProblem records what the program found wrong ("": it passed)
// and sends a heartbeat now when that changed.
func (a *Agent) setProgramProblem(msg string) {
	old := a.health.setProgramProblem(msg)
	switch {
	case msg == old:
		return
	case msg != "":
		a.log.Warn("health program failed", "message", msg)
	default:
		a.log.Info("health program passes again")
	}
	a.health.wake()
}

// checkProgram runs the health program on node and says what is wrong:
// "" when it passed.
func checkProgram(ctx context.Context, program string, timeout time.Duration, node string) string {
	env := []string{"PATH=" + defaultPath, "SLURMD_NODENAME=" + node, "PHX_NODENAME=" + node}
	out, err, timedOut := runProgram(ctx, program, timeout, env)
	return programVerdict(program, out, err, timedOut, timeout, true)
}

// runProgram runs program (no arguments, as Slurm does) as the agent's
// user, with env, in / and a process group of its own that is killed
// whole at the timeout (NHC forks). It returns the program's output
// (capped), how it ended, and whether it timed out.
func runProgram(ctx context.Context, program string, timeout time.Duration, env []string) (out []byte, err error, timedOut bool) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, program)
	cmd.Env = env
	cmd.Dir = "/"
	buf := &cappedBuffer{max: maxProgramOutput}
	cmd.Stdout, cmd.Stderr = buf, buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Run()
	return buf.Bytes(), err, ctx.Err() == context.DeadlineExceeded
}

// programVerdict reads a run's outcome and says what is wrong ("": it
// passed): with errorLines (NHC's way), the first ERROR: line's text;
// else a timeout, else a failed exit with the last line printed.
func programVerdict(program string, out []byte, err error, timedOut bool, timeout time.Duration, errorLines bool) string {
	var last string
	for _, line := range strings.Split(string(out), "\n") {
		if _, text, ok := strings.Cut(line, "ERROR:"); ok && errorLines {
			if text = oneLine(text); text != "" {
				return text
			}
		}
		if l := oneLine(line); l != "" {
			last = l
		}
	}
	if timedOut {
		return fmt.Sprintf("%s timed out after %v", program, timeout)
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &exit) && last != "":
		return fmt.Sprintf("%s %v: %s", program, exit.ProcessState, last)
	case errors.As(err, &exit):
		return fmt.Sprintf("%s %v", program, exit.ProcessState)
	}
	return fmt.Sprintf("cannot run %s: %v", program, err)
}

// cappedBuffer keeps the first max bytes written to it.
type cappedBuffer struct {
	bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
