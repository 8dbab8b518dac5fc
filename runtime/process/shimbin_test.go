package process_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/runtime"
	"github.com/phalanx-hpc/phalanx/runtime/process"
	"github.com/phalanx-hpc/phalanx/runtime/runtimetest"
)

var shimBin struct {
	once sync.Once
	path string
	err  error
}

// buildShim builds cmd/phalanx-shim once for the test binary.
func buildShim(tb testing.TB) string {
	tb.Helper()
	shimBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "phx-shim-bin-")
		if err != nil {
			shimBin.err = err
			return
		}
		shimBin.path = filepath.Join(dir, process.ShimName)
		cmd := exec.Command("go", "build", "-o", shimBin.path, "github.com/phalanx-hpc/phalanx/cmd/phalanx-shim")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			shimBin.err = fmt.Errorf("build phalanx-shim: %v\n%s", err, out)
		}
	})
	if shimBin.err != nil {
		tb.Fatal(shimBin.err)
	}
	return shimBin.path
}

// The installed phalanx-shim supervises a task as the agent's own
// executable does: the task runs, its output and exit status come back,
// and `ps` shows the supervisor as phalanx-shim running that binary.
func TestShimBinaryRunsTask(t *testing.T) {
	shim := buildShim(t)
	out := filepath.Join(t.TempDir(), "out")
	rt := process.New(t.TempDir(), process.WithMaxPoll(10*time.Millisecond), process.WithShim(shim))
	spec := runtime.Spec{ID: "phx-7-0-0", Argv: []string{"/bin/sh", "-c", "echo started; sleep 30; echo done"},
		Env: []string{"PATH=/usr/bin:/bin"}, Stdout: out, Stderr: out, UID: -1, GID: -1}
	task, err := rt.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { task.Signal(context.Background(), syscall.SIGKILL) })
	pid, exe := runtimetest.ProcessExe(process.ShimName + "\x00" + spec.ID + "\x00")
	if pid == 0 {
		t.Fatalf("no process runs as %q while the task runs", process.ShimName+" "+spec.ID)
	}
	if exe != shim {
		t.Errorf("the supervisor runs %q, want %s", exe, shim)
	}
	if err := task.Signal(context.Background(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	st := wait(t, task)
	if st.Signal != syscall.SIGTERM {
		t.Errorf("exit status %+v, want killed by SIGTERM", st)
	}
	if got := readFile(t, out); got != "started\n" {
		t.Errorf("output %q, want %q", got, "started\n")
	}
	// And a task that ends by itself.
	spec.ID = "phx-8-0-0"
	spec.Argv = []string{"/bin/sh", "-c", "echo hi; exit 7"}
	task, err = rt.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if st := wait(t, task); st.Code != 7 || st.Signal != 0 {
		t.Errorf("exit status %+v, want code 7", st)
	}
}

// Run by hand, phalanx-shim says what it is for and exits 2.
func TestShimBinaryByHand(t *testing.T) {
	out, err := exec.Command(buildShim(t)).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "phalanx-agent starts it") {
		t.Errorf("phalanx-shim with no arguments: %v, %q", err, out)
	}
}

func TestShimBeside(t *testing.T) {
	dir := t.TempDir()
	agent := filepath.Join(dir, "phalanx-agent")
	if got := process.ShimBeside(agent); got != "" {
		t.Errorf("none installed: %q", got)
	}
	shim := filepath.Join(dir, process.ShimName)
	os.WriteFile(shim, []byte("#!/bin/sh\n"), 0o644)
	if got := process.ShimBeside(agent); got != "" {
		t.Errorf("not executable: %q", got)
	}
	os.Chmod(shim, 0o755)
	if got := process.ShimBeside(agent); got != shim {
		t.Errorf("installed: %q, want %s", got, shim)
	}
}

// BenchmarkStartWait: one plain-process task (/bin/true) started and
// waited for, supervised by phalanx-shim and by phalanx-agent itself (as
// when no phalanx-shim is installed beside it: $PHX_AGENT_BIN, else
// make build's bin/phalanx-agent; skipped when there is none);
// shim-RSS-KiB is a supervisor's resident memory while its task runs.
func BenchmarkStartWait(b *testing.B) {
	agent := os.Getenv("PHX_AGENT_BIN")
	if agent == "" {
		agent, _ = filepath.Abs("../../bin/phalanx-agent")
	}
	for _, bc := range []struct{ name, shim string }{{"shim=phalanx-shim", buildShim(b)}, {"shim=phalanx-agent", agent}} {
		b.Run(bc.name, func(b *testing.B) {
			if _, err := os.Stat(bc.shim); err != nil {
				b.Skipf("%v: make build, or name one in PHX_AGENT_BIN", err)
			}
			rt := process.New(b.TempDir(), process.WithMaxPoll(time.Millisecond), process.WithShim(bc.shim))
			out := filepath.Join(b.TempDir(), "out")
			spec := runtime.Spec{Argv: []string{"/bin/true"}, Stdout: out, Stderr: out, UID: -1, GID: -1}
			ctx := context.Background()
			for i := 0; i < b.N; i++ {
				spec.ID = fmt.Sprintf("phx-%d-0-0", i)
				task, err := rt.Start(ctx, spec)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := task.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			spec.ID, spec.Argv = "phx-rss-0-0", []string{"/bin/sleep", "60"}
			task, err := rt.Start(ctx, spec)
			if err != nil {
				b.Fatal(err)
			}
			pid, _ := runtimetest.ProcessExe(process.ShimName + "\x00" + spec.ID + "\x00")
			b.ReportMetric(float64(rssKiB(b, pid)), "shim-RSS-KiB")
			task.Signal(ctx, syscall.SIGKILL)
			task.Wait(ctx) // its records written before the directory goes
		})
	}
}

// rssKiB is VmRSS of pid.
func rssKiB(tb testing.TB, pid int) int {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	tb.Fatalf("no VmRSS for %d", pid)
	return 0
}
