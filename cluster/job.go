package cluster

import (
	"fmt"
	"slices"
	"time"
)

// JobID identifies a job for its whole life, across attempts.
type JobID uint64

func (id JobID) String() string { return fmt.Sprintf("%d", uint64(id)) }

// JobState is a job's state, named as Slurm names it.
type JobState string

// Job states.
const (
	JobPending     JobState = "PENDING"
	JobConfiguring JobState = "CONFIGURING"
	JobRunning     JobState = "RUNNING"
	JobCompleting  JobState = "COMPLETING"
	JobCompleted   JobState = "COMPLETED"
	JobFailed      JobState = "FAILED"
	JobCancelled   JobState = "CANCELLED"
	JobTimeout     JobState = "TIMEOUT"
	JobNodeFail    JobState = "NODE_FAIL"
	JobPreempted   JobState = "PREEMPTED"
	// JobRequeued: scontrol requeue stopped it; once its tasks have ended
	// it is PENDING again (Slurm's REQUEUED).
	JobRequeued JobState = "REQUEUED"
	// JobDeadline: sbatch --deadline came before the job could end.
	JobDeadline JobState = "DEADLINE"
)

// Terminal reports whether no further transition can happen.
func (s JobState) Terminal() bool {
	switch s {
	case JobCompleted, JobFailed, JobCancelled, JobTimeout, JobNodeFail, JobPreempted, JobRequeued, JobDeadline:
		return true
	}
	return false
}

// ComingBack reports whether a job in this state is stopping only to go
// back to the queue: preempted, or requeued.
func (s JobState) ComingBack() bool { return s == JobPreempted || s == JobRequeued }

// Short is the two-letter code squeue prints in its ST column.
func (s JobState) Short() string {
	switch s {
	case JobPending:
		return "PD"
	case JobConfiguring:
		return "CF"
	case JobRunning:
		return "R"
	case JobCompleting:
		return "CG"
	case JobCompleted:
		return "CD"
	case JobFailed:
		return "F"
	case JobCancelled:
		return "CA"
	case JobTimeout:
		return "TO"
	case JobNodeFail:
		return "NF"
	case JobPreempted:
		return "PR"
	case JobRequeued:
		return "RQ"
	case JobDeadline:
		return "DL"
	}
	return "??"
}

// ParseJobState accepts a full state name or squeue's short code, in any case.
func ParseJobState(s string) (JobState, error) {
	for _, st := range AllJobStates {
		if equalFold(s, string(st)) || equalFold(s, st.Short()) {
			return st, nil
		}
	}
	return "", Errorf(ErrInvalid, "unknown job state %q (use PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, ... or PD, R, CD, F, CA, TO, NF)", s)
}

// AllJobStates lists every state in lifecycle order.
var AllJobStates = []JobState{
	JobPending, JobConfiguring, JobRunning, JobCompleting, JobCompleted,
	JobFailed, JobCancelled, JobTimeout, JobNodeFail, JobPreempted, JobRequeued, JobDeadline,
}

// PendingReason is why a pending job is not running now, as Slurm names
// it (squeue's %r, scontrol's Reason=). The reasons the controller and the
// scheduler give are constants here and in package scheduler; a job's own
// Reason (Job.Reason) is text, often one of these followed by what failed.
type PendingReason string

// Pending reasons, as squeue shows them.
const (
	ReasonNone      PendingReason = "None"
	ReasonResources PendingReason = "Resources"
	ReasonPriority  PendingReason = "Priority"
	ReasonPartDown  PendingReason = "PartitionDown"
	ReasonNodeAvail PendingReason = "ReqNodeNotAvail"
	// ReasonPartInactive: its partition is INACTIVE (Slurm's
	// PartitionInactive); a DOWN one is PartitionDown.
	ReasonPartInactive PendingReason = "PartitionInactive"
)

// Held reports whether r is a hold's (scontrol hold, sbatch -H).
func (r PendingReason) Held() bool { return r == ReasonJobHeldUser || r == ReasonJobHeldAdmin }

