package nodeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
)

// A task still there UnkillableStepTimeout after its SIGKILL (a process
// stuck in the kernel) drains the node with Slurm's "Kill task failed"
// before its end is reported, so nothing is placed on GPUs it may still
// hold; UnkillableStepProgram runs with the job's variables; the task's
// end is then reported, so its job goes on.
func TestUnkillableTaskDrainsTheNode(t *testing.T) {
	rt := fake.New()
	h := newHarness(t, rt, func(c *Config) { c.Clock = scaledClock{start: time.Now(), factor: 50} })
	seen := filepath.Join(t.TempDir(), "seen")
	prog := checkScript(t, fmt.Sprintf("echo \"job=$SLURM_JOB_ID rank=$SLURM_PROCID node=$SLURMD_NODENAME\" > %s", seen))
	h.srv.mu.Lock()
	h.srv.unkillable = &phalanxv1.Unkillable{TimeoutSeconds: 5, Program: prog}
	h.srv.mu.Unlock()
	eventually(t, 10*time.Second, func() error {
		if u := h.agent.unkillableSettings(); u.Program != prog {
			return fmt.Errorf("settings %+v: not those of the heartbeat's reply yet", u)
		}
		return nil
	})

	as := wireAssignment(41, t.TempDir(), script)
	h.srv.set(as)
	task := waitStarted(t, rt, "phx-41-0-0")
	task.SetUnkillable(true)
	h.srv.set(withStop(as, 1, "cancelled by alice"))

	r := h.srv.waitReport(t, 41, "KILLED")
	if want := "still running 5s after SIGKILL: Kill task failed, node drained"; !strings.Contains(r.Message, want) {
		t.Errorf("report %q, want it to say %q", r.Message, want)
	}
	if _, exited := task.Exited(); exited {
		t.Fatal("the fake task exited: it was to outlive SIGKILL")
	}
	if got := task.Signals(); !slices.Contains(got, syscall.SIGKILL) {
		t.Errorf("signals %v: no SIGKILL", got)
	}
	problem := "unkillable|Kill task failed: job 41 rank 0 still running 5s after SIGKILL (GPUs 2,3 may still be in use)|true"
	h.srv.mu.Lock()
	for i, rep := range h.srv.reports {
		if rep.JobId != 41 || rep.State != "KILLED" {
			continue
		}
		var got []string
		for _, p := range h.srv.lastHeartbeat[i].GetProblems() {
			got = append(got, fmt.Sprintf("%s|%s|%v", p.Check, p.Message, p.Event))
		}
		if !slices.Contains(got, problem) {
			t.Errorf("heartbeat before the KILLED report carried %q; want %q in it (the drain first)", got, problem)
		}
	}
	h.srv.mu.Unlock()
	eventually(t, 10*time.Second, func() error {
		b, err := os.ReadFile(seen)
		if err != nil {
			return err
		}
		if got, want := strings.TrimSpace(string(b)), "job=41 rank=0 node="+node; got != want {
			return fmt.Errorf("UnkillableStepProgram saw %q, want %q", got, want)
		}
		return nil
	})
	// The problem stays until an administrator resumes the node, though
	// the task has gone meanwhile.
	rt.Exit("phx-41-0-0", 137)
	time.Sleep(100 * time.Millisecond)
	if got := h.problems(); !slices.Contains(got, problem) {
		t.Errorf("problems %q once the task went, want %q still there", got, problem)
	}
}

// Without settings from the controller, a task gets Slurm's default, 60 s,
// after its SIGKILL: one that dies within it is reported as killed, with
// no drain.
func TestKilledTaskWithinTheDefaultTimeout(t *testing.T) {
	rt := fake.New()
	h := newHarness(t, rt, func(c *Config) { c.Clock = scaledClock{start: time.Now(), factor: 50} })
	as := wireAssignment(42, t.TempDir(), script)
	h.srv.set(as)
	task := waitStarted(t, rt, "phx-42-0-0")
	task.SetUnkillable(true)
	h.srv.set(withStop(as, 1, "cancelled by alice"))
	eventually(t, 10*time.Second, func() error {
		if !slices.Contains(task.Signals(), syscall.SIGKILL) {
			return fmt.Errorf("signals %v: no SIGKILL yet", task.Signals())
		}
		return nil
	})
	time.Sleep(800 * time.Millisecond) // 40 s at the test's clock: within 60
	if reps := h.srv.reportsFor(42); slices.Contains(states(reps), "KILLED") {
		t.Fatalf("reported %v within the default 60 s after SIGKILL", states(reps))
	}
	rt.Exit("phx-42-0-0", 137)
	r := h.srv.waitReport(t, 42, "KILLED")
	if strings.Contains(r.Message, "Kill task failed") || len(h.problems()) != 0 {
		t.Errorf("report %q, problems %q: want a plain kill, no drain", r.Message, h.problems())
	}
}
