package sim

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/scheduler"
)

// preempt stops a victim as the controller does (cluster.Preempt:
// PREEMPTED, its tasks told to stop with the grace period, the attempt
// naming the preemptor's pending attempt): its tasks keep running through
// the grace period, then end, and the job is requeued. A victim already on
// its way out is left alone, so a plan that names it again on every pass
// of the grace period counts once.
func (s *sim) preempt(p scheduler.Preemption, now time.Time) error {
	v, err := s.jobByID(p.Victim)
	if err != nil {
		return err
	}
	if v.job.State.ComingBack() {
		return nil
	}
	f, err := s.jobByID(p.For)
	if err != nil {
		return err
	}
	if !cluster.Preempt(v.job, now, cluster.JobAttempt{Job: p.For, Attempt: f.job.Attempt}) {
		return fmt.Errorf("job %s preempted while %s: %w", v.spec.ID, v.job.State, cluster.ErrConflict)
	}
	s.preempting[v.job.ID] = true
	s.preemptions++
	s.events.push(event{at: now.Add(s.cfg.PreemptGrace), kind: evRequeue, job: v, attempt: v.job.Attempt})
	return nil
}

// requeueIfCurrent ends a victim's tasks at the end of its grace period
// (killed, as SIGKILL leaves them), which requeues it, unless they ended
// meanwhile.
func (s *sim) requeueIfCurrent(e event, now time.Time) bool {
	j := e.job
	if j.held == nil || j.job.Attempt != e.attempt || j.job.State != cluster.JobPreempted {
		return false
	}
	s.endTasks(j, now, cluster.TaskReport{State: cluster.TaskKilled, ExitSignal: sigKill})
	return true
}

// sigKill is SIGKILL's number: what ends a task still there after its
// grace period.
const sigKill = 9

// armFailures starts the node failure process if it is enabled and idle.
func (s *sim) armFailures(now time.Time) {
	if s.cfg.FailRate <= 0 || s.failArmed {
		return
	}
	perSecond := s.cfg.FailRate * float64(len(s.nodes)) / 3600
	gap := time.Duration(s.failRNG.ExpFloat64() / perSecond * float64(time.Second))
	s.events.push(event{at: now.Add(max(gap, time.Nanosecond)), kind: evFail})
	s.failArmed = true
}

// fail takes a random node DOWN for the repair time. Its agent is gone:
// the jobs on it lose their tasks there as the controller declares them
// lost (cluster.NodeLost, fenced: the node's fault), their other tasks are
// stopped, and each job is restarted or ends NODE_FAIL as its restart
// policy says. A draw that lands on a node already down is a no-op
// (thinning). The process goes on while jobs run or will arrive; place
// restarts it.
func (s *sim) fail(now time.Time) bool {
	s.failArmed = false
	n := s.failRNG.IntN(len(s.nodes))
	if s.running.len() > 0 || s.arrivalsLeft > 0 {
		s.armFailures(now)
	}
	node := s.nodes[n]
	if node.State != cluster.NodeUp {
		return false
	}
	node.State, node.Reason, node.StateTime = cluster.NodeDown, reasonFailure, now
	s.down++
	s.nodeFailures++
	for _, j := range append([]*simJob(nil), s.onNode[n]...) {
		cluster.NodeLost(j.job, node.Name, now, reasonFailure, true)
		s.endTasks(j, now, cluster.TaskReport{State: cluster.TaskKilled, ExitSignal: sigKill, Message: "its job lost node " + node.Name})
	}
	s.events.push(event{at: now.Add(s.cfg.Repair), kind: evRepair, node: n})
	return true
}

// reasonFailure is a failed node's reason, and its jobs'.
const reasonFailure = "simulated failure"

func (s *sim) repair(n int, now time.Time) {
	node := s.nodes[n]
	node.State, node.Reason, node.StateTime = cluster.NodeUp, "", now
	s.down--
}

// markBackfilled flags the placed jobs that started while a job of the same
// partition ahead of them in the queue (QoS, requeued, scheduler.Priority
// score at this pass), submitted before them, was still pending. For each
// placed job it needs the best rank among earlier-submitted pending jobs:
// pending jobs are bucketed by where their submit time falls among the
// placed jobs', then a running maximum is taken.
func (s *sim) markBackfilled(placed []*simJob, now time.Time) {
	if len(placed) == 0 || s.pending.len() == 0 {
		return
	}
	byPart := map[string][]*simJob{}
	for _, j := range placed {
		byPart[j.job.Partition] = append(byPart[j.job.Partition], j)
	}
	best := map[string][]rank{}
	for part, list := range byPart {
		sort.Slice(list, func(a, b int) bool { return list[a].job.SubmitTime.Before(list[b].job.SubmitTime) })
		best[part] = make([]rank, len(list))
		for i := range best[part] {
			best[part][i] = lowestRank
		}
	}
	for _, p := range s.pending.items {
		list := byPart[p.job.Partition]
		i := sort.Search(len(list), func(k int) bool { return list[k].job.SubmitTime.After(p.job.SubmitTime) })
		if i < len(list) {
			best[p.job.Partition][i] = higher(best[p.job.Partition][i], s.rankOf(p.job, now))
		}
	}
	for part, list := range byPart {
		run := lowestRank
		for i, j := range list {
			run = higher(run, best[part][i])
			if !run.less(s.rankOf(j.job, now)) {
				j.backfilled = true
			}
		}
	}
}

// rank is a job's place in the queue within its partition, as the
// scheduler orders it: QoS level, then requeued first, then the Priority
// score (which also counts QoS, admin priority, age, size and nice).
type rank struct {
	qos      int
	requeued bool
	score    int64
}

var lowestRank = rank{qos: -1, score: math.MinInt64}

func (s *sim) rankOf(j *cluster.Job, now time.Time) rank {
	return rank{qos: j.QoS.Level(), requeued: j.Requeued, score: scheduler.Priority(j, now, s.cfg.Options)}
}

func (r rank) less(o rank) bool {
	if r.qos != o.qos {
		return r.qos < o.qos
	}
	if r.requeued != o.requeued {
		return o.requeued
	}
	return r.score < o.score
}

func higher(a, b rank) rank {
	if a.less(b) {
		return b
	}
	return a
}
