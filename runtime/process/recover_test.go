package process_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/runtime"
	"github.com/phalanx-hpc/phalanx/runtime/process"
)

// startIn starts script as task id under a runtime on dir, from another
// process that exits right after, as an agent that dies would: the task
// lives on under its supervisor, which is nobody's child here.
func startIn(t *testing.T, dir, id, script string) (out string) {
	return startInLeased(t, dir, id, script, 0)
}

// startInLeased is startIn with the dying agent's runtime holding a lease
// that ends after lease (0: none).
func startInLeased(t *testing.T, dir, id, script string, lease time.Duration) (out string) {
	t.Helper()
	out = filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PHX_TEST_START_IN="+dir, "PHX_TEST_START_ID="+id,
		"PHX_TEST_START_SCRIPT="+script, "PHX_TEST_START_OUT="+out, "PHX_TEST_START_LEASE="+lease.String())
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("starter: %v: %s", err, b)
	}
	return out
}

// starter is the process startIn runs: it starts the task and exits.
func starter() {
	dir := os.Getenv("PHX_TEST_START_IN")
	if dir == "" {
		return
	}
	out := os.Getenv("PHX_TEST_START_OUT")
	r := process.New(dir, process.WithMaxPoll(10*time.Millisecond))
	if lease, _ := time.ParseDuration(os.Getenv("PHX_TEST_START_LEASE")); lease > 0 {
		if err := r.Lease(runtime.BootClock().Add(lease)); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
	}
	_, err := r.Start(context.Background(), runtime.Spec{
		ID: os.Getenv("PHX_TEST_START_ID"), Argv: []string{"/bin/sh", "-c", os.Getenv("PHX_TEST_START_SCRIPT")},
		Env: []string{"PATH=/usr/bin:/bin"}, Stdout: out, Stderr: out, UID: -1, GID: -1,
	})
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	os.Exit(0)
}

