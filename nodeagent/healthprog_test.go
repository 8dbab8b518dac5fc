package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
		if got := programVerdict("/sbin/check", []byte(tc.out), tc.err, tc.timedOut, time.Minute); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestRunProgram(t *testing.T) {
	ctx := context.Background()
	if msg := runProgram(ctx, checkScript(t, `[ "$SLURMD_NODENAME" = gpu001 ] || exit 3`), 5*time.Second, "gpu001"); msg != "" {
		t.Errorf("a passing program: %q", msg)
	}
	if msg := runProgram(ctx, checkScript(t, `echo "ERROR:  nhc:  Health check failed:  check_hw_ib:  No IB port mlx5_0:1 is ACTIVE"; exit 1`), 5*time.Second, "n"); msg != "nhc: Health check failed: check_hw_ib: No IB port mlx5_0:1 is ACTIVE" {
		t.Errorf("NHC's failure: %q", msg)
	}
	// A program that hangs, with a child holding its output open, is killed
	// whole at its timeout.
	start := time.Now()
	prog := checkScript(t, "sleep 30 & sleep 30")
	if msg := runProgram(ctx, prog, 300*time.Millisecond, "n"); msg != prog+" timed out after 300ms" {
		t.Errorf("a hanging program: %q", msg)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the hanging program held the check %v", took)
	}
	if msg := runProgram(ctx, "/nonexistent/nhc", time.Second, "n"); !strings.HasPrefix(msg, "cannot run /nonexistent/nhc: ") {
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
