// Package scheduler decides where pending jobs run. It is a pure function:
//
//	plan := scheduler.Schedule(snapshot, now)
//
// takes an immutable Snapshot of the cluster (nodes, partitions, pending and
// live jobs, the fabric topology) and a time, and returns a Plan. It does no
// I/O, reads no clock and draws no random numbers, so the same input always
// gives the same plan; the controller re-checks the plan against the current
// state before committing it through Raft.
//
// # Words
//
//   - Free capacity: what a node has left once the live jobs' allocations
//     (cluster.Usage) and this pass's earlier placements are taken off: GPU
//     indices, CPUs, memory.
//   - Candidate: a node a job may use at all: in the job's partition, UP, and
//     with the GPU model the job asks for.
//   - Feasible node: a candidate whose free capacity covers the job's
//     per-node request right now.
//   - Gang: the set of Nodes feasible nodes a job gets, all at once or not at
//     all. Its nodes are grouped by leaf switch.
//   - Leaf span: how many leaf switches a gang touches; fewer is better, since
//     traffic between leaves crosses the spine.
//   - Best fit: among leaves that could host (part of) a gang, use the one
//     with the least sufficient room, leaving big holes for big jobs.
//   - Pending reason: why a job did not start (squeue's REASON column):
//     Resources, Priority, PartitionDown, ReqNodeNotAvail, BadConstraints.
//
// # Pipeline
//
// Schedule orders pending jobs (partition PriorityTier, then Job.Priority,
// then submit time, then ID) and, for each, runs the placement steps, each
// its own small type:
//
//  1. candidates (candidates.go): the partition's UP nodes with the right
//     GPU model, in name order;
//  2. feasibility (feasible.go): keep those whose free capacity fits the
//     per-node request;
//  3. gang assembly (gang.go): group by leaf and pick the fewest leaves that
//     hold Nodes feasible nodes;
//  4. scoring (gang.go): among leaf sets of that size, best fit: the fullest
//     leaves first, and in a leaf the nodes with the fewest free GPUs;
//  5. choice (schedule.go): take the gang's capacity off the free map,
//     record a Placement, or record why the job waits.
//
// For a job that waits for Resources, expected.go estimates its start: the
// running jobs (and this pass's placements) release their capacity at the
// end of their time limits, in order, until the gang fits.
//
// Strict priority: when a job cannot be placed, the jobs behind it in the
// same partition wait with reason Priority, so a big gang is not starved by
// a stream of small jobs. Backfill and preemption replace this rule later,
// behind the same Schedule signature.
//
// Feasible answers the submit-time question, "could this job ever run here",
// on the partition's registered nodes regardless of their state and usage.
package scheduler
