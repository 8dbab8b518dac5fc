package codec

import (
	"encoding/json"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Version 1 of the persisted format (the first release) stored JSON of the
// in-memory structs of that release: store records and the payloads of
// Raft commands alike. The types below are frozen copies of those structs,
// so the JSON field names stay theirs whatever the domain types become;
// FromV1Job, FromV1Node and FromV1Partition decode them for the store's
// migration and for replaying old log entries.

type v1Job struct {
	ID           uint64
	Name         string
	User         string
	UID, GID     int
	Account      string
	Partition    string
	Priority     int64
	SubmitTime   time.Time
	TimeLimit    time.Duration
	Script       string
	Image        string
	Env          map[string]string
	WorkDir      string
	Output       string
	Error        string
	Nodes        int
	GPUsPerNode  int
	GPUType      string
	CPUsPerNode  int
	MemoryMB     int64
	Constraint   string
	NodeList     []string
	Exclude      []string
	Exclusive    bool
	Switches     int
	SwitchesWait time.Duration
	Segment      int
	QoS          string
	Nice         int
	Requeued     bool
	State        string
	Reason       string
	ExitCode     int
	ExitSignal   int
	StartTime    time.Time
	EndTime      time.Time
	Attempt      int
	Alloc        *v1Allocation
	MasterPort   int
	Tasks        []v1Task
}

type v1Task struct {
	Rank       int
	Node       string
	State      string
	ExitCode   int
	ExitSignal int
	Message    string
	StartTime  time.Time
	EndTime    time.Time
}

type v1Allocation struct {
	Nodes []struct {
		Node     string
		GPUs     []int
		CPUs     int
		MemoryMB int64
	}
}

type v1Node struct {
	Name       string
	Addr       string
	CPUs       int
	MemoryMB   int64
	GPUs       int
	GPUModel   string
	Features   []string
	Weight     int
	Leaf       string
	State      string
	Reason     string
	Registered time.Time
	StateTime  time.Time
}

type v1Partition struct {
	Name         string
	Nodes        []string
	AllNodes     bool
	Default      bool
	State        string
	MaxTime      time.Duration
	DefaultTime  time.Duration
	MaxNodes     int
	PriorityTier int
	PreemptMode  string
}

// FromV1Job decodes a job as version 1 stored it. Its placement, if any,
// becomes its one attempt record (version 1 kept none; indexes unknown: 0).
func FromV1Job(data []byte) (*cluster.Job, error) {
	var o v1Job
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, err
	}
	return o.domain(), nil
}

// FromV1Node decodes a node as version 1 stored it.
func FromV1Node(data []byte) (*cluster.Node, error) {
	var o v1Node
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, err
	}
	return o.domain(), nil
}

// FromV1Partition decodes a partition as version 1 stored it.
func FromV1Partition(data []byte) (*cluster.Partition, error) {
	var o v1Partition
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, err
	}
	return o.domain(), nil
}

func (o *v1Job) domain() *cluster.Job {
	j := &cluster.Job{
		ID: cluster.JobID(o.ID), Name: o.Name, User: o.User, UID: o.UID, GID: o.GID, Account: o.Account,
		Partition: o.Partition, Priority: o.Priority, SubmitTime: o.SubmitTime.UTC(), TimeLimit: o.TimeLimit,
		Script: o.Script, Image: o.Image, Env: o.Env, WorkDir: o.WorkDir, Output: o.Output, Error: o.Error,
		Nodes: o.Nodes, GPUsPerNode: o.GPUsPerNode, GPUType: o.GPUType, CPUsPerNode: o.CPUsPerNode, MemoryMB: o.MemoryMB,
		Constraint: o.Constraint, NodeList: o.NodeList, Exclude: o.Exclude, Exclusive: o.Exclusive,
		Switches: o.Switches, SwitchesWait: o.SwitchesWait, Segment: o.Segment, QoS: cluster.QoS(o.QoS), Nice: o.Nice,
		Requeued: o.Requeued, State: cluster.JobState(o.State), Reason: o.Reason, ExitCode: o.ExitCode,
		ExitSignal: o.ExitSignal, StartTime: utc(o.StartTime), EndTime: utc(o.EndTime), Attempt: o.Attempt,
		MasterPort: o.MasterPort,
	}
	if o.Alloc != nil {
		a := cluster.Allocation{}
		for _, n := range o.Alloc.Nodes {
			a.Nodes = append(a.Nodes, cluster.NodeAlloc{Node: n.Node, GPUs: n.GPUs, CPUs: n.CPUs, MemoryMB: n.MemoryMB})
		}
		j.Alloc = &a
		rec := cluster.Attempt{Attempt: j.Attempt, Alloc: a.Clone(), StartTime: j.StartTime}
		if !j.Live() {
			rec.EndTime, rec.State, rec.Reason = j.EndTime, j.State, j.Reason
		}
		j.Attempts = []cluster.Attempt{rec}
	}
	for _, t := range o.Tasks {
		j.Tasks = append(j.Tasks, cluster.Task{
			Rank: t.Rank, Node: t.Node, State: cluster.TaskState(t.State), ExitCode: t.ExitCode, ExitSignal: t.ExitSignal,
			Message: t.Message, StartTime: utc(t.StartTime), EndTime: utc(t.EndTime),
		})
	}
	return j
}

func (o *v1Node) domain() *cluster.Node {
	return &cluster.Node{
		Name: o.Name, Addr: o.Addr, CPUs: o.CPUs, MemoryMB: o.MemoryMB, GPUs: o.GPUs, GPUModel: o.GPUModel,
		Features: o.Features, Weight: o.Weight, Leaf: o.Leaf, State: cluster.NodeState(o.State), Reason: o.Reason,
		Registered: utc(o.Registered), StateTime: utc(o.StateTime),
	}
}

func (o *v1Partition) domain() *cluster.Partition {
	return &cluster.Partition{
		Name: o.Name, Nodes: o.Nodes, AllNodes: o.AllNodes, Default: o.Default, State: cluster.PartitionState(o.State),
		MaxTime: o.MaxTime, DefaultTime: o.DefaultTime, MaxNodes: o.MaxNodes, PriorityTier: o.PriorityTier,
		PreemptMode: cluster.PreemptMode(o.PreemptMode),
	}
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}