// Job is what a user submitted plus what happened to it.
type Job struct {
	ID        JobID
	Name      string
	User      string
	UID, GID  int
	Account   string
	Partition string
	Priority  int64

	SubmitTime time.Time
	TimeLimit  time.Duration // zero: the partition's default

	Script  string            // the batch script, run by /bin/sh unless it has a #! line
	Image   string            // OCI image reference; empty: a plain process
	Env     map[string]string // environment exported by the submitter
	WorkDir string            // the submit directory, or -D
	Output  string            // -o pattern; empty: slurm-%j.out
	Error   string            // -e pattern; empty: with the output
	// The command as sbatch ran it (command.go): the script file's path,
	// the arguments passed to the script, the whole command line.
	ScriptPath string
	ScriptArgs []string
	SubmitLine string
	Comment    string // sbatch --comment
	// OpenMode is sbatch --open-mode (openmode.go).
	OpenMode OpenMode

	Nodes       int
	GPUsPerNode int
	GPUType     string // from --gres=gpu:TYPE:N; empty: any
	CPUsPerNode int
	MemoryMB    int64
	// Tasks (tasks.go): srun in the batch script starts TasksPerNode tasks
	// on each node (0: 1), each with GPUsPerTask of the node's GPUs (0: all
	// of them) and CPUsPerTask CPUs (0: not given).
	TasksPerNode int
	GPUsPerTask  int
	CPUsPerTask  int
	SubmitHost   string // the host sbatch ran on (SLURM_SUBMIT_HOST)
	// RequestForm: which options gave the tasks, GPUs and memory.
	RequestForm RequestForm

	// Placement constraints.
	Constraint   string        // --constraint: node features, "a&b" (all) or "a|b" (any)
	NodeList     []string      // --nodelist: nodes the allocation must include
	Exclude      []string      // --exclude: nodes it must not use
	Exclusive    bool          // --exclusive: whole nodes, shared with no other job
	Switches     int           // --switches=N: at most N leaf switches; 0: no limit
	SwitchesWait time.Duration // --switches=N@T: wait at most T for that, then relax
	Segment      int           // --segment=K: groups of K nodes, each inside one block

	// Ordering.
	QoS  QoS // high, normal (default) or low
	Nice int // --nice: lowers priority by this much (negative raises; admins only)
	// Requeued is set when the job went back to the queue after a failure or
	// a preemption; it goes first in its priority class.
	Requeued bool
	// Restart is when a failed attempt is followed by another (restart.go).
	Restart RestartPolicy
	// Signal is sbatch --signal: what the job is sent before its time
	// limit and when it is preempted, so that it can checkpoint.
	Signal JobSignal
	// Checkpoint is where the job keeps its checkpoints (checkpoint.go).
	Checkpoint CheckpointSpec
	// HangTimeout: a task with no progress for this long is a suspected
	// hang (hang.go); 0: not watched.
	HangTimeout time.Duration
	// Dependency is sbatch --dependency (dependency.go): the job is not
	// scheduled before it holds; KillOnInvalidDep cancels the job once it
	// never can.
	Dependency       Dependency
	KillOnInvalidDep bool
	// Hold keeps a pending job from being scheduled (hold.go).
	Hold Hold
	// Array is set on the tasks of a job array (array.go).
	Array *ArrayTask
	// SignalRequests are the scancel --signal requests of the current
	// attempt, oldest first (signal.go).
	SignalRequests []SignalRequest
	// BeginTime is sbatch --begin: the job is not scheduled before it
	// (reason BeginTime); zero: at once.
	BeginTime time.Time
	// Deadline is sbatch --deadline: a pending job that could not end by
	// then ends DEADLINE (MissDeadline); zero: none.
	Deadline time.Time

	State      JobState
	Reason     string // why it waits or ended: a PendingReason, or text (see Requeue, Cancel, finish)
	ExitCode   int    // first non-zero task exit code, else 0
	ExitSignal int
	StartTime  time.Time
	EndTime    time.Time

	Attempt    int         // number of the current (or last) attempt, from 0
	Alloc      *Allocation // nil while pending
	MasterPort int         // chosen at placement
	Tasks      []Task      // one per allocated node, by rank
	// Attempts records every placement of the job, oldest first: what it
	// held, when, and how it ended.
	Attempts []Attempt
	// Checkpointed and CheckpointStep: the newest step every rank
	// committed; CheckpointPending: the newer steps some ranks of the
	// current attempt committed, by step (checkpoint.go).
	Checkpointed      bool
	CheckpointStep    int64
	CheckpointPending []CheckpointCommits
}

// Attempt records one placement of a job. State is empty while the attempt
// holds its resources and is set, with EndTime, when every task has ended.
// PlacedIndex and ReleasedIndex are the Raft log entries that placed the
// attempt and released its resources (0: not yet); the store sets them, so
// that the order of allocations is known exactly, whatever the clocks said.
type Attempt struct {
	Attempt       int
	Alloc         Allocation
	StartTime     time.Time
	EndTime       time.Time
	State         JobState
	Reason        string
	PlacedIndex   uint64
	ReleasedIndex uint64
	// Cause is why the attempt failed, as restarts see it; FaultNode the
	// node its agent found at fault (RestartNode). Unfenced: a task of the
	// attempt was declared lost while its node was silent, so it may still
	// run there, and the job must not be restarted. ExitCode and
	// ExitSignal are the job's when the attempt ended.
	Cause                RestartCause
	FaultNode            string
	Unfenced             bool
	ExitCode, ExitSignal int
	// PlacedBy: how the scheduler came to start it (sacct's Flags).
	PlacedBy PlacedBy
	// PreemptedFor: the job it was preempted for (zero Job: none, or
	// preempted by a version before the record kept it), with that job's
	// attempt then pending. The nodes the attempt frees are that job's
	// while it is still pending for that attempt (see Preempt).
	PreemptedFor JobAttempt
}

// JobAttempt names one attempt of a job.
type JobAttempt struct {
	Job     JobID
	Attempt int
}

// Released reports whether the attempt has given its resources back.
func (a *Attempt) Released() bool { return a.State != "" }

