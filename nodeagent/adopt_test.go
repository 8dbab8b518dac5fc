package nodeagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/runtime/process"
)

func processRuntime(dir string) *process.Runtime {
	return process.New(dir, process.WithMaxPoll(10*time.Millisecond))
}

// gatedScript prints "started", waits for the file gate, prints "ending"
// and exits with code.
func gatedScript(gate, code string) string {
	return "#!/bin/sh\necho started\nwhile [ ! -e " + gate + " ]; do sleep 0.01; done\necho ending\nexit " + code + "\n"
}

func waitForFile(t *testing.T, path, want string) {
	t.Helper()
	eventually(t, 10*time.Second, func() error {
		b, err := os.ReadFile(path)
		if err != nil || string(b) != want {
			return errors.New("have " + string(b))
		}
		return nil
	})
}

// An agent restarted while its task runs takes the task over: the task is
// neither stopped nor started again, and its end is reported with its own
// exit code.
func TestRestartedAgentAdoptsRunningTask(t *testing.T) {
	rtDir, work := t.TempDir(), t.TempDir()
	gate := filepath.Join(t.TempDir(), "gate")
	h := newHarness(t, processRuntime(rtDir), func(c *Config) { c.StopTasksOnExit = false })
	h.srv.set(wireAssignment(30, work, gatedScript(gate, "7")))
	h.srv.waitReport(t, 30, "RUNNING")
	out := filepath.Join(work, "slurm-30.out")
	waitForFile(t, out, "started\n")

	h.restart(t, processRuntime(rtDir))
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.srv.waitReport(t, 30, "EXITED")
	if r.ExitCode != 7 {
		t.Errorf("EXITED with code %d, want 7", r.ExitCode)
	}
	if got := states(h.srv.reportsFor(30)); !reflect.DeepEqual(got, []string{"RUNNING", "EXITED"}) {
		t.Errorf("reports %v, want RUNNING then EXITED", got)
	}
	waitForFile(t, out, "started\nending\n") // ran once, to its end
	eventually(t, 10*time.Second, func() error {
		if _, err := os.Stat(filepath.Join(h.cfg.StateDir, "jobs", "30.0")); !errors.Is(err, os.ErrNotExist) {
			return errors.New("the attempt folder is still there")
		}
		if tasks, _ := processRuntime(rtDir).Recover(t.Context()); len(tasks) != 0 {
			return errors.New("the runtime still has the task on record")
		}
		return nil
	})
}

// A task that ends while no agent runs is reported, with its exit code,
// by the next run.
func TestRestartedAgentReportsTaskEndedMeanwhile(t *testing.T) {
	rtDir, work := t.TempDir(), t.TempDir()
	gate := filepath.Join(t.TempDir(), "gate")
	h := newHarness(t, processRuntime(rtDir), func(c *Config) { c.StopTasksOnExit = false })
	h.srv.set(wireAssignment(31, work, gatedScript(gate, "3")))
	h.srv.waitReport(t, 31, "RUNNING")
	h.stop(t)

	os.WriteFile(gate, nil, 0o644)
	waitForFile(t, filepath.Join(work, "slurm-31.out"), "started\nending\n")
	eventually(t, 10*time.Second, func() error { // its supervisor records the end
		_, err := os.Stat(filepath.Join(rtDir, "phx-31-0-0.exit"))
		return err
	})
	if got := states(h.srv.reportsFor(31)); !reflect.DeepEqual(got, []string{"RUNNING"}) {
		t.Fatalf("reports while the agent was away: %v", got)
	}
	h.cfg.Runtime = processRuntime(rtDir)
	h.done = make(chan error, 1)
	h.start(t)
	if r := h.srv.waitReport(t, 31, "EXITED"); r.ExitCode != 3 {
		t.Errorf("EXITED with code %d, want 3", r.ExitCode)
	}
}

// A re-adopted task's time limit is still enforced.
func TestRestartedAgentKeepsTimeLimit(t *testing.T) {
	rtDir, work := t.TempDir(), t.TempDir()
	h := newHarness(t, processRuntime(rtDir), func(c *Config) { c.StopTasksOnExit = false })
	as := wireAssignment(32, work, "#!/bin/sh\necho started\nexec sleep 600\n")
	as.Job.Spec.TimeLimitSeconds = 2
	h.srv.set(as)
	h.srv.waitReport(t, 32, "RUNNING")
	waitForFile(t, filepath.Join(work, "slurm-32.out"), "started\n")
	h.restart(t, processRuntime(rtDir))
	h.srv.waitReport(t, 32, "TIMEOUT")
}

