// Package process runs tasks as plain host processes, for jobs that name no
// container image.
//
// Each task is started in a process group of its own (Setpgid), so that a
// signal reaches everything the task spawned: Signal sends it to the whole
// group with kill(-pgid, sig). Wait returns when the task's first process has
// exited and the group is empty, which it learns by polling kill(-pgid, 0)
// with a bounded interval (processes that are only zombies, waiting for a
// parent that never reaps them, count as gone).
//
// Tasks outlive the agent that started them. A task has a PGID method
// (interface{ PGID() int }) so the agent can record its group and kill the
// group from its next run should it die without stopping it.
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
