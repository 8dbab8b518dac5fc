package controller

import (
	"context"
	"errors"
	"slices"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/scheduler"
)

// The pending gate. Before each scheduling pass the controller sets aside
// the pending jobs that may not start whatever the resources, each with
// Slurm's reason: held (JobHeldUser, JobHeldAdmin), before its --begin
// time (BeginTime), waiting on its dependency (Dependency,
// DependencyNeverSatisfied), or on its array's throttle
// (JobArrayTaskLimit); and it ends those that can no longer end before
// their --deadline. The scheduler stays a function of resources: these
// rules read other jobs, finished ones included, which only the store
// holds.

// gate is the pending gate's reading of the state: jobs by ID, active or
// finished, the active ones, and the next job ID.
type gate struct {
	jobs  gateJobs
	clock Clock
}

// gateJobs is what the gate reads of the store.
type gateJobs interface {
	JobRecord(cluster.JobID) (*cluster.Job, error)
	ActiveJobs() []*cluster.Job
	NextJobID() cluster.JobID
}

// checkDependency makes a submitted dependency the controller's, as
// Slurm's does: a task named ARRAYID_TASKID becomes a condition on the
// task's own job, and one on the job itself is refused ("Job dependency
// problem"). A job purged from the history is taken (its conditions hold,
// as Slurm lifts them), but, unlike Slurm, which takes any ID, one never
// issued (at or above the next job ID) is refused: it is a typo.
func (g *gate) checkDependency(j *cluster.Job) error {
	conds := slices.Clone(j.Dependency.Conds)
	for i := range conds {
		if err := g.resolveTask(&conds[i], j.Dependency); err != nil {
			return err
		}
	}
	j.Dependency.Conds = conds
	for _, id := range j.Dependency.Jobs() {
		if _, err := g.jobs.JobRecord(id); errors.Is(err, cluster.ErrNotFound) && !g.issued(id) {
			return cluster.Errorf(cluster.ErrInvalid, "Job dependency problem: job %d does not exist (--dependency=%s)", id, j.Dependency)
		} else if err != nil && !errors.Is(err, cluster.ErrNotFound) {
			return err
		}
		if id == j.ID {
			return cluster.Errorf(cluster.ErrInvalid, "Job dependency problem: job %d cannot depend on itself", id)
		}
	}
	return nil
}

// resolveTask turns a condition on ARRAYID_TASKID into one on the task's
// own job. The array's first task has the array's ID, which stands for
// the whole array in a stored dependency: a condition on that task is
// marked as on it alone (DepCond.FirstTask).
func (g *gate) resolveTask(c *cluster.DepCond, d cluster.Dependency) error {
	if !c.OnTask {
		return nil
	}
	base, err := g.jobs.JobRecord(c.Job)
	switch {
	case errors.Is(err, cluster.ErrNotFound) && g.issued(c.Job):
		c.ResolveTask(c.Job) // purged with its array: the condition holds
		return nil
	case errors.Is(err, cluster.ErrNotFound):
		return cluster.Errorf(cluster.ErrInvalid, "Job dependency problem: job %d_%d does not exist (--dependency=%s)", c.Job, c.Task, d)
	case err != nil:
		return err
	case base.Array == nil || base.Array.JobID != base.ID:
		return cluster.Errorf(cluster.ErrInvalid, "Job dependency problem: job %d is not a job array, so %d_%d does not exist (--dependency=%s)", c.Job, c.Job, c.Task, d)
	}
	for id := base.ID; id < base.ID+cluster.JobID(base.Array.Count); id++ {
		t, err := g.jobs.JobRecord(id)
		if err != nil || t.Array == nil || t.Array.JobID != base.ID || t.Array.TaskID != c.Task {
			continue
		}
		c.ResolveTask(id) // the first task's ID is the array's: FirstTask
		return nil
	}
	return cluster.Errorf(cluster.ErrInvalid, "Job dependency problem: job %d_%d does not exist: array %d has no task %d (--dependency=%s)", c.Job, c.Task, c.Job, c.Task, d)
}

// issued reports whether job ID id was handed out: below the ID the next
// submitted job gets.
func (g *gate) issued(id cluster.JobID) bool { return id < g.jobs.NextJobID() }

// depView is what evaluating dependencies reads of the store: any job by
// ID, an array's tasks, and, built on first use, the active jobs by user
// and name for singleton.
func (g *gate) depView() cluster.DepView {
	var singles map[string][]*cluster.Job
	return cluster.DepView{
		Job: func(id cluster.JobID) (*cluster.Job, bool) {
			j, err := g.jobs.JobRecord(id)
			return j, err == nil
		},
		ArrayTasks: g.arrayTaskRecords,
		Singleton: func(j *cluster.Job) bool {
			if singles == nil {
				singles = map[string][]*cluster.Job{}
				for _, a := range g.jobs.ActiveJobs() {
					k := a.User + "\x00" + a.Name
					singles[k] = append(singles[k], a)
				}
			}
			for _, o := range singles[j.User+"\x00"+j.Name] {
				if o.ID != j.ID && (o.Live() || o.State == cluster.JobRunning || (o.State == cluster.JobPending && o.ID < j.ID)) {
					return true
				}
			}
			return false
		},
	}
}

