// Package store keeps the controller's replicated state: jobs, nodes,
// partitions, the replicas' addresses, the submit requests already seen
// and the nodes' events.
// It is what the Raft FSM applies commands to, and what every read and the
// scheduler's snapshot come from.
//
// # Two copies: memory first, bbolt behind
//
// The state lives in memory, decoded, and in one bbolt database:
//
//   - Memory holds everything a command or the scheduler needs: the active
//     jobs (not terminal, or still holding resources) with their scripts and
//     environments, nodes, partitions, replicas, submit requests, for
//     finished jobs only their IDs and end times, and for node events only
//     their numbers and times. Applying a command reads and changes memory
//     only, so applying costs the same with 10 jobs queued or 10,000, and
//     reads (State, ActiveJobs, Job) never decode.
//     Values reachable from memory are never changed in place: a command
//     replaces what it changes (copy on write), so what a reader got stays
//     valid and consistent without a lock. Callers must not modify them.
//   - bbolt holds all of it, finished jobs included. Each applied command
//     leaves a list of puts and deletes; a writer goroutine commits whatever
//     has accumulated in one transaction with one fsync, together with the
//     applied index of the last command in it (write-behind). Durability
//     does not depend on it: an acknowledged command is in the Raft log of a
//     quorum. If the process dies before the writer commits, the database is
//     at an older applied index and Raft replays the entries after it.
//
// Reads of finished jobs and of events go to bbolt; they first wait until
// the writer has committed everything applied when the read began, so a job
// that has just finished, or an event just recorded, is never missing.
//
// # Node events
//
// A command that registers a node, sets its state or records a new verdict
// of its health checks also records the event (cluster.Event), in the same
// apply and so in the same transaction: every replica has the same events,
// each once, and a replayed entry records none. Events are numbered from 1
// in the order they were applied (meta/nextevent), and never renumbered.
// Jobs have events too: a checkpoint step complete, what an agent saw of a
// task, and every requeue with its cause, which putJob records whenever a
// command raises a job's attempt number (cluster.RequeuedEvent), whatever
// the path: a restart, a preemption, scontrol requeue; from the state's
// feature level FeatureRequeueEvents on (features.go, meta/features), so
// that a replica of an earlier release, which records none, numbers the
// events as the others do.
//
// # Applied index
//
// Every command carries the index of its Raft log entry. A command whose
// index is not above the applied index is a no-op: after a restart Raft
// replays entries the database already holds. A command the store rejects
// (an unknown job, a conflicting ID: an error wrapping one of cluster's
// sentinels, see IsRejection) changes nothing, but its index is still
// recorded. Every method checks what can reject it before changing
// anything, so a rejection never leaves half a change.
//
// # Schema (version 3)
//
//	meta/                      bucket
//	  version      -> uint64   schema version, 3
//	  applied      -> uint64   index of the last applied Raft entry
//	  nextjob      -> uint64   smallest job ID above every submitted job
//	  nextevent    -> uint64   the number of the next node event (absent: 1)
//	  partsconfig  -> string   digest of the config's partitions last applied
//	  features     -> uint64   the state's feature level (absent: 0; features.go)
//	jobs/                      bucket: active jobs
//	  <id>         -> statev1.Job         spec and status, without payload
//	history/                   bucket: finished jobs (moved from jobs/)
//	  <id>         -> statev1.Job
//	payloads/                  bucket: written once, at submit
//	  <id>         -> statev1.JobPayload  script and environment
//	nodes/
//	  <name>       -> statev1.Node
//	partitions/                in configuration order
//	  <seq>        -> statev1.Partition
//	requests/                  exactly-once submits, cancels, signals, updates
//	  <request id>           -> statev1.SubmitRequest  a submit: the job it created
//	  "cancel" 0x00 <request id> -> statev1.SubmitRequest  a cancel: the jobs it cancelled
//	  "signal" 0x00 <request id> -> statev1.SubmitRequest  a signal: the jobs it reached
//	  "update" 0x00 <job> 0x00 <request id> -> statev1.SubmitRequest  an update of a job (<job> in decimal)
//	controllers/
//	  <raft id>    -> statev1.Controller
//	events/                    node events, since version 3
//	  <seq>        -> statev1.Event
//
// Records are protobuf messages of api/phalanx/state/v1 (package codec
// converts): fields are added, never renamed or renumbered, so a record
// written by one version reads the same in the next. Integers (uint64
// values, <id>, an event's <seq>) are 8-byte big-endian so that keys sort
// numerically; a partition's <seq> is a 4-byte big-endian position. A job is rewritten on every change, but
// its payload (the bulk of it: script and exported environment) is written
// once and never sent in lists.
//
// # Retention
//
// Finished jobs, submit requests and node events are forgotten by an
// Expire command the leader proposes with the cut-off times and counts, so
// that every replica forgets the same ones.
//
// # Snapshots
//
// Snapshot waits for the writer, then writes a consistent copy of the whole
// database; its applied index may be above the Raft snapshot's, which is
// harmless since later entries up to it are skipped. Restore replaces the
// database with one, atomically (temporary file, fsync, rename, reopen), and
// reloads memory from it.
//
// # Migrations
//
// Open brings an older database to the current version, one step at a time,
// each step in its own transaction (see migrations; version 1 stored JSON of
// the in-memory structs, frozen in migrate_v1.go; version 3 added the
// events bucket). A database from a newer version is refused with a
// message that says to upgrade. testdata/vN holds a database of each
// version, and the tests open each one.
package store
