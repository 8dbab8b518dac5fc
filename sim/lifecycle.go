package sim

import (
	"fmt"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/scheduler"
)

// place checks a placement against the simulator's own books and starts
// the job: RUNNING, its allocation held, one RUNNING task per node, its end
// queued at its duration or its time limit, whichever comes first.
func (s *sim) place(p scheduler.Placement, now time.Time) (*simJob, error) {
	j, err := s.jobByID(p.Job)
	if err != nil {
		return nil, err
	}
	if j.job.State != cluster.JobPending || j.pendSlot < 0 {
		return nil, fmt.Errorf("job %s placed while %s: %w", j.spec.ID, j.job.State, cluster.ErrConflict)
	}
	if err := s.checkAlloc(j, p.Alloc); err != nil {
		return nil, err
	}
	alloc := p.Alloc.Clone()
	j.job.Alloc = &alloc
	j.job.State, j.job.Reason, j.job.StartTime = cluster.JobRunning, cluster.ReasonNone, now
	j.job.Tasks = make([]cluster.Task, len(alloc.Nodes))
	leaves := make(map[string]bool, 4)
	for rank, a := range alloc.Nodes {
		n := s.nodeIdx[a.Node]
		for _, g := range a.GPUs {
			s.used[n][g] = true
		}
		s.onNode[n] = append(s.onNode[n], j)
		leaves[s.nodes[n].Leaf] = true
		j.job.Tasks[rank] = cluster.Task{Rank: rank, Node: a.Node, State: cluster.TaskRunning, StartTime: now}
	}
	j.leaves = len(leaves)
	if !j.started {
		j.started, j.firstStart = true, now
	}
	j.lastStart = now
	s.pending.remove(j)
	s.running.add(j)
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

// checkAlloc refuses a gang of the wrong size, a node used twice, a node
// that is not UP, a GPU that does not exist or is already in use, and a
// wrong GPU count.
func (s *sim) checkAlloc(j *simJob, a cluster.Allocation) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("job %s: "+format+": %w", append(append([]any{j.spec.ID}, args...), cluster.ErrConflict)...)
	}
	if len(a.Nodes) != j.job.Nodes {
		return bad("placed on %d nodes, asked for %d", len(a.Nodes), j.job.Nodes)
	}
	seen := make(map[string]bool, len(a.Nodes))
	for _, na := range a.Nodes {
		n, ok := s.nodeIdx[na.Node]
		switch {
		case !ok:
			return bad("placed on unknown node %q", na.Node)
		case seen[na.Node]:
			return bad("node %s given twice", na.Node)
		case s.nodes[n].State != cluster.NodeUp:
			return bad("placed on %s node %s", s.nodes[n].State, na.Node)
		case len(na.GPUs) != j.job.GPUsPerNode:
			return bad("%d GPUs on %s, asked for %d", len(na.GPUs), na.Node, j.job.GPUsPerNode)
		}
		seen[na.Node] = true
		for k, g := range na.GPUs {
			if g < 0 || g >= len(s.used[n]) || s.used[n][g] || contains(na.GPUs[:k], g) {
				return bad("GPU %d of %s is not free", g, na.Node)
			}
		}
	}
	return nil
}

// release frees what the job's attempt holds and counts its GPU time.
func (s *sim) release(j *simJob, now time.Time) {
	for _, a := range j.job.Alloc.Nodes {
		n := s.nodeIdx[a.Node]
		for _, g := range a.GPUs {
			s.used[n][g] = false
		}
		s.onNode[n] = without(s.onNode[n], j)
		j.gpuSeconds += float64(len(a.GPUs)) * now.Sub(j.job.StartTime).Seconds()
	}
	s.running.remove(j)
	j.signalled = false
	delete(s.preempting, j.job.ID)
}

func contains(list []int, x int) bool {
	for _, y := range list {
		if y == x {
			return true
		}
	}
	return false
}

func without(list []*simJob, j *simJob) []*simJob {
	for i, x := range list {
		if x == j {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}

// endIfCurrent ends the attempt the event was queued for: COMPLETED at its
// duration, TIMEOUT at its time limit.
func (s *sim) endIfCurrent(e event, now time.Time) bool {
	j := e.job
	if j.job.State != cluster.JobRunning || j.job.Attempt != e.attempt {
		return false
	}
	state, task := cluster.JobCompleted, cluster.TaskExited
	if now.Sub(j.job.StartTime) < j.duration {
		state, task = cluster.JobTimeout, cluster.TaskTimeout
	}
	s.end(j, now, state, task)
	return true
}

// end releases the job's attempt and ends the job in state, its tasks in
// task.
func (s *sim) end(j *simJob, now time.Time, state cluster.JobState, task cluster.TaskState) {
	s.release(j, now)
	j.job.State, j.job.EndTime = state, now
	for i := range j.job.Tasks {
		j.job.Tasks[i].State, j.job.Tasks[i].EndTime = task, now
	}
	s.finished++
	s.lastEnd = now
}

// requeue ends the current attempt early and puts the job back in the
// queue, first in its class (Requeued). Without checkpoints it will run its
// whole duration again.
func (s *sim) requeue(j *simJob, now time.Time, reason string) {
	s.release(j, now)
	j.job.State, j.job.Reason, j.job.Requeued = cluster.JobPending, reason, true
	j.job.Attempt++
	j.job.Alloc, j.job.Tasks, j.job.StartTime = nil, nil, time.Time{}
	j.requeues++
	s.enqueue(j, now)
}
