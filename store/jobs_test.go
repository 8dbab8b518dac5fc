package store

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

func TestSubmitJob(t *testing.T) {
	s := openTest(t, "")
	if got := s.NextJobID(); got != 1 {
		t.Fatalf("NextJobID on an empty store = %d; want 1", got)
	}
	want := pendingJob(5, 2, 4)
	if err := submitErr(s, 1, want); err != nil {
		t.Fatal(err)
	}
	got := mustJob(t, s, 5)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Job(5) = %+v\nwant %+v", got, want)
	}
	if got := s.NextJobID(); got != 6 {
		t.Errorf("NextJobID = %d; want 6", got)
	}
	mustSubmit(t, s, 2, 3) // a lower ID does not move the next ID back
	if got := s.NextJobID(); got != 6 {
		t.Errorf("NextJobID after submitting 3 = %d; want 6", got)
	}
	if s.AppliedIndex() != 2 {
		t.Errorf("AppliedIndex = %d; want 2", s.AppliedIndex())
	}
}

func TestSubmitJobRejections(t *testing.T) {
	s := openTest(t, "")
	mustSubmit(t, s, 1, 1)
	if err := submitErr(s, 2, pendingJob(1, 1, 1)); !errors.Is(err, cluster.ErrConflict) {
		t.Errorf("duplicate ID: %v; want ErrConflict", err)
	}
	if err := submitErr(s, 3, pendingJob(0, 1, 1)); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("ID 0: %v; want ErrInvalid", err)
	}
	// A rejected command is still applied: its index is recorded.
	if s.AppliedIndex() != 3 {
		t.Errorf("AppliedIndex = %d; want 3", s.AppliedIndex())
	}
	if _, err := s.Job(9); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("Job(9) = %v; want ErrNotFound", err)
	}
}

func TestWritesAreIdempotentByIndex(t *testing.T) {
	s := openTest(t, "")
	mustSubmit(t, s, 5, 1)
	// The same index again, and a lower one: both are replays, no-ops.
	if err := submitErr(s, 5, pendingJob(2, 1, 1)); err != nil {
		t.Errorf("replayed SubmitJob: %v", err)
	}
	if err := submitErr(s, 4, pendingJob(1, 1, 1)); err != nil {
		t.Errorf("replayed SubmitJob with a used ID must not conflict: %v", err)
	}
	if _, err := s.Job(2); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("a replayed command applied: Job(2) = %v", err)
	}
	ids, err := s.CancelJobs(3, []cluster.JobID{1}, at(1), "x", nil)
	if err != nil || ids != nil || mustJob(t, s, 1).State != cluster.JobPending {
		t.Errorf("replayed CancelJobs = %v, %v; job must stay pending", ids, err)
	}
	if s.AppliedIndex() != 5 {
		t.Errorf("AppliedIndex = %d; want 5", s.AppliedIndex())
	}
}

func TestReportTask(t *testing.T) {
	s := openTest(t, "")
	mustRegister(t, s, 1, "n1", "n2")
	if err := submitErr(s, 3, pendingJob(1, 2, 2)); err != nil {
		t.Fatal(err)
	}
	placed, err := s.PlaceJobs(4, []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "n1", "n2"), MasterPort: 29500, Time: at(1)}})
	if err != nil || len(placed) != 1 {
		t.Fatalf("PlaceJobs = %v, %v", placed, err)
	}
	report := func(idx uint64, rank int, st cluster.TaskState, code, sec int) {
		t.Helper()
		r := cluster.TaskReport{JobID: 1, Rank: rank, Node: []string{"n1", "n2"}[rank], State: st, ExitCode: code, Time: at(sec)}
		if err := s.ReportTask(idx, r); err != nil {
			t.Fatalf("ReportTask: %v", err)
		}
	}
	report(5, 0, cluster.TaskRunning, 0, 2)
	report(6, 1, cluster.TaskRunning, 0, 3)
	if j := mustJob(t, s, 1); j.State != cluster.JobRunning || !j.StartTime.Equal(at(3)) {
		t.Errorf("after both running: %s start %v", j.State, j.StartTime)
	}
	report(7, 1, cluster.TaskExited, 2, 10)
	j := mustJob(t, s, 1)
	if j.State != cluster.JobFailed || j.ExitCode != 2 || !j.Live() {
		t.Errorf("after rank 1 exit 2: %s code %d live %v", j.State, j.ExitCode, j.Live())
	}
	if active := s.ActiveJobs(); len(active) != 1 {
		t.Errorf("a failed job with a running task left the active set: %v", active)
	}
	report(8, 0, cluster.TaskKilled, 0, 11)
	if active := s.ActiveJobs(); len(active) != 0 {
		t.Errorf("active = %v; want none once every task ended", active)
	}
	if err := s.ReportTask(9, cluster.TaskReport{JobID: 42}); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("report for job 42: %v; want ErrNotFound", err)
	}
}

