package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// gateTable is a job table for the gate alone: jobs by ID, active or not.
type gateTable map[cluster.JobID]*cluster.Job

func (t gateTable) JobRecord(id cluster.JobID) (*cluster.Job, error) {
	if j, ok := t[id]; ok {
		return j, nil
	}
	return nil, cluster.Errorf(cluster.ErrNotFound, "job %d not found", id)
}

func (t gateTable) ActiveJobs() []*cluster.Job {
	var out []*cluster.Job
	for _, j := range t {
		if !j.State.Terminal() {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b *cluster.Job) int { return int(a.ID) - int(b.ID) })
	return out
}

func (t gateTable) NextJobID() cluster.JobID {
	next := cluster.JobID(1)
	for id := range t {
		next = max(next, id+1)
	}
	return next
}

// The gate alone, on a table of jobs: which pending jobs the scheduler
// sees, and why each of the others waits or ends.
func TestGateSifts(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	dep := func(s string) cluster.Dependency { return mustDep(t, s) }
	task := func(id cluster.JobID, i int, st cluster.JobState) *cluster.Job {
		return &cluster.Job{ID: id, State: st, Array: &cluster.ArrayTask{JobID: 20, TaskID: i, Count: 3, Min: 0, Max: 2, Step: 1, Throttle: 2}}
	}
	table := gateTable{
		1:  {ID: 1, State: cluster.JobRunning},
		2:  {ID: 2, State: cluster.JobFailed},
		3:  {ID: 3, State: cluster.JobPending},
		4:  {ID: 4, State: cluster.JobPending, Hold: cluster.HoldUser},
		5:  {ID: 5, State: cluster.JobPending, BeginTime: now.Add(time.Hour)},
		6:  {ID: 6, State: cluster.JobPending, Dependency: dep("afterok:1")},
		7:  {ID: 7, State: cluster.JobPending, Dependency: dep("afterok:2")},
		8:  {ID: 8, State: cluster.JobPending, Dependency: dep("afterok:2"), KillOnInvalidDep: true},
		9:  {ID: 9, State: cluster.JobPending, Dependency: dep("afternotok:2")},
		10: {ID: 10, State: cluster.JobPending, TimeLimit: 2 * time.Hour, Deadline: now.Add(time.Hour)},
		20: task(20, 0, cluster.JobRunning),
		21: task(21, 1, cluster.JobPending),
		22: task(22, 2, cluster.JobPending),
	}
	g := &gate{jobs: table, clock: fixedClock(now)}
	keep, held := g.sift(table.ActiveJobs(), now)
	var kept []cluster.JobID
	for _, j := range keep {
		kept = append(kept, j.ID)
	}
	if want := []cluster.JobID{1, 3, 9, 20, 21}; !slices.Equal(kept, want) {
		t.Errorf("scheduler sees jobs %v; want %v", kept, want)
	}
	want := map[cluster.JobID]cluster.PendingReason{
		4:  cluster.ReasonJobHeldUser,
		5:  cluster.ReasonBeginTime,
		6:  cluster.ReasonDependency,
		7:  cluster.ReasonDependencyNever,
		8:  cluster.ReasonDependencyNever,
		22: cluster.ReasonArrayTaskLimit, // task 0 runs, task 1 takes the throttle's second place
	}
	for id, reason := range want {
		if got := held.waiting[id].Reason; got != reason {
			t.Errorf("job %d waits for %q; want %q", id, got, reason)
		}
	}
	if len(held.waiting) != len(want) {
		t.Errorf("%d jobs held back (%v); want %d", len(held.waiting), held.waiting, len(want))
	}
	if !held.waiting[5].ExpectedStart.Equal(now.Add(time.Hour)) {
		t.Errorf("job 5 expected to start %v; want its --begin time", held.waiting[5].ExpectedStart)
	}
	if !slices.Equal(held.kill, []cluster.JobID{8}) {
		t.Errorf("jobs to cancel %v; want [8] (--kill-on-invalid-dep)", held.kill)
	}
	if !slices.Equal(held.missed, []cluster.JobID{10}) {
		t.Errorf("jobs past their deadline %v; want [10]", held.missed)
	}
}

// A dependency on a task is resolved to the task's own job; one on a job
// never issued is refused, as is one on the job itself.
func TestGateChecksDependencies(t *testing.T) {
	table := gateTable{
		30: {ID: 30, State: cluster.JobRunning, Array: &cluster.ArrayTask{JobID: 30, TaskID: 0, Count: 2, Max: 1, Step: 1}},
		31: {ID: 31, State: cluster.JobPending, Array: &cluster.ArrayTask{JobID: 30, TaskID: 1, Count: 2, Max: 1, Step: 1}},
	}
	g := &gate{jobs: table, clock: fixedClock(time.Now())}
	j := &cluster.Job{ID: 40, Dependency: mustDep(t, "afterok:30_1")}
	if err := g.checkDependency(j); err != nil {
		t.Fatalf("afterok:30_1: %v", err)
	}
	if ids := j.Dependency.Jobs(); !slices.Equal(ids, []cluster.JobID{31}) {
		t.Errorf("afterok:30_1 resolved to jobs %v; want [31]", ids)
	}
	// Job 25 was issued (below the next ID, 32) and has been purged since:
	// its condition is taken, as Slurm lifts it.
	if err := g.checkDependency(&cluster.Job{ID: 40, Dependency: mustDep(t, "afterok:25")}); err != nil {
		t.Errorf("afterok:25 (purged): %v; want it taken", err)
	}
	for spec, want := range map[string]string{
		"afterok:99":   "Job dependency problem: job 99 does not exist (--dependency=afterok:99)",
		"afterok:30_7": "Job dependency problem: job 30_7 does not exist: array 30 has no task 7 (--dependency=afterok:30_7)",
		"afterok:31_0": "Job dependency problem: job 31 is not a job array, so 31_0 does not exist (--dependency=afterok:31_0)",
	} {
		err := g.checkDependency(&cluster.Job{ID: 40, Dependency: mustDep(t, spec)})
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v; want %s", spec, err, want)
		}
	}
}

// fixedClock is a controller clock that always says the same time.
type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

func mustDep(t *testing.T, s string) cluster.Dependency {
	t.Helper()
	d, err := cluster.ParseDependency(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
