package scheduler

import (
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology"
)

// Snapshot is the read-only state a scheduling pass works on. Schedule does
// not modify anything it points to.
type Snapshot struct {
	Nodes      []*cluster.Node
	Partitions []*cluster.Partition
	// Jobs holds pending jobs (State PENDING) and live ones; what live jobs
	// hold is taken from their allocations (cluster.Usage). Other jobs are
	// ignored. A job whose last attempt was preempted for a job still
	// pending (cluster.Attempt.PreemptedFor) gives that job a claim on the
	// attempt's nodes, whether it is still leaving or requeued (claims.go).
	Jobs []*cluster.Job
	// Topology maps nodes to leaf switches; may be nil, in which case each
	// node's Leaf field is used.
	Topology *topology.Tree
	// Preempting holds the running jobs already signalled for preemption:
	// they are leaving, so they are never chosen as victims again.
	Preempting map[cluster.JobID]bool
	// Unheard holds the UP nodes the controller has not heard from since it
	// took over: nothing new is placed on them until it does (their jobs
	// keep running).
	Unheard map[string]bool
	// Options tune the pass; the zero value gives the defaults.
	Options Options
}

// Plan is the outcome of one pass.
type Plan struct {
	// Placements in the order they were decided (priority order).
	Placements []Placement
	// Pending has an entry for every pending job that was not placed.
	Pending map[cluster.JobID]PendingInfo
	// Preemptions lists the running jobs to stop and requeue so that a
	// higher-priority pending job can start; the controller signals each
	// victim (recording For on its attempt), waits its grace period,
	// requeues it, and the next pass places the preemptor on the nodes its
	// victims freed, which the passes between keep for it.
	Preemptions []Preemption
	// Queue lists the pending jobs the pass decided, in priority order
	// (the order it decided them, but for preemptors keeping their claims,
	// decided first): every one in a full pass, the first
	// Options.QueueDepth in a quick one. A caller can start its next quick
	// pass from the head of it.
	Queue []cluster.JobID
	// Reservations lists, in priority order, the blocked jobs whose start
	// later placements may not delay: when and on which nodes each is
	// expected to start (squeue --start's SCHEDNODES).
	Reservations []Reservation
}

// Reservation holds Nodes for Job from Start until Start plus its time limit.
type Reservation struct {
	Job   cluster.JobID
	Start time.Time
	Nodes []string
}

// Preemption requeues Victim to make room for For.
type Preemption struct {
	Victim cluster.JobID
	For    cluster.JobID
}

// Placement starts one job on an allocation; a gang is one Placement. By
// says whether it went in priority order (PlacedMain) or ahead of a job
// left waiting in a partition holding one of its nodes (PlacedBackfill).
type Placement struct {
	Job   cluster.JobID
	Alloc cluster.Allocation
	By    cluster.PlacedBy
	// MasterPort is rank 0's MASTER_PORT (0 without Options' range).
	MasterPort int
}

// PendingInfo says why a job waits and, when known, when it is expected to
// start (zero when unknown).
type PendingInfo struct {
	Reason cluster.PendingReason
	// Unavailable names, as a hostlist, the nodes out of service that a
	// job waiting with cluster.ReasonNodeAvail needs ("" when unknown).
	Unavailable   string
	ExpectedStart time.Time
	// SchedNodes are the nodes of the job's reservation (see
	// Plan.Reservations), nil without one.
	SchedNodes []string
}

// Text is the reason as Slurm shows it, with the unavailable nodes:
// "ReqNodeNotAvail, UnavailableNodes:gpu[002,005]".
func (p PendingInfo) Text() string {
	if p.Unavailable == "" {
		return string(p.Reason)
	}
	return string(p.Reason) + ", UnavailableNodes:" + p.Unavailable
}

// Pending reasons in addition to those in package cluster.
const (
	// ReasonBadConstraints: the job can never run on its partition as
	// configured (see Feasible), or its partition does not exist.
	ReasonBadConstraints cluster.PendingReason = "BadConstraints"
	// ReasonPartitionTimeLimit: the job's time limit exceeds its
	// partition's MaxTime.
	ReasonPartitionTimeLimit cluster.PendingReason = "PartitionTimeLimit"
	// ReasonPartitionNodeLimit: the job asks for more nodes than its
	// partition's MaxNodes, or fewer than its MinNodes.
	ReasonPartitionNodeLimit cluster.PendingReason = "PartitionNodeLimit"
	// A job waiting on a dependency never reaches the scheduler: the
	// controller holds it back with cluster.ReasonDependency.
)