func TestCancelJobs(t *testing.T) {
	s := openTest(t, "")
	mustSubmit(t, s, 1, 1)
	mustSubmit(t, s, 2, 2)
	ids, err := s.CancelJobs(3, []cluster.JobID{1, 99}, at(5), "Cancelled by user", nil)
	if err != nil || !reflect.DeepEqual(ids, []cluster.JobID{1}) {
		t.Fatalf("CancelJobs = %v, %v; want [1]", ids, err)
	}
	j := mustJob(t, s, 1)
	if j.State != cluster.JobCancelled || j.Reason != "Cancelled by user" || !j.EndTime.Equal(at(5)) {
		t.Errorf("job 1 = %s %q %v", j.State, j.Reason, j.EndTime)
	}
	ids, err = s.CancelJobs(4, []cluster.JobID{1}, at(6), "again", nil)
	if err != nil || len(ids) != 0 {
		t.Errorf("cancelling a cancelled job = %v, %v; want nothing changed", ids, err)
	}
	if _, err := s.CancelJobs(5, []cluster.JobID{98, 99}, at(6), "x", nil); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("cancelling only unknown jobs: %v; want ErrNotFound", err)
	}
	if active := s.ActiveJobs(); len(active) != 1 || active[0].ID != 2 {
		t.Errorf("ActiveJobs = %v; want job 2", active)
	}
}

func TestJobsPagesActiveAndFinished(t *testing.T) {
	s := openTest(t, "")
	for i := 1; i <= 300; i++ { // past 255: keys must sort numerically
		mustSubmit(t, s, uint64(i), cluster.JobID(i))
	}
	var odd []cluster.JobID
	for i := 1; i <= 300; i += 2 {
		odd = append(odd, cluster.JobID(i))
	}
	if _, err := s.CancelJobs(301, odd, at(9), "c", nil); err != nil { // odd jobs move to history
		t.Fatal(err)
	}
	all := collect(t, s, JobQuery{Finished: true, Limit: 7})
	if len(all) != 300 {
		t.Fatalf("paging through every job gave %d jobs", len(all))
	}
	for i, j := range all {
		if j.ID != cluster.JobID(i+1) {
			t.Fatalf("job %d of the listing is %d; want %d", i, j.ID, i+1)
		}
		if finished := j.ID%2 == 1; finished != (j.State == cluster.JobCancelled) || (finished && j.Script != "") {
			t.Fatalf("job %d: %s, script %q (finished jobs come without payload)", j.ID, j.State, j.Script)
		}
	}
	if active := collect(t, s, JobQuery{Limit: 50}); len(active) != 150 || active[0].ID != 2 {
		t.Errorf("active listing: %d jobs, first %d; want 150 from job 2", len(active), active[0].ID)
	}
	threes := collect(t, s, JobQuery{Finished: true, Limit: 10, Match: func(j *cluster.Job) bool { return j.ID%3 == 0 }})
	if len(threes) != 100 || threes[1].ID != 6 {
		t.Errorf("filtered = %d jobs, second %d", len(threes), threes[1].ID)
	}
	page, next, err := s.Jobs(JobQuery{After: 295, Finished: true, Limit: 5})
	if err != nil || len(page) != 5 || page[0].ID != 296 || next != 0 {
		t.Errorf("last page = %d jobs from %v, next %d, %v; want 296-300 and no next", len(page), page, next, err)
	}
	if recent := collect(t, s, JobQuery{Finished: true, EndedAfter: at(9), Limit: 7}); len(recent) != 300 {
		t.Errorf("jobs ended at or after second 9, and active ones: %d; want all 300", len(recent))
	}
	if recent := collect(t, s, JobQuery{Finished: true, EndedAfter: at(10), Limit: 7}); len(recent) != 150 || recent[0].ID != 2 {
		t.Errorf("jobs ended at or after second 10, and active ones: %d; want the 150 active", len(recent))
	}
	full := mustJob(t, s, 1)
	if full.State != cluster.JobCancelled || full.Script == "" || full.Env["A"] != "1" {
		t.Errorf("Job(1) from history = %s, script %q, env %v; want the whole job", full.State, full.Script, full.Env)
	}
}

