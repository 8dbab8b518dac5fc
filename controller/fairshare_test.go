package controller

import (
	"context"
	"testing"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// Fair share: an account that has used the cluster ranks below one that
// has not. With ml's job holding the only node, ml's next job and then
// vision's wait; when the node frees, vision's goes first although ml's
// was submitted before it, and squeue shows why: a higher priority.
func TestFairShareRanksTheAccountThatUsedLessFirst(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	api := &controllerService{s: s}
	ctx := context.Background()
	submit := func(account string) uint64 {
		spec := testSpec(1, 8)
		spec.Account = account
		resp, err := s.submit(ctx, spec, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp.JobId
	}
	first := submit("ml")
	j := waitState(t, s, cluster.JobID(first), cluster.JobConfiguring)
	mlNext, vision := submit("ml"), submit("vision")
	s.schedulePass(ctx, &queueHead{}, true) // a full pass: the fair-share table

	prio := map[uint64]int64{}
	resp, err := api.ListJobs(ctx, &phalanxv1.ListJobsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, lj := range resp.Jobs {
		prio[lj.Id] = lj.Priority
	}
	// Two accounts, ml with all the usage: F = 2^-2 against vision's 1.
	if d := prio[vision] - prio[mlNext]; d < DefaultFairShareWeight*3/4-5 || d > DefaultFairShareWeight*3/4+5 {
		t.Errorf("priorities %v: vision's job %d above ml's; want about %d (10000 × (1 - 2^-2))", prio, d, DefaultFairShareWeight*3/4)
	}

	share, err := api.GetFairShare(ctx, &phalanxv1.GetFairShareRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(share.Accounts) != 2 || share.Weight != DefaultFairShareWeight || share.HalfLifeSeconds != 7*24*3600 {
		t.Fatalf("sshare: %v; want ml and vision, the default weight and half-life", share)
	}
	if ml, v := share.Accounts[0], share.Accounts[1]; ml.Account != "ml" || ml.EffectiveUsage != 1 || ml.FairShare != 0.25 ||
		ml.Priority != DefaultFairShareWeight/4 || ml.NormShares != 0.5 || v.Account != "vision" || v.FairShare != 1 || v.RawUsage != 0 {
		t.Errorf("sshare: %v; want ml with all the usage (F 0.25), vision none (F 1), half the shares each", share.Accounts)
	}

	ns := &nodeService{s: s}
	if _, err := ns.ReportTaskStatus(ctx, &phalanxv1.ReportTaskStatusRequest{
		Node: "n1", JobId: first, Attempt: int32(j.Attempt), State: string(cluster.TaskExited),
	}); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, cluster.JobID(vision), cluster.JobConfiguring)
	if j, _ := s.store.Job(cluster.JobID(mlNext)); j.State != cluster.JobPending {
		t.Errorf("ml's second job is %s; want it pending behind vision's", j.State)
	}
}

// With PriorityWeightFairshare=0 (FairShareWeight negative here) the
// older job goes first, as without fair share.
func TestNoFairShare(t *testing.T) {
	s := newTestServer(t, Config{FairShareWeight: -1})
	register(t, s, nil, "n1")
	ctx := context.Background()
	if share, err := (&controllerService{s: s}).GetFairShare(ctx, &phalanxv1.GetFairShareRequest{}); err != nil || share.Weight != 0 || len(share.Accounts) != 0 {
		t.Errorf("sshare with fair share off: %v, %v; want weight 0, no accounts", share, err)
	}
	submit := func(account string) uint64 {
		spec := testSpec(1, 8)
		spec.Account = account
		resp, err := s.submit(ctx, spec, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp.JobId
	}
	first := submit("ml")
	j := waitState(t, s, cluster.JobID(first), cluster.JobConfiguring)
	mlNext, vision := submit("ml"), submit("vision")
	ns := &nodeService{s: s}
	if _, err := ns.ReportTaskStatus(ctx, &phalanxv1.ReportTaskStatusRequest{
		Node: "n1", JobId: first, Attempt: int32(j.Attempt), State: string(cluster.TaskExited),
	}); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, cluster.JobID(mlNext), cluster.JobConfiguring)
	if j, _ := s.store.Job(cluster.JobID(vision)); j.State != cluster.JobPending {
		t.Errorf("vision's job is %s; want it pending behind the older one", j.State)
	}
}
