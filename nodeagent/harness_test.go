package nodeagent

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/nodeagent/gpu"
	"github.com/phalanx-hpc/phalanx/runtime"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
)

const node = "gpu001"

// harness is one agent against a fake controller.
type harness struct {
	srv    *fakeNodeService
	addr   string
	cfg    Config
	cancel context.CancelFunc
	done   chan error
	agent  *Agent // the one running
}

// newHarness starts a fake controller and an agent on rt; edit adjusts
// the agent's config before it starts.
func newHarness(t *testing.T, rt runtime.Runtime, edit func(*Config)) *harness {
	t.Helper()
	srv, addr := startFakeNodeService(t)
	lib, err := gpu.Open(8, "NVIDIA A100-SXM4-80GB")
	if err != nil {
		t.Fatal(err)
	}
	gpus, err := gpu.Discover(lib)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Name: node, Addr: "10.0.0.1", Controllers: []string{addr}, StateDir: t.TempDir(), Runtime: rt,
		GPUs: gpus, CPUs: 64, MemoryMB: 1 << 20,
		HeartbeatInterval: 20 * time.Millisecond, KillGrace: 50 * time.Millisecond,
		StopTasksOnExit: true, // tests that restart the agent over its tasks say otherwise
		Logger:          testLogger(t),
	}
	if edit != nil {
		edit(&cfg)
	}
	h := &harness{srv: srv, addr: addr, cfg: cfg, done: make(chan error, 1)}
	h.start(t)
	return h
}

// start runs the agent until the test ends or stop is called.
func (h *harness) start(t *testing.T) {
	t.Helper()
	a, err := New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.agent = cancel, a
	go func() { h.done <- a.Run(ctx) }()
	t.Cleanup(func() { h.stop(t) })
}

// restart stops the agent and starts a new one with the same config but
// runtime rt, as a restarted phalanx-agent would be.
func (h *harness) restart(t *testing.T, rt runtime.Runtime) {
	t.Helper()
	h.stop(t)
	h.cfg.Runtime = rt
	h.done = make(chan error, 1)
	h.start(t)
}

// stop ends Run and checks it returned nil; stopping twice is harmless.
func (h *harness) stop(t *testing.T) {
	t.Helper()
	h.cancel()
	select {
	case err, ok := <-h.done:
		if ok && err != nil {
			t.Errorf("Run returned %v", err)
		}
		if ok {
			close(h.done)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

// wireAssignment is rank 0 of a one-node job on this node.
func wireAssignment(job uint64, workDir, script string) *phalanxv1.Assignment {
	return &phalanxv1.Assignment{
		JobId: job,
		Job: &phalanxv1.Job{
			Id: job,
			Spec: &phalanxv1.JobSpec{
				Name: "test", User: "alice", Script: script, WorkDir: workDir, Partition: "gpu",
			},
			Alloc:      []*phalanxv1.NodeAlloc{{Node: node, Gpus: []int32{2, 3}, Addr: "10.0.0.1"}},
			MasterPort: 29500,
		},
	}
}

func withStop(as *phalanxv1.Assignment, grace int32, reason string) *phalanxv1.Assignment {
	c := proto.Clone(as).(*phalanxv1.Assignment)
	c.Stop, c.GraceSeconds, c.StopReason = true, grace, reason
	return c
}

// waitStarted waits for the fake runtime to start task id.
func waitStarted(t *testing.T, rt *fake.Runtime, id string) *fake.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	task, err := rt.WaitStarted(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// scaledClock runs time factor times faster than the wall clock, so time
// limits in whole seconds pass in milliseconds.
type scaledClock struct {
	start  time.Time
	factor time.Duration
}

func (c scaledClock) Now() time.Time {
	return c.start.Add(time.Since(c.start) * c.factor)
}

func (c scaledClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	time.AfterFunc(d/c.factor, func() { ch <- c.Now() })
	return ch
}
