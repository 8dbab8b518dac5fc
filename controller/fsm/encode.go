package fsm

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	statev1 "github.com/phalanx-hpc/phalanx/api/phalanx/state/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store"
	"github.com/phalanx-hpc/phalanx/store/codec"
)

// frameProto starts every entry this version writes; entries of the first
// release start with a command type from 1 to 9 (legacy.go).
const frameProto = 0xF1

// ErrUnknownCommand: the entry holds a command this binary does not know
// (a newer replica wrote it).
var ErrUnknownCommand = errors.New("a command this version does not know, written by a newer controller: upgrade this replica and start it again (it replays the log)")

// Encode frames a command for the Raft log.
func Encode(c Command) ([]byte, error) {
	m, err := c.encode()
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", c, err)
	}
	data, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend([]byte{frameProto}, m)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", c, err)
	}
	return data, nil
}

// Decode reads a command from a Raft log entry's data.
func Decode(data []byte) (Command, error) {
	switch {
	case len(data) == 0:
		return nil, fmt.Errorf("empty entry: %w", ErrUnknownCommand)
	case data[0] == frameProto:
		var m statev1.Command
		if err := proto.Unmarshal(data[1:], &m); err != nil {
			return nil, err
		}
		return decode(&m)
	case data[0] >= 1 && data[0] <= 9:
		return decodeLegacy(data[0], data[1:])
	}
	return nil, fmt.Errorf("framing byte %#x: %w", data[0], ErrUnknownCommand)
}

func decode(m *statev1.Command) (Command, error) {
	switch c := m.Command.(type) {
	case *statev1.Command_SubmitJob:
		r := c.SubmitJob
		j, err := codec.FromJob(r.GetJob())
		out := SubmitJob{Job: j, Payload: r.GetPayload(), RequestID: r.GetRequestId(), Array: cluster.ArraySpec{Throttle: int(r.GetArrayThrottle())}}
		for _, t := range r.GetArrayTasks() {
			out.Array.Tasks = append(out.Array.Tasks, int(t))
		}
		return out, err
	case *statev1.Command_PlaceJobs:
		return decodePlaceJobs(c.PlaceJobs), nil
	case *statev1.Command_ReportTask:
		return decodeReportTask(c.ReportTask)
	case *statev1.Command_CancelJobs:
		r := c.CancelJobs
		return CancelJobs{IDs: jobIDs(r.GetJobIds()), Time: codec.FromTime(r.GetTime()), Reason: r.GetReason(), RequestID: r.GetRequestId()}, nil
	case *statev1.Command_RegisterNode:
		n, err := codec.FromNode(c.RegisterNode.GetNode())
		return RegisterNode{Node: n}, err
	case *statev1.Command_SetNodeState:
		r := c.SetNodeState
		st, err := codec.FromNodeState(r.GetState())
		return SetNodeState{Name: r.GetName(), State: st, Reason: r.GetReason(), User: r.GetUser(), Time: codec.FromTime(r.GetTime())}, err
	case *statev1.Command_RecordEvent:
		e, err := codec.FromEvent(c.RecordEvent.GetEvent())
		if err != nil {
			return nil, err
		}
		return RecordEvent{Event: e}, nil
	case *statev1.Command_CommitCheckpoint:
		r := c.CommitCheckpoint
		return CommitCheckpoint{ID: cluster.JobID(r.GetJobId()), Attempt: int(r.GetAttempt()), Rank: int(r.GetRank()), Step: r.GetStep(),
			Time: codec.FromTime(r.GetTime())}, nil
	case *statev1.Command_SetNodeHealth:
		r := c.SetNodeHealth
		return SetNodeHealth{Name: r.GetName(), Problems: r.GetProblems(), Time: codec.FromTime(r.GetTime())}, nil
	case *statev1.Command_SetPartitions:
		return decodeSetPartitions(c.SetPartitions)
	case *statev1.Command_PreemptJobs:
		r := c.PreemptJobs
		return PreemptJobs{IDs: jobIDs(r.GetJobIds()), For: jobIDs(r.GetForJobIds()), Time: codec.FromTime(r.GetTime())}, nil
	case *statev1.Command_SignalJobs:
		r := c.SignalJobs
		return SignalJobs{IDs: jobIDs(r.GetJobIds()), Signal: int(r.GetSignal()), Scope: codec.FromSignalScopeRecord(r.GetScope()),
			Step: r.GetStep(), RequestID: r.GetRequestId(), Time: codec.FromTime(r.GetTime())}, nil
	case *statev1.Command_MissDeadlines:
		r := c.MissDeadlines
		return MissDeadlines{IDs: jobIDs(r.GetJobIds()), Time: codec.FromTime(r.GetTime())}, nil
	case *statev1.Command_RequeueJobs:
		r := c.RequeueJobs
		return RequeueJobs{IDs: jobIDs(r.GetJobIds()), Time: codec.FromTime(r.GetTime())}, nil
	case *statev1.Command_SetNodesDown:
		r := c.SetNodesDown
		return SetNodesDown{Names: r.GetNames(), Reason: r.GetReason(), Time: codec.FromTime(r.GetTime())}, nil
	case *statev1.Command_SetController:
		r := c.SetController.GetController()
		return SetController{Controller: store.Controller{ID: r.GetId(), APIAddr: r.GetApiAddr(), RaftAddr: r.GetRaftAddr()}}, nil
	case *statev1.Command_RemoveController:
		return RemoveController{ID: c.RemoveController.GetId()}, nil
	case *statev1.Command_Expire:
		r := c.Expire
		return Expire{Retention: store.Retention{
			RequestsBefore: codec.FromTime(r.GetRequestsBefore()), MaxRequests: int(r.GetMaxRequests()),
			HistoryBefore: codec.FromTime(r.GetHistoryBefore()), MaxHistory: int(r.GetMaxHistory()),
			EventsBefore: codec.FromTime(r.GetEventsBefore()), MaxEvents: int(r.GetMaxEvents()),
		}}, nil
	case *statev1.Command_UpdateJob:
		return decodeUpdateJob(c.UpdateJob), nil
	case *statev1.Command_SetFeatureLevel:
		return SetFeatureLevel{Level: c.SetFeatureLevel.GetLevel()}, nil
	}
	return nil, fmt.Errorf("command type %d: %w", unknownType(m), ErrUnknownCommand)
}

