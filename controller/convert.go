package controller

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/scheduler"
	"github.com/phalanx-hpc/phalanx/store"
)

// Wire ↔ domain conversion. Protobuf types stop here.

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// jobFromSpec reads a submitted spec, without its environment, which
// goes to the job's payload as it came (cluster.EnvironOf) once
// checkSpecInput has passed it; maxScript bounds the script (MaxScriptSize).
// hangOff marks a job that turned hang detection off (--hang-timeout=0)
// between jobFromSpec and admit, which applies the cluster's default to
// the jobs that gave none.
const hangOff = -1

func jobFromSpec(spec *phalanxv1.JobSpec, maxScript int) (*cluster.Job, error) {
	if spec == nil {
		return nil, cluster.Errorf(cluster.ErrInvalid, "a job spec is required")
	}
	if err := checkSpecInput(spec, maxScript); err != nil {
		return nil, err
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
		WorkDir:     spec.WorkDir,
		Output:      spec.Output,
		Error:       spec.Error,
		Nodes:       int(spec.Nodes),
		GPUsPerNode: int(spec.GpusPerNode),
		GPUType:     spec.GpuType,
		CPUsPerNode: int(spec.CpusPerNode),
		MemoryMB:    spec.MemoryMb,

		TasksPerNode: int(spec.TasksPerNode),
		GPUsPerTask:  int(spec.GpusPerTask),
		CPUsPerTask:  int(spec.CpusPerTask),
		SubmitHost:   spec.SubmitHost,
		RequestForm:  requestFormFromProto(spec.RequestForm),
		ScriptPath:   spec.ScriptPath,
		ScriptArgs:   spec.ScriptArgs,
		SubmitLine:   spec.SubmitLine,
		Comment:      spec.Comment,

		Constraint:   spec.Constraint,
		NodeList:     spec.Nodelist,
		Exclude:      spec.Exclude,
		Exclusive:    spec.Exclusive,
		Switches:     int(spec.Switches),
		SwitchesWait: time.Duration(spec.SwitchesWaitSeconds) * time.Second,
		Segment:      int(spec.Segment),
		QoS:          cluster.QoS(spec.Qos),
		Nice:         int(spec.Nice),
	}
	var err error
	if j.Restart, err = restartFromSpec(spec); err != nil {
		return nil, err
	}
	j.Signal = cluster.JobSignal{Signal: int(spec.Signal), Before: time.Duration(spec.SignalSeconds) * time.Second, Batch: spec.SignalBatch}
	if err := j.Signal.Validate(); err != nil {
		return nil, err
	}
	switch h := spec.HangTimeoutSeconds; {
	case h < -1 || h > int64(cluster.MaxHangTimeout/time.Second):
		return nil, cluster.Errorf(cluster.ErrInvalid, "--hang-timeout: %d seconds: give at most %s, or 0 for none", h, cluster.FmtMinutes(cluster.MaxHangTimeout))
	case h == -1:
		j.HangTimeout = hangOff // admit turns it into 0
	default:
		j.HangTimeout = time.Duration(h) * time.Second
	}
	j.Checkpoint = cluster.CheckpointSpec{Dir: spec.CheckpointDir, Keep: int(spec.CheckpointKeep)}
	if err := j.Checkpoint.Validate(); err != nil {
		return nil, err
	}
	if j.Dependency, err = cluster.ParseDependency(spec.Dependency); err != nil {
		return nil, err
	}
	j.KillOnInvalidDep = spec.KillOnInvalidDep
	switch spec.OpenMode {
	case phalanxv1.OpenMode_OPEN_MODE_UNSPECIFIED:
	case phalanxv1.OpenMode_OPEN_MODE_APPEND:
		j.OpenMode = cluster.OpenAppend
	case phalanxv1.OpenMode_OPEN_MODE_TRUNCATE:
		j.OpenMode = cluster.OpenTruncate
	default:
		return nil, cluster.Errorf(cluster.ErrInvalid, "open mode %d: use append or truncate (a newer phx than this controller?)", spec.OpenMode)
	}
	if spec.Hold {
		j.Hold = cluster.HoldUser
	}
	if spec.BeginTime != nil {
		j.BeginTime = spec.BeginTime.AsTime()
	}
	if spec.Deadline != nil {
		j.Deadline = spec.Deadline.AsTime()
	}
	if j.Nodes == 0 { // as in Slurm, node counts in --constraint raise the default
		j.Nodes = 1
		if c, err := cluster.ParseConstraint(j.Constraint); err == nil {
			j.Nodes = max(1, c.CountedNodes())
		}
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
	if j.CPUsPerNode == 0 && !j.Exclusive { // as in Slurm, every task holds a CPU at least
		j.CPUsPerNode = max(1, j.TasksPerNode)
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
		Environment:      cluster.Environ(j.Env),
		Env:              j.Env, // for agents of the previous release, which read only the map
		WorkDir:          j.WorkDir,
		Output:           j.Output,
		Error:            j.Error,
		Nodes:            int32(j.Nodes),
		GpusPerNode:      int32(j.GPUsPerNode),
		GpuType:          j.GPUType,
		CpusPerNode:      int32(j.CPUsPerNode),
		MemoryMb:         j.MemoryMB,
		Priority:         j.Priority,
		TasksPerNode:     int32(j.TasksPerNode),
		GpusPerTask:      int32(j.GPUsPerTask),
		CpusPerTask:      int32(j.CPUsPerTask),
		SubmitHost:       j.SubmitHost,
		RequestForm:      requestFormToProto(j.RequestForm),
		ScriptPath:       j.ScriptPath,
		ScriptArgs:       j.ScriptArgs,
		SubmitLine:       j.SubmitLine,
		Comment:          j.Comment,

		Constraint:          j.Constraint,
		Nodelist:            j.NodeList,
		Exclude:             j.Exclude,
		Exclusive:           j.Exclusive,
		Switches:            int32(j.Switches),
		SwitchesWaitSeconds: int64(j.SwitchesWait / time.Second),
		Segment:             int32(j.Segment),
		Qos:                 string(j.QoS),
		Nice:                int32(j.Nice),
		NoRequeue:           j.Restart.MaxRestarts == 0,
		MaxRestarts:         proto.Int32(int32(j.Restart.MaxRestarts)),
		RestartOn:           j.Restart.On.String(),
		Signal:              int32(j.Signal.Signal),
		SignalSeconds:       int32(j.Signal.Before / time.Second),
		SignalBatch:         j.Signal.Batch,
		HangTimeoutSeconds:  int64(j.HangTimeout / time.Second),
		CheckpointDir:       j.Checkpoint.Dir,
		CheckpointKeep:      int32(j.Checkpoint.Keep),
		Dependency:          j.Dependency.String(),
		KillOnInvalidDep:    j.KillOnInvalidDep,
		Hold:                j.Hold != cluster.HoldNone,
		OpenMode:            openModeToWire(j.OpenMode),
		BeginTime:           ts(j.BeginTime),
		Deadline:            ts(j.Deadline),
	}
}

// openModeToWire is an open mode as the API carries it.
func openModeToWire(m cluster.OpenMode) phalanxv1.OpenMode {
	switch m {
	case cluster.OpenAppend:
		return phalanxv1.OpenMode_OPEN_MODE_APPEND
	case cluster.OpenTruncate:
		return phalanxv1.OpenMode_OPEN_MODE_TRUNCATE
	}
	return phalanxv1.OpenMode_OPEN_MODE_UNSPECIFIED
}

// restartFromSpec reads a submit's restart policy, with the defaults.
func restartFromSpec(spec *phalanxv1.JobSpec) (cluster.RestartPolicy, error) {
	p := cluster.RestartPolicy{MaxRestarts: cluster.DefaultMaxRestarts, On: cluster.DefaultRestartOn}
	if spec.MaxRestarts != nil {
		p.MaxRestarts = int(*spec.MaxRestarts)
	}
	if spec.RestartOn != "" {
		on, err := cluster.ParseRestartCauses(spec.RestartOn)
		if err != nil {
			return p, fmt.Errorf("--restart-on=%s: %w", spec.RestartOn, err)
		}
		p.On = on
	}
	if spec.NoRequeue {
		p.MaxRestarts = 0
	}
	return p, p.Validate()
}

// jobToProto converts a job; addrs gives node addresses for the
// allocation. The leader's pending reason and the priority score are added
// where jobs are shown (addPending, shownPriority).
func jobToProto(j *cluster.Job, addrs map[string]string) *phalanxv1.Job {
	out := &phalanxv1.Job{
		Id:               uint64(j.ID),
		Spec:             specToProto(j),
		State:            string(j.State),
		Completing:       j.Completing(),
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
	if j.Checkpointed {
		out.CheckpointStep = proto.Int64(j.CheckpointStep)
	}
	if j.State == cluster.JobPending && j.Hold != cluster.HoldNone {
		out.Reason = string(j.Hold.Reason()) // as it is now, not as the last pass saw it
	}
	if a := j.Array; a != nil {
		out.ArrayTask = &phalanxv1.ArrayTask{ArrayJobId: uint64(a.JobID), TaskId: int32(a.TaskID), Count: int32(a.Count),
			Min: int32(a.Min), Max: int32(a.Max), Step: int32(a.Step), Throttle: int32(a.Throttle)}
	}
	if j.Alloc != nil {
		out.Alloc = allocToProto(*j.Alloc, addrs)
	}
	for _, a := range j.Attempts {
		out.Attempts = append(out.Attempts, &phalanxv1.Attempt{
			Attempt: int32(a.Attempt), Alloc: allocToProto(a.Alloc, addrs), StartTime: ts(a.StartTime), EndTime: ts(a.EndTime),
			State: string(a.State), Reason: a.Reason, PlacedIndex: a.PlacedIndex, ReleasedIndex: a.ReleasedIndex,
			FaultNode: a.FaultNode, ExitCode: int32(a.ExitCode), ExitSignal: int32(a.ExitSignal), PlacedBy: a.PlacedBy.String(),
		})
		if a.Cause != cluster.RestartNone {
			out.Attempts[len(out.Attempts)-1].Cause = a.Cause.String()
		}
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

// shownPriority is the score the scheduler ranks j by (scheduler.Priority),
// as squeue's %Q and scontrol show it: a pending job's now, a started
// job's when it started (its last attempt), one that never started when
// it ended; a held job's is zero.
func shownPriority(j *cluster.Job, now time.Time, o scheduler.Options) int64 {
	if j.State == cluster.JobPending && j.Hold != cluster.HoldNone {
		return 0 // as Slurm's: a held job's priority is zero
	}
	at := now
	switch {
	case j.State == cluster.JobPending:
	case !j.StartTime.IsZero():
		at = j.StartTime
	case !j.EndTime.IsZero():
		at = j.EndTime
	}
	return scheduler.Priority(j, at, o)
}

// setPending sets a pending job's reason, expected start and the nodes
// reserved for it.
func setPending(out *phalanxv1.Job, p scheduler.PendingInfo) {
	out.Reason = p.Text()
	out.ExpectedStart = ts(p.ExpectedStart)
	out.SchedNodes = p.SchedNodes
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
		State:         use.DisplayState(n),
		Reason:        n.Reason,
		GpusUsed:      int32(len(use.GPUs)),
		CpusUsed:      int32(use.CPUs),
		MemoryUsedMb:  use.MemoryMB,
		Registered:    ts(n.Registered),
		LastHeartbeat: ts(lastSeen),
		Weight:        int32(n.Weight),
		Nics:          nicsToProto(n.NICs),
		NotResponding: n.State == cluster.NodeDown && n.Reason == store.ReasonNotResponding,
	}
	if n.Reason != "" {
		out.ReasonUser, out.ReasonTime = n.ReasonUser, ts(n.StateTime)
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
		MinNodes:           int32(p.MinNodes),
		PriorityTier:       int32(p.PriorityTier),
		PreemptMode:        string(cluster.PreemptOff),
		AllowAccounts:      p.AllowAccounts,
		DenyAccounts:       p.DenyAccounts,
		Exclusive:          p.Exclusive,
		AllowGroups:        p.AllowGroups,
	}
	if p.PreemptMode != "" {
		out.PreemptMode = string(p.PreemptMode)
	}
	for _, n := range nodes {
		if p.Contains(n.Name) {
			out.Nodes = append(out.Nodes, n.Name)
		}
	}
	return out
}

func nicsToProto(ns []cluster.NIC) []*phalanxv1.NICInfo {
	var out []*phalanxv1.NICInfo
	for _, n := range ns {
		gpus := make([]int32, len(n.GPUs))
		for i, g := range n.GPUs {
			gpus[i] = int32(g)
		}
		out = append(out, &phalanxv1.NICInfo{Device: n.Device, Port: int32(n.Port), State: n.State, PhysState: n.PhysState,
			Rate: n.Rate, LinkLayer: n.LinkLayer, Netdev: n.Netdev, PciAddr: n.PCIAddr, NumaNode: int32(n.NUMANode),
			Gpus: gpus, Affinity: n.Affinity})
	}
	return out
}

// maxNICs bounds the RDMA ports a node may register (a large GPU host has
// a dozen).
const maxNICs = 256

// nicsFromProto checks and converts the RDMA ports an agent registers.
func nicsFromProto(rs []*phalanxv1.NICInfo) ([]cluster.NIC, error) {
	if len(rs) > maxNICs {
		return nil, cluster.Errorf(cluster.ErrInvalid, "%d RDMA ports registered: at most %d", len(rs), maxNICs)
	}
	var out []cluster.NIC
	for _, r := range rs {
		if r.Device == "" || r.Port < 1 {
			return nil, cluster.Errorf(cluster.ErrInvalid, "an RDMA port needs a device name and a port number from 1 (got %q port %d)", r.Device, r.Port)
		}
		for _, f := range []string{r.Device, r.State, r.PhysState, r.Rate, r.LinkLayer, r.Netdev, r.PciAddr, r.Affinity} {
			if len(f) > 128 || strings.ContainsAny(f, "\n\r") {
				return nil, cluster.Errorf(cluster.ErrInvalid, "RDMA port %s/%d: a field is not one short line", r.Device, r.Port)
			}
		}
		var gpus []int
		for _, g := range r.Gpus {
			gpus = append(gpus, int(g))
		}
		out = append(out, cluster.NIC{Device: r.Device, Port: int(r.Port), State: r.State, PhysState: r.PhysState,
			Rate: r.Rate, LinkLayer: r.LinkLayer, Netdev: r.Netdev, PCIAddr: r.PciAddr, NUMANode: int(r.NumaNode),
			GPUs: gpus, Affinity: r.Affinity})
	}
	return out, nil
}

func eventToProto(e cluster.Event) *phalanxv1.Event {
	return &phalanxv1.Event{Seq: e.Seq, Time: timestamppb.New(e.Time), Node: e.Node, Job: uint64(e.Job), Kind: string(e.Kind), User: e.User, Message: e.Message}
}

// requestFormFromProto reads a spec's request form; nil: not recorded.
func requestFormFromProto(f *phalanxv1.RequestForm) cluster.RequestForm {
	if f == nil {
		return cluster.RequestForm{}
	}
	return cluster.RequestForm{Recorded: true, NTasks: f.Ntasks, NTasksPerNode: f.NtasksPerNode, GPUsPerNode: f.GpusPerNode,
		GPUs: f.Gpus, MemPerCPUMB: f.MemPerCpuMb, MemPerGPUMB: f.MemPerGpuMb, GPUsSplit: f.GpusSplit,
		GPUsPerTask: f.GpusPerTask}
}

func requestFormToProto(f cluster.RequestForm) *phalanxv1.RequestForm {
	if !f.Recorded {
		return nil
	}
	return &phalanxv1.RequestForm{Ntasks: f.NTasks, NtasksPerNode: f.NTasksPerNode, GpusPerNode: f.GPUsPerNode,
		Gpus: f.GPUs, MemPerCpuMb: f.MemPerCPUMB, MemPerGpuMb: f.MemPerGPUMB, GpusSplit: f.GPUsSplit,
		GpusPerTask: f.GPUsPerTask}
}
