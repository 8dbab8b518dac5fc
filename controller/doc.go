// Package controller is Phalanx's control plane: one replica of a Raft
// group of 1, 3 or 5 (hashicorp/raft; its log a raft-wal write-ahead log,
// its stable store the log's bbolt meta file), the gRPC services users
// and agents call, and, on the leader only, the scheduling loop, node
// liveness and retention.
//
// The pieces and their words, by file:
//
//   - Replica (server.go, raft.go, logstore.go): Raft, the store (package
//     store) and the FSM (package controller/fsm) that applies committed
//     commands to it; the log and stable store are in DataDir/wal
//     (logstore.go moves an older release's raft.db there once). A
//     new cluster bootstraps once, with every configured voter; later starts
//     resume from disk. Commands carry IDs and times decided by the leader
//     before proposing, so every replica applies the same bytes to the same
//     result; a proposal waits for its commit within the caller's deadline.
//   - Routing (route.go): any replica takes any call. Writes, and reads
//     (which are linearizable: the leader confirms it still leads before
//     answering), are forwarded to the leader within the caller's deadline;
//     the reply names the leader so clients go there next. A replica with no
//     leader answers UNAVAILABLE with a NotLeader detail. Reads marked stale
//     are answered from the replica's own state.
//   - Access (authn.go, authz.go): the access type takes the caller's
//     identity from its credential or certificate, and decides what that
//     caller may do (users their own jobs, operators any job,
//     administrators the cluster), with an audit line for each refusal.
//   - API (api_jobs.go, api_cancel.go, api_update.go, api_nodes.go,
//     api_events.go, api_controllers.go, validate.go, input.go, convert.go):
//     the user-facing service. Wire types stop at convert.go. Submits,
//     cancels and job updates are exactly-once by the client's request ID.
//   - Configuration (reconfigure.go, nodeconf.go): scontrol reconfigure
//     and a new leader apply the config file's partitions and NodeName
//     lines through Raft; what cannot change live is refused whole.
//   - Logs and steps (logs.go, steps.go): the leader reads a task's output,
//     and runs srun --jobid steps, through the ServeLogs stream its node's
//     agent keeps open to it.
//   - Node health (health.go): agents' heartbeats carry their failing
//     checks; a verdict that changes something is proposed, and the store
//     drains or resumes the node and records the event (cluster.SetHealth).
//   - Membership (api_controllers.go, register.go): voters are added and
//     removed at run time, and leadership moved on request; each replica
//     records its API address in the replicated state, so that others can
//     forward to it and list it.
//   - Backup (backup.go): a consistent copy of the state streamed from the
//     leader, and its restore into a new cluster as a Raft user snapshot.
//   - Leadership (leader.go): a new leader first applies everything
//     committed before it (a barrier), adopts the configured partitions,
//     then starts its duties. Until then it forwards nothing to itself and
//     accepts no writes.
//   - Liveness (liveness.go): heartbeats are not replicated. The leader
//     keeps the last heartbeat of each node in memory; a node silent for
//     NodeTTL is proposed DOWN, which ends its jobs' attempts with
//     NODE_FAIL. After a leader change every node gets a full TTL of grace,
//     and nothing is placed on a node the new leader has not heard from
//     (it shows as not responding until then). Nodes whose tasks fence
//     get a lease with each answer (lease.go), shorter than the TTL, so
//     that their tasks have stopped by the time the node is declared.
//   - Pending gate (gate.go): the gate type reads the state to decide
//     which pending jobs may not start whatever the resources (held,
//     before --begin, waiting on a dependency or an array's throttle) and
//     checks a submitted dependency; the scheduler never sees those jobs.
//   - Scheduling pass (schedule.go, preempt.go, fairshare.go): on the
//     leader, on events (submit, task end, node change), coalesced, and
//     every SchedInterval: take the in-memory state, call
//     scheduler.Schedule, propose the preemptions and placements; the store
//     re-checks each gang when it applies the command and places it whole
//     or skips it.
//   - Assignments (nodes.go): what a node should run is
//     derived, not stored: the unended tasks of live jobs allocated on it,
//     with stop set once the job is terminal. Agents hold a stream that is
//     re-sent whenever that node's set changes.
//   - Retention (janitor.go): the leader proposes Expire for finished jobs
//     past PurgeJobAfter, submit requests past RequestTTL and node events
//     past PurgeEventAfter.
package controller
