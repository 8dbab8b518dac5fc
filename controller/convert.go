package controller

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/scheduler"
)

// Wire ↔ domain conversion. Protobuf types stop here.

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func jobFromSpec(spec *phalanxv1.JobSpec) (*cluster.Job, error) {
	if spec == nil {
		return nil, cluster.Errorf(cluster.ErrInvalid, "a job spec is required")
	}
	j := &cluster.Job{
		Name:        spec.Name,
		User:        spec.User,
		UID:         int(spec.Uid),
		GID:         int(spec.Gid),
		Account:     spec.Account,
		Partition:   spec.Partition,
		Priority:    spec.Priority,
		TimeLimit:   time.Duration(spec.TimeLimitSeconds) * time.Second,
		Script:      spec.Script,
		Image:       spec.Image,
		Env:         spec.Env,
		WorkDir:     spec.WorkDir,
		Output:      spec.Output,
		Error:       spec.Error,
		Nodes:       int(spec.Nodes),
		GPUsPerNode: int(spec.GpusPerNode),
		GPUType:     spec.GpuType,
		CPUsPerNode: int(spec.CpusPerNode),
		MemoryMB:    spec.MemoryMb,

		Constraint:   spec.Constraint,
		NodeList:     spec.Nodelist,
		Exclude:      spec.Exclude,
		Exclusive:    spec.Exclusive,
		Switches:     int(spec.Switches),
		SwitchesWait: time.Duration(spec.SwitchesWaitSeconds) * time.Second,
		Segment:      int(spec.Segment),
		QoS:          spec.Qos,
		Nice:         int(spec.Nice),
	}
	if j.Nodes == 0 {
		j.Nodes = 1
	}
	switch {
	case j.Nodes < 0:
		return nil, cluster.Errorf(cluster.ErrInvalid, "node count %d: ask for at least 1 node (-N)", j.Nodes)
	case j.GPUsPerNode < 0:
		return nil, cluster.Errorf(cluster.ErrInvalid, "GPUs per node %d must not be negative", j.GPUsPerNode)
	case j.CPUsPerNode < 0 || j.MemoryMB < 0:
		return nil, cluster.Errorf(cluster.ErrInvalid, "CPUs and memory must not be negative")
	case j.TimeLimit < 0:
		return nil, cluster.Errorf(cluster.ErrInvalid, "time limit must not be negative")
	case j.Script == "":
		return nil, cluster.Errorf(cluster.ErrInvalid, "the job has no script: give a batch script or --wrap")
	case j.User == "":
		return nil, cluster.Errorf(cluster.ErrInvalid, "the job has no user")
	case j.WorkDir == "" || j.WorkDir[0] != '/':
		return nil, cluster.Errorf(cluster.ErrInvalid, "working directory %q must be an absolute path", j.WorkDir)
	}
	if j.Name == "" {
		j.Name = "sbatch"
	}
	if err := checkConstraints(j); err != nil {
		return nil, err
	}
	return j, nil
}

func specToProto(j *cluster.Job) *phalanxv1.JobSpec {
	return &phalanxv1.JobSpec{
		Name:             j.Name,
		User:             j.User,
		Uid:              int32(j.UID),
		Gid:              int32(j.GID),
		Account:          j.Account,
		Partition:        j.Partition,
		TimeLimitSeconds: int64(j.TimeLimit / time.Second),
		Script:           j.Script,
		Image:            j.Image,
		Env:              j.Env,
		WorkDir:          j.WorkDir,
		Output:           j.Output,
		Error:            j.Error,
		Nodes:            int32(j.Nodes),
		GpusPerNode:      int32(j.GPUsPerNode),
		GpuType:          j.GPUType,
		CpusPerNode:      int32(j.CPUsPerNode),
		MemoryMb:         j.MemoryMB,
		Priority:         j.Priority,

		Constraint:          j.Constraint,
		Nodelist:            j.NodeList,
		Exclude:             j.Exclude,
		Exclusive:           j.Exclusive,
		Switches:            int32(j.Switches),
		SwitchesWaitSeconds: int64(j.SwitchesWait / time.Second),
		Segment:             int32(j.Segment),
		Qos:                 j.QoS,
		Nice:                int32(j.Nice),
	}
}

