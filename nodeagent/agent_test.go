package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/internal/freeport"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
)

const script = "#!/bin/sh\necho hello\n"

func TestRegisterLaunchExit(t *testing.T) {
	rt := fake.New()
	h := newHarness(t, rt, nil)
	work := t.TempDir()
	as := wireAssignment(1, work, script)
	h.srv.set(as)

	task := waitStarted(t, rt, "phx-1-0-0")
	spec := task.Spec()
	scriptPath := filepath.Join(h.cfg.StateDir, "jobs", "1.0", "script")
	if !reflect.DeepEqual(spec.Argv, []string{"/bin/sh", scriptPath}) { // the script's #! interpreter
		t.Errorf("Argv = %v, want [/bin/sh %s]", spec.Argv, scriptPath)
	}
	if fi, err := os.Stat(scriptPath); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("script %s: %v, mode %v; want mode 0700: no other user reads it", scriptPath, err, fi.Mode())
	}
	if b, _ := os.ReadFile(scriptPath); string(b) != script {
		t.Errorf("script body %q", b)
	}
	out := filepath.Join(work, "slurm-1.out")
	if spec.Stdout != out || spec.Stderr != out || spec.WorkDir != work {
		t.Errorf("stdout %q stderr %q workdir %q; want %q twice and %q", spec.Stdout, spec.Stderr, spec.WorkDir, out, work)
	}
	if !reflect.DeepEqual(spec.GPUs, []int{2, 3}) || spec.UID != -1 || spec.GID != -1 || spec.Mounts != nil {
		t.Errorf("GPUs %v uid %d gid %d mounts %v", spec.GPUs, spec.UID, spec.GID, spec.Mounts)
	}
	for _, kv := range []string{"SLURM_JOB_ID=1", "CUDA_VISIBLE_DEVICES=2,3", "SLURM_JOB_NODELIST=gpu001", "MASTER_ADDR=10.0.0.1"} {
		if !slices.Contains(spec.Env, kv) {
			t.Errorf("env lacks %s: %v", kv, spec.Env)
		}
	}
	h.srv.waitReport(t, 1, "RUNNING")
	eventually(t, 10*time.Second, func() error { // heartbeats list the running task
		h.srv.mu.Lock()
		defer h.srv.mu.Unlock()
		if len(h.srv.heartbeats) == 0 {
			return errors.New("no heartbeat yet")
		}
		last := h.srv.heartbeats[len(h.srv.heartbeats)-1]
		if len(last.Running) != 1 || last.Running[0].JobId != 1 {
			return fmt.Errorf("last heartbeat lists %v", last.Running)
		}
		return nil
	})

	if err := rt.Exit("phx-1-0-0", 3); err != nil {
		t.Fatal(err)
	}
	r := h.srv.waitReport(t, 1, "EXITED")
	if r.ExitCode != 3 || r.ExitSignal != 0 || r.Message != "exit code 3" || r.Node != node || r.Time == nil {
		t.Errorf("EXITED report = %v", r)
	}
	if got := states(h.srv.reportsFor(1)); !reflect.DeepEqual(got, []string{"RUNNING", "EXITED"}) {
		t.Errorf("reports %v", got)
	}
	regs, _, _, _ := h.srv.counts()
	if regs != 1 {
		t.Errorf("%d registrations, want 1", regs)
	}
	h.srv.mu.Lock()
	reg := h.srv.registers[0]
	h.srv.mu.Unlock()
	if reg.Name != node || reg.Gpus != 8 || reg.GpuModel != "NVIDIA A100-SXM4-80GB" || len(reg.GpuInfo) != 8 || reg.Cpus != 64 {
		t.Errorf("registration = %v", reg)
	}

	// The same set again (the controller has not yet recorded the exit):
	// the task that ended is not started again. Messages are reconciled in
	// order, so once job 13 of the next message starts, the repeat was seen.
	h.srv.set(as)
	h.srv.set(as, wireAssignment(13, work, script))
	waitStarted(t, rt, "phx-13-0-0")
	if n := len(rt.Specs()); n != 2 {
		t.Errorf("%d tasks started, want 2 (jobs 1 and 13)", n)
	}
	if !task.Closed() {
		t.Error("ended task was not closed")
	}
	eventually(t, 10*time.Second, func() error { // job dir removed after the end
		if _, err := os.Stat(filepath.Dir(scriptPath)); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("job dir still there: %v", err)
		}
		return nil
	})
}

