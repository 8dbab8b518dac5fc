package containerd_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/snapshots"
	"golang.org/x/sys/unix"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime"
	"github.com/phalanx-hpc/phalanx/runtime/containerd"
	"github.com/phalanx-hpc/phalanx/runtime/containerd/containerdtest"
	"github.com/phalanx-hpc/phalanx/runtime/runtimetest"
)

const busybox = "docker.io/phalanx/busybox:test"

// env is a private daemon with the busybox image and a runtime on it.
type env struct {
	d  *containerdtest.Daemon
	rt *containerd.Runtime
}

func setup(t *testing.T, opts ...containerd.Option) env {
	t.Helper()
	d := containerdtest.Start(t)
	containerdtest.ImportBusybox(t, d, busybox)
	logger := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	opts = append([]containerd.Option{containerd.WithLogger(logger)}, opts...)
	rt, err := containerd.New(context.Background(), d.Address, d.Namespace, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return env{d: d, rt: rt}
}

func shSpec(t *testing.T, id, script string) runtime.Spec {
	out := filepath.Join(t.TempDir(), "out")
	return runtime.Spec{
		ID: id, Image: busybox, Argv: []string{"/bin/sh", "-c", script},
		Env: []string{"FOO=bar"}, Stdout: out, Stderr: out, UID: -1, GID: -1,
	}
}

// memlockKB is what `ulimit -l` prints in a container: "unlimited", or
// the agent's own hard limit where the agent may not raise it.
func memlockKB(t *testing.T) string {
	var own unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &own); err != nil {
		t.Fatal(err)
	}
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			mask, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if mask&(1<<24) == 0 && own.Max != unix.RLIM_INFINITY {
				return strconv.FormatUint(own.Max/1024, 10)
			}
		}
	}
	return "unlimited"
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func waitExit(t *testing.T, task runtime.Task) runtime.ExitStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := task.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return st
}

func (e env) containers(t *testing.T) int {
	t.Helper()
	cs, err := e.d.Client(t).Containers(e.d.Context())
	if err != nil {
		t.Fatal(err)
	}
	return len(cs)
}

func TestContainerRunsAndExits(t *testing.T) {
	e := setup(t)
	spec := shSpec(t, "phx-1-0-0", `echo hello $FOO; hostname; ulimit -l; pwd; exit 3`)
	spec.WorkDir = "/tmp"
	os.WriteFile(spec.Stdout, []byte("earlier\n"), 0o644)
	task, err := e.rt.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if got := waitExit(t, task); got != (runtime.ExitStatus{Code: 3}) {
		t.Errorf("status = %+v, want code 3", got)
	}
	if err := task.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	host, _ := os.Hostname()
	want := "earlier\nhello bar\n" + host + "\n" + memlockKB(t) + "\n/tmp\n"
	if got, _ := os.ReadFile(spec.Stdout); string(got) != want {
		t.Errorf("output = %q, want %q", got, want)
	}
	if n := e.containers(t); n != 0 {
		t.Errorf("%d containers left after Close", n)
	}
}

func TestSignalEndsContainer(t *testing.T) {
	e := setup(t)
	spec := shSpec(t, "phx-2-0-0", "")
	spec.Argv = []string{"/bin/sleep", "1000"}
	task, err := e.rt.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := task.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a sleeping container = %v, want deadline exceeded", err)
	}
	if err := task.Signal(context.Background(), syscall.SIGTERM); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	want := runtime.ExitStatus{Code: 143, Signal: syscall.SIGTERM}
	if got := waitExit(t, task); got != want {
		t.Errorf("status = %+v, want %+v", got, want)
	}
	if err := task.Signal(context.Background(), syscall.SIGKILL); err != nil {
		t.Errorf("Signal after exit: %v", err)
	}
	if err := task.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := e.containers(t); n != 0 {
		t.Errorf("%d containers left after Close", n)
	}
	snaps := 0
	e.d.Client(t).SnapshotService(containerdtest.Snapshotter).Walk(e.d.Context(),
		func(_ context.Context, info snapshots.Info) error {
			if info.Name == spec.ID {
				snaps++
			}
			return nil
		})
	if snaps != 0 {
		t.Errorf("snapshot %s left after Close", spec.ID)
	}
}

func TestSeparateOutputFiles(t *testing.T) {
	e := setup(t)
	spec := shSpec(t, "phx-3-0-0", "echo out; echo err >&2")
	spec.Stderr = filepath.Join(t.TempDir(), "err")
	task, err := e.rt.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	waitExit(t, task)
	if err := task.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(spec.Stdout); string(got) != "out\n" {
		t.Errorf("stdout = %q", got)
	}
	if got, _ := os.ReadFile(spec.Stderr); string(got) != "err\n" {
		t.Errorf("stderr = %q", got)
	}
}