func recoverOne(t *testing.T, dir string) runtime.Task {
	t.Helper()
	tasks, err := process.New(dir, process.WithMaxPoll(10*time.Millisecond)).Recover(context.Background())
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if len(tasks) != 1 {
		t.Fatalf("Recover found %d tasks, want 1", len(tasks))
	}
	return tasks[0]
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func record(t *testing.T, dir, id string) (pgid, shim int) {
	t.Helper()
	var r struct {
		PGID    int `json:"pgid"`
		ShimPID int `json:"shim_pid"`
	}
	b, err := os.ReadFile(filepath.Join(dir, id+".task"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.PGID, r.ShimPID
}

// A task whose starter died runs on; a new runtime on the same directory
// finds it, waits for it, and gets its exit code; Close forgets it.
func TestRecoverRunningTask(t *testing.T) {
	dir, gate := t.TempDir(), filepath.Join(t.TempDir(), "gate")
	out := startIn(t, dir, "phx-7-0-0", `echo started; while [ ! -e `+gate+` ]; do sleep 0.01; done; echo ending; exit 3`)
	waitFor(t, "the task's first line", func() bool { b, _ := os.ReadFile(out); return string(b) == "started\n" })
	task := recoverOne(t, dir)
	if task.ID() != "phx-7-0-0" {
		t.Errorf("ID = %q", task.ID())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := task.Wait(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait before the task ends: %v, want a timeout", err)
	}
	if err := task.Close(context.Background()); err == nil {
		t.Error("Close of a running task succeeded")
	}
	os.WriteFile(gate, nil, 0o644)
	if st := wait(t, task); st != (runtime.ExitStatus{Code: 3}) {
		t.Errorf("exit %+v, want code 3", st)
	}
	if got := readFile(t, out); got != "started\nending\n" {
		t.Errorf("output %q", got)
	}
	if err := task.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tasks, err := process.New(dir).Recover(context.Background()); err != nil || len(tasks) != 0 {
		t.Errorf("after Close, Recover = %d tasks, %v; want none", len(tasks), err)
	}
}

// A task that ended while no agent ran is found with its exit status.
func TestRecoverEndedTask(t *testing.T) {
	dir := t.TempDir()
	startIn(t, dir, "phx-8-1-2", `kill -USR1 $$`)
	waitFor(t, "the supervisor's exit record", func() bool {
		_, err := os.Stat(filepath.Join(dir, "phx-8-1-2.exit"))
		return err == nil
	})
	task := recoverOne(t, dir)
	if st := wait(t, task); st != (runtime.ExitStatus{Code: 128 + int(syscall.SIGUSR1), Signal: syscall.SIGUSR1}) {
		t.Errorf("exit %+v, want SIGUSR1", st)
	}
}

// A supervisor killed with its task still running leaves that task's fate
// unknown: Recover kills the group and Wait says the task is lost.
func TestRecoverLostSupervisor(t *testing.T) {
	dir := t.TempDir()
	out := startIn(t, dir, "phx-9-0-0", `echo started; exec sleep 600`)
	waitFor(t, "the task's first line", func() bool { b, _ := os.ReadFile(out); return string(b) == "started\n" })
	pgid, shim := record(t, dir, "phx-9-0-0")
	if err := syscall.Kill(shim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the supervisor to die", func() bool { return syscall.Kill(shim, 0) != nil })
	if err := syscall.Kill(-pgid, 0); err != nil {
		t.Fatalf("the task died with its supervisor (%v); the test needs it running", err)
	}
	task := recoverOne(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := task.Wait(ctx); !errors.Is(err, runtime.ErrLost) {
		t.Fatalf("Wait = %v, want ErrLost", err)
	}
	if live := liveGroupMembers(t, pgid); len(live) > 0 {
		t.Errorf("the lost task's group still has processes %v", live)
	}
}

// A record from an earlier boot names processes that are gone: Recover
// drops it.
func TestRecoverDropsEarlierBoot(t *testing.T) {
	dir := t.TempDir()
	rec := `{"v":1,"id":"phx-1-0-0","pgid":4242,"shim_pid":4241,"shim_start":1,"boot":"an-earlier-boot"}`
	if err := os.WriteFile(filepath.Join(dir, "phx-1-0-0.task"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	tasks, err := process.New(dir).Recover(context.Background())
	if err != nil || len(tasks) != 0 {
		t.Fatalf("Recover = %d tasks, %v; want none", len(tasks), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "phx-1-0-0.task")); !os.IsNotExist(err) {
		t.Errorf("the stale record is still there (%v)", err)
	}
}

// A damaged record is reported, not trusted.
func TestRecoverRefusesBadRecord(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "phx-1-0-0.task"), []byte(`{"v":1,"id":"phx-1-0-0","pgid":1,"shim_pid":2}`), 0o600)
	_, err := process.New(dir).Recover(context.Background())
	if err == nil || !strings.Contains(err.Error(), "not a task's") {
		t.Errorf("Recover = %v, want a refusal of process group 1", err)
	}
}

// A SIGHUP meant for the daemons (pkill -HUP -f phalanx-) reaches the
// supervisors too: it must not end one, or its task would be lost.
func TestSupervisorOutlivesSIGHUP(t *testing.T) {
	dir, gate := t.TempDir(), filepath.Join(t.TempDir(), "gate")
	out := startIn(t, dir, "phx-10-0-0", `echo started; while [ ! -e `+gate+` ]; do sleep 0.01; done; exit 3`)
	waitFor(t, "the task's first line", func() bool { b, _ := os.ReadFile(out); return string(b) == "started\n" })
	_, shim := record(t, dir, "phx-10-0-0")
	if err := syscall.Kill(shim, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if err := syscall.Kill(shim, 0); err != nil {
			t.Fatalf("the supervisor died of a SIGHUP: %v", err)
		}
	}
	os.WriteFile(gate, nil, 0o644)
	if st := wait(t, recoverOne(t, dir)); st != (runtime.ExitStatus{Code: 3}) {
		t.Errorf("exit %+v, want code 3: the task's own", st)
	}
}
