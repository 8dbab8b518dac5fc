package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
)

// checkScript writes an executable shell script.
func checkScript(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "check")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestProgramVerdict(t *testing.T) {
	exit1 := exec.Command("sh", "-c", "exit 1").Run()
	for _, tc := range []struct {
		name, out string
		err       error
		timedOut  bool
		want      string
	}{
		{"passes", "all fine\n", nil, false, ""},
		{"NHC", "20261125 node check\nERROR:  nhc:  Health check failed:  check_fs_mount:  /scratch not mounted\r\n", exit1, false,
			"nhc: Health check failed: check_fs_mount: /scratch not mounted"},
		{"ERROR with exit 0", "ERROR: disk full\n", nil, false, "disk full"},
		{"exit 1", "checking\nbad \xff thing\n\n", exit1, false, "/sbin/check exit status 1: bad ? thing"},
		{"exit 1, silent", "", exit1, false, "/sbin/check exit status 1"},
		{"timeout", "still checking\n", errors.New("signal: killed"), true, "/sbin/check timed out after 1m0s"},
		{"missing", "", &os.PathError{Op: "fork/exec", Path: "/sbin/check", Err: os.ErrNotExist}, false, "cannot run /sbin/check: fork/exec /sbin/check: file does not exist"},
	} {
		if got := programVerdict("/sbin/check", []byte(tc.out), tc.err, tc.timedOut, time.Minute, true); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestRunProgram(t *testing.T) {
	ctx := context.Background()
	if msg := checkProgram(ctx, checkScript(t, `[ "$SLURMD_NODENAME" = gpu001 ] || exit 3`), 5*time.Second, "gpu001"); msg != "" {
		t.Errorf("a passing program: %q", msg)
	}
	if msg := checkProgram(ctx, checkScript(t, `echo "ERROR:  nhc:  Health check failed:  check_hw_ib:  No IB port mlx5_0:1 is ACTIVE"; exit 1`), 5*time.Second, "n"); msg != "nhc: Health check failed: check_hw_ib: No IB port mlx5_0:1 is ACTIVE" {
		t.Errorf("NHC's failure: %q", msg)
	}
	// A program that hangs, with a child holding its output open, is killed
	// whole at its timeout.
	start := time.Now()
	prog := checkScript(t, "sleep 30 & sleep 30")
	if msg := checkProgram(ctx, prog, 300*time.Millisecond, "n"); msg != prog+" timed out after 300ms" {
		t.Errorf("a hanging program: %q", msg)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the hanging program held the check %v", took)
	}
	if msg := checkProgram(ctx, "/nonexistent/nhc", time.Second, "n"); !strings.HasPrefix(msg, "cannot run /nonexistent/nhc: ") {
		t.Errorf("a missing program: %q", msg)
	}
}

// The agent runs the health program the controller's heartbeat replies
// name: a failure is a problem in the next heartbeat, with NHC's message,
// and a later pass clears it.
func TestHealthProgramReachesController(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "broken")
	prog := checkScript(t, fmt.Sprintf(`[ -e %s ] && { echo "ERROR: nhc: check_fs_mount: /scratch not mounted"; exit 1; }; exit 0`, flag))
	h := newHarness(t, fake.New(), func(c *Config) { c.HeartbeatInterval = 20 * time.Millisecond })
	h.srv.mu.Lock()
	h.srv.healthCheck = &phalanxv1.HealthCheck{Program: prog, IntervalSeconds: 1, NodeState: "ANY"}
	h.srv.mu.Unlock()
	problems := func() string {
		h.srv.mu.Lock()
		defer h.srv.mu.Unlock()
		if len(h.srv.heartbeats) == 0 {
			return "(no heartbeat yet)"
		}
		var out []string
		for _, p := range h.srv.heartbeats[len(h.srv.heartbeats)-1].Problems {
			out = append(out, p.Check+": "+p.Message)
		}
		return strings.Join(out, "; ")
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if got, want := problems(), "health-program: nhc: check_fs_mount: /scratch not mounted"; got != want {
			return fmt.Errorf("problems %q, want %q", got, want)
		}
		return nil
	})
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if got := problems(); got != "" {
			return fmt.Errorf("problems %q after the program passed", got)
		}
		return nil
	})
	// The program is taken away: nothing runs, nothing is reported.
	h.srv.mu.Lock()
	h.srv.healthCheck = nil
	h.srv.mu.Unlock()
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond) // over two of its intervals
	if got := problems(); got != "" {
		t.Errorf("problems %q after the program was taken away", got)
	}
}

func TestNodeChecks(t *testing.T) {
	dir := t.TempDir()
	free, size, err := statfsMB(dir)
	if err != nil || size <= 0 || free > size {
		t.Fatalf("statfs %s: free %d of %d MiB, %v", dir, free, size, err)
	}
	ok := &NodeChecks{Dirs: []string{dir}, MinFreeMB: 1, ShmPath: dir, MinShmMB: 1}
	if got := ok.check(); len(got) != 0 {
		t.Errorf("checks a roomy disk fails: %v", got)
	}
	short := &NodeChecks{Dirs: []string{dir, "/nonexistent"}, MinFreeMB: free + 1<<30, ShmPath: dir, MinShmMB: size + 1}
	got := short.check()
	if len(got) != 3 || got[0].check != "disk" || !strings.Contains(got[0].message, fmt.Sprintf("%s has %d MiB free (jobs need", dir, free)) ||
		got[1].check != "disk" || !strings.Contains(got[1].message, "/nonexistent: no such file") ||
		got[2].check != "shm" || !strings.Contains(got[2].message, fmt.Sprintf("is %d MiB (jobs need %d MiB", size, size+1)) {
		t.Errorf("checks of a full disk: %v", got)
	}
}

// A failing built-in check reaches the controller with the next
// heartbeat.
func TestNodeChecksReachController(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, fake.New(), func(c *Config) {
		c.NodeChecks = &NodeChecks{Dirs: []string{dir}, MinFreeMB: 1 << 40, Interval: time.Hour}
	})
	eventually(t, 10*time.Second, func() error {
		h.srv.mu.Lock()
		defer h.srv.mu.Unlock()
		if n := len(h.srv.heartbeats); n == 0 || len(h.srv.heartbeats[n-1].Problems) != 1 || h.srv.heartbeats[n-1].Problems[0].Check != "disk" {
			return fmt.Errorf("no heartbeat with the disk problem yet")
		}
		return nil
	})
}

func TestMemlockCheck(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(unix.RLIMIT_MEMLOCK, &old); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Setrlimit(unix.RLIMIT_MEMLOCK, &old) })
	low := syscall.Rlimit{Cur: 64 << 10, Max: old.Max}
	if err := syscall.Setrlimit(unix.RLIMIT_MEMLOCK, &low); err != nil {
		t.Fatal(err)
	}
	got := (&NodeChecks{Memlock: true}).check()
	if len(got) != 1 || got[0].check != "memlock" || !strings.HasPrefix(got[0].message, "locked memory is limited to 64 KiB; RDMA needs unlimited") {
		t.Errorf("at 64 KiB: %v", got)
	}
	if msg := memlockProblem(unix.RLIM_INFINITY); msg != "" {
		t.Errorf("unlimited: %q", msg)
	}
}
