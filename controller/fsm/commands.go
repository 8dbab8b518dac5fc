package fsm

import (
	"time"

	statev1 "github.com/phalanx-hpc/phalanx/api/phalanx/state/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store"
)

// Command is one replicated change.
type Command interface {
	// apply makes the change at Raft index idx: one store call.
	apply(st *store.Store, idx uint64) Result
	encode() (*statev1.Command, error)
}

// Result is what applying a command returns to its proposer.
type Result struct {
	// IDs: the job submitted, or the jobs placed, cancelled or preempted.
	IDs []cluster.JobID
	// Err: the store's rejection (see store.IsRejection), if any.
	Err error
}

// SubmitJob adds Job, PENDING, with its ID chosen by the leader. Payload
// is the job's script and environment, encoded (codec.PayloadBytes); when
// nil, Encode computes it from Job. A decoded SubmitJob carries the payload
// as it came, and a Job without script and environment: replicas store
// them without decoding them. With a RequestID it is exactly-once: a retry
// of the same request answers with the first job (Result.IDs[0]) and adds
// nothing.
type SubmitJob struct {
	Job       *cluster.Job
	Payload   []byte
	RequestID []byte
	// Array, when it has tasks, makes the job an array: one job per index,
	// IDs Job.ID onwards.
	Array cluster.ArraySpec
}

func (c SubmitJob) apply(st *store.Store, idx uint64) Result {
	id, err := st.SubmitArray(idx, c.Job, c.Payload, c.RequestID, c.Array)
	if err != nil || id == 0 {
		return Result{Err: err}
	}
	return Result{IDs: []cluster.JobID{id}}
}

// PlaceJobs starts gangs on their allocations; each is re-checked and
// placed whole or skipped.
type PlaceJobs struct {
	Placements []store.Placement
}

func (c PlaceJobs) apply(st *store.Store, idx uint64) Result {
	ids, err := st.PlaceJobs(idx, c.Placements)
	return Result{IDs: ids, Err: err}
}

// ReportTask is an agent's report about one task.
type ReportTask struct {
	Report cluster.TaskReport
}

func (c ReportTask) apply(st *store.Store, idx uint64) Result {
	return Result{Err: st.ReportTask(idx, c.Report)}
}

// CancelJobs cancels jobs. With a RequestID it is exactly-once: the
// result is every job the request cancelled, in this command or in an
// earlier one with the same ID (a retry, or another batch of the request).
type CancelJobs struct {
	IDs       []cluster.JobID
	Time      time.Time
	Reason    string
	RequestID []byte
}

func (c CancelJobs) apply(st *store.Store, idx uint64) Result {
	ids, err := st.CancelJobs(idx, c.IDs, c.Time, c.Reason, c.RequestID)
	return Result{IDs: ids, Err: err}
}

// RegisterNode records what an agent reported about its host.
type RegisterNode struct {
	Node *cluster.Node
}

func (c RegisterNode) apply(st *store.Store, idx uint64) Result {
	return Result{Err: st.RegisterNode(idx, c.Node)}
}

// SetNodeState sets one node's state and reason, given by User.
type SetNodeState struct {
	Name   string
	State  cluster.NodeState
	Reason string
	User   string
	Time   time.Time
}

func (c SetNodeState) apply(st *store.Store, idx uint64) Result {
	return Result{Err: st.SetNodeState(idx, c.Name, c.State, c.Reason, c.User, c.Time)}
}

// SetNodeHealth records the verdict of a node's health checks: Problems
// is every failing check as one line, empty when they all pass. The store
// drains or resumes the node as cluster.SetHealth says.
type SetNodeHealth struct {
	Name     string
	Problems string
	Time     time.Time
}

func (c SetNodeHealth) apply(st *store.Store, idx uint64) Result {
	return Result{Err: st.SetNodeHealth(idx, c.Name, c.Problems, c.Time)}
}

// SetPartitions replaces every partition. ConfigDigest, when set, says
// they are the config file's (store.PartitionsConfig).
type SetPartitions struct {
	Partitions   []*cluster.Partition
	ConfigDigest string
}

func (c SetPartitions) apply(st *store.Store, idx uint64) Result {
	return Result{Err: st.SetPartitions(idx, c.Partitions, c.ConfigDigest)}
}

// PreemptJobs preempts each of IDs; For names, by position, the job it
// makes room for, which the preempted attempt records (store.PreemptJobs).
type PreemptJobs struct {
	IDs  []cluster.JobID
	For  []cluster.JobID
	Time time.Time
}

