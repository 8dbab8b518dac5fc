package process_test

import (
	"context"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime"
	"github.com/phalanx-hpc/phalanx/runtime/process"
	"github.com/phalanx-hpc/phalanx/runtime/runtimetest"
)

// TestMain lets this test binary serve as the tasks' supervisor, as
// phalanx-agent does.
func TestMain(m *testing.M) {
	process.RunShimIfAsked()
	starter()
	os.Exit(m.Run())
}

// run starts a shell script as a task and returns it with its output file
// (stdout and stderr both).
func run(t *testing.T, script string, edit ...func(*runtime.Spec)) (runtime.Task, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	spec := runtime.Spec{
		ID:     "phx-1-0-0",
		Argv:   []string{"/bin/sh", "-c", script},
		Env:    []string{"PATH=/usr/bin:/bin"},
		Stdout: out, Stderr: out,
		UID: -1, GID: -1,
	}
	for _, e := range edit {
		e(&spec)
	}
	task, err := process.New(t.TempDir(), process.WithMaxPoll(10*time.Millisecond)).Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { task.Signal(context.Background(), syscall.SIGKILL) })
	return task, out
}

func wait(t *testing.T, task runtime.Task) runtime.ExitStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := task.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return st
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   runtime.ExitStatus
	}{
		{"exit 0", runtime.ExitStatus{}},
		{"exit 3", runtime.ExitStatus{Code: 3}},
		{"kill -KILL $$", runtime.ExitStatus{Code: 137, Signal: syscall.SIGKILL}},
		{"kill -TERM $$", runtime.ExitStatus{Code: 143, Signal: syscall.SIGTERM}},
	} {
		t.Run(tc.script, func(t *testing.T) {
			task, _ := run(t, tc.script)
			if got := wait(t, task); got != tc.want {
				t.Errorf("status = %+v, want %+v", got, tc.want)
			}
			if task.ID() != "phx-1-0-0" {
				t.Errorf("ID = %q", task.ID())
			}
			if err := task.Close(context.Background()); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

func TestSignalReachesWholeGroup(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			task, out := run(t, "sleep 1000 & sleep 1000 & echo started $$; wait")
			pgid := waitForGroup(t, out, 3)
			if got := task.(interface{ PGID() int }).PGID(); got != pgid {
				t.Errorf("PGID = %d, want the group's %d", got, pgid)
			}
			if err := task.Signal(context.Background(), sig); err != nil {
				t.Fatalf("Signal: %v", err)
			}
			want := runtime.ExitStatus{Code: 128 + int(sig), Signal: sig}
			if got := wait(t, task); got != want {
				t.Errorf("status = %+v, want %+v", got, want)
			}
			if left := liveGroupMembers(t, pgid); len(left) != 0 {
				t.Errorf("processes of group %d left after Wait: %v", pgid, left)
			}
			if err := task.Signal(context.Background(), syscall.SIGKILL); err != nil {
				t.Errorf("Signal after exit: %v", err)
			}
		})
	}
}

func TestWaitOutlastsLeader(t *testing.T) {
	task, out := run(t, "sleep 1000 & echo started $$; exit 5")
	pgid := waitForGroup(t, out, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := task.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with a child still running = %v, want deadline exceeded", err)
	}
	if err := task.Signal(context.Background(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if got := wait(t, task); got != (runtime.ExitStatus{Code: 5}) {
		t.Errorf("status = %+v, want the leader's exit 5", got)
	}
	if left := liveGroupMembers(t, pgid); len(left) != 0 {
		t.Errorf("left: %v", left)
	}
}

func TestEnvAndWorkDir(t *testing.T) {
	dir := t.TempDir()
	task, out := run(t, `echo "$FOO"; pwd; echo "${HOME-unset}"; echo "$CUDA_VISIBLE_DEVICES"`,
		func(s *runtime.Spec) {
			s.Env = append(s.Env, "FOO=bar baz")
			s.WorkDir = dir
			s.GPUs = []int{2, 5}
		})
	wait(t, task)
	want := "bar baz\n" + dir + "\nunset\n2,5\n"
	if got := readFile(t, out); got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
}

func TestCUDAVisibleDevicesFromAgentWins(t *testing.T) {
	task, out := run(t, `echo "$CUDA_VISIBLE_DEVICES"`, func(s *runtime.Spec) {
		s.Env = append(s.Env, "CUDA_VISIBLE_DEVICES=GPU-abc")
		s.GPUs = []int{1}
	})
	wait(t, task)
	if got := readFile(t, out); got != "GPU-abc\n" {
		t.Errorf("output = %q", got)
	}
}

func TestOutputAppended(t *testing.T) {
	t.Run("same file", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out")
		os.WriteFile(out, []byte("old\n"), 0o644)
		task, _ := run(t, "echo out; echo err >&2; echo out2", func(s *runtime.Spec) {
			s.Stdout, s.Stderr = out, out
		})
		wait(t, task)
		if got, want := readFile(t, out), "old\nout\nerr\nout2\n"; got != want {
			t.Errorf("output = %q, want %q", got, want)
		}
	})
	t.Run("two files", func(t *testing.T) {
		dir := t.TempDir()
		stdout, stderr := filepath.Join(dir, "o"), filepath.Join(dir, "e")
		os.WriteFile(stdout, []byte("o1\n"), 0o644)
		os.WriteFile(stderr, []byte("e1\n"), 0o644)
		task, _ := run(t, "echo o2; echo e2 >&2", func(s *runtime.Spec) {
			s.Stdout, s.Stderr = stdout, stderr
		})
		wait(t, task)
		if got := readFile(t, stdout); got != "o1\no2\n" {
			t.Errorf("stdout = %q", got)
		}
		if got := readFile(t, stderr); got != "e1\ne2\n" {
			t.Errorf("stderr = %q", got)
		}
	})
}

func TestRunAsUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("running as another user needs root")
	}
	out := filepath.Join(runtimetest.SharedDir(t), "out") // opened as the user
	task, _ := run(t, "id -u; id -g; id -G", func(s *runtime.Spec) {
		s.UID, s.GID = 65534, 65533
		s.WorkDir = "/"
		s.Stdout, s.Stderr = out, out
	})
	wait(t, task)
	// The supplementary groups are the user's (as initgroups gives them:
	// its passwd group and the groups listing it) plus the task's gid,
	// never the agent's.
	want := "65534\n65533\n65533"
	if u, err := user.LookupId("65534"); err == nil {
		ids, _ := u.GroupIds()
		var extra []int
		for _, g := range ids {
			if n, err := strconv.Atoi(g); err == nil && n != 65533 {
				extra = append(extra, n)
			}
		}
		slices.Sort(extra) // the kernel keeps them sorted
		for _, n := range extra {
			want += " " + strconv.Itoa(n)
		}
	}
	if got := readFile(t, out); got != want+"\n" {
		t.Errorf("id output = %q, want %q", got, want+"\n")
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 || st.Gid != 65533 {
		t.Errorf("output file owned by %d:%d, want 65534:65533", st.Uid, st.Gid)
	}
}