// unknownType is the field number of the command a newer version wrote:
// the first unknown field of the Command (0 when there is none).
func unknownType(m *statev1.Command) protowire.Number {
	num, _, n := protowire.ConsumeTag(m.ProtoReflect().GetUnknown())
	if n < 0 {
		return 0
	}
	return num
}

func decodePlaceJobs(r *statev1.PlaceJobs) PlaceJobs {
	out := PlaceJobs{Placements: make([]store.Placement, len(r.GetPlacements()))}
	for i, p := range r.GetPlacements() {
		out.Placements[i] = store.Placement{
			Job: cluster.JobID(p.GetJobId()), Alloc: codec.FromAllocation(p.GetAlloc()),
			MasterPort: int(p.GetMasterPort()), Time: codec.FromTime(p.GetTime()), By: codec.FromPlacedBy(p.GetPlacedBy()),
		}
	}
	return out
}

func decodeReportTask(r *statev1.ReportTask) (Command, error) {
	st, err := codec.FromTaskState(r.GetState())
	return ReportTask{Report: cluster.TaskReport{
		JobID: cluster.JobID(r.GetJobId()), Attempt: int(r.GetAttempt()), Rank: int(r.GetRank()), Node: r.GetNode(),
		State: st, ExitCode: int(r.GetExitCode()), ExitSignal: int(r.GetExitSignal()), Message: r.GetMessage(),
		Time: codec.FromTime(r.GetTime()), CheckpointCorrupt: r.GetCheckpointCorrupt(), AgentShutdown: r.GetAgentShutdown(),
		Fenced: r.GetFenced(),
	}}, err
}

func decodeSetPartitions(r *statev1.SetPartitions) (Command, error) {
	out := SetPartitions{ConfigDigest: r.GetConfigDigest()}
	for _, p := range r.GetPartitions() {
		part, err := codec.FromPartition(p)
		if err != nil {
			return nil, err
		}
		out.Partitions = append(out.Partitions, part)
	}
	return out, nil
}

func jobIDs(ids []uint64) []cluster.JobID {
	if ids == nil {
		return nil
	}
	out := make([]cluster.JobID, len(ids))
	for i, id := range ids {
		out[i] = cluster.JobID(id)
	}
	return out
}

func wireIDs(ids []cluster.JobID) []uint64 {
	if ids == nil {
		return nil
	}
	out := make([]uint64, len(ids))
	for i, id := range ids {
		out[i] = uint64(id)
	}
	return out
}

func (c SubmitJob) encode() (*statev1.Command, error) {
	j, err := codec.Job(c.Job)
	if err != nil {
		return nil, err
	}
	payload := c.Payload
	if payload == nil {
		if payload, err = codec.PayloadBytes(c.Job); err != nil {
			return nil, err
		}
	}
	r := &statev1.SubmitJob{Job: j, Payload: payload, RequestId: c.RequestID, ArrayThrottle: int32(c.Array.Throttle)}
	for _, t := range c.Array.Tasks {
		r.ArrayTasks = append(r.ArrayTasks, int32(t))
	}
	return &statev1.Command{Command: &statev1.Command_SubmitJob{SubmitJob: r}}, nil
}

