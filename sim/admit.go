package sim

import (
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/scheduler"
)

// admit turns the specs into jobs and queues their arrivals. A job that
// could never run (scheduler.Admit, the controller's own admission: its
// partition, the partition's limits, a placement that fits), or whose
// partition is DRAIN or INACTIVE, is rejected, as the controller would
// reject it at submit; it is reported, not queued.
func (s *sim) admit(specs []JobSpec) {
	feasible := newFeasibility(s)
	s.jobs = make([]*simJob, len(specs))
	for i := range specs {
		sp := &specs[i]
		j := &simJob{spec: sp, job: s.newJob(i, sp), duration: seconds(sp.DurationS), pendSlot: -1, runSlot: -1}
		j.minLeaves = s.leafCap.minLeaves(sp.Nodes)
		s.jobs[i] = j
		if err := feasible.check(j.job); err != nil {
			j.rejected = err.Error()
			continue
		}
		s.arrivalsLeft++
		s.events.push(event{at: j.job.SubmitTime, kind: evArrive, job: j})
	}
}

// newJob is the cluster.Job a spec submits. CPUs and memory are the GPUs'
// share of the node's, so that jobs of whole nodes take whole nodes.
func (s *sim) newJob(i int, sp *JobSpec) *cluster.Job {
	j := &cluster.Job{
		ID: cluster.JobID(i + 1), Name: sp.ID, User: "sim", Partition: partitionOf(*sp),
		Priority: sp.Priority, QoS: cluster.QoS(sp.QoS),
		SubmitTime: Epoch.Add(seconds(sp.SubmitOffset)), TimeLimit: seconds(sp.TimeLimitS),
		Nodes: sp.Nodes, GPUsPerNode: sp.GPUsPerNode,
		Switches: sp.Switches, SwitchesWait: seconds(sp.SwitchesWaitS), Segment: sp.Segment,
		State: cluster.JobPending, Reason: string(cluster.ReasonNone),
		Restart: cluster.RestartPolicy{MaxRestarts: s.cfg.MaxRestarts, On: cluster.DefaultRestartOn},
	}
	n := s.nodes[0]
	j.CPUsPerNode, j.MemoryMB = 1, 0
	if n.GPUs > 0 && sp.GPUsPerNode > 0 {
		j.CPUsPerNode = max(1, n.CPUs*min(sp.GPUsPerNode, n.GPUs)/n.GPUs)
		j.MemoryMB = n.MemoryMB * int64(min(sp.GPUsPerNode, n.GPUs)) / int64(n.GPUs)
	}
	return j
}

// feasibility memoizes scheduler.Feasible by request shape: it builds its
// view of the cluster on every call, and workloads repeat shapes.
type feasibility struct {
	snap *scheduler.Snapshot
	memo map[shapeKey]error
}

type shapeKey struct {
	partition              string
	nodes, gpus, cpus, seg int
	memoryMB               int64
}

func newFeasibility(s *sim) *feasibility {
	return &feasibility{snap: &scheduler.Snapshot{Nodes: s.nodes, Partitions: s.cfg.Partitions, Topology: s.cfg.Tree},
		memo: map[shapeKey]error{}}
}

// check admits j as the controller's submit does, remembering Feasible's
// answer by request shape: scheduler.Admit, then the partition's state (a
// DRAIN or INACTIVE partition takes no new job, Partition.TakesJobs).
func (f *feasibility) check(j *cluster.Job) error {
	err := scheduler.Admit(f.snap, j, func(snap *scheduler.Snapshot, j *cluster.Job) error {
		k := shapeKey{j.Partition, j.Nodes, j.GPUsPerNode, j.CPUsPerNode, j.Segment, j.MemoryMB}
		err, ok := f.memo[k]
		if !ok {
			err = scheduler.Feasible(snap, j)
			f.memo[k] = err
		}
		return err
	})
	if err != nil {
		return err
	}
	for _, p := range f.snap.Partitions {
		if p.Name == j.Partition {
			return p.TakesJobs()
		}
	}
	return nil
}
