// Package process runs tasks as plain host processes, for jobs that name no
// container image.
//
// Each task is started in a process group of its own (Setpgid), so that a
// signal reaches everything the task spawned: Signal sends it to the whole
// group with kill(-pgid, sig). Wait returns when the task's first process has
// exited and the group is empty, which it learns by polling kill(-pgid, 0)
// with a bounded interval (processes that are only zombies, waiting for a
// parent that never reaps them, count as gone); the supervisor does the
// polling.
//
// Tasks outlive the agent that started them. Each runs under a supervisor
// (shim.go) started as "phalanx-shim <task ID>", in a session of its own:
// cmd/phalanx-shim, a small executable of this package (WithShim), or by
// default the agent's own executable started again. The supervisor starts the task,
// records it in the runtime's directory (record.go), waits for its group
// to be empty and records how it ended; Wait returns what it recorded.
// After an agent restart, a new Runtime on the same directory finds every
// task again (Recover): running, ended meanwhile, or lost with its
// supervisor. Once the agent holds a lease (runtime.Fencer, lease.go), the
// supervisors also kill their tasks when it ends without a new one, the
// agent running or not. Every binary that uses this runtime must call
// RunShimIfAsked first thing in main (and test binaries in TestMain).
//
// Output goes straight to the Spec's files, opened for append and handed to
// the child as its descriptors: nothing is copied through the agent, and the
// task keeps writing when the agent restarts. When Spec.Stdout and
// Spec.Stderr name the same file, the child gets one descriptor for both, so
// their lines interleave in order.
//
// A Spec whose UID or GID differs from the agent's runs with those
// credentials (the agent must be root for that); its supplementary groups are
// dropped.
package process
