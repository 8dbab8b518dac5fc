package controller

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/scheduler"
)

// Fair share (cluster's fair share: Slurm's classic multifactor formula):
// each full scheduling pass reads every account's decayed usage from the
// store and turns it into the term PriorityWeightFairshare × F that the
// account's jobs get; the quick passes between two full ones, squeue's and
// scontrol's priorities and scontrol top use the same table. An account
// the last full pass did not see (no usage, no pending job then) has F = 1.

// fairShareTable is the fair-share term by account (FairShareGroup).
type fairShareTable map[cluster.ShareGroup]int64

// fairShare keeps the leader's fair-share table, computed from the usage
// the store records.
type fairShare struct {
	weight int64                                          // PriorityWeightFairshare; 0 or less: off
	usage  func(time.Time) map[cluster.ShareGroup]float64 // decayed usage by account at a time

	mu    sync.Mutex
	table fairShareTable // as the last full pass found it
}

// now is every account's usage and factor at now: the accounts
// (and users without one) with usage, and those of the pending jobs among
// active, accounts first, by name.
func (f *fairShare) now(active []*cluster.Job, now time.Time) (groups []cluster.ShareGroup, usage, factors map[cluster.ShareGroup]float64) {
	usage = f.usage(now)
	seen := map[cluster.ShareGroup]bool{}
	add := func(g cluster.ShareGroup) {
		if !seen[g] {
			seen[g] = true
			groups = append(groups, g)
		}
	}
	for g := range usage {
		add(g)
	}
	for _, j := range active {
		if j.State == cluster.JobPending {
			add(j.FairShareGroup())
		}
	}
	slices.SortFunc(groups, cluster.ShareGroup.Compare)
	return groups, usage, cluster.FairShareFactors(usage, groups)
}

// termOf is what a job of an account with factor f gets.
func (f *fairShare) termOf(factor float64) int64 {
	return int64(math.Round(float64(f.weight) * factor))
}

// update computes the table from the usage by account at now and
// the accounts of the pending jobs among active.
func (f *fairShare) update(active []*cluster.Job, now time.Time) {
	if f.weight <= 0 {
		return
	}
	_, _, factors := f.now(active, now)
	table := make(fairShareTable, len(factors))
	for g, factor := range factors {
		table[g] = f.termOf(factor)
	}
	f.mu.Lock()
	f.table = table
	f.mu.Unlock()
}

// GetFairShare is sshare: each account's usage and factor now.
func (c *controllerService) GetFairShare(ctx context.Context, _ *phalanxv1.GetFairShareRequest) (*phalanxv1.GetFairShareResponse, error) {
	s := c.s
	out := &phalanxv1.GetFairShareResponse{HalfLifeSeconds: int64(max(s.cfg.DecayHalfLife, 0) / time.Second)}
	if s.cfg.FairShareWeight <= 0 {
		return out, nil
	}
	out.Weight = s.cfg.FairShareWeight
	groups, usage, factors := s.fairShare.now(s.store.ActiveJobs(), s.cfg.Clock.Now())
	total := 0.0
	for _, g := range groups {
		total += usage[g]
	}
	for _, g := range groups {
		a := &phalanxv1.AccountShare{Account: g.Account, User: g.User, RawShares: 1, NormShares: 1 / float64(len(groups)),
			RawUsage: int64(math.Round(usage[g])), FairShare: factors[g], Priority: s.fairShare.termOf(factors[g])}
		if total > 0 {
			a.EffectiveUsage = usage[g] / total
		}
		out.Accounts = append(out.Accounts, a)
	}
	return out, nil
}

// term is the scheduler's FairShare hook over the last table: a
// pure function of the job. Nil when fair share is off.
func (f *fairShare) term() func(*cluster.Job) int64 {
	weight := f.weight
	if weight <= 0 {
		return nil
	}
	f.mu.Lock()
	table := f.table
	f.mu.Unlock()
	return func(j *cluster.Job) int64 {
		if v, ok := table[j.FairShareGroup()]; ok {
			return v
		}
		return weight
	}
}

// priorityOptions are the scheduler options the priority score depends on.
func (s *Server) priorityOptions() scheduler.Options {
	return scheduler.Options{FairShare: s.fairShare.term()}
}