func (c PlaceJobs) encode() (*statev1.Command, error) {
	r := &statev1.PlaceJobs{}
	for _, p := range c.Placements {
		r.Placements = append(r.Placements, &statev1.Placement{
			JobId: uint64(p.Job), Alloc: codec.Allocation(p.Alloc), MasterPort: int32(p.MasterPort), Time: codec.Time(p.Time),
			PlacedBy: codec.PlacedBy(p.By),
		})
	}
	return &statev1.Command{Command: &statev1.Command_PlaceJobs{PlaceJobs: r}}, nil
}

func (c ReportTask) encode() (*statev1.Command, error) {
	r := c.Report
	st, err := codec.TaskState(r.State)
	if err != nil {
		return nil, err
	}
	return &statev1.Command{Command: &statev1.Command_ReportTask{ReportTask: &statev1.ReportTask{
		JobId: uint64(r.JobID), Attempt: int32(r.Attempt), Rank: int32(r.Rank), Node: r.Node, State: st,
		ExitCode: int32(r.ExitCode), ExitSignal: int32(r.ExitSignal), Message: r.Message, Time: codec.Time(r.Time),
		CheckpointCorrupt: r.CheckpointCorrupt, AgentShutdown: r.AgentShutdown, Fenced: r.Fenced,
	}}}, nil
}

func (c CancelJobs) encode() (*statev1.Command, error) {
	return &statev1.Command{Command: &statev1.Command_CancelJobs{CancelJobs: &statev1.CancelJobs{
		JobIds: wireIDs(c.IDs), Time: codec.Time(c.Time), Reason: c.Reason, RequestId: c.RequestID,
	}}}, nil
}

func (c RegisterNode) encode() (*statev1.Command, error) {
	n, err := codec.Node(c.Node)
	if err != nil {
		return nil, err
	}
	return &statev1.Command{Command: &statev1.Command_RegisterNode{RegisterNode: &statev1.RegisterNode{Node: n}}}, nil
}

func (c UpdateJob) encode() (*statev1.Command, error) {
	u := c.JobUpdate
	r := &statev1.UpdateJob{JobId: uint64(c.ID), Name: u.Name, Partition: u.Partition, Priority: u.Priority,
		RequestId: c.RequestID, Time: codec.Time(c.Time)}
	if u.QoS != nil {
		q := string(*u.QoS)
		r.Qos = &q
	}
	if u.TimeLimit != nil {
		d := int64(*u.TimeLimit)
		r.TimeLimit = &d
	}
	if u.Hold != nil {
		h := codec.HoldRecord(*u.Hold)
		r.Hold = &h
	}
	if u.Nodes != nil {
		n := int32(*u.Nodes)
		r.Nodes = &n
	}
	if u.Nice != nil {
		n := int32(*u.Nice)
		r.Nice = &n
	}
	if u.Dependency != nil {
		r.Dependency = codec.DependencyValue(*u.Dependency)
	}
	if u.ArrayThrottle != nil {
		n := int32(*u.ArrayThrottle)
		r.ArrayThrottle = &n
	}
	if u.GPUsPerNode != nil {
		n := int32(*u.GPUsPerNode)
		r.GpusPerNode = &n
	}
	r.MemoryMb = u.MemoryMB
	return &statev1.Command{Command: &statev1.Command_UpdateJob{UpdateJob: r}}, nil
}

func decodeUpdateJob(r *statev1.UpdateJob) UpdateJob {
	u := store.JobUpdate{Name: r.Name, Partition: r.Partition, Priority: r.Priority}
	if r.Qos != nil {
		q := cluster.QoS(r.GetQos())
		u.QoS = &q
	}
	if r.TimeLimit != nil {
		d := time.Duration(r.GetTimeLimit())
		u.TimeLimit = &d
	}
	if r.Hold != nil {
		h := codec.FromHoldRecord(r.GetHold())
		u.Hold = &h
	}
	if r.Nodes != nil {
		n := int(r.GetNodes())
		u.Nodes = &n
	}
	if r.Nice != nil {
		n := int(r.GetNice())
		u.Nice = &n
	}
	if r.Dependency != nil {
		d := codec.FromDependencyValue(r.GetDependency())
		u.Dependency = &d
	}
	if r.ArrayThrottle != nil {
		n := int(r.GetArrayThrottle())
		u.ArrayThrottle = &n
	}
	if r.GpusPerNode != nil {
		n := int(r.GetGpusPerNode())
		u.GPUsPerNode = &n
	}
	u.MemoryMB = r.MemoryMb
	return UpdateJob{ID: cluster.JobID(r.GetJobId()), JobUpdate: u, RequestID: r.GetRequestId(), Time: codec.FromTime(r.GetTime())}
}

