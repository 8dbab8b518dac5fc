package sim

import (
	"fmt"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/scheduler"
)

// The simulator drives jobs through the product's own lifecycle: the
// transitions of package cluster (Place, ApplyTaskReport, Preempt,
// NodeLost, and the requeues and restarts they make), fed the task reports
// agents would send, and the placement check of cluster.Holdings that the
// store applies to every plan. What the simulator adds is only when things
// happen: a task ends at its duration or time limit, a victim's tasks at
// the end of its grace period, a failed node's at once.

// place checks a placement as the store does and starts the job: the
// attempt placed (CONFIGURING), then every task RUNNING at once, so the job
// RUNNING; its end queued at its duration or its time limit, whichever
// comes first.
func (s *sim) place(p scheduler.Placement, now time.Time) (*simJob, error) {
	j, err := s.jobByID(p.Job)
	if err != nil {
		return nil, err
	}
	if j.pendSlot < 0 {
		return nil, fmt.Errorf("job %s placed while %s: %w", j.spec.ID, j.job.State, cluster.ErrConflict)
	}
	if err := s.held.Check(j.job, p.Alloc); err != nil {
		return nil, fmt.Errorf("job %s: %w", j.spec.ID, err)
	}
	if err := cluster.Place(j.job, p.Alloc, p.MasterPort, now, p.By); err != nil {
		return nil, fmt.Errorf("job %s: %w", j.spec.ID, err)
	}
	s.hold(j)
	for rank := range j.job.Tasks {
		s.report(j, rank, cluster.TaskReport{State: cluster.TaskRunning, Time: now})
	}
	if j.job.State != cluster.JobRunning {
		return nil, fmt.Errorf("job %s is %s once every task runs, want RUNNING: %w", j.spec.ID, j.job.State, cluster.ErrConflict)
	}
	if !j.started {
		j.started, j.firstStart = true, now
	}
	j.lastStart = now
	s.placedN++
	run := j.duration
	if lim := j.job.TimeLimit; lim > 0 && lim < run {
		run = lim
	}
	s.events.push(event{at: now.Add(run), kind: evEnd, job: j, attempt: j.job.Attempt})
	s.armFailures(now)
	return j, nil
}

func (s *sim) jobByID(id cluster.JobID) (*simJob, error) {
	if id < 1 || int(id) > len(s.jobs) {
		return nil, fmt.Errorf("plan names unknown job %d: %w", id, cluster.ErrConflict)
	}
	return s.jobs[id-1], nil
}

// hold takes the job's new allocation: in the holdings, on its nodes, in
// the running set.
func (s *sim) hold(j *simJob) {
	a := j.job.Alloc.Clone()
	j.held = &a
	s.held.Take(a, j.job.Exclusive)
	leaves := make(map[string]bool, 4)
	for _, na := range a.Nodes {
		n := s.nodeIdx[na.Node]
		s.onNode[n] = append(s.onNode[n], j)
		leaves[s.nodes[n].Leaf] = true
	}
	j.leaves = len(leaves)
	s.pending.remove(j)
	s.running.add(j)
}

// report applies what the agent of rank's node would report about its
// task, as the controller applies it.
func (s *sim) report(j *simJob, rank int, r cluster.TaskReport) {
	t := j.job.Tasks[rank]
	r.JobID, r.Attempt, r.Rank, r.Node = j.job.ID, j.job.Attempt, rank, t.Node
	cluster.ApplyTaskReport(j.job, r)
}

// endTasks reports every task of the attempt that has not ended as ended
// in state, then settles the job.
func (s *sim) endTasks(j *simJob, now time.Time, r cluster.TaskReport) {
	r.Time = now
	attempt := j.job.Attempt
	for rank := 0; j.job.Attempt == attempt && rank < len(j.job.Tasks); rank++ {
		if !j.job.Tasks[rank].State.Ended() {
			s.report(j, rank, r) // the last one may requeue the job
		}
	}
	s.settle(j, now)
}

// settle follows the job where its transitions took it: an attempt that
// no longer holds anything gives its allocation back; a job back in the
// queue (requeued, restarted) waits again; an ended one counts as ended.
func (s *sim) settle(j *simJob, now time.Time) {
	if j.held != nil && !j.job.Live() {
		s.release(j, now)
	}
	switch {
	case j.job.State == cluster.JobPending && j.pendSlot < 0:
		j.requeues++
		s.enqueue(j, now)
	case j.job.State.Terminal() && !j.job.State.ComingBack() && j.held == nil && !j.ended:
		j.ended = true
		s.finished++
		s.lastEnd = now
	}
}

// release gives back what the job's attempt held and counts its GPU time.
func (s *sim) release(j *simJob, now time.Time) {
	a := *j.held
	s.held.Release(a, j.job.Exclusive)
	for _, na := range a.Nodes {
		n := s.nodeIdx[na.Node]
		s.onNode[n] = without(s.onNode[n], j)
		j.gpuSeconds += float64(len(na.GPUs)) * now.Sub(j.lastStart).Seconds()
	}
	j.held = nil
	s.running.remove(j)
	delete(s.preempting, j.job.ID)
}

func without(list []*simJob, j *simJob) []*simJob {
	for i, x := range list {
		if x == j {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}

// endIfCurrent ends the attempt the event was queued for, if it still
// runs: its tasks exit 0 at its duration (COMPLETED), or the agents stop
// them at its time limit (TIMEOUT). A victim in its grace period ends the
// same way, and is requeued, as the product does.
func (s *sim) endIfCurrent(e event, now time.Time) bool {
	j := e.job
	if j.held == nil || j.job.Attempt != e.attempt {
		return false
	}
	r := cluster.TaskReport{State: cluster.TaskExited}
	if now.Sub(j.lastStart) < j.duration {
		r.State = cluster.TaskTimeout
	}
	s.endTasks(j, now, r)
	return true
}
