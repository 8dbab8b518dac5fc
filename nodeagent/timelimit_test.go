package nodeagent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
)

// afterClock is a fixed clock that records the waits asked of it.
type afterClock struct {
	now   time.Time
	waits map[<-chan time.Time]time.Duration
}

func (c *afterClock) Now() time.Time { return c.now }

func (c *afterClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time)
	c.waits[ch] = d
	return ch
}

// wait is how long ch was set to wait; -1: it is nil, no wait.
func (c *afterClock) wait(ch <-chan time.Time) time.Duration {
	if ch == nil {
		return -1
	}
	return c.waits[ch]
}

// A time limit counts from the task's start, whenever it is set: a
// re-adopted task has what is left of it, a raised one moves the deadline
// on, one shorter than the time run ends the task at once. The --signal
// due before the limit moves with it, and is sent once.
func TestLimitWatchCountsFromStart(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clock := &afterClock{now: now, waits: map[<-chan time.Time]time.Duration{}}
	usr1 := cluster.JobSignal{Signal: int(syscall.SIGUSR1), Before: time.Minute}
	w := newLimitWatch(clock, now.Add(-100*time.Second), 5*time.Minute, usr1)
	check := func(what string, deadline, warn time.Duration) {
		t.Helper()
		if got, gotWarn := clock.wait(w.deadline), clock.wait(w.warn); got != deadline || gotWarn != warn {
			t.Errorf("%s: deadline in %v, signal in %v; want %v, %v", what, got, gotWarn, deadline, warn)
		}
	}
	check("5 min, 100 s run", 200*time.Second, 140*time.Second)
	w.set(10 * time.Minute)
	check("raised to 10 min", 500*time.Second, 440*time.Second)
	w.set(time.Minute)
	check("lowered to 1 min, 100 s run", 0, 0)
	w.set(0)
	check("lifted", -1, -1)
	w.set(3 * time.Minute)
	w.warned()
	check("3 min, signal sent", 80*time.Second, -1)
	w.set(time.Hour)
	check("raised to 1 h after the signal", 3500*time.Second, -1)
}

// scontrol update TimeLimit= on a running job: the task's supervisor
// follows the job's new limit, counted from the task's start; lowered
// below the time it has run, the task ends at once, TIMEOUT.
func TestRunningTaskFollowsNewTimeLimit(t *testing.T) {
	rt := fake.New()
	clock := scaledClock{start: time.Now(), factor: 100}
	h := newHarness(t, rt, func(c *Config) {
		c.Clock = clock
		c.HeartbeatInterval, c.KillGrace = 2*time.Second, 5*time.Second
	})
	as := wireAssignment(60, t.TempDir(), script)
	as.Job.TimeLimitSeconds = 20 // 200 ms of wall time
	h.srv.set(as)
	waitStarted(t, rt, "phx-60-0-0")
	running := h.srv.waitReport(t, 60, "RUNNING")
	as.Job.TimeLimitSeconds = 3600 // raised before the first limit passes
	h.srv.set(as)
	pastOld := running.Time.AsTime().Add(25 * time.Second)
	eventually(t, 10*time.Second, func() error { // the agent's clock passes the old limit
		if now := clock.Now(); now.Before(pastOld) {
			return fmt.Errorf("the agent's clock is at %v, not yet past the old limit at %v", now, pastOld)
		}
		return nil
	})
	if got := states(h.srv.reportsFor(60)); !reflect.DeepEqual(got, []string{"RUNNING"}) {
		t.Fatalf("reports %v past the old limit; want RUNNING only", got)
	}
	as.Job.TimeLimitSeconds = 5 // lowered below the time it has run
	h.srv.set(as)
	r := h.srv.waitReport(t, 60, "TIMEOUT")
	if r.Message != "time limit of 5s reached" {
		t.Errorf("TIMEOUT report = %v", r)
	}
	if d := r.Time.AsTime().Sub(running.Time.AsTime()); d < 25*time.Second {
		t.Errorf("timed out %s after start, before the raised limit was lowered", d)
	}
}

