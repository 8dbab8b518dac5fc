package cluster

import (
	"cmp"
	"path/filepath"
	"slices"
)

// Checkpoints. A job that names a checkpoint store (sbatch
// --checkpoint-dir, on storage every node shares) has each of its tasks
// write its checkpoints to a node-local directory and commit each step;
// the task's agent copies the step to the store and reports it
// (CommitCheckpoint). A step is complete when every rank of the attempt has
// committed it: the job's CheckpointStep, from which a relaunch resumes.
// Commits of a step not yet complete are kept per step until it is, or
// until the attempt ends (a new attempt resumes from the last complete step
// and writes its own).

// CheckpointSpec is where a job keeps its checkpoints.
type CheckpointSpec struct {
	Dir  string // the store: an absolute path on shared storage; "" for none
	Keep int    // complete steps kept in the store; 0: DefaultCheckpointKeep
}

// Checkpoint bounds.
const (
	DefaultCheckpointKeep = 2
	MaxCheckpointKeep     = 1000
	// MaxPendingSteps bounds the steps kept waiting for their other ranks.
	MaxPendingSteps = 16
)

// Validate says what is wrong with c.
func (c CheckpointSpec) Validate() error {
	if c.Dir == "" {
		if c.Keep != 0 {
			return Errorf(ErrInvalid, "--checkpoint-keep needs --checkpoint-dir")
		}
		return nil
	}
	if !filepath.IsAbs(c.Dir) {
		return Errorf(ErrInvalid, "--checkpoint-dir=%s: give an absolute path on storage every node shares", c.Dir)
	}
	if c.Keep < 0 || c.Keep > MaxCheckpointKeep {
		return Errorf(ErrInvalid, "--checkpoint-keep=%d: give 1 to %d", c.Keep, MaxCheckpointKeep)
	}
	return nil
}

// KeepSteps is how many complete steps the store keeps.
func (c CheckpointSpec) KeepSteps() int {
	if c.Keep == 0 {
		return DefaultCheckpointKeep
	}
	return c.Keep
}

// CheckpointCommits is the ranks that committed one step.
type CheckpointCommits struct {
	Step  int64
	Ranks []int // sorted
}

// CommitCheckpoint records that rank of the job's attempt committed step.
// A commit of another attempt, of a job without a store, of a rank the job
// does not have, or of a step not newer than the last complete one changes
// nothing. It reports whether the job changed, and whether the step became
// complete.
func CommitCheckpoint(j *Job, attempt, rank int, step int64) (changed, complete bool) {
	if j.Checkpoint.Dir == "" || attempt != j.Attempt || j.Alloc == nil || rank < 0 || rank >= len(j.Tasks) || step < 0 {
		return false, false
	}
	if j.Checkpointed && step <= j.CheckpointStep {
		return false, false
	}
	i := slices.IndexFunc(j.CheckpointPending, func(c CheckpointCommits) bool { return c.Step == step })
	if i < 0 {
		if len(j.CheckpointPending) >= MaxPendingSteps {
			// Ranks that never agree on their steps: forget the oldest.
			j.CheckpointPending = slices.Delete(j.CheckpointPending, 0, 1)
		}
		j.CheckpointPending = append(j.CheckpointPending, CheckpointCommits{Step: step})
		slices.SortFunc(j.CheckpointPending, func(a, b CheckpointCommits) int { return cmp.Compare(a.Step, b.Step) })
		i = slices.IndexFunc(j.CheckpointPending, func(c CheckpointCommits) bool { return c.Step == step })
	}
	c := &j.CheckpointPending[i]
	k, found := slices.BinarySearch(c.Ranks, rank)
	if found {
		return false, false
	}
	c.Ranks = slices.Insert(c.Ranks, k, rank)
	if len(c.Ranks) < len(j.Tasks) {
		return true, false
	}
	j.Checkpointed, j.CheckpointStep = true, step
	j.CheckpointPending = slices.DeleteFunc(j.CheckpointPending, func(c CheckpointCommits) bool { return c.Step <= step })
	if len(j.CheckpointPending) == 0 {
		j.CheckpointPending = nil
	}
	return true, true
}

// clonePending copies pending commits, their ranks included.
func clonePending(p []CheckpointCommits) []CheckpointCommits {
	if p == nil {
		return nil
	}
	out := make([]CheckpointCommits, len(p))
	for i, c := range p {
		out[i] = CheckpointCommits{Step: c.Step, Ranks: slices.Clone(c.Ranks)}
	}
	return out
}
