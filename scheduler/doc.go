// Package scheduler decides where pending jobs run. It is a pure function:
//
//	plan := scheduler.Schedule(snapshot, now)
//
// takes an immutable Snapshot of the cluster (nodes, partitions, pending and
// live jobs, the fabric topology, the jobs already signalled for
// preemption, Options) and a time, and returns a Plan: placements,
// preemptions, reservations, and a reason and expected start for every job
// that waits. It does no I/O, reads no clock and draws no random numbers, so
// the same input always gives the same plan; the controller re-checks the
// plan against the current state before committing it through Raft.
//
// # Words
//
//   - Free capacity: what a node has left once the live jobs' allocations
//     and this pass's placements are taken off: GPU indices (a uint64 bit
//     mask), CPUs, memory. A node held by an exclusive job has none.
//   - Candidates: the nodes a job may use at all: in its partition, with its
//     GPU model and --constraint features, not --exclude'd, and not found at
//     fault by its earlier attempts while it could run without them (the
//     oldest fault node is given another chance first). Built once per
//     pass for each distinct set of those filters (candidates.go).
//   - Gang: the Nodes nodes a job gets, all at once or not at all,
//     including its --nodelist nodes and, for node counts in its
//     constraint (gpu*2), that many nodes with each counted feature
//     (counts.go).
//   - Leaf span: how many leaf switches a gang touches; fewer is better,
//     since traffic between leaves crosses the spine.
//   - Best fit: among places that could host a gang, the tightest, leaving
//     big holes for big jobs.
//   - Use: capacity held on a node over a time window: a live job until its
//     time limit, a placement from now, a reservation from its start
//     (timeline.go). Time limits are the job's, else the partition's
//     DefaultTime, else its MaxTime; none means forever.
//   - Reservation: the earliest time and nodes at which a blocked job fits,
//     held for its time limit; later jobs may not delay it.
//   - Class: (partition PriorityTier, QoS level); preemption only goes from
//     a higher class to a strictly lower one.
//   - Claim: the nodes of attempts preempted for a job that is still
//     pending (cluster.Attempt.PreemptedFor), whose victims are leaving or
//     have left: they are that job's (claims.go).
//
// # Pipeline
//
// newPass (pass.go) indexes the nodes in name order with their leaf, spine
// and block, takes the live jobs' allocations off, and keeps per leaf a
// histogram of free GPUs. queue (priority.go) orders the pending jobs:
// partition PriorityTier, QoS level, requeued jobs first, the Priority
// score (QoS, admin Priority, age, size, Nice, a FairShare hook; see
// Priority), submit time, ID. Jobs with a claim are decided first, in that
// order (keepClaims, claims.go): each starts now if its claimed nodes hold
// its gang, or holds them (with the idle nodes its gang needs besides)
// while its victims leave, expected when the last has left; one whose
// claim can do neither is decided in its place. Each
// other job then goes through decide (schedule.go):
//
//  1. partition checks: unknown (BadConstraints), DOWN (PartitionDown) or
//     INACTIVE (PartitionInactive), time limit over MaxTime
//     (PartitionTimeLimit), more nodes than MaxNodes or fewer than
//     MinNodes (PartitionNodeLimit);
//  2. static checks, once per request shape, by the pass's catalog of
//     candidate sets (candidates.go, feasible.go): can the gang
//     ever fit the candidates (else BadConstraints), and would it fit the UP
//     ones if idle (else ReqNodeNotAvail, naming the DOWN or DRAIN nodes it
//     needs);
//  3. fit now (collectNow): the candidates whose free capacity covers the
//     per-node request, grouped by leaf; a node where a reservation starts
//     later only if the job, by its time limit, does not overlap it beyond
//     what the node can hold. Per request shape each leaf's list is cached
//     and recomputed only when the leaf changed; a shape that failed is
//     remembered, and any larger shape fails without a scan;
//  4. gang assembly, by the pass's fabric (the nodes, leaves, spines and
//     blocks: gang.go, blocks.go, counts.go): --segment groups inside
//     blocks; inside one block when the job fits one; otherwise fewest
//     leaves (at most --switches=N until submit+T), one spine when
//     possible, best fit, node weight before best fit, fullest nodes
//     first; node counts of the constraint held by a matching;
//  5. choice: take the gang's capacity (lowest GPU indices) and record a
//     Placement, By backfill when a job decided before it was left waiting
//     in a partition holding one of its nodes (Slurm's main scheduler
//     would have left those nodes alone), else in priority order (main);
//     or, when it cannot start,
//  6. preemption (preempt.go): if running jobs of a lower class in REQUEUE
//     partitions (or jobs already leaving, but for those leaving for
//     another job's claim) could free a gang on nodes no earlier
//     reservation needs before the job's time limit ends, choose the one
//     with the fewest leaves losing the least GPU-time, emit Preemptions,
//     hold the nodes for the job until its time limit from when the last
//     victim has left (its grace), its expected start; else
//  7. reservation (timeline.go), for the first Options.ReserveDepth (100)
//     blocked jobs: each candidate's earliest time it can hold the request
//     for the job's time limit, the first instant enough of them are free
//     in number (quickselect), then later instants until the topology rules
//     accept a gang; its uses block later jobs (backfill). The first blocked
//     job of a partition waits for Resources, the others, and jobs that fit
//     now but would delay a reservation, for Priority.
//
// Dependency and JobHeldUser are reserved for the controller.
//
// Feasible answers the submit-time question, "could this job ever run
// here", on the partition's registered nodes regardless of their state and
// usage, with a message naming the requirement that cannot be met.
//
// # Speed
//
// BenchmarkSchedule10k (10,000 8-GPU nodes on leaves of 32, half busy,
// 10,000 pending jobs from 1 GPU to 256 nodes) measures a pass; `make bench`
// runs it beside BenchmarkSchedule (1,000 nodes), each reporting p50 and p99
// pass time, peak heap and allocation per pass.
package scheduler
