package cluster

import (
	"strings"
	"testing"
)

// A step is complete once every rank of the attempt committed it; commits
// of other attempts, unknown ranks, old steps and repeats change nothing;
// a requeue forgets the steps not yet complete.
func TestCommitCheckpoint(t *testing.T) {
	j := placedJob(t)
	j.Checkpoint = CheckpointSpec{Dir: "/shared/ckpt"}
	commit := func(attempt, rank int, step int64, wantChanged, wantComplete bool) {
		t.Helper()
		changed, complete := CommitCheckpoint(j, attempt, rank, step)
		if changed != wantChanged || complete != wantComplete {
			t.Errorf("commit attempt %d rank %d step %d: changed %v complete %v; want %v %v", attempt, rank, step, changed, complete, wantChanged, wantComplete)
		}
	}
	commit(0, 0, 10, true, false)
	commit(0, 0, 10, false, false) // again
	commit(1, 1, 10, false, false) // another attempt
	commit(0, 2, 10, false, false) // no rank 2
	commit(0, 1, 20, true, false)
	if j.Checkpointed {
		t.Fatal("a step committed by some ranks only is complete")
	}
	commit(0, 1, 10, true, true)
	if !j.Checkpointed || j.CheckpointStep != 10 || len(j.CheckpointPending) != 1 || j.CheckpointPending[0].Step != 20 {
		t.Fatalf("after step 10: %v %d pending %+v", j.Checkpointed, j.CheckpointStep, j.CheckpointPending)
	}
	commit(0, 0, 5, false, false) // older than the complete one
	c := j.Update()
	CommitCheckpoint(c, 0, 0, 20)
	if r := j.CheckpointPending[0].Ranks; len(r) != 1 || r[0] != 1 {
		t.Error("a commit to an updated copy changed the original's ranks")
	}
	Requeue(j, "test")
	if j.CheckpointPending != nil || !j.Checkpointed || j.CheckpointStep != 10 {
		t.Errorf("after a requeue: pending %+v, step %d (%v); want none pending, step 10 kept", j.CheckpointPending, j.CheckpointStep, j.Checkpointed)
	}
	if changed, _ := CommitCheckpoint(placedJob(t), 0, 0, 1); changed {
		t.Error("a job without a store recorded a checkpoint")
	}
}

func TestCheckpointSpecValidate(t *testing.T) {
	for _, tc := range []struct {
		spec CheckpointSpec
		want string
	}{
		{CheckpointSpec{}, ""},
		{CheckpointSpec{Dir: "/shared/c", Keep: 3}, ""},
		{CheckpointSpec{Dir: "relative"}, "give an absolute path"},
		{CheckpointSpec{Keep: 2}, "--checkpoint-keep needs --checkpoint-dir"},
		{CheckpointSpec{Dir: "/c", Keep: MaxCheckpointKeep + 1}, "--checkpoint-keep=1001: give 1 to 1000"},
	} {
		err := tc.spec.Validate()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want %q", tc.spec, err, tc.want)
		}
	}
	if (CheckpointSpec{Dir: "/c"}).KeepSteps() != DefaultCheckpointKeep {
		t.Error("the default keep")
	}
}