// collect pages through q and returns every job.
func collect(t *testing.T, s *Store, q JobQuery) []*cluster.Job {
	t.Helper()
	var out []*cluster.Job
	for {
		page, next, err := s.Jobs(q)
		if err != nil {
			t.Fatal(err)
		}
		if q.Limit > 0 && len(page) > q.Limit {
			t.Fatalf("a page of %d jobs; limit %d", len(page), q.Limit)
		}
		out = append(out, page...)
		if next == 0 {
			return out
		}
		q.After = next
	}
}

// Scripts and environments live on disk: memory holds a payload only until
// the writer has committed it, and a job reads the same before and after.
func TestPayloadsLeaveMemoryOnceWritten(t *testing.T) {
	s := openTest(t, "")
	want := pendingJob(1, 1, 1)
	want.Script, want.Env = "#!/bin/sh\necho big\n", map[string]string{"A": "1", "B": "2"}
	if _, err := s.SubmitJob(1, want.Clone(), nil, nil); err != nil {
		t.Fatal(err)
	}
	before := mustJob(t, s, 1)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.pmu.Lock()
	left := len(s.unflushed)
	s.pmu.Unlock()
	if left != 0 {
		t.Errorf("%d payloads still in memory after the writer committed them", left)
	}
	if s.ActiveJobs()[0].Script != "" {
		t.Errorf("the active job in memory carries its script")
	}
	after := mustJob(t, s, 1)
	for _, j := range []*cluster.Job{before, after} {
		if j.Script != want.Script || !reflect.DeepEqual(j.Env, want.Env) {
			t.Errorf("job read back with script %q env %v; want %q %v", j.Script, j.Env, want.Script, want.Env)
		}
	}
}

func TestUpdateJob(t *testing.T) {
	s := openTest(t, "")
	mustRegister(t, s, 1, "n1", "n2")
	mustSubmit(t, s, 3, 1)
	mustSubmit(t, s, 4, 2)
	mustSubmit(t, s, 5, 3)
	name, limit := "renamed", 90*time.Minute
	if err := s.UpdateJob(6, 1, JobUpdate{Name: &name, TimeLimit: &limit}, nil, time.Time{}); err != nil {
		t.Fatalf("update a pending job: %v", err)
	}
	if j := mustJob(t, s, 1); j.Name != name || j.TimeLimit != limit {
		t.Errorf("job 1 = %q %v; want %q %v", j.Name, j.TimeLimit, name, limit)
	}
	if placed, err := s.PlaceJobs(7, []Placement{{Job: 2, Alloc: alloc([]int{0, 1}, "n1"), MasterPort: 29500, Time: at(1)}}); err != nil || len(placed) != 1 {
		t.Fatal(err)
	}
	shorter := 10 * time.Minute
	if err := s.UpdateJob(8, 2, JobUpdate{TimeLimit: &shorter}, nil, time.Time{}); err != nil {
		t.Errorf("the time limit of a running job: %v", err)
	}
	if err := s.UpdateJob(9, 2, JobUpdate{Name: &name}, nil, time.Time{}); err != nil {
		t.Errorf("rename a running job: %v", err)
	}
	if j := mustJob(t, s, 2); j.Name != name || j.TimeLimit != shorter {
		t.Errorf("running job 2 = %q %v; want %q %v", j.Name, j.TimeLimit, name, shorter)
	}
	if err := s.UpdateJob(10, 2, JobUpdate{Nice: new(int)}, nil, time.Time{}); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("the nice value of a running job: %v; want ErrInvalid", err)
	}
	if _, err := s.PreemptJobs(11, []cluster.JobID{2}, nil, at(3)); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateJob(12, 2, JobUpdate{TimeLimit: &limit}, nil, time.Time{}); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("the time limit of a job whose attempt is ending (PREEMPTED): %v; want ErrInvalid", err)
	}
	if j := mustJob(t, s, 2); j.TimeLimit != shorter {
		t.Errorf("preempted job 2's limit = %v; want %v", j.TimeLimit, shorter)
	}
	if _, err := s.CancelJobs(13, []cluster.JobID{3}, at(5), "Cancelled by user", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateJob(14, 3, JobUpdate{Name: &name}, nil, time.Time{}); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("update an ended job (history, no longer active): %v; want ErrNotFound", err)
	}
	if err := s.UpdateJob(15, 99, JobUpdate{Name: &name}, nil, time.Time{}); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("update an unknown job: %v; want ErrNotFound", err)
	}
}