// A task's record gives a re-adopted task its time limit and when it
// started, which the limit counts from (not from the restart); a limit
// changed while the task ran replaces the one it started with.
func TestRecordedLimitsCountFromStart(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	a := &Agent{cfg: Config{StateDir: t.TempDir(), Clock: fixedClock{now.Add(-90 * time.Second)}}}
	key := taskKey{job: 40, rank: 0}
	if err := os.MkdirAll(a.jobDir(key), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := a.writeTaskRecord(key, jobInfo{timeLimit: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	a.cfg.Clock = fixedClock{now}
	job, started, ok := a.recordedLimits(key)
	if !ok || job.timeLimit != 2*time.Minute || !started.Equal(now.Add(-90*time.Second)) {
		t.Fatalf("record: limit %v, started %v (ok %v); want 2m0s, 90s ago", job.timeLimit, started, ok)
	}
	if err := a.recordLimit(key, time.Hour); err != nil {
		t.Fatal(err)
	}
	job, started, ok = a.recordedLimits(key)
	if !ok || job.timeLimit != time.Hour || !started.Equal(now.Add(-90*time.Second)) {
		t.Errorf("after a change: limit %v, started %v (ok %v); want 1h0m0s, still 90s ago", job.timeLimit, started, ok)
	}
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time                         { return c.t }
func (c fixedClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// A task whose supervisor died with the agent cannot be accounted for: it
// is killed and reported LOST, never left running.
func TestRestartedAgentReportsLostSupervisor(t *testing.T) {
	rtDir, work := t.TempDir(), t.TempDir()
	h := newHarness(t, processRuntime(rtDir), func(c *Config) { c.StopTasksOnExit = false })
	h.srv.set(wireAssignment(33, work, "#!/bin/sh\necho started\nexec sleep 600\n"))
	h.srv.waitReport(t, 33, "RUNNING")
	waitForFile(t, filepath.Join(work, "slurm-33.out"), "started\n")
	h.stop(t)
	b, err := os.ReadFile(filepath.Join(rtDir, "phx-33-0-0.task"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		PGID int `json:"pgid"`
		Shim int `json:"shim_pid"`
	}
	if err := json.Unmarshal(b, &rec); err != nil || rec.Shim <= 1 || rec.PGID <= 1 {
		t.Fatalf("task record %s: %v", b, err)
	}
	syscall.Kill(rec.Shim, syscall.SIGKILL)
	eventually(t, 10*time.Second, func() error {
		if alive(rec.Shim) {
			return errors.New("the supervisor still runs")
		}
		return nil
	})
	// (The first agent's runtime, still in this process, may kill the
	// task as soon as it sees the supervisor die; a dead agent would not.
	// runtime/process's TestRecoverLostSupervisor has Recover do it.)

	h.cfg.Runtime = processRuntime(rtDir)
	h.done = make(chan error, 1)
	h.start(t)
	r := h.srv.waitReport(t, 33, "LOST")
	if !strings.Contains(r.Message, "supervisor ended without recording") {
		t.Errorf("LOST message %q", r.Message)
	}
	if alive(rec.PGID) {
		t.Errorf("the task (process %d) still runs", rec.PGID)
	}
}

// alive reports whether pid is a process that is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	rest := s[strings.LastIndexByte(s, ')')+1:]
	f := strings.Fields(rest)
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// By default (phalanx-agent without --stop-tasks-on-exit) a stopping agent
// reports nothing about the tasks it leaves running.
func TestStoppingAgentLeavesTasksRunning(t *testing.T) {
	rtDir, work := t.TempDir(), t.TempDir()
	h := newHarness(t, processRuntime(rtDir), func(c *Config) { c.StopTasksOnExit = false })
	h.srv.set(wireAssignment(34, work, "#!/bin/sh\necho started\nexec sleep 600\n"))
	h.srv.waitReport(t, 34, "RUNNING")
	h.stop(t)
	tasks, err := processRuntime(rtDir).Recover(t.Context())
	if err != nil || len(tasks) != 1 {
		t.Fatalf("after the agent stopped: %d tasks on record, %v; want the one still running", len(tasks), err)
	}
	if got := states(h.srv.reportsFor(34)); !reflect.DeepEqual(got, []string{"RUNNING"}) {
		t.Errorf("reports %v, want only RUNNING", got)
	}
	// The next run, with --stop-tasks-on-exit, takes it over and stops it.
	h.cfg.StopTasksOnExit = true
	h.restart(t, processRuntime(rtDir))
	h.stop(t)
	h.srv.waitReport(t, 34, "LOST")
}
