package process_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/runtime"
	"github.com/phalanx-hpc/phalanx/runtime/process"
)

// startLeased starts script as a task under a runtime on dir that holds a
// lease ending after d.
func startLeased(t *testing.T, dir string, d time.Duration, script string) (*process.Runtime, runtime.Task, string) {
	t.Helper()
	r := process.New(dir, process.WithMaxPoll(10*time.Millisecond))
	if err := r.Lease(runtime.BootClock().Add(d)); err != nil {
		t.Fatalf("Lease: %v", err)
	}
	out := filepath.Join(t.TempDir(), "out")
	task, err := r.Start(context.Background(), runtime.Spec{ID: "phx-3-0-0", Argv: []string{"/bin/sh", "-c", script},
		Env: []string{"PATH=/usr/bin:/bin"}, Stdout: out, Stderr: out, UID: -1, GID: -1})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { task.Signal(context.Background(), syscall.SIGKILL) })
	return r, task, out
}

func waitFenced(t *testing.T, task runtime.Task, within time.Duration) runtime.ExitStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	st, err := task.Wait(ctx)
	if !errors.Is(err, runtime.ErrFenced) {
		t.Fatalf("Wait = %+v, %v; want ErrFenced", st, err)
	}
	return st
}

// A task outliving the node's lease is killed by its supervisor, every
// process of its group with it, and Wait says it was fenced.
func TestLeaseEndKillsTask(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	start := time.Now()
	_, task, _ := startLeased(t, t.TempDir(), 2*time.Second, "sleep 600 & echo $! > "+pids+"; wait")
	waitFor(t, "the child's PID", func() bool { b, _ := os.ReadFile(pids); return strings.HasSuffix(string(b), "\n") })
	st := waitFenced(t, task, 10*time.Second)
	if st.Signal != syscall.SIGKILL {
		t.Errorf("exit %+v; want SIGKILL", st)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("killed after %s, before its lease of 2s ended", took)
	}
	b, _ := os.ReadFile(pids)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the task's child to die", func() bool {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return err != nil || strings.Contains(string(stat), ") Z ") // gone, or a zombie its new parent has not reaped
	})
}

// Renewed in time, the lease lets the task run to its own end.
func TestRenewedLeaseKeepsTask(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	r, task, _ := startLeased(t, t.TempDir(), 2*time.Second, "while [ ! -e "+gate+" ]; do sleep 0.01; done; exit 4")
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := r.Lease(runtime.BootClock().Add(2 * time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(gate, nil, 0o644)
	if st := wait(t, task); st != (runtime.ExitStatus{Code: 4}) {
		t.Errorf("exit %+v; want code 4", st)
	}
}

// A task started under a lease whose file is gone does not run on: the
// lease cannot be proved.
func TestMissingLeaseFences(t *testing.T) {
	dir := t.TempDir()
	_, task, _ := startLeased(t, dir, time.Hour, "sleep 600")
	if err := os.Remove(filepath.Join(dir, "lease")); err != nil {
		t.Fatal(err)
	}
	waitFenced(t, task, 10*time.Second)
}

// The fence does not need the agent: a task whose agent is gone is killed
// at the lease's end by its supervisor, and the next agent finds it
// fenced.
func TestLeaseFencesWithoutAgent(t *testing.T) {
	dir := t.TempDir()
	startInLeased(t, dir, "phx-9-0-0", "sleep 600", 500*time.Millisecond)
	waitFor(t, "the supervisor's exit record", func() bool {
		_, err := os.Stat(filepath.Join(dir, "phx-9-0-0.exit"))
		return err == nil
	})
	waitFenced(t, recoverOne(t, dir), 10*time.Second)
}

// A runtime that never held a lease does not fence its tasks.
func TestNoLeaseNoFence(t *testing.T) {
	task, _ := run(t, "sleep 0.5; exit 2")
	if st := wait(t, task); st != (runtime.ExitStatus{Code: 2}) {
		t.Errorf("exit %+v; want code 2", st)
	}
}

// A runtime that took over a task its supervisor does not fence (started
// with no lease, as by an agent before leases) does not claim to fence
// all its tasks; one whose tasks all have the lease does.
func TestFencesAll(t *testing.T) {
	old, leased := t.TempDir(), t.TempDir()
	startIn(t, old, "phx-4-0-0", "sleep 600")
	startInLeased(t, leased, "phx-5-0-0", "sleep 600", time.Hour)
	for dir, want := range map[string]bool{old: false, leased: true} {
		r := process.New(dir)
		tasks, err := r.Recover(context.Background())
		if err != nil || len(tasks) != 1 {
			t.Fatalf("Recover: %d tasks, %v", len(tasks), err)
		}
		if got := r.FencesAll(); got != want {
			t.Errorf("FencesAll after taking over a task started with lease=%v: %v", want, got)
		}
		tasks[0].Signal(context.Background(), syscall.SIGKILL)
		// Its supervisor records the end in dir: wait for it, before the
		// test removes dir.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		tasks[0].Wait(ctx)
		cancel()
	}
}