// Completing reports whether the job has ended (or is going back to the
// queue) while some of its tasks still stop, holding its resources: Slurm
// shows such a job as COMPLETING (CG) over its base state until its nodes
// have let go of it. Nothing records it: it follows from the tasks.
func (j *Job) Completing() bool { return j.State.Terminal() && j.Live() }

// Live reports whether the job holds resources: placed and not every task ended.
func (j *Job) Live() bool {
	if j.Alloc == nil {
		return false
	}
	for _, t := range j.Tasks {
		if !t.State.Ended() {
			return true
		}
	}
	return false
}

// InQueue reports whether the job is still the queue's business: it has not
// ended, or it is being preempted, requeued or restarted and will come
// back. squeue lists such jobs and scancel -u/-n cancels them.
func (j *Job) InQueue() bool {
	return !j.State.Terminal() || j.State.ComingBack() || j.RestartPending()
}

// Clone returns a deep copy.
func (j *Job) Clone() *Job {
	c := *j
	if j.Env != nil {
		c.Env = make(map[string]string, len(j.Env))
		for k, v := range j.Env {
			c.Env[k] = v
		}
	}
	if j.Alloc != nil {
		a := j.Alloc.Clone()
		c.Alloc = &a
	}
	c.Tasks = append([]Task(nil), j.Tasks...)
	c.NodeList = append([]string(nil), j.NodeList...)
	c.Exclude = append([]string(nil), j.Exclude...)
	c.Attempts = make([]Attempt, len(j.Attempts))
	for i, a := range j.Attempts {
		a.Alloc = a.Alloc.Clone()
		c.Attempts[i] = a
	}
	if j.Attempts == nil {
		c.Attempts = nil
	}
	c.CheckpointPending = clonePending(j.CheckpointPending)
	c.Dependency.Conds = slices.Clone(j.Dependency.Conds)
	c.SignalRequests = slices.Clone(j.SignalRequests)
	if j.Array != nil {
		a := *j.Array
		c.Array = &a
	}
	return &c
}

// Update returns a copy of j to change with the transitions of this
// package, sharing what they never modify (Env, NodeList, Exclude, the
// script and the GPU lists of allocations): the copy-on-write step of a
// store whose readers hold the old value.
func (j *Job) Update() *Job {
	c := *j
	c.Tasks = append([]Task(nil), j.Tasks...)
	c.Attempts = append([]Attempt(nil), j.Attempts...)
	c.CheckpointPending = clonePending(j.CheckpointPending)
	c.Dependency.Conds = slices.Clone(j.Dependency.Conds)
	return &c
}

// Ref is the job as its user names it: ARRAY_TASK for a task of an
// array ("90_1"), else its ID.
func (j *Job) Ref() string {
	if j.Array != nil {
		return fmt.Sprintf("%d_%d", j.Array.JobID, j.Array.TaskID)
	}
	return j.ID.String()
}

// NodeNames lists the allocated nodes by rank.
func (j *Job) NodeNames() []string {
	if j.Alloc == nil {
		return nil
	}
	names := make([]string, len(j.Alloc.Nodes))
	for i, n := range j.Alloc.Nodes {
		names[i] = n.Node
	}
	return names
}

// TaskState is the state of one task as its agent reports it.
type TaskState string

// Task states.
const (
	TaskAssigned TaskState = "ASSIGNED" // placed, the agent has not started it
	TaskStarting TaskState = "STARTING" // staging, health gate
	TaskRunning  TaskState = "RUNNING"
	TaskExited   TaskState = "EXITED"  // ended by itself; see ExitCode
	TaskKilled   TaskState = "KILLED"  // stopped on cancel or failure of a peer
	TaskTimeout  TaskState = "TIMEOUT" // stopped at the time limit
	TaskFailed   TaskState = "FAILED"  // could not be started
	TaskLost     TaskState = "LOST"    // its node went down
	TaskHung     TaskState = "HUNG"    // stopped by its agent: no progress for the job's hang timeout
)

// Ended reports whether the task no longer runs.
func (s TaskState) Ended() bool {
	switch s {
	case TaskExited, TaskKilled, TaskTimeout, TaskFailed, TaskLost, TaskHung:
		return true
	}
	return false
}

// Task is one rank of a job's current attempt.
type Task struct {
	Rank       int
	Node       string
	State      TaskState
	ExitCode   int
	ExitSignal int
	Message    string
	StartTime  time.Time
	EndTime    time.Time
}

// Allocation is the resources one attempt holds, by rank.
type Allocation struct {
	Nodes []NodeAlloc
}

// Clone returns a deep copy.
func (a Allocation) Clone() Allocation {
	c := Allocation{Nodes: make([]NodeAlloc, len(a.Nodes))}
	for i, n := range a.Nodes {
		n.GPUs = append([]int(nil), n.GPUs...)
		c.Nodes[i] = n
	}
	return c
}

// NodeAlloc is what an allocation holds on one node.
type NodeAlloc struct {
	Node     string
	GPUs     []int // GPU indices on the node
	CPUs     int
	MemoryMB int64
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