func TestStopAssignmentTermThenKill(t *testing.T) {
	rt := fake.New(fake.WithIgnoreSIGTERM())
	h := newHarness(t, rt, nil)
	as := wireAssignment(2, t.TempDir(), script)
	h.srv.set(as)
	task := waitStarted(t, rt, "phx-2-0-0")
	h.srv.waitReport(t, 2, "RUNNING")

	stopped := time.Now()
	h.srv.set(withStop(as, 0, "CANCELLED")) // grace 0: the agent's own 50ms
	r := h.srv.waitReport(t, 2, "KILLED")
	if elapsed := time.Since(stopped); elapsed < h.cfg.KillGrace {
		t.Errorf("killed after %s, before the %s grace", elapsed, h.cfg.KillGrace)
	}
	if got := task.Signals(); !reflect.DeepEqual(got, []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}) {
		t.Errorf("signals %v, want TERM then KILL", got)
	}
	if r.ExitCode != 137 || r.ExitSignal != int32(syscall.SIGKILL) || r.Message != "stopped by the controller: CANCELLED" {
		t.Errorf("KILLED report = %v", r)
	}
}

func TestStopHonouredTerm(t *testing.T) {
	rt := fake.New()
	h := newHarness(t, rt, func(c *Config) { c.KillGrace = time.Hour })
	as := wireAssignment(3, t.TempDir(), script)
	h.srv.set(as)
	task := waitStarted(t, rt, "phx-3-0-0")
	h.srv.waitReport(t, 3, "RUNNING")
	h.srv.set(withStop(as, 30, "FAILED"))
	r := h.srv.waitReport(t, 3, "KILLED")
	if got := task.Signals(); !reflect.DeepEqual(got, []syscall.Signal{syscall.SIGTERM}) {
		t.Errorf("signals %v, want TERM only", got)
	}
	if r.ExitCode != 143 || r.ExitSignal != int32(syscall.SIGTERM) {
		t.Errorf("KILLED report = %v", r)
	}
}

// An agent that stops says so in a last heartbeat, so that the
// controller places nothing more on its node, idle or not.
func TestStoppingAgentSaysSo(t *testing.T) {
	h := newHarness(t, fake.New(), nil)
	eventually(t, 10*time.Second, func() error {
		if _, hb, _, _ := h.srv.counts(); hb == 0 {
			return errors.New("no heartbeat yet")
		}
		return nil
	})
	h.stop(t)
	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	last := h.srv.heartbeats[len(h.srv.heartbeats)-1]
	if !last.ShuttingDown || last.Name != node {
		t.Errorf("last heartbeat %v; want one saying %s stops", last, node)
	}
	for _, hb := range h.srv.heartbeats[:len(h.srv.heartbeats)-1] {
		if hb.ShuttingDown {
			t.Errorf("a heartbeat before the last says the agent stops: %v", hb)
		}
	}
}

func TestTaskLeavingTheSetIsStopped(t *testing.T) {
	rt := fake.New()
	h := newHarness(t, rt, nil)
	h.srv.set(wireAssignment(4, t.TempDir(), script))
	waitStarted(t, rt, "phx-4-0-0")
	h.srv.waitReport(t, 4, "RUNNING")
	h.srv.set()
	r := h.srv.waitReport(t, 4, "KILLED")
	if r.Message != "no longer assigned to this node" {
		t.Errorf("KILLED report = %v", r)
	}
}

func TestTimeLimit(t *testing.T) {
	rt := fake.New()
	clock := scaledClock{start: time.Now(), factor: 100}
	h := newHarness(t, rt, func(c *Config) {
		c.Clock = clock
		c.HeartbeatInterval = 2 * time.Second // 20ms of wall time
		c.KillGrace = 5 * time.Second
	})
	as := wireAssignment(5, t.TempDir(), script)
	as.Job.TimeLimitSeconds = 3 // 30ms of wall time
	h.srv.set(as)
	task := waitStarted(t, rt, "phx-5-0-0")
	running := h.srv.waitReport(t, 5, "RUNNING")
	r := h.srv.waitReport(t, 5, "TIMEOUT")
	if got := task.Signals(); !reflect.DeepEqual(got, []syscall.Signal{syscall.SIGTERM}) {
		t.Errorf("signals %v, want TERM", got)
	}
	if r.Message != "time limit of 3s reached" || r.ExitCode != 143 {
		t.Errorf("TIMEOUT report = %v", r)
	}
	if d := r.Time.AsTime().Sub(running.Time.AsTime()); d < 3*time.Second {
		t.Errorf("timed out %s after start, before its 3s limit", d)
	}
}

func TestReportsRetriedInOrder(t *testing.T) {
	rt := fake.New()
	h := newHarness(t, rt, nil)
	h.srv.mu.Lock()
	h.srv.failReports = 3
	h.srv.mu.Unlock()
	h.srv.set(wireAssignment(6, t.TempDir(), script))
	waitStarted(t, rt, "phx-6-0-0")
	rt.Exit("phx-6-0-0", 0) // EXITED is queued behind the failing RUNNING
	h.srv.waitReport(t, 6, "EXITED")
	if got := states(h.srv.reportsFor(6)); !reflect.DeepEqual(got, []string{"RUNNING", "EXITED"}) {
		t.Errorf("delivered %v, want RUNNING then EXITED", got)
	}
	if _, _, _, calls := h.srv.counts(); calls != 5 {
		t.Errorf("%d report calls, want 3 failures + 2 successes", calls)
	}
}