// A limit changed while the task runs is written to the task's record: an
// agent restarted over the task, and cut off from the controller, enforces
// the new limit, not the one the task started with; a change sent once it
// is back is followed too.
func TestRestartedAgentKeepsChangedTimeLimit(t *testing.T) {
	rtDir, work := t.TempDir(), t.TempDir()
	h := newHarness(t, processRuntime(rtDir), func(c *Config) { c.StopTasksOnExit = false })
	as := wireAssignment(61, work, "#!/bin/sh\necho started\nexec sleep 600\n")
	as.Job.TimeLimitSeconds = 2
	h.srv.set(as)
	running := h.srv.waitReport(t, 61, "RUNNING")
	waitForFile(t, filepath.Join(work, "slurm-61.out"), "started\n")
	as.Job.TimeLimitSeconds = 3600
	h.srv.set(as)
	record := filepath.Join(h.cfg.StateDir, "jobs", "61.0", "task.0")
	eventually(t, 10*time.Second, func() error {
		b, err := os.ReadFile(record)
		if err != nil || !strings.Contains(string(b), `"time_limit_s":3600`) {
			return fmt.Errorf("task record %s (%v); want the new limit", b, err)
		}
		return nil
	})

	h.srv.mu.Lock()
	h.srv.failWatches = 1 << 20 // the restarted agent hears nothing from the controller
	h.srv.mu.Unlock()
	h.restart(t, processRuntime(rtDir))
	pastOld := running.Time.AsTime().Add(3 * time.Second)
	eventually(t, 10*time.Second, func() error {
		if time.Now().Before(pastOld) {
			return errors.New("not yet past the old limit")
		}
		return nil
	})
	if got := states(h.srv.reportsFor(61)); !reflect.DeepEqual(got, []string{"RUNNING"}) {
		t.Fatalf("reports %v past the old limit; want RUNNING only", got)
	}
	h.srv.mu.Lock()
	h.srv.failWatches = 0
	h.srv.mu.Unlock()
	as.Job.TimeLimitSeconds = 1
	h.srv.set(as)
	if r := h.srv.waitReport(t, 61, "TIMEOUT"); r.Message != "time limit of 1s reached" {
		t.Errorf("TIMEOUT report = %v", r)
	}
}

// A task that ignores SIGTERM at its time limit is killed after the grace
// its assignment carries (the controllers' --kill-grace, which a cancel
// gets and the scheduler counts on), not the agent's own: 2 s here, not
// 60 s. A re-adopted task keeps that grace (its task record).
func TestTimeLimitGraceIsTheControllers(t *testing.T) {
	rt, h := stubbornTasks(t, 60*time.Second)
	as := wireAssignment(5, t.TempDir(), script)
	as.Job.TimeLimitSeconds, as.GraceSeconds = 3, 2
	h.srv.set(as)
	waitStarted(t, rt, "phx-5-0-0")
	running := h.srv.waitReport(t, 5, "RUNNING")
	r := h.srv.waitReport(t, 5, "TIMEOUT")
	if d := r.Time.AsTime().Sub(running.Time.AsTime()); d > 30*time.Second {
		t.Errorf("killed %s after its start: want the 3 s limit and the 2 s grace of the assignment, not the agent's 60 s", d.Round(time.Second))
	}
	key := taskKey{job: 6}
	if err := os.MkdirAll(h.agent.jobDir(key), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := h.agent.writeTaskRecord(key, jobInfo{killGrace: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if job, _, ok := h.agent.recordedLimits(key); !ok || job.killGrace != 2*time.Second {
		t.Errorf("task record's grace %s (ok %v); want 2s", job.killGrace, ok)
	}
}

// stubbornTasks is an agent whose tasks ignore SIGTERM, on a clock 100
// times faster than real time, with agentGrace as its own --kill-grace.
func stubbornTasks(t *testing.T, agentGrace time.Duration) (*fake.Runtime, *harness) {
	rt := fake.New(fake.WithIgnoreSIGTERM())
	clock := scaledClock{start: time.Now(), factor: 100}
	h := newHarness(t, rt, func(c *Config) {
		c.Clock = clock
		c.HeartbeatInterval = 2 * time.Second
		c.KillGrace = agentGrace
	})
	return rt, h
}