// jobToProto converts a job; addrs gives node addresses for the allocation
// and pending the leader's last reason for a pending job.
func jobToProto(j *cluster.Job, addrs map[string]string, pending *scheduler.PendingInfo) *phalanxv1.Job {
	out := &phalanxv1.Job{
		Id:               uint64(j.ID),
		Spec:             specToProto(j),
		State:            string(j.State),
		Reason:           j.Reason,
		ExitCode:         int32(j.ExitCode),
		ExitSignal:       int32(j.ExitSignal),
		SubmitTime:       ts(j.SubmitTime),
		StartTime:        ts(j.StartTime),
		EndTime:          ts(j.EndTime),
		Attempt:          int32(j.Attempt),
		MasterPort:       int32(j.MasterPort),
		TimeLimitSeconds: int64(j.TimeLimit / time.Second),
		Requeued:         j.Requeued,
	}
	if j.State == cluster.JobPending && pending != nil {
		out.Reason = pending.Reason
		out.ExpectedStart = ts(pending.ExpectedStart)
	}
	if j.Alloc != nil {
		out.Alloc = allocToProto(*j.Alloc, addrs)
	}
	for _, a := range j.Attempts {
		out.Attempts = append(out.Attempts, &phalanxv1.Attempt{
			Attempt: int32(a.Attempt), Alloc: allocToProto(a.Alloc, addrs), StartTime: ts(a.StartTime), EndTime: ts(a.EndTime),
			State: string(a.State), Reason: a.Reason, PlacedIndex: a.PlacedIndex, ReleasedIndex: a.ReleasedIndex,
		})
	}
	for _, t := range j.Tasks {
		out.Tasks = append(out.Tasks, &phalanxv1.Task{
			Rank: int32(t.Rank), Node: t.Node, State: string(t.State),
			ExitCode: int32(t.ExitCode), ExitSignal: int32(t.ExitSignal), Message: t.Message,
			StartTime: ts(t.StartTime), EndTime: ts(t.EndTime),
		})
	}
	return out
}

func allocToProto(a cluster.Allocation, addrs map[string]string) []*phalanxv1.NodeAlloc {
	out := make([]*phalanxv1.NodeAlloc, len(a.Nodes))
	for i, n := range a.Nodes {
		gpus := make([]int32, len(n.GPUs))
		for k, g := range n.GPUs {
			gpus[k] = int32(g)
		}
		out[i] = &phalanxv1.NodeAlloc{Node: n.Node, Gpus: gpus, Cpus: int32(n.CPUs), MemoryMb: n.MemoryMB, Addr: addrs[n.Node]}
	}
	return out
}

func nodeToProto(n *cluster.Node, use cluster.NodeUsage, parts []*cluster.Partition, lastSeen time.Time) *phalanxv1.Node {
	out := &phalanxv1.Node{
		Name:          n.Name,
		Addr:          n.Addr,
		Cpus:          int32(n.CPUs),
		MemoryMb:      n.MemoryMB,
		Gpus:          int32(n.GPUs),
		GpuModel:      n.GPUModel,
		Features:      n.Features,
		Leaf:          n.Leaf,
		State:         cluster.DisplayState(n, len(use.GPUs), use.CPUs),
		Reason:        n.Reason,
		GpusUsed:      int32(len(use.GPUs)),
		CpusUsed:      int32(use.CPUs),
		MemoryUsedMb:  use.MemoryMB,
		Registered:    ts(n.Registered),
		LastHeartbeat: ts(lastSeen),
		Weight:        int32(n.Weight),
	}
	for _, p := range parts {
		if p.Contains(n.Name) {
			out.Partitions = append(out.Partitions, p.Name)
		}
	}
	return out
}

func partitionToProto(p *cluster.Partition, nodes []*cluster.Node) *phalanxv1.Partition {
	out := &phalanxv1.Partition{
		Name:               p.Name,
		Default:            p.Default,
		State:              string(p.State),
		MaxTimeSeconds:     int64(p.MaxTime / time.Second),
		DefaultTimeSeconds: int64(p.DefaultTime / time.Second),
		MaxNodes:           int32(p.MaxNodes),
		PriorityTier:       int32(p.PriorityTier),
		PreemptMode:        preemptOff,
	}
	if p.PreemptMode != "" {
		out.PreemptMode = p.PreemptMode
	}
	for _, n := range nodes {
		if p.Contains(n.Name) {
			out.Nodes = append(out.Nodes, n.Name)
		}
	}
	return out
}
