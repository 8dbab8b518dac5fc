package nodeagent

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/runtime"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
)

// An agent killed between starting a task and reporting it RUNNING leaves
// the controller with the task still ASSIGNED. Its next run must not start
// a second copy: the attempt folder it finds says the task was started.
func TestLeftoverAttemptIsReportedLostNotStarted(t *testing.T) {
	state := t.TempDir()
	left := filepath.Join(state, "jobs", "5.0")
	if err := os.MkdirAll(left, 0o755); err != nil {
		t.Fatal(err)
	}
	rt := fake.New()
	h := newHarness(t, rt, func(c *Config) { c.StateDir = state })
	h.srv.set(wireAssignment(5, t.TempDir(), script)) // no task state: ASSIGNED

	r := h.srv.waitReport(t, 5, "LOST")
	if r.Message != "node agent restarted while the task ran" {
		t.Errorf("LOST report message %q", r.Message)
	}
	if got := states(h.srv.reportsFor(5)); !reflect.DeepEqual(got, []string{"LOST"}) {
		t.Errorf("reports %v; want only LOST", got)
	}
	if specs := rt.Specs(); len(specs) != 0 {
		t.Errorf("the task was started again: %v", specs)
	}
	if _, err := os.Stat(left); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("leftover folder still there: %v", err)
	}
	// Another attempt of the same job is a new task: it starts.
	next := wireAssignment(5, t.TempDir(), script)
	next.Attempt = 1
	h.srv.set(next)
	waitStarted(t, rt, "phx-5-1-0")
}

// The process group a dead agent's task left running is killed when the
// agent starts again; one recorded under an earlier boot is left alone.
func TestLeftoverProcessGroupIsKilled(t *testing.T) {
	state := t.TempDir()
	orphan, orphanEnded := startGroup(t)
	stale, _ := startGroup(t)
	writeRecord(t, filepath.Join(state, "jobs", "6.0"), fmt.Sprintf("%d %s\n", orphan, runtime.BootID()))
	writeRecord(t, filepath.Join(state, "jobs", "7.2"), fmt.Sprintf("%d an-earlier-boot\n", stale))

	newHarness(t, fake.New(), func(c *Config) { c.StateDir = state })

	select {
	case err := <-orphanEnded:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("leftover task ended with %v, want killed by SIGKILL", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the leftover task still runs")
	}
	eventually(t, 10*time.Second, func() error {
		entries, err := os.ReadDir(filepath.Join(state, "jobs"))
		if err != nil || len(entries) != 0 {
			return fmt.Errorf("jobs folder: %v %v", entries, err)
		}
		return nil
	})
	if err := syscall.Kill(-stale, 0); err != nil {
		t.Errorf("the group recorded under another boot was killed: %v", err)
	}
}

// startGroup starts a sleep in a process group of its own, killed when the
// test ends. It returns the group's ID and a channel that receives how the
// sleep ended.
func startGroup(t *testing.T) (pgid int, ended <-chan error) {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan error, 1)
	go func() { ch <- cmd.Wait() }()
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	return cmd.Process.Pid, ch
}

func writeRecord(t *testing.T, dir, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pgid.0"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadGroupRefusesDangerousIDs(t *testing.T) {
	dir := t.TempDir()
	for _, body := range []string{"0 b", "1 b", "-5 b", fmt.Sprintf("%d b", syscall.Getpgrp()), "12", "x b"} {
		path := filepath.Join(dir, "pgid.0")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if pgid, _, err := readGroup(path); err == nil {
			t.Errorf("record %q read as group %d", body, pgid)
		}
	}
}
