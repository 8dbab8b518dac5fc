package nodeagent

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
)

// placedAt is as, its attempt 0 placed by the command at index, with the
// given ranks started as the controller has them.
func placedAt(as *phalanxv1.Assignment, index uint64, started ...int32) *phalanxv1.Assignment {
	c := proto.Clone(as).(*phalanxv1.Assignment)
	c.Job.Attempts = []*phalanxv1.Attempt{{Attempt: 0, PlacedIndex: index}}
	c.Job.Tasks = []*phalanxv1.Task{{Rank: 0, Node: node, State: "ASSIGNED"}}
	for _, r := range started {
		c.Job.Tasks[r].State = "RUNNING"
	}
	return c
}

// endRecorded waits until the agent knows the controller recorded the end
// of job's rank 0, and returns the index it was recorded at.
func (h *harness) endRecorded(t *testing.T, job uint64) uint64 {
	t.Helper()
	var index uint64
	eventually(t, 10*time.Second, func() error {
		a := h.agent
		a.mu.Lock()
		defer a.mu.Unlock()
		e := a.finished[taskKey{job: job}]
		if e == nil || e.recorded == 0 {
			return fmt.Errorf("end of job %d not acknowledged yet", job)
		}
		index = e.recorded
		return nil
	})
	return index
}

// countReports returns how many of job's delivered reports are in state.
func (f *fakeNodeService) countReports(job uint64, state string) int {
	n := 0
	for _, r := range f.reportsFor(job) {
		if r.State == state {
			n++
		}
	}
	return n
}

// A controller whose state was replaced (scontrol restore) by one from
// before a task's end still has the task running: the agent reports the end
// again, as it was, rather than leave the job running for ever. A set read
// before the end was recorded (an older stream's) does not make it do so.
func TestEndReportedAgainToARestoredController(t *testing.T) {
	rt := fake.New()
	h := newHarness(t, rt, nil)
	work := t.TempDir()
	h.srv.setAt(1, placedAt(wireAssignment(1, work, script), 1))
	waitStarted(t, rt, "phx-1-0-0")
	h.srv.waitReport(t, 1, "RUNNING")
	if err := rt.Exit("phx-1-0-0", 3); err != nil {
		t.Fatal(err)
	}
	first := h.srv.waitReport(t, 1, "EXITED")
	recorded := h.endRecorded(t, 1)

	running := placedAt(wireAssignment(1, work, script), 1, 0)
	h.srv.setAt(recorded, running) // not newer than the end: proves nothing
	h.srv.setAt(recorded, running, wireAssignment(13, work, script))
	waitStarted(t, rt, "phx-13-0-0")
	if n := h.srv.countReports(1, "EXITED"); n != 1 {
		t.Fatalf("%d EXITED reports after a set as old as the end; want 1", n)
	}

	h.srv.setAt(recorded+100, running, wireAssignment(13, work, script)) // the restored state
	eventually(t, 10*time.Second, func() error {
		if n := h.srv.countReports(1, "EXITED"); n != 2 {
			return fmt.Errorf("%d EXITED reports; want the end reported again", n)
		}
		return nil
	})
	again := h.srv.reportsFor(1)
	last := again[len(again)-1]
	if !proto.Equal(last, first) {
		t.Errorf("end reported again as %v; want it as first reported, %v", last, first)
	}
	if n := len(rt.Specs()); n != 2 {
		t.Errorf("%d tasks started, want 2 (jobs 1 and 13): an ended task started again", n)
	}
}

// A restored state can place again an attempt that ended here since the
// backup was taken: the same job, attempt and rank, by another command.
// That one is the task the controller asks for now, and it runs (or, asked
// to stop, is reported stopped before it started).
func TestTaskPlacedAnewInARestoredStateRuns(t *testing.T) {
	rt := fake.New()
	h := newHarness(t, rt, nil)
	work := t.TempDir()
	h.srv.setAt(1, placedAt(wireAssignment(2, work, script), 1), placedAt(wireAssignment(3, work, script), 1))
	for _, job := range []uint64{2, 3} {
		id := fmt.Sprintf("phx-%d-0-0", job)
		waitStarted(t, rt, id)
		h.srv.waitReport(t, job, "RUNNING")
		if err := rt.Exit(id, 0); err != nil {
			t.Fatal(err)
		}
		h.srv.waitReport(t, job, "EXITED")
	}
	recorded := max(h.endRecorded(t, 2), h.endRecorded(t, 3))

	// Placed at an index below the end's, but by another command: no
	// index needs to be newer to tell it is another placement.
	anew := placedAt(wireAssignment(2, work, script), 2)
	stopped := withStop(placedAt(wireAssignment(3, work, script), 2), 0, "CANCELLED")
	h.srv.setAt(recorded+100, anew, stopped)
	eventually(t, 10*time.Second, func() error {
		if n := h.srv.countReports(2, "RUNNING"); n != 2 {
			return fmt.Errorf("job 2: %d RUNNING reports; want 2 (started anew)", n)
		}
		return nil
	})
	started := map[string]int{}
	for _, s := range rt.Specs() {
		started[s.ID]++
	}
	if want := map[string]int{"phx-2-0-0": 2, "phx-3-0-0": 1}; !reflect.DeepEqual(started, want) {
		t.Errorf("tasks started %v; want %v", started, want)
	}
	r := h.srv.waitReport(t, 3, "KILLED")
	if r.Message != "stopped before it started: CANCELLED" {
		t.Errorf("job 3's stopped placement reported %v", r)
	}
}

