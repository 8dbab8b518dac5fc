package nodeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/internal/fakegpu"
	"github.com/phalanx-hpc/phalanx/internal/fakesysfs"
	"github.com/phalanx-hpc/phalanx/nodeagent/gpu"
	"github.com/phalanx-hpc/phalanx/nodeagent/rdma"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
	"github.com/phalanx-hpc/phalanx/runtime/runtimetest"
)

// gateHarness is an agent with fake GPUs playing a fault file and fake
// RDMA ports, whose watchers poll only once an hour: what the gate finds,
// it finds by itself.
type gateHarness struct {
	*harness
	rt     *fake.Runtime
	faults string // the fake GPUs' fault file
	sysfs  string // the fake NICs' tree
}

func newGateHarness(t *testing.T) *gateHarness {
	t.Helper()
	g := &gateHarness{rt: fake.New(), faults: filepath.Join(t.TempDir(), "gpu-faults"), sysfs: t.TempDir()}
	g.harness = newHarness(t, g.rt, func(c *Config) {
		lib, err := gpu.Open(8, "NVIDIA A100-SXM4-80GB", gpu.FaultFile(g.faults))
		if err != nil {
			t.Fatal(err)
		}
		if c.GPUs, err = gpu.Discover(lib); err != nil {
			t.Fatal(err)
		}
		c.GPUWatcher = &gpu.Watcher{Lib: lib, Devices: c.GPUs, Interval: time.Hour, Log: testLogger(t)}
		ids := make([]string, len(c.GPUs))
		for i, d := range c.GPUs {
			ids[i] = d.PCIBusID
		}
		if err := fakesysfs.Write(g.sysfs, fakesysfs.Host{GPUs: ids, NICs: 4}); err != nil {
			t.Fatal(err)
		}
		if c.NICs, err = rdma.Discover(g.sysfs, rdma.SysfsLister{Root: g.sysfs}); err != nil {
			t.Fatal(err)
		}
		rdma.Affinity(g.sysfs, c.NICs, ids)
		c.NICWatcher = &rdma.Watcher{Root: g.sysfs, Interval: time.Hour}
	})
	return g
}

// problems is the last heartbeat's list, as "check|message|event".
func (h *harness) problems() []string {
	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	if len(h.srv.heartbeats) == 0 {
		return nil
	}
	var out []string
	for _, p := range h.srv.heartbeats[len(h.srv.heartbeats)-1].Problems {
		out = append(out, fmt.Sprintf("%s|%s|%v", p.Check, p.Message, p.Event))
	}
	return out
}

// lostAfterDrain waits for job's LOST report, checks its message, and that
// the heartbeat before it already carried the drain's problem.
func (h *harness) lostAfterDrain(t *testing.T, job uint64, msg, problem string) {
	t.Helper()
	r := h.srv.waitReport(t, job, "LOST")
	if r.Message != msg {
		t.Errorf("LOST report %q, want %q", r.Message, msg)
	}
	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	for i, rep := range h.srv.reports {
		if rep.JobId != job || rep.State != "LOST" {
			continue
		}
		hb := h.srv.lastHeartbeat[i]
		var got []string
		for _, p := range hb.GetProblems() {
			got = append(got, fmt.Sprintf("%s|%s|%v", p.Check, p.Message, p.Event))
		}
		if !slices.Contains(got, problem) {
			t.Errorf("heartbeat before the LOST report carried %q; want %q in it (the drain first)", got, problem)
		}
	}
}

// A prolog runs as root with Slurm's prolog variables before the task, in
// order; the task starts after the last one passes.
func TestPrologRunsBeforeTheTask(t *testing.T) {
	h := newGateHarness(t)
	envFile := filepath.Join(t.TempDir(), "env")
	first := checkScript(t, "env > "+envFile)
	second := checkScript(t, "[ -s "+envFile+" ] || exit 9") // after the first
	as := wireAssignment(30, t.TempDir(), script)
	as.Job.Spec.Uid, as.Job.Spec.Gid = -1, -1
	as.Attempt, as.Job.Attempt = 2, 2
	as.Prolog = &phalanxv1.Prolog{Programs: []string{first, second}, TimeoutSeconds: 10}
	h.srv.set(as)
	waitStarted(t, h.rt, "phx-30-2-0")
	b, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, want := range []string{"SLURM_SCRIPT_CONTEXT=prolog_slurmd", "SLURM_JOB_ID=30", "SLURM_JOB_USER=alice",
		"SLURM_JOB_PARTITION=gpu", "SLURM_JOB_NODELIST=gpu001", "SLURMD_NODENAME=gpu001", "SLURM_JOB_GPUS=2,3",
		"CUDA_VISIBLE_DEVICES=2,3", "PHX_ATTEMPT=2", "SLURM_JOB_WORK_DIR=" + as.Job.Spec.WorkDir} {
		if !slices.Contains(env, want) {
			t.Errorf("prolog environment lacks %s: %q", want, env)
		}
	}
	if p := h.problems(); len(p) != 0 {
		t.Errorf("problems after a passing prolog: %q", p)
	}
}

