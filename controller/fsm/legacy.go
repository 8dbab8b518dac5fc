package fsm

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store"
	"github.com/phalanx-hpc/phalanx/store/codec"
)

// The first release framed a command as its type byte (1 to 9, the numbers
// that are now the Command oneof's field numbers) followed by JSON of a Go
// struct of that release. The structs below are frozen copies of those
// payloads; jobs, nodes and partitions inside them decode as the first
// release stored them (codec.FromV1Job and friends).

type v1Alloc struct {
	Nodes []struct {
		Node     string
		GPUs     []int
		CPUs     int
		MemoryMB int64
	}
}

type v1Command struct {
	// SubmitJob, RegisterNode, SetPartitions
	Job        json.RawMessage
	Node       json.RawMessage
	Partitions []json.RawMessage
	// PlaceJobs
	Placements []struct {
		Job        uint64
		Alloc      v1Alloc
		MasterPort int
		Time       time.Time
	}
	// ReportTask
	Report struct {
		JobID      uint64
		Attempt    int
		Rank       int
		Node       string
		State      string
		ExitCode   int
		ExitSignal int
		Message    string
		Time       time.Time
	}
	// CancelJobs, PreemptJobs, SetNodeState, SetNodesDown
	IDs    []uint64
	For    []uint64
	Name   string
	Names  []string
	State  string
	Reason string
	Time   time.Time
}

func decodeLegacy(kind byte, body []byte) (Command, error) {
	var c v1Command
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, fmt.Errorf("first-release command %d: %w", kind, err)
	}
	t := utc(c.Time)
	switch kind {
	case 1:
		j, err := codec.FromV1Job(c.Job)
		return SubmitJob{Job: j}, err
	case 2:
		out := PlaceJobs{}
		for _, p := range c.Placements {
			var a cluster.Allocation
			for _, n := range p.Alloc.Nodes {
				a.Nodes = append(a.Nodes, cluster.NodeAlloc{Node: n.Node, GPUs: n.GPUs, CPUs: n.CPUs, MemoryMB: n.MemoryMB})
			}
			out.Placements = append(out.Placements, store.Placement{Job: cluster.JobID(p.Job), Alloc: a, MasterPort: p.MasterPort, Time: utc(p.Time)})
		}
		return out, nil
	case 3:
		r := c.Report
		return ReportTask{Report: cluster.TaskReport{
			JobID: cluster.JobID(r.JobID), Attempt: r.Attempt, Rank: r.Rank, Node: r.Node, State: cluster.TaskState(r.State),
			ExitCode: r.ExitCode, ExitSignal: r.ExitSignal, Message: r.Message, Time: utc(r.Time),
		}}, nil
	case 4:
		return CancelJobs{IDs: legacyIDs(c.IDs), Time: t, Reason: c.Reason}, nil
	case 5:
		n, err := codec.FromV1Node(c.Node)
		return RegisterNode{Node: n}, err
	case 6:
		return SetNodeState{Name: c.Name, State: cluster.NodeState(c.State), Reason: c.Reason, Time: t}, nil
	case 7:
		out := SetPartitions{}
		for _, raw := range c.Partitions {
			p, err := codec.FromV1Partition(raw)
			if err != nil {
				return nil, err
			}
			out.Partitions = append(out.Partitions, p)
		}
		return out, nil
	case 8:
		return PreemptJobs{IDs: legacyIDs(c.IDs), For: legacyIDs(c.For), Time: t}, nil
	case 9:
		return SetNodesDown{Names: c.Names, Reason: c.Reason, Time: t}, nil
	}
	return nil, fmt.Errorf("first-release command type %d: %w", kind, ErrUnknownCommand)
}

func legacyIDs(ids []uint64) []cluster.JobID {
	var out []cluster.JobID
	for _, id := range ids {
		out = append(out, cluster.JobID(id))
	}
	return out
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}