// A task that runs here under a placement a restored state no longer has,
// with the job, attempt and rank of one the state places anew: it is
// stopped, its end not reported (the controller would take it for the new
// one's), and the new one starts once it has ended.
func TestReplacedPlacementStopsUnreported(t *testing.T) {
	rt := fake.New()
	h := newHarness(t, rt, nil)
	work := t.TempDir()
	h.srv.setAt(1, placedAt(wireAssignment(5, work, script), 1))
	old := waitStarted(t, rt, "phx-5-0-0")
	h.srv.waitReport(t, 5, "RUNNING")

	h.srv.setAt(100, placedAt(wireAssignment(5, work, script), 50))
	eventually(t, 10*time.Second, func() error {
		if n := h.srv.countReports(5, "RUNNING"); n != 2 {
			return fmt.Errorf("%d RUNNING reports; want 2 (the new placement started)", n)
		}
		return nil
	})
	if !old.Closed() {
		t.Error("the replaced placement's task was not stopped")
	}
	if got := states(h.srv.reportsFor(5)); !reflect.DeepEqual(got, []string{"RUNNING", "RUNNING"}) {
		t.Errorf("reports %v; want RUNNING twice, the replaced task's end unreported", got)
	}
}

// A task never starts on GPUs another task here still holds: one the
// controller placed on the GPUs of a task it no longer has (a replaced
// state) waits until that task, stopping through its grace period, has
// ended.
func TestTaskWaitsForGPUsStillHeld(t *testing.T) {
	rt := fake.New(fake.WithIgnoreSIGTERM())
	h := newHarness(t, rt, func(c *Config) { c.KillGrace = 500 * time.Millisecond })
	work := t.TempDir()
	h.srv.set(wireAssignment(6, work, script)) // GPUs 2 and 3
	waitStarted(t, rt, "phx-6-0-0")
	h.srv.waitReport(t, 6, "RUNNING")

	h.srv.set(wireAssignment(7, work, script)) // the same GPUs; job 6 gone
	h.srv.waitReport(t, 7, "RUNNING")
	h.srv.mu.Lock()
	all := make([]string, 0, len(h.srv.reports))
	for _, r := range h.srv.reports {
		all = append(all, fmt.Sprintf("%d %s", r.JobId, r.State))
	}
	h.srv.mu.Unlock()
	if want := []string{"6 RUNNING", "6 KILLED", "7 RUNNING"}; !reflect.DeepEqual(all, want) {
		t.Errorf("reports in order %v; want %v: job 7 started on GPUs job 6 still held", all, want)
	}
}

// endRejected waits until the controller rejected the end of job's rank 0
// for want of its job.
func (h *harness) endRejected(t *testing.T, job uint64) {
	t.Helper()
	eventually(t, 10*time.Second, func() error {
		a := h.agent
		a.mu.Lock()
		defer a.mu.Unlock()
		if e := a.finished[taskKey{job: job}]; e == nil || !e.rejected {
			return fmt.Errorf("end of job %d not rejected yet", job)
		}
		return nil
	})
}

// A state restored over a cluster without a job (scontrol restore force)
// stops its task, whose end the controller rejects: it has no such job.
// A second restore, of a state from before that end, has the task again,
// running (or stopping: scancel'led): the agent reports it LOST, so that
// the attempt ends NODE_FAIL and restarts, rather than leave the job
// RUNNING, or COMPLETING, for ever with no process. A set read before the
// rejection does not make it do so, and the task does not start again.
func TestTaskStoppedByARestoreIsReportedLostWhenRestoredAgain(t *testing.T) {
	rt := fake.New()
	h := newHarness(t, rt, nil)
	work := t.TempDir()
	running := placedAt(wireAssignment(1, work, script), 1)
	cancelled := placedAt(wireAssignment(2, work, script), 2)
	cancelled.Job.Alloc[0].Gpus = []int32{4, 5}
	h.srv.setAt(2, running, cancelled)
	for _, job := range []uint64{1, 2} {
		waitStarted(t, rt, fmt.Sprintf("phx-%d-0-0", job))
		h.srv.waitReport(t, job, "RUNNING")
	}

	h.srv.withoutJobs(1, 2)
	h.srv.setAt(10) // the first restore: a state without the jobs
	h.endRejected(t, 1)
	h.endRejected(t, 2)
	h.srv.withoutJobs()

	running, cancelled = placedAt(running, 1, 0), withStop(placedAt(cancelled, 2, 0), 0, "CANCELLED")
	h.srv.setAt(10, running, cancelled) // as old as the rejection: proves nothing
	h.srv.setAt(10, running, cancelled, wireAssignment(13, work, script))
	waitStarted(t, rt, "phx-13-0-0")
	for _, job := range []uint64{1, 2} {
		if got := states(h.srv.reportsFor(job)); len(got) != 1 {
			t.Fatalf("job %d: reports %v after a set as old as the rejection; want RUNNING alone", job, got)
		}
	}

	h.srv.setAt(20, running, cancelled, wireAssignment(13, work, script)) // the second restore
	for _, job := range []uint64{1, 2} {
		r := h.srv.waitReport(t, job, "LOST")
		if want := "ended while the controller's state did not have its job (KILLED: no longer assigned to this node)"; r.Message != want {
			t.Errorf("job %d reported LOST with %q; want %q", job, r.Message, want)
		}
	}
	if n := len(rt.Specs()); n != 3 {
		t.Errorf("%d tasks started, want 3 (jobs 1, 2 and 13): a stopped task started again", n)
	}
}
