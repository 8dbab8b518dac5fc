package controller

import (
	"context"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// Fair share: an account that has used the cluster ranks below one that
// has not. With ml's job holding the only node, ml's next job and then
// vision's wait; when the node frees, vision's goes first although ml's
// was submitted before it, and squeue shows why: a higher priority.
func TestFairShareRanksTheAccountThatUsedLessFirst(t *testing.T) {
	s, first, mlNext, vision := accountJobs(t, Config{})
	api := &controllerService{s: s}
	ctx := context.Background()
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

	endJob(t, s, first)
	waitState(t, s, cluster.JobID(vision), cluster.JobConfiguring)
	if j, _ := s.store.Job(cluster.JobID(mlNext)); j.State != cluster.JobPending {
		t.Errorf("ml's second job is %s; want it pending behind vision's", j.State)
	}
}

// With PriorityWeightFairshare=0 (FairShareWeight negative here) the
// older job goes first, as without fair share.
func TestNoFairShare(t *testing.T) {
	s, first, mlNext, vision := accountJobs(t, Config{FairShareWeight: -1})
	if share, err := (&controllerService{s: s}).GetFairShare(context.Background(), &phalanxv1.GetFairShareRequest{}); err != nil || share.Weight != 0 || len(share.Accounts) != 0 {
		t.Errorf("sshare with fair share off: %v, %v; want weight 0, no accounts", share, err)
	}
	endJob(t, s, first)
	waitState(t, s, cluster.JobID(mlNext), cluster.JobConfiguring)
	if j, _ := s.store.Job(cluster.JobID(vision)); j.State != cluster.JobPending {
		t.Errorf("vision's job is %s; want it pending behind the older one", j.State)
	}
}

// accountJobs is a one-node cluster on which ml's first job runs, and the
// jobs of ml and then vision queued behind it, one node each.
func accountJobs(t *testing.T, cfg Config) (s *Server, first *cluster.Job, mlNext, vision uint64) {
	t.Helper()
	s = newTestServer(t, cfg)
	register(t, s, nil, "n1")
	submit := func(account string) uint64 {
		spec := testSpec(1, 8)
		spec.Account = account
		resp, err := s.submit(context.Background(), spec, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp.JobId
	}
	id := submit("ml")
	first = waitState(t, s, cluster.JobID(id), cluster.JobConfiguring)
	return s, first, submit("ml"), submit("vision")
}

// endJob reports job j's only task ended.
func endJob(t *testing.T, s *Server, j *cluster.Job) {
	t.Helper()
	ns := &nodeService{s: s}
	if _, err := ns.ReportTaskStatus(context.Background(), &phalanxv1.ReportTaskStatusRequest{
		Node: j.Tasks[0].Node, JobId: uint64(j.ID), Attempt: int32(j.Attempt), State: string(cluster.TaskExited),
	}); err != nil {
		t.Fatal(err)
	}
}

// A job without --account counts against its user, listed apart from the
// accounts (an account named like the user is another group).
func TestFairShareOfJobsWithoutAccount(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	ctx := context.Background()
	for _, account := range []string{"", "alice"} {
		spec := testSpec(1, 8)
		spec.Account = account
		if _, err := s.submit(ctx, spec, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	share, err := (&controllerService{s: s}).GetFairShare(ctx, &phalanxv1.GetFairShareRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(share.Accounts) != 2 || share.Accounts[0].Account != "alice" || share.Accounts[0].User != "" ||
		share.Accounts[1].Account != "" || share.Accounts[1].User != "alice" || share.Accounts[1].NormShares != 0.5 {
		t.Errorf("sshare: %v; want account alice, then user alice without account, a share each", share.Accounts)
	}
}

// The fair-share table alone: the terms a full pass computes from the
// usage (F = 2^(-U/S), S = 1/3 for three accounts here), and the full
// weight for an account the pass did not see.
func TestFairShareTable(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	a, b, c, d := cluster.ShareGroup{Account: "a"}, cluster.ShareGroup{Account: "b"}, cluster.ShareGroup{Account: "c"}, cluster.ShareGroup{Account: "d"}
	f := &fairShare{weight: 10000, usage: func(at time.Time) map[cluster.ShareGroup]float64 {
		if !at.Equal(now) {
			t.Errorf("usage read at %v; want %v", at, now)
		}
		return map[cluster.ShareGroup]float64{a: 300, b: 100}
	}}
	job := func(g cluster.ShareGroup) *cluster.Job {
		return &cluster.Job{Account: g.Account, State: cluster.JobPending}
	}
	if term := f.term(); term(job(a)) != 10000 {
		t.Errorf("before any pass: %d; want the whole weight, 10000", term(job(a)))
	}
	f.update([]*cluster.Job{job(c), {Account: "d", State: cluster.JobRunning}}, now)
	term := f.term()
	for g, want := range map[cluster.ShareGroup]int64{a: 2102, b: 5946, c: 10000, d: 10000} {
		if got := term(job(g)); got != want {
			t.Errorf("account %s: %d; want %d", g.Account, got, want)
		}
	}
	if off := (&fairShare{weight: 0}); off.term() != nil {
		t.Error("with PriorityWeightFairshare=0 the hook is set; want none")
	}
}
