// Package codec converts Phalanx's domain model (package cluster) to and
// from its persisted format (api/phalanx/state/v1): the records the store
// writes to bbolt and the commands the Raft log carries. It is the one place
// that knows both; the store and the controller's FSM call it, and nothing
// else sees the generated types.
//
// Times are Unix nanoseconds, zero for the zero time; decoded times are UTC.
// States are protobuf enums: a value this binary does not know (written by a
// newer version) is an error, never a silent zero.
package codec

import (
	"errors"
	"fmt"
	"time"

	statev1 "github.com/phalanx-hpc/phalanx/api/phalanx/state/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// ErrUnknownValue is returned for an enum value this binary does not know.
var ErrUnknownValue = errors.New("value unknown to this version: upgrade phalanx-controller")

// Time encodes t as Unix nanoseconds; the zero time is 0.
func Time(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromTime decodes Unix nanoseconds; 0 is the zero time.
func FromTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// table is a two-way table between a domain enum whose zero value means
// none and a proto enum: what it lacks encodes as unspecified (zero), and
// what this version does not know, written by a newer one, decodes as
// none.
type table[D, P comparable] struct {
	to   map[D]P
	from map[P]D
}

func newTable[D, P comparable](pairs map[D]P) table[D, P] {
	t := table[D, P]{to: pairs, from: make(map[P]D, len(pairs))}
	for d, p := range pairs {
		t.from[p] = d
	}
	return t
}

func (t table[D, P]) encode(d D) P { return t.to[d] }
func (t table[D, P]) decode(p P) D { return t.from[p] }

// enum is a two-way table between a domain string enum and a proto enum.
type enum[D ~string, P ~int32] struct {
	name string
	to   map[D]P
	from map[P]D
}

func newEnum[D ~string, P ~int32](name string, pairs map[D]P) enum[D, P] {
	e := enum[D, P]{name: name, to: pairs, from: make(map[P]D, len(pairs))}
	for d, p := range pairs {
		e.from[p] = d
	}
	return e
}

// encode maps d; the empty value is the unspecified (zero) enum value.
func (e enum[D, P]) encode(d D) (P, error) {
	if d == "" {
		return 0, nil
	}
	p, ok := e.to[d]
	if !ok {
		return 0, fmt.Errorf("%s %q has no persisted form", e.name, d)
	}
	return p, nil
}

func (e enum[D, P]) decode(p P) (D, error) {
	if p == 0 {
		return "", nil
	}
	d, ok := e.from[p]
	if !ok {
		return "", fmt.Errorf("%s %d: %w", e.name, p, ErrUnknownValue)
	}
	return d, nil
}

var (
	jobStates = newEnum("job state", map[cluster.JobState]statev1.JobState{
		cluster.JobPending:     statev1.JobState_JOB_STATE_PENDING,
		cluster.JobConfiguring: statev1.JobState_JOB_STATE_CONFIGURING,
		cluster.JobRunning:     statev1.JobState_JOB_STATE_RUNNING,
		cluster.JobCompleting:  statev1.JobState_JOB_STATE_COMPLETING,
		cluster.JobCompleted:   statev1.JobState_JOB_STATE_COMPLETED,
		cluster.JobFailed:      statev1.JobState_JOB_STATE_FAILED,
		cluster.JobCancelled:   statev1.JobState_JOB_STATE_CANCELLED,
		cluster.JobTimeout:     statev1.JobState_JOB_STATE_TIMEOUT,
		cluster.JobNodeFail:    statev1.JobState_JOB_STATE_NODE_FAIL,
		cluster.JobPreempted:   statev1.JobState_JOB_STATE_PREEMPTED,
		cluster.JobRequeued:    statev1.JobState_JOB_STATE_REQUEUED,
		cluster.JobDeadline:    statev1.JobState_JOB_STATE_DEADLINE,
	})
	taskStates = newEnum("task state", map[cluster.TaskState]statev1.TaskState{
		cluster.TaskAssigned: statev1.TaskState_TASK_STATE_ASSIGNED,
		cluster.TaskStarting: statev1.TaskState_TASK_STATE_STARTING,
		cluster.TaskRunning:  statev1.TaskState_TASK_STATE_RUNNING,
		cluster.TaskExited:   statev1.TaskState_TASK_STATE_EXITED,
		cluster.TaskKilled:   statev1.TaskState_TASK_STATE_KILLED,
		cluster.TaskTimeout:  statev1.TaskState_TASK_STATE_TIMEOUT,
		cluster.TaskFailed:   statev1.TaskState_TASK_STATE_FAILED,
		cluster.TaskLost:     statev1.TaskState_TASK_STATE_LOST,
		cluster.TaskHung:     statev1.TaskState_TASK_STATE_HUNG,
	})
	nodeStates = newEnum("node state", map[cluster.NodeState]statev1.NodeState{
		cluster.NodeUp:    statev1.NodeState_NODE_STATE_UP,
		cluster.NodeDown:  statev1.NodeState_NODE_STATE_DOWN,
		cluster.NodeDrain: statev1.NodeState_NODE_STATE_DRAIN,
		cluster.NodeInval: statev1.NodeState_NODE_STATE_INVAL,
	})
	partitionStates = newEnum("partition state", map[cluster.PartitionState]statev1.PartitionState{
		cluster.PartitionUp:       statev1.PartitionState_PARTITION_STATE_UP,
		cluster.PartitionDown:     statev1.PartitionState_PARTITION_STATE_DOWN,
		cluster.PartitionDrain:    statev1.PartitionState_PARTITION_STATE_DRAIN,
		cluster.PartitionInactive: statev1.PartitionState_PARTITION_STATE_INACTIVE,
	})
)

// JobState encodes a job state.
func JobState(s cluster.JobState) (statev1.JobState, error) { return jobStates.encode(s) }

// FromJobState decodes a job state.
func FromJobState(s statev1.JobState) (cluster.JobState, error) { return jobStates.decode(s) }

// TaskState encodes a task state.
func TaskState(s cluster.TaskState) (statev1.TaskState, error) { return taskStates.encode(s) }

// FromTaskState decodes a task state.
func FromTaskState(s statev1.TaskState) (cluster.TaskState, error) { return taskStates.decode(s) }

// NodeState encodes a node state.
func NodeState(s cluster.NodeState) (statev1.NodeState, error) { return nodeStates.encode(s) }

// FromNodeState decodes a node state.
func FromNodeState(s statev1.NodeState) (cluster.NodeState, error) { return nodeStates.decode(s) }

// Allocation encodes an allocation.
func Allocation(a cluster.Allocation) *statev1.Allocation {
	out := &statev1.Allocation{Nodes: make([]*statev1.NodeAlloc, len(a.Nodes))}
	for i, n := range a.Nodes {
		gpus := make([]int32, len(n.GPUs))
		for k, g := range n.GPUs {
			gpus[k] = int32(g)
		}
		out.Nodes[i] = &statev1.NodeAlloc{Node: n.Node, Gpus: gpus, Cpus: int32(n.CPUs), MemoryMb: n.MemoryMB}
	}
	return out
}

// FromAllocation decodes an allocation.
func FromAllocation(a *statev1.Allocation) cluster.Allocation {
	out := cluster.Allocation{Nodes: make([]cluster.NodeAlloc, len(a.GetNodes()))}
	for i, n := range a.GetNodes() {
		gpus := make([]int, len(n.GetGpus()))
		for k, g := range n.GetGpus() {
			gpus[k] = int(g)
		}
		out.Nodes[i] = cluster.NodeAlloc{Node: n.GetNode(), GPUs: gpus, CPUs: int(n.GetCpus()), MemoryMB: n.GetMemoryMb()}
	}
	return out
}
