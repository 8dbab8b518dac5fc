package containerd_test

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd"

	"github.com/phalanx-hpc/phalanx/runtime"
	rtcontainerd "github.com/phalanx-hpc/phalanx/runtime/containerd"
)

// agentRun is one run of an agent's runtime on e's daemon, with the state
// directory dir: a restarted agent opens another on the same directory.
func (e env) agentRun(t *testing.T, dir string) *rtcontainerd.Runtime {
	t.Helper()
	rt, err := rtcontainerd.New(context.Background(), e.d.Address, e.d.Namespace, rtcontainerd.WithStateDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// recoverAll recovers rt's tasks and returns them by ID.
func recoverAll(t *testing.T, rt *rtcontainerd.Runtime) map[string]runtime.Task {
	t.Helper()
	tasks, err := rt.Recover(context.Background())
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	byID := make(map[string]runtime.Task)
	for _, task := range tasks {
		byID[task.ID()] = task
	}
	return byID
}

func start(t *testing.T, rt *rtcontainerd.Runtime, spec runtime.Spec) runtime.Task {
	t.Helper()
	task, err := rt.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start %s: %v", spec.ID, err)
	}
	return task
}

// A container outlives the agent's runtime: a new run finds it through
// containerd, running or ended meanwhile with its exit status, the output
// it wrote while no agent ran is in its file, and a signal sent before the
// restart still tells 128+n from an exit code.
func TestContainersOutliveTheAgent(t *testing.T) {
	e := setup(t)
	dir := t.TempDir()
	first := e.agentRun(t, dir)
	ended := shSpec(t, "phx-11-0-0", `echo before; sleep 1; echo "after, while no agent ran"; exit 4`)
	start(t, first, ended)
	running := shSpec(t, "phx-12-0-0", "")
	running.Argv = []string{"/bin/sleep", "1000"}
	start(t, first, running)
	signalled := shSpec(t, "phx-13-0-0", "")
	signalled.Argv = []string{"/bin/sleep", "1000"}
	st := start(t, first, signalled)
	if err := st.Signal(context.Background(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	first.Close() // the agent is gone
	time.Sleep(1500 * time.Millisecond)

	other, err := rtcontainerd.New(context.Background(), e.d.Address, e.d.Namespace, rtcontainerd.WithNode("another-node"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if got := recoverAll(t, other); len(got) != 0 {
		t.Errorf("another node's agent on the same daemon took over %d containers, want none", len(got))
	}
	second := e.agentRun(t, dir)
	tasks := recoverAll(t, second)
	if len(tasks) != 3 {
		t.Fatalf("recovered %d tasks, want 3: %v", len(tasks), tasks)
	}
	if got := waitExit(t, tasks[ended.ID]); got != (runtime.ExitStatus{Code: 4}) {
		t.Errorf("the task that ended meanwhile: %+v, want code 4", got)
	}
	if got, want := readOutput(t, ended.Stdout), "before\nafter, while no agent ran\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
	if got := waitExit(t, tasks[signalled.ID]); got != (runtime.ExitStatus{Code: 128 + 15, Signal: syscall.SIGTERM}) {
		t.Errorf("the task signalled before the restart: %+v, want killed by SIGTERM", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := tasks[running.ID].Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on the running task = %v, want it still running", err)
	}
	if second.FencesAll() {
		t.Error("FencesAll with a running task started before any lease = true, want false")
	}
	if err := tasks[running.ID].Signal(context.Background(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if got := waitExit(t, tasks[running.ID]); got != (runtime.ExitStatus{Code: 128 + 9, Signal: syscall.SIGKILL}) {
		t.Errorf("the running task after SIGKILL: %+v, want killed by SIGKILL", got)
	}
	for _, task := range tasks {
		if err := task.Close(context.Background()); err != nil {
			t.Errorf("Close %s: %v", task.ID(), err)
		}
	}
	if n := e.containers(t); n != 0 {
		t.Errorf("%d containers left after Close", n)
	}
}

// A leased container is killed by its I/O keeper when the lease ends with
// no agent to renew it; the next run of the agent finds it fenced. Renewed
// leases keep a container running.
func TestLeaseFencesContainersWithoutTheAgent(t *testing.T) {
	e := setup(t)
	dir := t.TempDir()
	first := e.agentRun(t, dir)
	const lease = 1500 * time.Millisecond
	if err := first.Lease(runtime.BootClock().Add(lease)); err != nil {
		t.Fatal(err)
	}
	renewed := shSpec(t, "phx-21-0-0", "")
	renewed.Argv = []string{"/bin/sleep", "1000"}
	kept := start(t, first, renewed)
	stop := make(chan struct{})
	renewing := make(chan struct{})
	go func() {
		defer close(renewing)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
				first.Lease(runtime.BootClock().Add(lease))
			}
		}
	}()
	time.Sleep(2 * lease)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := kept.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a container whose lease was renewed: Wait = %v, want still running", err)
	}
	close(stop)
	<-renewing

	if err := first.Lease(runtime.BootClock().Add(lease)); err != nil {
		t.Fatal(err)
	}
	fenced := shSpec(t, "phx-22-0-0", `echo started; exec sleep 1000`)
	start(t, first, fenced)
	gone := time.Now()
	first.Close() // the agent is gone; nothing renews the lease

	client := e.d.Client(t)
	deadline := time.Now().Add(lease + 5*time.Second)
	for {
		stopped := 0
		for _, id := range []string{renewed.ID, fenced.ID} {
			c, err := client.LoadContainer(e.d.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			task, err := c.Task(e.d.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if s, err := task.Status(e.d.Context()); err == nil && s.Status == containerd.Stopped {
				stopped++
			}
		}
		if stopped == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 2 containers stopped %s after the agent left, with a lease of %s", stopped, time.Since(gone), lease)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("both containers stopped %s after the agent left (lease %s)", time.Since(gone).Round(time.Millisecond), lease)

	second := e.agentRun(t, dir)
	tasks := recoverAll(t, second)
	for _, id := range []string{renewed.ID, fenced.ID} {
		task := tasks[id]
		if task == nil {
			t.Fatalf("task %s not recovered: %v", id, tasks)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st, err := task.Wait(ctx)
		cancel()
		if !errors.Is(err, runtime.ErrFenced) || st.Code != 128+9 {
			t.Errorf("task %s: Wait = %+v, %v; want code 137 and %v", id, st, err, runtime.ErrFenced)
		}
		if err := task.Close(context.Background()); err != nil {
			t.Errorf("Close %s: %v", id, err)
		}
	}
	if got := readOutput(t, fenced.Stdout); got != "started\n" {
		t.Errorf("fenced task's output = %q", got)
	}
	if !second.FencesAll() {
		t.Error("FencesAll = false with no running task, want true")
	}
	if _, err := os.Stat(dir + "/" + fenced.ID + ".fenced"); !os.IsNotExist(err) {
		t.Errorf("the fence file outlived Close: %v", err)
	}
}
