package fake_test

import (
	"context"
	"errors"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
)

func spec(id string) runtime.Spec {
	return runtime.Spec{ID: id, Argv: []string{"/bin/true"}, Env: []string{"A=1"}, GPUs: []int{0, 1}, UID: -1, GID: -1}
}

func start(t *testing.T, r *fake.Runtime, id string) runtime.Task {
	t.Helper()
	task, err := r.Start(context.Background(), spec(id))
	if err != nil {
		t.Fatalf("Start(%s): %v", id, err)
	}
	return task
}

// exited returns the task's status, failing if it has not exited.
func exited(t *testing.T, task runtime.Task) runtime.ExitStatus {
	t.Helper()
	st, ok := task.(*fake.Task).Exited()
	if !ok {
		t.Fatalf("task %s has not exited", task.ID())
	}
	return st
}

func TestExit(t *testing.T) {
	r := fake.New()
	task := start(t, r, "a")
	if got := r.Running(); !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("Running = %v", got)
	}
	if err := r.Exit("a", 3); err != nil {
		t.Fatal(err)
	}
	if err := r.Exit("a", 4); err != nil {
		t.Fatal(err)
	}
	st, err := task.Wait(context.Background())
	if err != nil || st != (runtime.ExitStatus{Code: 3}) {
		t.Fatalf("Wait = %+v, %v; want code 3 (the first exit counts)", st, err)
	}
	if len(r.Running()) != 0 {
		t.Errorf("Running after exit = %v", r.Running())
	}
	if err := r.Exit("nope", 0); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("Exit unknown = %v, want ErrNotFound", err)
	}
}

func TestWaitBlocksUntilExit(t *testing.T) {
	r := fake.New()
	task := start(t, r, "a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := task.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a running task with a dead ctx = %v", err)
	}
	done := make(chan runtime.ExitStatus)
	go func() {
		st, _ := task.Wait(context.Background())
		done <- st
	}()
	r.Exit("a", 0)
	if st := <-done; st != (runtime.ExitStatus{}) {
		t.Errorf("status = %+v", st)
	}
}

func TestSignals(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       []fake.Option
		send       []syscall.Signal
		wantStatus runtime.ExitStatus
		wantExit   bool
	}{
		{"term", nil, []syscall.Signal{syscall.SIGTERM}, runtime.ExitStatus{Code: 143, Signal: syscall.SIGTERM}, true},
		{"kill", nil, []syscall.Signal{syscall.SIGKILL}, runtime.ExitStatus{Code: 137, Signal: syscall.SIGKILL}, true},
		{"usr1 only recorded", nil, []syscall.Signal{syscall.SIGUSR1}, runtime.ExitStatus{}, false},
		{"term ignored", []fake.Option{fake.WithIgnoreSIGTERM()}, []syscall.Signal{syscall.SIGTERM}, runtime.ExitStatus{}, false},
		{"term ignored then kill", []fake.Option{fake.WithIgnoreSIGTERM()},
			[]syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}, runtime.ExitStatus{Code: 137, Signal: syscall.SIGKILL}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := fake.New(tc.opts...)
			task := start(t, r, "a")
			for _, sig := range tc.send {
				if err := task.Signal(context.Background(), sig); err != nil {
					t.Fatal(err)
				}
			}
			ft, _ := r.Task("a")
			st, ok := ft.Exited()
			if ok != tc.wantExit || st != tc.wantStatus {
				t.Errorf("Exited = %+v, %v; want %+v, %v", st, ok, tc.wantStatus, tc.wantExit)
			}
			if got := ft.Signals(); !reflect.DeepEqual(got, tc.send) {
				t.Errorf("Signals = %v, want %v", got, tc.send)
			}
		})
	}
}

func TestPerTaskIgnoreSIGTERM(t *testing.T) {
	r := fake.New()
	task := start(t, r, "a")
	task.(*fake.Task).IgnoreSIGTERM(true)
	task.Signal(context.Background(), syscall.SIGTERM)
	if _, ok := task.(*fake.Task).Exited(); ok {
		t.Fatal("task that ignores SIGTERM exited on it")
	}
}

func TestSpecsRecorded(t *testing.T) {
	r := fake.New()
	start(t, r, "a")
	start(t, r, "b")
	got := r.Specs()
	if len(got) != 2 || !reflect.DeepEqual(got[0], spec("a")) || !reflect.DeepEqual(got[1], spec("b")) {
		t.Fatalf("Specs = %+v", got)
	}
	got[0].Env[0] = "changed"
	if r.Specs()[0].Env[0] != "A=1" {
		t.Error("Specs returned shared slices")
	}
	ft, _ := r.Task("b")
	if !reflect.DeepEqual(ft.Spec(), spec("b")) {
		t.Errorf("Task.Spec = %+v", ft.Spec())
	}
}

func TestStartConflictsAndFailures(t *testing.T) {
	r := fake.New()
	start(t, r, "a")
	if _, err := r.Start(context.Background(), spec("a")); !errors.Is(err, cluster.ErrConflict) {
		t.Errorf("second Start of a running ID = %v, want ErrConflict", err)
	}
	r.Exit("a", 0)
	restarted := start(t, r, "a") // an exited ID may start again
	if ft, _ := r.Task("a"); ft != restarted {
		t.Error("Task does not return the latest task for the ID")
	}
	boom := errors.New("boom")
	r.FailStart("b", boom)
	if _, err := r.Start(context.Background(), spec("b")); !errors.Is(err, boom) {
		t.Errorf("armed Start = %v, want boom", err)
	}
	start(t, r, "b") // the failure is armed once
	if _, err := r.Start(context.Background(), runtime.Spec{ID: "c"}); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("Start without argv = %v, want ErrInvalid", err)
	}
}

func TestClose(t *testing.T) {
	r := fake.New()
	task := start(t, r, "a")
	if err := task.Close(context.Background()); !errors.Is(err, cluster.ErrConflict) {
		t.Errorf("Close while running = %v, want ErrConflict", err)
	}
	task.Signal(context.Background(), syscall.SIGKILL)
	exited(t, task)
	if err := task.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !task.(*fake.Task).Closed() {
		t.Error("Closed = false after Close")
	}
}

func TestWaitStarted(t *testing.T) {
	r := fake.New()
	got := make(chan *fake.Task)
	go func() {
		task, err := r.WaitStarted(context.Background(), "b")
		if err != nil {
			t.Error(err)
		}
		got <- task
	}()
	start(t, r, "a")
	want := start(t, r, "b")
	if task := <-got; task != want {
		t.Errorf("WaitStarted returned %v, want the started task", task)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if _, err := r.WaitStarted(ctx, "never"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitStarted for a task never started = %v", err)
	}
	if r.Name() != "fake" {
		t.Errorf("Name = %q", r.Name())
	}
}
