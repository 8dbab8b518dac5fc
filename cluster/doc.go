// Package cluster defines Phalanx's domain model: jobs, their attempts and
// tasks, nodes, partitions and allocations, with the Slurm state names users
// know. It is plain data with no I/O, shared by the scheduler, the store, the
// controller and the agent. Wire (protobuf) types never appear here; the
// gRPC edge converts.
//
// Words used across the project:
//
//   - Job: what a user submits. A gang job asks for Nodes nodes with
//     GPUsPerNode GPUs on each and starts on all of them at once or not at all.
//   - Task: the job's instance on one node; its rank is the node's position in
//     the allocation (0 is the master).
//   - Attempt: one placement of a job, numbered from 0.
//   - Allocation: the nodes, GPU indices, CPUs and memory an attempt holds.
//     Resources are held from placement until every task has reported its end.
package cluster