func (c SetNodeState) encode() (*statev1.Command, error) {
	st, err := codec.NodeState(c.State)
	if err != nil {
		return nil, err
	}
	return &statev1.Command{Command: &statev1.Command_SetNodeState{SetNodeState: &statev1.SetNodeState{
		Name: c.Name, State: st, Reason: c.Reason, User: c.User, Time: codec.Time(c.Time),
	}}}, nil
}

func (c RecordEvent) encode() (*statev1.Command, error) {
	e, err := codec.Event(c.Event)
	if err != nil {
		return nil, err
	}
	return &statev1.Command{Command: &statev1.Command_RecordEvent{RecordEvent: &statev1.RecordEvent{Event: e}}}, nil
}

func (c CommitCheckpoint) encode() (*statev1.Command, error) {
	return &statev1.Command{Command: &statev1.Command_CommitCheckpoint{CommitCheckpoint: &statev1.CommitCheckpoint{
		JobId: uint64(c.ID), Attempt: int32(c.Attempt), Rank: int32(c.Rank), Step: c.Step, Time: codec.Time(c.Time),
	}}}, nil
}

func (c SetNodeHealth) encode() (*statev1.Command, error) {
	return &statev1.Command{Command: &statev1.Command_SetNodeHealth{SetNodeHealth: &statev1.SetNodeHealth{
		Name: c.Name, Problems: c.Problems, Time: codec.Time(c.Time),
	}}}, nil
}

func (c SetPartitions) encode() (*statev1.Command, error) {
	r := &statev1.SetPartitions{ConfigDigest: c.ConfigDigest}
	for _, p := range c.Partitions {
		m, err := codec.Partition(p)
		if err != nil {
			return nil, err
		}
		r.Partitions = append(r.Partitions, m)
	}
	return &statev1.Command{Command: &statev1.Command_SetPartitions{SetPartitions: r}}, nil
}

func (c PreemptJobs) encode() (*statev1.Command, error) {
	return &statev1.Command{Command: &statev1.Command_PreemptJobs{PreemptJobs: &statev1.PreemptJobs{
		JobIds: wireIDs(c.IDs), ForJobIds: wireIDs(c.For), Time: codec.Time(c.Time),
	}}}, nil
}

func (c SignalJobs) encode() (*statev1.Command, error) {
	return &statev1.Command{Command: &statev1.Command_SignalJobs{SignalJobs: &statev1.SignalJobs{
		JobIds: wireIDs(c.IDs), Signal: int32(c.Signal), Scope: codec.SignalScopeRecord(c.Scope), Step: c.Step, RequestId: c.RequestID,
		Time: codec.Time(c.Time),
	}}}, nil
}

func (c MissDeadlines) encode() (*statev1.Command, error) {
	return &statev1.Command{Command: &statev1.Command_MissDeadlines{MissDeadlines: &statev1.MissDeadlines{
		JobIds: wireIDs(c.IDs), Time: codec.Time(c.Time),
	}}}, nil
}

func (c SetFeatureLevel) encode() (*statev1.Command, error) {
	return &statev1.Command{Command: &statev1.Command_SetFeatureLevel{SetFeatureLevel: &statev1.SetFeatureLevel{Level: c.Level}}}, nil
}

func (c RequeueJobs) encode() (*statev1.Command, error) {
	return &statev1.Command{Command: &statev1.Command_RequeueJobs{RequeueJobs: &statev1.RequeueJobs{
		JobIds: wireIDs(c.IDs), Time: codec.Time(c.Time),
	}}}, nil
}

func (c SetNodesDown) encode() (*statev1.Command, error) {
	return &statev1.Command{Command: &statev1.Command_SetNodesDown{SetNodesDown: &statev1.SetNodesDown{
		Names: c.Names, Reason: c.Reason, Time: codec.Time(c.Time),
	}}}, nil
}

func (c SetController) encode() (*statev1.Command, error) {
	r := c.Controller
	return &statev1.Command{Command: &statev1.Command_SetController{SetController: &statev1.SetController{
		Controller: &statev1.Controller{Id: r.ID, ApiAddr: r.APIAddr, RaftAddr: r.RaftAddr},
	}}}, nil
}

func (c RemoveController) encode() (*statev1.Command, error) {
	return &statev1.Command{Command: &statev1.Command_RemoveController{RemoveController: &statev1.RemoveController{Id: c.ID}}}, nil
}

func (c Expire) encode() (*statev1.Command, error) {
	r := c.Retention
	return &statev1.Command{Command: &statev1.Command_Expire{Expire: &statev1.Expire{
		RequestsBefore: codec.Time(r.RequestsBefore), MaxRequests: int64(r.MaxRequests),
		HistoryBefore: codec.Time(r.HistoryBefore), MaxHistory: int64(r.MaxHistory),
		EventsBefore: codec.Time(r.EventsBefore), MaxEvents: int64(r.MaxEvents),
	}}}, nil
}
