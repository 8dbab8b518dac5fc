package cli

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// sacct's rows are Slurm's accounting records: one per attempt of a job, as
// Slurm records a requeued job anew, picked, kept one per job and ordered
// as Slurm 22.05's sacct does (checked live against its slurmdbd's
// queries): attemptRows makes them, SacctSelect picks them, newestRows
// keeps each job's newest unless -D, sortRows orders them.

// sacctRow is one row of sacct: a job as it stands, or one of its earlier
// attempts as it ended, with the times Slurm's record of it has: submit,
// the job's for its first attempt and the end of the attempt before for a
// later one (Slurm's record of a requeued job is submitted then);
// eligible, when it could start: its submit time, or its --begin time when
// later; zero when it never could (held, or waiting on a dependency, when
// it was last seen pending). Folded is the JobID of a row that stands for
// an array's pending tasks (foldPending). Times are whole seconds, as
// Slurm's records keep them.
type sacctRow struct {
	*phalanxv1.Job
	submit, eligible time.Time
	folded           string
}

// attemptRows gives a job that was restarted or requeued one row per
// attempt, oldest first: each earlier attempt as it ended (its state,
// reason, times and nodes), then the job as it stands.
func attemptRows(jobs []*phalanxv1.Job) []*sacctRow {
	var out []*sacctRow
	for _, j := range jobs {
		wholeSeconds(j)
		submit, _ := tsTime(j.SubmitTime)
		first := true
		for _, a := range j.Attempts {
			if a.Attempt >= j.Attempt || a.State == "" {
				continue // the current attempt is the job's own row
			}
			row := proto.Clone(j).(*phalanxv1.Job)
			row.Attempt, row.State, row.Reason = a.Attempt, a.State, a.Reason
			row.StartTime, row.EndTime, row.Alloc = a.StartTime, a.EndTime, a.Alloc
			row.ExitCode, row.ExitSignal = a.ExitCode, a.ExitSignal
			out = append(out, newRow(row, submit, first))
			if end, ok := tsTime(a.EndTime); ok {
				submit = end
			}
			first = false
		}
		out = append(out, newRow(j, submit, first))
	}
	return out
}

func newRow(j *phalanxv1.Job, submit time.Time, first bool) *sacctRow {
	r := &sacctRow{Job: j, submit: submit, eligible: submit}
	_, started := tsTime(j.StartTime)
	_, ended := tsTime(j.EndTime)
	switch {
	case !started && j.State == string(cluster.JobPending) && notEligible[cluster.PendingReason(j.Reason)]:
		r.eligible = time.Time{}
	case !started && ended && j.GetSpec().GetHold():
		r.eligible = time.Time{} // ended held
	case first:
		if begin, ok := tsTime(j.GetSpec().GetBeginTime()); ok && begin.After(submit) {
			r.eligible = begin.Truncate(time.Second)
		}
	}
	return r
}

// notEligible are the pending reasons of a job that cannot start yet
// whatever the resources: Slurm records no eligible time for it.
var notEligible = map[cluster.PendingReason]bool{
	cluster.ReasonJobHeldUser: true, cluster.ReasonJobHeldAdmin: true,
	cluster.ReasonDependency: true, cluster.ReasonDependencyNever: true,
}

// wholeSeconds cuts j's times to whole seconds, as Slurm records them.
func wholeSeconds(j *phalanxv1.Job) {
	for _, ts := range []**timestamppb.Timestamp{&j.SubmitTime, &j.StartTime, &j.EndTime} {
		*ts = truncTS(*ts)
	}
	for _, a := range j.Attempts {
		a.StartTime, a.EndTime = truncTS(a.StartTime), truncTS(a.EndTime)
	}
}

func truncTS(ts *timestamppb.Timestamp) *timestamppb.Timestamp {
	if ts == nil || ts.Nanos == 0 {
		return ts
	}
	return &timestamppb.Timestamp{Seconds: ts.Seconds}
}