// A failing prolog stops the attempt before the task runs, drains the
// node (the problem held until an administrator resumes it) before the
// task is reported LOST, and names the program and its last line.
func TestPrologFailureDrainsTheNode(t *testing.T) {
	h := newGateHarness(t)
	bad := checkScript(t, "echo checking; echo /scratch is not mounted >&2; exit 3")
	as := wireAssignment(31, t.TempDir(), script)
	as.Prolog = &phalanxv1.Prolog{Programs: []string{bad}, TimeoutSeconds: 10}
	h.srv.set(as)
	msg := bad + " exit status 3: /scratch is not mounted (job 31)"
	h.lostAfterDrain(t, 31, "prolog on gpu001: "+msg+"; node drained", "prolog|"+msg+"|true")
	if n := len(h.rt.Specs()); n != 0 {
		t.Errorf("%d tasks started after a failed prolog", n)
	}

	// An administrator resumes the node: the problem goes, and the next
	// job's prolog runs again.
	h.srv.mu.Lock()
	h.srv.resumed = timestamppb.Now()
	h.srv.mu.Unlock()
	eventually(t, 10*time.Second, func() error {
		if p := h.problems(); len(p) != 0 {
			return fmt.Errorf("problems after the resume: %q", p)
		}
		return nil
	})
}

// A prolog that outlives its timeout is killed, with its children, and
// fails like one that exited non-zero.
func TestPrologTimeout(t *testing.T) {
	h := newGateHarness(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	slow := checkScript(t, "sleep 600 & echo $! > "+pidFile+"; wait")
	as := wireAssignment(32, t.TempDir(), script)
	as.Prolog = &phalanxv1.Prolog{Programs: []string{slow}, TimeoutSeconds: 1}
	h.srv.set(as)
	msg := slow + " timed out after 1s (job 32)"
	h.lostAfterDrain(t, 32, "prolog on gpu001: "+msg+"; node drained", "prolog|"+msg+"|true")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, func() error {
		if _, err := os.Stat("/proc/" + strings.TrimSpace(string(b))); err == nil {
			return fmt.Errorf("the prolog's child %s outlived the timeout", strings.TrimSpace(string(b)))
		}
		return nil
	})
}

// A job cancelled while its prolog runs is stopped at once: the prolog is
// killed and the task reported KILLED, not the node drained.
func TestStopDuringProlog(t *testing.T) {
	h := newGateHarness(t)
	started := filepath.Join(t.TempDir(), "started")
	slow := checkScript(t, "touch "+started+"; exec sleep 600")
	as := wireAssignment(33, t.TempDir(), script)
	as.Prolog = &phalanxv1.Prolog{Programs: []string{slow}, TimeoutSeconds: 600}
	h.srv.set(as)
	eventually(t, 10*time.Second, func() error {
		_, err := os.Stat(started)
		return err
	})
	begin := time.Now()
	h.srv.set(withStop(as, 0, "CANCELLED"))
	r := h.srv.waitReport(t, 33, "KILLED")
	if r.Message != "stopped before it started: stopped by the controller: CANCELLED" {
		t.Errorf("report %q", r.Message)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("stopping during the prolog took %v", d)
	}
	if p := h.problems(); len(p) != 0 {
		t.Errorf("problems after a cancelled prolog: %q", p)
	}
}

// A GPU of the task lost between two polls of the watcher is found by the
// gate: the node is drained, the task not started.
func TestGateFindsALostGPU(t *testing.T) {
	h := newGateHarness(t)
	if err := fakegpu.Inject(h.faults, fakegpu.Fault{Kind: fakegpu.Lost, GPU: 3}); err != nil {
		t.Fatal(err)
	}
	// (The fake GPUs play the fault file when NVML is next called: by the
	// gate, here.)
	h.srv.set(wireAssignment(34, t.TempDir(), script)) // GPUs 2 and 3
	// NVML tells the loss twice: the gate's query answers GPU_IS_LOST, and
	// the event stream raises XID 79. Which the agent hears first depends
	// on whose NVML call plays the fault; either names the fault, and the
	// drain and the report must agree on it.
	msg := "GPU 3 is gone from the bus (NVML: ERROR_GPU_IS_LOST): repair the node"
	if r := h.srv.waitReport(t, 34, "LOST"); strings.Contains(r.Message, "XID 79") {
		msg = "GPU 3 XID 79 (GPU has fallen off the bus): repair the node"
	}
	h.lostAfterDrain(t, 34, "prestart-gpu on gpu001: "+msg+"; node drained", "prestart-gpu|"+msg+"|true")
	if n := len(h.rt.Specs()); n != 0 {
		t.Errorf("%d tasks started on a lost GPU", n)
	}
}

// A job on other GPUs of the same node is not stopped by a fault of GPUs
// it does not use.
func TestGateChecksOnlyTheTasksGPUs(t *testing.T) {
	h := newGateHarness(t)
	if err := fakegpu.Inject(h.faults, fakegpu.Fault{Kind: fakegpu.ECC, GPU: 6}); err != nil {
		t.Fatal(err)
	}
	h.srv.set(wireAssignment(35, t.TempDir(), script)) // GPUs 2 and 3
	waitStarted(t, h.rt, "phx-35-0-0")
}