func (c PreemptJobs) apply(st *store.Store, idx uint64) Result {
	ids, err := st.PreemptJobs(idx, c.IDs, c.For, c.Time)
	return Result{IDs: ids, Err: err}
}

// RequeueJobs stops running jobs to put them back in the queue (scontrol
// requeue).
type RequeueJobs struct {
	IDs  []cluster.JobID
	Time time.Time
}

func (c RequeueJobs) apply(st *store.Store, idx uint64) Result {
	ids, err := st.RequeueJobs(idx, c.IDs, c.Time)
	return Result{IDs: ids, Err: err}
}

// SignalJobs records a scancel --signal for running jobs.
type SignalJobs struct {
	IDs       []cluster.JobID
	Signal    int
	Scope     cluster.SignalScope
	Step      uint32 // Scope SignalStep: the step
	RequestID []byte
	Time      time.Time
}

func (c SignalJobs) apply(st *store.Store, idx uint64) Result {
	r := cluster.SignalRequest{Signal: c.Signal, Scope: c.Scope, Step: c.Step}
	ids, err := st.SignalJobs(idx, c.IDs, r, c.RequestID, c.Time)
	return Result{IDs: ids, Err: err}
}

// MissDeadlines ends pending jobs that could no longer end before their
// --deadline.
type MissDeadlines struct {
	IDs  []cluster.JobID
	Time time.Time
}

func (c MissDeadlines) apply(st *store.Store, idx uint64) Result {
	ids, err := st.MissDeadlines(idx, c.IDs, c.Time)
	return Result{IDs: ids, Err: err}
}

// SetFeatureLevel raises the state's feature level (store.FeatureLevel):
// the leader proposes it once every voter's release knows the level. A
// replica whose release does not stops, as for a command it does not know.
type SetFeatureLevel struct {
	Level uint64
}

func (c SetFeatureLevel) apply(st *store.Store, idx uint64) Result {
	return Result{Err: st.SetFeatureLevel(idx, c.Level)}
}

// SetNodesDown marks silent nodes DOWN together.
type SetNodesDown struct {
	Names  []string
	Reason string
	Time   time.Time
}

func (c SetNodesDown) apply(st *store.Store, idx uint64) Result {
	return Result{Err: st.SetNodesDown(idx, c.Names, c.Reason, c.Time)}
}

// SetController records a replica's addresses.
type SetController struct {
	Controller store.Controller
}

func (c SetController) apply(st *store.Store, idx uint64) Result {
	return Result{Err: st.SetController(idx, c.Controller)}
}

// RemoveController forgets a replica's addresses.
type RemoveController struct {
	ID string
}

func (c RemoveController) apply(st *store.Store, idx uint64) Result {
	return Result{Err: st.RemoveController(idx, c.ID)}
}

// Expire forgets submit requests, finished jobs and node events past their
// retention.
type Expire struct {
	Retention store.Retention
}

func (c Expire) apply(st *store.Store, idx uint64) Result {
	return Result{Err: st.Expire(idx, c.Retention)}
}

// CommitCheckpoint records that a rank of a job's attempt copied a
// checkpoint step to the job's store. Result.IDs holds the job when the
// step became its latest complete one.
type CommitCheckpoint struct {
	ID      cluster.JobID
	Attempt int
	Rank    int
	Step    int64
	Time    time.Time
}

func (c CommitCheckpoint) apply(st *store.Store, idx uint64) Result {
	complete, err := st.CommitCheckpoint(idx, c.ID, c.Attempt, c.Rank, c.Step, c.Time)
	if complete {
		return Result{IDs: []cluster.JobID{c.ID}, Err: err}
	}
	return Result{Err: err}
}

// RecordEvent records an event an agent reported.
type RecordEvent struct {
	Event cluster.Event
}

func (c RecordEvent) apply(st *store.Store, idx uint64) Result {
	return Result{Err: st.RecordEvent(idx, c.Event)}
}

// UpdateJob changes a job's name and, while it is pending, what it asks
// for (store.JobUpdate); nil fields stay as they are.
type UpdateJob struct {
	ID cluster.JobID
	store.JobUpdate
	RequestID []byte // exactly-once when set
	Time      time.Time
}

func (c UpdateJob) apply(st *store.Store, idx uint64) Result {
	return Result{Err: st.UpdateJob(idx, c.ID, c.JobUpdate, c.RequestID, c.Time)}
}
