package controller

import (
	"context"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/scheduler"
)

// Preemption (requeue mode), on the leader:
//
//  1. The scheduler's plan names victims (Plan.Preemptions).
//  2. preempt proposes PreemptJobs for those still CONFIGURING or RUNNING:
//     each becomes PREEMPTED, its attempt records the job it makes room
//     for (and that job's pending attempt), and its assignments carry stop
//     with the preemption grace period (SIGTERM, time to checkpoint,
//     SIGKILL).
//  3. The victim keeps its resources until every task has ended; the task
//     report that ends the last one requeues it (cluster.Requeue): PENDING,
//     next attempt, Requeued, same ID. Its next attempt launches as new
//     tasks, since agents key tasks by job, attempt and rank.
//  4. Meanwhile, and after, every pass keeps the victim's nodes for the
//     job that asked for the room while it is pending (scheduler's
//     claims.go): no job ahead of it takes them, and the pass after the
//     last victim left places it there; the victim waits its turn like any
//     pending job, first in its priority class. A quick pass reads that
//     job too (store.QueueState).
//
// A job already PREEMPTED is never signalled again: the scheduler is told
// which jobs are on their way out (Snapshot.Preempting) and preempt skips
// them.

// preempt signals the plan's victims and returns how many it signalled.
func (s *Server) preempt(ctx context.Context, plan *scheduler.Plan, active []*cluster.Job, now time.Time) int {
	if len(plan.Preemptions) == 0 {
		return 0
	}
	byID := make(map[cluster.JobID]*cluster.Job, len(active))
	for _, j := range active {
		byID[j.ID] = j
	}
	cmd := fsm.PreemptJobs{Time: now}
	seen := map[cluster.JobID]bool{}
	for _, p := range plan.Preemptions {
		j := byID[p.Victim]
		if j == nil || seen[p.Victim] || (j.State != cluster.JobRunning && j.State != cluster.JobConfiguring) {
			continue
		}
		seen[p.Victim] = true
		cmd.IDs = append(cmd.IDs, p.Victim)
		cmd.For = append(cmd.For, p.For)
	}
	if len(cmd.IDs) == 0 {
		return 0
	}
	res, err := s.propose(ctx, cmd)
	if err != nil {
		s.log.Error("commit preemptions", "err", err)
		return 0
	}
	for i, id := range cmd.IDs {
		if containsID(res.IDs, id) {
			s.log.Info("preempted", "job", id, "for", cmd.For[i])
		}
	}
	return len(res.IDs)
}

// preempting is the set of jobs being preempted: PREEMPTED, tasks still
// ending.
func preempting(active []*cluster.Job) map[cluster.JobID]bool {
	out := map[cluster.JobID]bool{}
	for _, j := range active {
		if j.State.ComingBack() { // stopping: never a victim again
			out[j.ID] = true
		}
	}
	return out
}

func containsID(ids []cluster.JobID, id cluster.JobID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