// SacctSelect picks sacct's rows as Slurm 22.05's slurmdbd picks its
// records, each row (an attempt of a job) by its own state and times.
// With a window (End set; Start zero: from the beginning), a row is kept
// when, with no States, it was eligible before the window's end and had
// not ended before its start (ByJob, for -j: submitted before its end
// rather than eligible); with States, when it was in one of them during
// the window: PENDING, eligible before its end and waiting after its
// start; RUNNING, started before its end and running after its start (one
// not ended, running now); an end state, reached in it, both ends
// included. An End equal to Start is a second later, as Slurm's.
type SacctSelect struct {
	States     []string
	Start, End time.Time
	ByJob      bool
}

// keeps reports whether the row is selected.
func (s SacctSelect) keeps(r *sacctRow) bool {
	st := accountedState(r.State)
	if s.End.IsZero() { // no window
		return len(s.States) == 0 || slices.Contains(s.States, st)
	}
	if s.End.Equal(s.Start) {
		s.End = s.End.Add(time.Second)
	}
	end, ended := tsTime(r.EndTime)
	if len(s.States) == 0 {
		from := r.submit
		if !s.ByJob && r.eligible.IsZero() {
			return false
		} else if !s.ByJob {
			from = r.eligible
		}
		return from.Before(s.End) && (!ended || !end.Before(s.Start))
	}
	start, started := tsTime(r.StartTime)
	return slices.ContainsFunc(s.States, func(want string) bool {
		switch want {
		case string(cluster.JobPending):
			waiting := st == want
			if started {
				waiting = s.Start.Before(start)
			} else if ended {
				waiting = s.Start.Before(end)
			}
			return !r.eligible.IsZero() && r.eligible.Before(s.End) && waiting
		case string(cluster.JobRunning):
			return started && (s.Start.Before(end) || !ended && st == want) && start.Before(s.End)
		}
		return st == want && ended && !end.Before(s.Start) && !end.After(s.End)
	})
}

// newestRows keeps, of each job's rows, the newest (its last attempt
// selected), as Slurm's sacct does without -D.
func newestRows(rows []*sacctRow) []*sacctRow {
	last := map[uint64]int{}
	for i, r := range rows {
		last[r.Id] = i
	}
	out := rows[:0:0]
	for i, r := range rows {
		if last[r.Id] == i {
			out = append(out, r)
		}
	}
	return out
}

// sortRows orders rows as Slurm's sacct does: by submit time (a later
// attempt's is the end of the one before), then the job's array (none
// first), task (an array's folded pending tasks after its others) and ID.
func sortRows(rows []*sacctRow) {
	slices.SortStableFunc(rows, func(a, b *sacctRow) int {
		ka, kb := orderOf(a), orderOf(b)
		return cmp.Or(a.submit.Compare(b.submit), cmp.Compare(ka.array, kb.array),
			cmp.Compare(ka.task, kb.task), cmp.Compare(a.Id, b.Id))
	})
}

type rowOrder struct {
	array uint64
	task  int64
}

func orderOf(r *sacctRow) rowOrder {
	a := r.ArrayTask
	switch {
	case a == nil:
		return rowOrder{task: math.MaxInt64}
	case r.folded != "":
		return rowOrder{array: a.ArrayJobId, task: math.MaxInt64}
	}
	return rowOrder{array: a.ArrayJobId, task: int64(a.TaskId)}
}

// foldPending folds the pending tasks of each array into one row, as
// Slurm's sacct shows them: the first's, whose JobID (folded) is
// ARRAYID_[LIST%THROTTLE], as squeue's.
func foldPending(rows []*sacctRow) []*sacctRow {
	first := map[uint64]*sacctRow{}
	tasks := map[uint64][]int{}
	out := rows[:0:0]
	for _, r := range rows {
		a := r.ArrayTask
		if a == nil || r.State != string(cluster.JobPending) {
			out = append(out, r)
			continue
		}
		tasks[a.ArrayJobId] = append(tasks[a.ArrayJobId], int(a.TaskId))
		if first[a.ArrayJobId] == nil {
			first[a.ArrayJobId] = r
			out = append(out, r)
		}
	}
	for base, r := range first {
		r.folded = fmt.Sprintf("%d_%s", base, cluster.FormatTaskIDs(tasks[base], int(r.ArrayTask.Throttle)))
	}
	return out
}

// tsTime is a wire time, and whether it is set.
func tsTime(ts *timestamppb.Timestamp) (time.Time, bool) {
	if ts == nil || ts.AsTime().IsZero() {
		return time.Time{}, false
	}
	return ts.AsTime(), true
}
