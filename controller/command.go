package controller

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store"
)

// commandType numbers a replicated command. Append only: a number, once
// used, keeps its meaning forever, since old log entries are replayed.
type commandType uint8

const (
	cmdSubmitJob     commandType = 1
	cmdPlaceJobs     commandType = 2
	cmdReportTask    commandType = 3
	cmdCancelJobs    commandType = 4
	cmdRegisterNode  commandType = 5
	cmdSetNodeState  commandType = 6
	cmdSetPartitions commandType = 7
	cmdPreemptJobs   commandType = 8
	cmdSetNodesDown  commandType = 9
)

type submitJobCmd struct {
	Job *cluster.Job
}

type placeJobsCmd struct {
	Placements []store.Placement
}

type reportTaskCmd struct {
	Report cluster.TaskReport
}

type cancelJobsCmd struct {
	IDs    []cluster.JobID
	Time   time.Time
	Reason string
}

// preemptJobsCmd preempts each victim; For names, by position, the job it
// makes room for (kept in the log for the record).
type preemptJobsCmd struct {
	IDs  []cluster.JobID
	For  []cluster.JobID
	Time time.Time
}

type registerNodeCmd struct {
	Node *cluster.Node
}

type setNodeStateCmd struct {
	Name   string
	State  cluster.NodeState
	Reason string
	Time   time.Time
}

type setPartitionsCmd struct {
	Partitions []*cluster.Partition
}

// encodeCommand frames a command as its type byte followed by JSON.
func encodeCommand(t commandType, payload any) ([]byte, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode command %d: %w", t, err)
	}
	return append([]byte{byte(t)}, body...), nil
}

type setNodesDownCmd struct {
	Names  []string
	Reason string
	Time   time.Time
}