func TestRejectedReportIsDropped(t *testing.T) {
	rt := fake.New()
	h := newHarness(t, rt, nil)
	h.srv.mu.Lock()
	h.srv.rejectReports = 1 // RUNNING is refused for good: it must not block EXITED
	h.srv.mu.Unlock()
	h.srv.set(wireAssignment(14, t.TempDir(), script))
	waitStarted(t, rt, "phx-14-0-0")
	rt.Exit("phx-14-0-0", 0)
	h.srv.waitReport(t, 14, "EXITED")
	if got := states(h.srv.reportsFor(14)); !reflect.DeepEqual(got, []string{"EXITED"}) {
		t.Errorf("delivered %v, want only EXITED", got)
	}
}

func TestReregisterWhenTold(t *testing.T) {
	h := newHarness(t, fake.New(), nil)
	eventually(t, 10*time.Second, func() error {
		if _, hb, _, _ := h.srv.counts(); hb < 2 {
			return fmt.Errorf("%d heartbeats", hb)
		}
		return nil
	})
	h.srv.mu.Lock()
	h.srv.reregisterNext = true
	h.srv.mu.Unlock()
	eventually(t, 10*time.Second, func() error {
		if regs, _, _, _ := h.srv.counts(); regs != 2 {
			return fmt.Errorf("%d registrations, want 2", regs)
		}
		return nil
	})
	_, _, watches, _ := h.srv.counts()
	if watches != 1 {
		t.Errorf("%d assignment streams; re-registering must keep the open one", watches)
	}
}

func TestLaunchFailures(t *testing.T) {
	rt := fake.New()
	h := newHarness(t, rt, nil)
	work := t.TempDir()
	missing := wireAssignment(7, filepath.Join(work, "nope"), script)
	startFails := wireAssignment(8, work, script)
	rt.FailStart("phx-8-0-0", errors.New("no such image\nsecond line"))
	neverStarted := withStop(wireAssignment(9, work, script), 0, "CANCELLED")
	wrongNode := wireAssignment(10, work, script)
	wrongNode.Job.Alloc[0].Node = "gpu999"
	h.srv.set(missing, startFails, neverStarted, wrongNode)

	for job, want := range map[uint64]string{
		7:  fmt.Sprintf("FAILED: prestart-workdir on gpu001: working directory %q does not exist", filepath.Join(work, "nope")),
		8:  "FAILED: start: no such image second line",
		9:  "KILLED: stopped before it started: CANCELLED",
		10: "FAILED: rank 0 is allocated on node gpu999, not gpu001: invalid request",
	} {
		state, _, _ := strings.Cut(want, ":")
		r := h.srv.waitReport(t, job, state)
		if got := r.State + ": " + r.Message; got != want {
			t.Errorf("job %d: %q, want %q", job, got, want)
		}
	}
	if n := len(rt.Specs()); n != 0 {
		t.Errorf("%d tasks started", n)
	}
}

func TestShutdownStopsTasks(t *testing.T) {
	rt := fake.New()
	h := newHarness(t, rt, nil)
	h.srv.set(wireAssignment(11, t.TempDir(), script))
	task := waitStarted(t, rt, "phx-11-0-0")
	h.srv.waitReport(t, 11, "RUNNING")
	h.stop(t)
	if _, ok := task.Exited(); !ok {
		t.Fatal("task still runs after Run returned")
	}
	r := h.srv.reportsFor(11)
	if len(r) != 2 || r[1].State != string(cluster.TaskLost) || r[1].Message != "node agent shut down" {
		t.Fatalf("reports %v", r)
	}
	// The node is not at fault: the job's next attempt may run here.
	if !r[1].AgentShutdown {
		t.Error("the LOST report of a shutdown does not say so (agent_shutdown)")
	}
}

func TestControllerLateAndStreamBroken(t *testing.T) {
	// An address with nothing listening on it yet.
	addr, err := freeport.Addr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	rt := fake.New()
	a, err := New(Config{Name: node, Controllers: []string{addr}, StateDir: t.TempDir(), Runtime: rt,
		HeartbeatInterval: 20 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()

	// The agent retries all along: the failures are set before the first
	// call can come.
	srv := startFakeNodeServiceAt(t, addr, func(f *fakeNodeService) { f.failWatches = 2 })
	srv.set(wireAssignment(12, t.TempDir(), script))
	waitStarted(t, rt, "phx-12-0-0")
	if regs, _, watches, _ := srv.counts(); regs != 1 || watches != 3 {
		t.Errorf("%d registrations and %d watches; want 1, and 2 failed watches + 1", regs, watches)
	}
}
