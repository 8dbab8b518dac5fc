package controller

import (
	"context"
	"errors"
	"time"

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

// checkDependency refuses a submit whose dependency names a job the
// cluster does not know, as Slurm does ("Job dependency problem").
func (s *Server) checkDependency(j *cluster.Job) error {
	for _, id := range j.Dependency.Jobs() {
		if _, err := s.store.JobRecord(id); errors.Is(err, cluster.ErrNotFound) {
			return cluster.Errorf(cluster.ErrInvalid, "Job dependency problem: job %d does not exist (--dependency=%s)", id, j.Dependency)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// pendingGate is one pass's verdict on the pending jobs it holds back.
type pendingGate struct {
	view    cluster.DepView
	waiting map[cluster.JobID]scheduler.PendingInfo
	kill    []cluster.JobID // never satisfied, and asked to be cancelled then
	missed  []cluster.JobID // could no longer end before their --deadline
}

// gatePending returns the jobs the scheduler may consider (every live
// job, and the pending ones not held whose dependency holds) and the
// pending jobs it holds back, with why: held (cluster/hold.go), before
// their --begin time, waiting on their dependency, or on their array's
// throttle (the lowest task IDs go first).
func (s *Server) gatePending(jobs []*cluster.Job, now time.Time) ([]*cluster.Job, *pendingGate) {
	g := &pendingGate{waiting: map[cluster.JobID]scheduler.PendingInfo{}}
	var singles map[string][]*cluster.Job // by user and name; built when needed
	g.view = cluster.DepView{
		Job: func(id cluster.JobID) (*cluster.Job, bool) {
			j, err := s.store.JobRecord(id)
			return j, err == nil
		},
		ArrayTasks: func(id cluster.JobID) []*cluster.Job {
			base, err := s.store.JobRecord(id)
			if err != nil || base.Array == nil || base.Array.JobID != id {
				return nil
			}
			tasks := make([]*cluster.Job, 0, base.Array.Count)
			for t := id; t < id+cluster.JobID(base.Array.Count); t++ {
				if j, err := s.store.JobRecord(t); err == nil && j.Array != nil && j.Array.JobID == id {
					tasks = append(tasks, j)
				}
			}
			return tasks
		},
		Singleton: func(j *cluster.Job) bool {
			if singles == nil {
				singles = map[string][]*cluster.Job{}
				for _, a := range s.store.ActiveJobs() {
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
	keep := jobs[:0:0]
	var room map[cluster.JobID]int // by array: how many more of its tasks may start; built when needed
	for _, j := range jobs {
		if cluster.MissedDeadline(j, now) {
			g.missed = append(g.missed, j.ID)
			continue
		}
		if j.State == cluster.JobPending && j.Hold != cluster.HoldNone {
			g.waiting[j.ID] = scheduler.PendingInfo{Reason: j.Hold.Reason()}
			continue
		}
		if j.State == cluster.JobPending && now.Before(j.BeginTime) {
			g.waiting[j.ID] = scheduler.PendingInfo{Reason: cluster.ReasonBeginTime, ExpectedStart: j.BeginTime}
			continue
		}
		if j.State != cluster.JobPending || (j.Dependency.IsZero() && (j.Array == nil || j.Array.Throttle == 0)) {
			keep = append(keep, j)
			continue
		}
		switch j.Dependency.Eval(j, g.view, now) {
		case cluster.DepSatisfied:
			if a := j.Array; a != nil && a.Throttle > 0 {
				if room == nil {
					room = s.arrayRoom()
				}
				if _, ok := room[a.JobID]; !ok {
					room[a.JobID] = a.Throttle
				}
				if room[a.JobID] <= 0 {
					g.waiting[j.ID] = scheduler.PendingInfo{Reason: cluster.ReasonArrayTaskLimit}
					continue
				}
				room[a.JobID]--
			}
			keep = append(keep, j)
		case cluster.DepWaiting:
			g.waiting[j.ID] = scheduler.PendingInfo{Reason: cluster.ReasonDependency}
		case cluster.DepNever:
			g.waiting[j.ID] = scheduler.PendingInfo{Reason: cluster.ReasonDependencyNever}
			if j.KillOnInvalidDep {
				g.kill = append(g.kill, j.ID)
			}
		}
	}
	return keep, g
}

// arrayRoom is, for each throttled array with tasks running, how many more
// of its tasks may start: its throttle less its live tasks. Arrays without
// a live task are not in it (all their throttle is free).
func (s *Server) arrayRoom() map[cluster.JobID]int {
	room := map[cluster.JobID]int{}
	for _, j := range s.store.ActiveJobs() {
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
		if _, err := s.propose(ctx, fsm.CancelJobs{IDs: g.kill, Time: now, Reason: cluster.ReasonDependencyNever}); err != nil {
			s.log.Error("cancel jobs whose dependency can never be satisfied", "jobs", g.kill, "err", err)
		}
	}
	if len(g.missed) > 0 {
		if _, err := s.propose(ctx, fsm.MissDeadlines{IDs: g.missed, Time: now}); err != nil {
			s.log.Error("end jobs past their deadline", "jobs", g.missed, "err", err)
		}
	}
}