// A job across nodes needs the RDMA ports near its GPUs up; a job on one
// node does not use them.
func TestGateChecksRDMAForJobsAcrossNodes(t *testing.T) {
	h := newGateHarness(t)
	if err := fakesysfs.SetPort(h.sysfs, "mlx5_1", 1, false); err != nil { // near GPUs 2 and 3
		t.Fatal(err)
	}
	h.srv.set(wireAssignment(36, t.TempDir(), script))
	waitStarted(t, h.rt, "phx-36-0-0")

	two := wireAssignment(37, t.TempDir(), script)
	two.Job.Alloc = append(two.Job.Alloc, &phalanxv1.NodeAlloc{Node: "gpu002", Gpus: []int32{2, 3}, Addr: "10.0.0.2"})
	h.srv.set(two)
	msg := "RDMA port mlx5_1/1 DOWN (Disabled) is not up for a job across nodes"
	h.lostAfterDrain(t, 37, "prestart-rdma on gpu001: "+msg+"; node drained", "prestart-rdma|"+msg+"|true")
}

// A working directory or output the user cannot use fails the job, not
// the node.
func TestGateUserFaults(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("checking as another user needs root (CI runs as root)")
	}
	h := newGateHarness(t)
	shared := runtimetest.SharedDir(t)
	private := filepath.Join(shared, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	asNobody := func(job uint64, dir string) *phalanxv1.Assignment {
		as := wireAssignment(job, dir, script)
		as.Job.Spec.Uid, as.Job.Spec.Gid = 65534, 65534
		return as
	}
	noOutputDir := asNobody(40, shared)
	noOutputDir.Job.Spec.Output = "logs/%j.out"
	rootsFile := asNobody(41, shared)
	rootsFile.Job.Spec.Output = "/etc/passwd"
	noErrorDir := asNobody(42, shared)
	noErrorDir.Job.Spec.Error = "errs/%j.err"
	h.srv.set(asNobody(38, private), asNobody(39, filepath.Join(shared, "nope")), noOutputDir, rootsFile, noErrorDir)
	for job, want := range map[uint64]string{
		38: fmt.Sprintf("prestart-workdir on gpu001: working directory %q cannot be entered by uid 65534 (permission denied)", private),
		39: fmt.Sprintf("prestart-workdir on gpu001: working directory %q does not exist", filepath.Join(shared, "nope")),
		40: fmt.Sprintf("prestart-output on gpu001: output file %q cannot be opened by uid 65534: no such file or directory", filepath.Join(shared, "logs/40.out")),
		41: `prestart-output on gpu001: output file "/etc/passwd" cannot be opened by uid 65534: permission denied`,
		42: fmt.Sprintf("prestart-output on gpu001: error file (-e) %q cannot be opened by uid 65534: no such file or directory", filepath.Join(shared, "errs/42.err")),
	} {
		if r := h.srv.waitReport(t, job, "FAILED"); r.Message != want {
			t.Errorf("job %d: %q, want %q", job, r.Message, want)
		}
	}
	if p := h.problems(); len(p) != 0 {
		t.Errorf("the user's faults drained the node: %q", p)
	}
	if n := len(h.rt.Specs()); n != 0 {
		t.Errorf("%d tasks started", n)
	}
}

// The prolog's verdict is its exit status only: an ERROR: line (NHC's way
// to fail a health check) does not fail a prolog that exits 0.
func TestPrologVerdictIgnoresErrorLines(t *testing.T) {
	if got := programVerdict("/etc/prolog", []byte("ERROR: not really\n"), nil, false, time.Minute, false); got != "" {
		t.Errorf("verdict %q, want a pass", got)
	}
}

// An agent that shuts down while a failed gate waits for the drain's
// acknowledgement does not wait out the 10 s: no reply will come.
func TestGateWaitEndsWithTheSession(t *testing.T) {
	h := newGateHarness(t)
	h.srv.mu.Lock()
	h.srv.failHeartbeats = true // the drain is never acknowledged
	h.srv.mu.Unlock()
	bad := checkScript(t, "exit 1")
	as := wireAssignment(60, t.TempDir(), script)
	as.Prolog = &phalanxv1.Prolog{Programs: []string{bad}, TimeoutSeconds: 10}
	h.srv.set(as)
	eventually(t, 10*time.Second, func() error { // the gate holds the failure and waits
		for _, p := range h.problems() {
			if strings.HasPrefix(p, "prolog|") {
				return nil
			}
		}
		return fmt.Errorf("no heartbeat with the prolog's failure yet: %q", h.problems())
	})
	begin := time.Now()
	h.stop(t)
	if d := time.Since(begin); d > 8*time.Second {
		t.Errorf("shutting down took %v: the gate waited for an acknowledgement that could not come", d)
	}
}