func TestStartErrors(t *testing.T) {
	rt := process.New(t.TempDir())
	ctx := context.Background()
	if _, err := rt.Start(ctx, runtime.Spec{ID: "x"}); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("empty argv: %v, want ErrInvalid", err)
	}
	_, err := rt.Start(ctx, runtime.Spec{ID: "x", Argv: []string{"/nonexistent/bin"}, UID: -1, GID: -1})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/bin") {
		t.Errorf("missing binary: %v", err)
	}
	if rt.Name() != "process" {
		t.Errorf("Name = %q", rt.Name())
	}
}

// The job's own signal (sbatch --signal) goes to the steps, not to the
// batch shell; with B: to the batch shell alone.
func TestSignalJob(t *testing.T) {
	// The child marks that its traps are set; the batch shell says ready
	// once it knows the child's PID and the mark is there.
	const script = `trap 'echo batch-got-usr1; kill -TERM $child' USR1
sh -c 'trap "echo child-got-usr1; exit 0" USR1; trap "exit 0" TERM; : > "$MARK"; while :; do :; done' &
child=$!
while [ ! -e "$MARK" ]; do :; done
echo ready
wait $child
wait $child
echo done`
	for _, tc := range []struct {
		batch bool
		want  string
	}{
		{false, "ready\nchild-got-usr1\ndone\n"},
		{true, "ready\nbatch-got-usr1\ndone\n"},
	} {
		mark := filepath.Join(t.TempDir(), "mark")
		task, out := run(t, script, func(s *runtime.Spec) { s.Env = append(s.Env, "MARK="+mark) })
		deadline := time.Now().Add(5 * time.Second)
		for readFile(t, out) != "ready\n" && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if err := task.SignalJob(context.Background(), syscall.SIGUSR1, tc.batch); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st, err := task.Wait(ctx)
		cancel()
		if err != nil || st != (runtime.ExitStatus{}) {
			task.Signal(context.Background(), syscall.SIGKILL)
			t.Fatalf("batch=%v: exit %+v, %v; output %q", tc.batch, st, err, readFile(t, out))
		}
		if got := readFile(t, out); got != tc.want {
			t.Errorf("batch=%v: output %q, want %q", tc.batch, got, tc.want)
		}
	}
}

// scancel JOBID.STEP reaches the processes of that step alone: those
// started with SLURM_STEP_ID=step, not another step's, not the batch
// shell.
func TestSignalStep(t *testing.T) {
	const script = `trap 'echo batch-got-term' TERM
SLURM_STEP_ID=3 sh -c 'trap "echo step3-got-term; exit 0" TERM; : > "$MARK.3"; while :; do :; done' &
SLURM_STEP_ID=4 sh -c 'trap "echo step4-got-term; exit 0" TERM; : > "$MARK.4"; sleep 2' &
while [ ! -e "$MARK.3" ] || [ ! -e "$MARK.4" ]; do :; done
echo ready
wait; wait
echo done`
	mark := filepath.Join(t.TempDir(), "mark")
	task, out := run(t, script, func(s *runtime.Spec) { s.Env = append(s.Env, "MARK="+mark) })
	deadline := time.Now().Add(5 * time.Second)
	for readFile(t, out) != "ready\n" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := task.SignalStep(context.Background(), syscall.SIGTERM, 3); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	st, err := task.Wait(ctx)
	cancel()
	if err != nil || st != (runtime.ExitStatus{}) {
		task.Signal(context.Background(), syscall.SIGKILL)
		t.Fatalf("exit %+v, %v; output %q", st, err, readFile(t, out))
	}
	if got, want := readFile(t, out), "ready\nstep3-got-term\ndone\n"; got != want {
		t.Errorf("output %q; want %q (step 4 and the batch shell untouched)", got, want)
	}
}
