// Package fsm is the controller's Raft state machine: the commands the Raft
// log carries, their encoding, and the dispatcher that applies each one to
// the store.
//
// A command is a Go value (SubmitJob, PlaceJobs, ...) that the leader builds
// with every ID and time already decided, encodes with Encode and proposes.
// Every replica decodes the same bytes and applies them with one store call
// at the entry's Raft index, so every replica reaches the same state.
//
// Encoding: the byte 0xF1, then a protobuf phalanx.state.v1.Command (see
// api/phalanx/state/v1/commands.proto), whose oneof field numbers are the
// command types, append only. Entries written by the first release (a type
// byte from 1 to 9, then JSON) are still decoded (legacy.go), so an upgraded
// replica replays an old log. A command this binary does not know, or
// cannot decode, stops the replica: applying part of the log would fork its
// state from the others'.
//
// The FSM implements raft.BatchingFSM: Raft hands it every entry committed
// since the last call, and the store commits them to disk in one
// transaction. Snapshots are the store's database (store.Snapshot).
package fsm