// arrayTaskRecords returns the tasks of the job array whose ID is id,
// active or finished; nil when id is not an array's.
func (g *gate) arrayTaskRecords(id cluster.JobID) []*cluster.Job {
	base, err := g.jobs.JobRecord(id)
	if err != nil || base.Array == nil || base.Array.JobID != id {
		return nil
	}
	tasks := make([]*cluster.Job, 0, base.Array.Count)
	for t := id; t < id+cluster.JobID(base.Array.Count); t++ {
		if j, err := g.jobs.JobRecord(t); err == nil && j.Array != nil && j.Array.JobID == id {
			tasks = append(tasks, j)
		}
	}
	return tasks
}

// showDependencies writes the dependency of each pending job among jobs
// as Slurm shows it (cluster.Dependency.Show): what is left of it, each
// condition with its state, whether the job waits on it or is held; ""
// once it is satisfied. Slurm's dependency string is that display, and
// scontrol and squeue print it as it is.
func (g *gate) showDependencies(jobs []*phalanxv1.Job) {
	v, now := g.depView(), g.clock.Now()
	for _, w := range jobs {
		if w.State != string(cluster.JobPending) || w.GetSpec().GetDependency() == "" {
			continue
		}
		j, err := g.jobs.JobRecord(cluster.JobID(w.Id))
		if err != nil {
			continue
		}
		w.Spec.Dependency = j.Dependency.Show(j, v, now)
	}
}

// pendingGate is one pass's verdict on the pending jobs it holds back.
type pendingGate struct {
	view    cluster.DepView
	waiting map[cluster.JobID]scheduler.PendingInfo
	kill    []cluster.JobID // never satisfied, and asked to be cancelled then
	missed  []cluster.JobID // could no longer end before their --deadline
}

// sift returns the jobs the scheduler may consider (every live
// job, and the pending ones not held whose dependency holds) and the
// pending jobs it holds back, with why: held (cluster/hold.go), before
// their --begin time, waiting on their dependency, or on their array's
// throttle (the lowest task IDs go first).
func (g *gate) sift(jobs []*cluster.Job, now time.Time) ([]*cluster.Job, *pendingGate) {
	out := &pendingGate{view: g.depView(), waiting: map[cluster.JobID]scheduler.PendingInfo{}}
	keep := jobs[:0:0]
	var room map[cluster.JobID]int // by array: how many more of its tasks may start; built when needed
	for _, j := range jobs {
		if cluster.MissedDeadline(j, now) {
			out.missed = append(out.missed, j.ID)
			continue
		}
		if j.State == cluster.JobPending && j.Hold != cluster.HoldNone {
			out.waiting[j.ID] = scheduler.PendingInfo{Reason: j.Hold.Reason()}
			continue
		}
		if j.State == cluster.JobPending && now.Before(j.BeginTime) {
			out.waiting[j.ID] = scheduler.PendingInfo{Reason: cluster.ReasonBeginTime, ExpectedStart: j.BeginTime}
			continue
		}
		if j.State != cluster.JobPending || (j.Dependency.IsZero() && (j.Array == nil || j.Array.Throttle == 0)) {
			keep = append(keep, j)
			continue
		}
		switch j.Dependency.Eval(j, out.view, now) {
		case cluster.DepSatisfied:
			if a := j.Array; a != nil && a.Throttle > 0 {
				if room == nil {
					room = g.arrayRoom()
				}
				if _, ok := room[a.JobID]; !ok {
					room[a.JobID] = a.Throttle
				}
				if room[a.JobID] <= 0 {
					out.waiting[j.ID] = scheduler.PendingInfo{Reason: cluster.ReasonArrayTaskLimit}
					continue
				}
				room[a.JobID]--
			}
			keep = append(keep, j)
		case cluster.DepWaiting:
			out.waiting[j.ID] = scheduler.PendingInfo{Reason: cluster.ReasonDependency}
		case cluster.DepNever:
			out.waiting[j.ID] = scheduler.PendingInfo{Reason: cluster.ReasonDependencyNever}
			if j.KillOnInvalidDep {
				out.kill = append(out.kill, j.ID)
			}
		}
	}
	return keep, out
}

// arrayRoom is, for each throttled array with tasks running, how many more
// of its tasks may start: its throttle less its live tasks. Arrays without
// a live task are not in it (all their throttle is free).
func (g *gate) arrayRoom() map[cluster.JobID]int {
	room := map[cluster.JobID]int{}
	for _, j := range g.jobs.ActiveJobs() {
		if a := j.Array; a != nil && a.Throttle > 0 && j.State != cluster.JobPending {
			if _, ok := room[a.JobID]; !ok {
				room[a.JobID] = a.Throttle
			}
			room[a.JobID]--
		}
	}
	return room
}

// endHeldBack cancels the jobs whose dependency can never hold
// and that asked for it (--kill-on-invalid-dep=yes), and ends those that
// could no longer end before their --deadline.
func (s *Server) endHeldBack(ctx context.Context, g *pendingGate, now time.Time) {
	if len(g.kill) > 0 {
		if _, err := s.propose(ctx, fsm.CancelJobs{IDs: g.kill, Time: now, Reason: string(cluster.ReasonDependencyNever)}); err != nil {
			s.log.Error("cancel jobs whose dependency can never be satisfied", "jobs", g.kill, "err", err)
		}
	}
	if len(g.missed) > 0 {
		if _, err := s.propose(ctx, fsm.MissDeadlines{IDs: g.missed, Time: now}); err != nil {
			s.log.Error("end jobs past their deadline", "jobs", g.missed, "err", err)
		}
	}
}
