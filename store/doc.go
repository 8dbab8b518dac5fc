// Package store keeps the controller's replicated state (jobs, nodes,
// partitions) in one bbolt database. It is what the Raft FSM applies
// commands to, and what every read and the scheduler's snapshot come from.
//
// # Applied index
//
// Every write takes the index of the Raft log entry it applies and records
// it as the applied index in the same transaction as the change. A write
// whose index is not above the applied index is a no-op: after a restart
// Raft replays entries the database already holds, and they must not apply
// twice. A command the store rejects (an unknown job, a conflicting ID)
// changes nothing, but its index is still recorded.
//
// # Schema (version 1)
//
//	meta/                      bucket
//	  version      -> uint64   schema version, 1
//	  applied      -> uint64   index of the last applied Raft entry
//	  nextjob      -> uint64   smallest job ID never submitted
//	jobs/                      bucket: every job ever submitted
//	  <id>         -> JSON     cluster.Job
//	active/                    bucket: index of jobs that are not terminal
//	  <id>         -> ""       or still hold resources (cluster.Job.Live)
//	nodes/                     bucket
//	  <name>       -> JSON     cluster.Node
//	partitions/                bucket, in configuration order
//	  <seq>        -> JSON     cluster.Partition
//
// Integers (uint64 values, <id>) are 8-byte big-endian so that keys sort
// numerically; <seq> is a 4-byte big-endian position. The active bucket is
// maintained by the one function that writes jobs, so scheduling and
// assignment reads never scan finished history.
//
// # Snapshots
//
// Snapshot writes a consistent copy of the whole database; Restore replaces
// the database with one, atomically (temporary file, fsync, rename, reopen).
// Reads and writes already running finish on the old database first; those
// that start during the swap wait for it and see the new one.
//
// # Migrations
//
// Open brings an older database to the current version, one step at a
// time, each step in its own transaction (see migrations). A database from
// a newer version is refused.
package store
