package nodeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/runtime"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
	"github.com/phalanx-hpc/phalanx/runtime/process"
	"github.com/phalanx-hpc/phalanx/runtime/runtimetest"
)

func TestContainerTaskSpec(t *testing.T) {
	rt := fake.New()
	rdmaDevs := []string{"phalanx.dev/rdma=mlx5_0", "phalanx.dev/rdma=mlx5_1"}
	h := newHarness(t, rt, func(c *Config) { c.RDMADevices = rdmaDevs })
	// The gate opens the outputs as uid 1000: the directories let it.
	work, scratch := runtimetest.SharedDir(t), runtimetest.SharedDir(t)
	if err := os.Mkdir(filepath.Join(work, "logs"), 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(work, "logs"), 0o777|os.ModeSticky)
	as := wireAssignment(20, work, "python train.py\n") // no #!: run through /bin/sh
	as.Job.Spec.Image = "nvcr.io/nvidia/pytorch:24.05-py3"
	as.Job.Spec.Uid, as.Job.Spec.Gid = 1000, 1001
	as.Job.Spec.ScriptArgs = []string{"--epochs", "3 4"} // sbatch script [args...]
	as.Job.Spec.Output, as.Job.Spec.Error = "logs/%x-%j.out", scratch+"/%u-%j.%N.err"
	h.srv.set(as)
	spec := waitStarted(t, rt, "phx-20-0-0").Spec()

	jobDir := filepath.Join(h.cfg.StateDir, "jobs", "20.0")
	if want := []string{"/bin/sh", filepath.Join(jobDir, "script"), "--epochs", "3 4"}; !reflect.DeepEqual(spec.Argv, want) {
		t.Errorf("Argv = %q, want %q", spec.Argv, want)
	}
	steps := filepath.Join(jobDir, "steps") // srun's, writable by the job's user
	wantMounts := []runtime.Mount{{Source: jobDir, Target: jobDir, ReadOnly: true}, {Source: steps, Target: steps}, {Source: work, Target: work}}
	if fi, err := os.Stat(steps); err != nil || (os.Geteuid() == 0 && fi.Sys().(*syscall.Stat_t).Uid != 1000) || fi.Mode().Perm() != 0o700 {
		t.Errorf("step directory: %v, %v; want mode 0700, owned by uid 1000", fi, err)
	}
	if !reflect.DeepEqual(spec.Mounts, wantMounts) {
		t.Errorf("Mounts = %v, want %v", spec.Mounts, wantMounts)
	}
	if spec.Image != as.Job.Spec.Image || spec.UID != 1000 || spec.GID != 1001 || !reflect.DeepEqual(spec.GPUs, []int{2, 3}) {
		t.Errorf("image %q uid %d gid %d GPUs %v", spec.Image, spec.UID, spec.GID, spec.GPUs)
	}
	if spec.Stdout != filepath.Join(work, "logs/test-20.out") || spec.Stderr != scratch+"/alice-20.gpu001.err" {
		t.Errorf("stdout %q stderr %q", spec.Stdout, spec.Stderr)
	}
	if !reflect.DeepEqual(spec.Devices, rdmaDevs) {
		t.Errorf("container devices %v, want the node's RDMA devices %v", spec.Devices, rdmaDevs)
	}
	if !slices.Contains(spec.Env, "CUDA_VISIBLE_DEVICES=0,1") {
		t.Errorf("container env should number its GPUs from 0: %v", spec.Env)
	}
	if slices.ContainsFunc(spec.Env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
		t.Errorf("container env overrides the image's PATH: %v", spec.Env)
	}
}

func TestImageOnProcessRuntimeFails(t *testing.T) {
	h := newHarness(t, process.New(t.TempDir()), nil)
	as := wireAssignment(21, t.TempDir(), script)
	as.Job.Spec.Image = "busybox"
	h.srv.set(as)
	r := h.srv.waitReport(t, 21, "FAILED")
	if !strings.Contains(r.Message, `job needs image "busybox" but node gpu001 runs plain processes`) {
		t.Errorf("message %q", r.Message)
	}
}