func TestStaleContainerReplaced(t *testing.T) {
	e := setup(t)
	first, err := e.rt.Start(context.Background(), shSpec(t, "phx-4-0-0", "exit 1"))
	if err != nil {
		t.Fatal(err)
	}
	waitExit(t, first) // not closed: left behind as a crashed agent would
	spec := shSpec(t, "phx-4-0-0", "echo again")
	second, err := e.rt.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start over a stale container: %v", err)
	}
	if got := waitExit(t, second); got.Code != 0 {
		t.Errorf("status = %+v", got)
	}
	second.Close(context.Background())
	if got, _ := os.ReadFile(spec.Stdout); string(got) != "again\n" {
		t.Errorf("output = %q", got)
	}
}

// A container gets the node's RDMA devices as character devices with
// the host's numbers.
func TestRDMADevicesThroughCDI(t *testing.T) {
	dir := t.TempDir()
	writeRDMASpec(t, dir)
	e := setup(t, containerd.WithCDISpecDirs(dir))
	spec := shSpec(t, "phx-8-0-0", "ls -l /dev/infiniband | awk '/^c/ {print $1, $5, $6, $10}'")
	spec.Devices = []string{"phalanx.dev/rdma=mlx5_1"}
	task, err := e.rt.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, task); st.Code != 0 {
		t.Errorf("status = %+v", st)
	}
	task.Close(context.Background())
	want := "crw-rw-rw- 10, 58 rdma_cm\ncrw-rw-rw- 231, 193 uverbs1\n"
	if got, _ := os.ReadFile(spec.Stdout); string(got) != want {
		t.Errorf("output = %q, want %q", got, want)
	}
}

func TestGPUsThroughCDI(t *testing.T) {
	e := setup(t, containerd.WithCDISpecDirs(writeGPUSpec(t)))
	spec := shSpec(t, "phx-5-0-0", "ls /dev/nvidia*; echo $NVIDIA_FAKE_CDI")
	spec.GPUs = []int{1, 6}
	task, err := e.rt.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, task); st.Code != 0 {
		t.Errorf("status = %+v", st)
	}
	task.Close(context.Background())
	want := "/dev/nvidia1\n/dev/nvidia6\n/dev/nvidiactl\n1\n"
	if got, _ := os.ReadFile(spec.Stdout); string(got) != want {
		t.Errorf("output = %q, want %q", got, want)
	}
}

func TestMissingImage(t *testing.T) {
	e := setup(t)
	spec := shSpec(t, "phx-6-0-0", "true")
	spec.Image = "registry.invalid/nothing:here"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := e.rt.Start(ctx, spec)
	if !errors.Is(err, cluster.ErrNotFound) || !strings.Contains(err.Error(), "ctr -n "+e.d.Namespace+" images import") {
		t.Errorf("Start with a missing image = %v, want ErrNotFound with an import hint", err)
	}
}

func TestMountsAndUser(t *testing.T) {
	e := setup(t)
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "x"), []byte("data\n"), 0o644)
	spec := shSpec(t, "phx-7-0-0", `cat /mnt/data/x; id -u; id -g; (echo > /mnt/data/y) 2>/dev/null || echo read-only`)
	spec.Mounts = []runtime.Mount{{Source: data, Target: "/mnt/data", ReadOnly: true}}
	spec.UID, spec.GID = 65534, 65534
	spec.Stdout = filepath.Join(runtimetest.SharedDir(t), "out") // opened as the user
	spec.Stderr = spec.Stdout
	task, err := e.rt.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	waitExit(t, task)
	task.Close(context.Background())
	if got, want := readOutput(t, spec.Stdout), "data\n65534\n65534\nread-only\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
}

func readOutput(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A job's --signal reaches the container's other processes, not its init
// (the batch script), or with B: its init alone.
func TestSignalJobInAContainer(t *testing.T) {
	e := setup(t)
	const script = `trap 'echo batch-got-usr1; kill -TERM $child' USR1
sh -c 'trap "echo child-got-usr1; exit 0" USR1; trap "exit 0" TERM; : > /tmp/mark; while :; do :; done' &
child=$!
while [ ! -e /tmp/mark ]; do :; done
echo ready
wait $child
wait $child
echo done`
	for i, tc := range []struct {
		batch bool
		want  string
	}{
		{false, "ready\nchild-got-usr1\ndone\n"},
		{true, "ready\nbatch-got-usr1\ndone\n"},
	} {
		spec := shSpec(t, fmt.Sprintf("phx-9-0-%d", i), script)
		task, err := e.rt.Start(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		e2eEventually(t, 20*time.Second, func() bool { b, _ := os.ReadFile(spec.Stdout); return string(b) == "ready\n" })
		if err := task.SignalJob(context.Background(), syscall.SIGUSR1, tc.batch); err != nil {
			t.Fatal(err)
		}
		if st := waitExit(t, task); st != (runtime.ExitStatus{}) {
			t.Errorf("batch=%v: status %+v", tc.batch, st)
		}
		task.Close(context.Background())
		if got, _ := os.ReadFile(spec.Stdout); string(got) != tc.want {
			t.Errorf("batch=%v: output %q, want %q", tc.batch, got, tc.want)
		}
	}
}

// e2eEventually polls cond until it holds or d passes.
func e2eEventually(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMain(m *testing.M) {
	containerd.RunTaskIOIfAsked() // the containers' I/O keeper is this test binary
	os.Exit(m.Run())
}
