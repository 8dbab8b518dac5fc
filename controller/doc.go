// Package controller is Phalanx's control plane: a Raft replica
// (hashicorp/raft, log and stable store on bbolt) whose finite-state machine
// applies commands to the bbolt-backed store, the gRPC services users and
// agents call, and, on the leader only, the scheduling loop and node
// liveness.
//
// The pieces and their words:
//
//   - Command: one replicated change (submit a job, place jobs, a task
//     report, cancel, register a node, set a node's state, set partitions).
//     Command types are append-only numbers; the payload is JSON. IDs and
//     timestamps are decided by the leader before proposing, so every
//     replica applies the same bytes to the same result.
//   - FSM: decodes a command and calls exactly one store method with the
//     Raft index. The store writes that index in the same transaction, so a
//     restarted replica never applies an entry twice.
//   - Scheduling pass: on the leader, on events (submit, task end, node
//     change) and every SchedInterval: read a consistent state from the
//     store, call scheduler.Schedule, propose the placements; the store
//     re-checks each gang against the state at apply time and commits it whole
//     or skips it.
//   - Liveness: heartbeats are not replicated. The leader keeps the last
//     heartbeat of each node in memory; a node silent for NodeTTL is proposed
//     DOWN, which ends its jobs' attempts with NODE_FAIL. After a leader change
//     every node gets a full TTL of grace.
//   - Assignments: what a node should run is derived, not stored: the tasks
//     of live jobs allocated on it, with stop set once the job is terminal.
//     Agents hold a stream that is re-sent whenever the derived set changes.
package controller