// TestProcessRuntime runs a real script as a process group.
func TestProcessRuntime(t *testing.T) {
	h := newHarness(t, process.New(t.TempDir(), process.WithMaxPoll(10*time.Millisecond)), nil)
	work := t.TempDir()
	body := "#!/bin/sh\necho \"job=$SLURM_JOB_ID rank=$RANK gpus=$CUDA_VISIBLE_DEVICES pwd=$(pwd)\"\necho oops >&2\nexit 4\n"
	h.srv.set(wireAssignment(22, work, body))
	r := h.srv.waitReport(t, 22, "EXITED")
	if r.ExitCode != 4 {
		t.Errorf("EXITED report = %v", r)
	}
	out, err := os.ReadFile(filepath.Join(work, "slurm-22.out"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("job=22 rank=0 gpus=2,3 pwd=%s\noops\n", work)
	if string(out) != want {
		t.Errorf("output %q, want %q", out, want)
	}
}

// TestProcessTimeLimitKillsGroup checks TIMEOUT against a real process
// that traps SIGTERM: it must be killed after the grace period.
func TestProcessTimeLimitKillsGroup(t *testing.T) {
	clock := scaledClock{start: time.Now(), factor: 20}
	h := newHarness(t, process.New(t.TempDir(), process.WithMaxPoll(10*time.Millisecond)), func(c *Config) {
		c.Clock = clock
		c.HeartbeatInterval = time.Second
		c.KillGrace = 2 * time.Second // 100ms of wall time
	})
	work := t.TempDir()
	as := wireAssignment(23, work, "#!/bin/sh\ntrap 'echo got TERM' TERM\nwhile :; do sleep 0.01; done\n")
	as.Job.TimeLimitSeconds = 2
	h.srv.set(as)
	r := h.srv.waitReport(t, 23, "TIMEOUT")
	if r.ExitSignal != int32(syscall.SIGKILL) {
		t.Errorf("TIMEOUT report = %v; want killed by SIGKILL", r)
	}
	eventually(t, 5*time.Second, func() error {
		out, _ := os.ReadFile(filepath.Join(work, "slurm-23.out"))
		if !strings.Contains(string(out), "got TERM") {
			return fmt.Errorf("output %q: the script never saw SIGTERM", out)
		}
		return nil
	})
}

// A job finds Slurm's commands on its PATH, as links to the phx client
// (which acts as the command its name says).
func TestSlurmCommandsOnTheJobsPath(t *testing.T) {
	client := filepath.Join(t.TempDir(), "phx")
	if err := os.WriteFile(client, []byte("#!/bin/sh\necho \"$(basename \"$0\") $*\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, process.New(t.TempDir(), process.WithMaxPoll(10*time.Millisecond)), func(c *Config) { c.ClientBinary = client })
	work := t.TempDir()
	body := "#!/bin/sh\nMASTER=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1)\necho \"$MASTER\"\nsqueue --me\nsrun echo from-srun\n"
	h.srv.set(wireAssignment(23, work, body))
	if r := h.srv.waitReport(t, 23, "EXITED"); r.ExitCode != 0 {
		t.Fatalf("EXITED report = %v", r)
	}
	out, err := os.ReadFile(filepath.Join(work, "slurm-23.out"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "scontrol show hostnames gpu001\nsqueue --me\nfrom-srun\n"; string(out) != want {
		t.Errorf("output %q, want %q", out, want)
	}
}

// A job's script on its node is its user's alone: mode 0700, owned by the
// job's user (checked as root, who can give it away).
func TestScriptIsTheUsers(t *testing.T) {
	path, err := writeScript(filepath.Join(t.TempDir(), "7.0"), "#!/bin/sh\necho secret\n", 4242, 4343)
	if os.Getuid() != 0 {
		if err == nil {
			t.Fatal("a non-root agent gave a script to uid 4242")
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != 0o700 || st.Uid != 4242 || st.Gid != 4343 {
		t.Errorf("script mode %v owner %d:%d; want 0700 owned by 4242:4343", fi.Mode().Perm(), st.Uid, st.Gid)
	}
	if b, _ := os.ReadFile(path); string(b) != "#!/bin/sh\necho secret\n" {
		t.Errorf("script %q", b)
	}
}
