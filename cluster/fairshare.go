package cluster

import (
	"cmp"
	"math"
	"time"
)

// Fair share, as Slurm's priority/multifactor computes it with its
// classic formula: what each account has used of the cluster, decayed so
// that use an half-life ago counts half, against the account's share,
// gives it a factor in (0, 1],
//
//	F = 2^(-U/S)
//
// where U is the account's part of all the (decayed) usage and S its part
// of the shares. Every account has one share here (Slurm's Fairshare=1, the
// default of an association): S = 1/n for n accounts. An account that used
// nothing has F = 1; one that used its share, 0.5; the priority adds
// PriorityWeightFairshare × F.
//
// Usage is resources held over time: an attempt's GPUs (a job without GPUs,
// its nodes) from its placement until it gives them back, in unit-seconds.

// DefaultDecayHalfLife is Slurm's PriorityDecayHalfLife default: 7 days.
const DefaultDecayHalfLife = 7 * 24 * time.Hour

// ShareGroup is what a job's usage counts against: its account, or, for a
// job without --account, its user (User set, Account empty), as if the user
// had an account of their own. Either has one share.
type ShareGroup struct {
	Account, User string
}

// FairShareGroup is the group a job's usage counts against.
func (j *Job) FairShareGroup() ShareGroup {
	if j.Account != "" {
		return ShareGroup{Account: j.Account}
	}
	return ShareGroup{User: j.User}
}

// Compare orders groups for slices.SortFunc: accounts by name, then users
// without one by name.
func (g ShareGroup) Compare(o ShareGroup) int {
	if (g.Account == "") != (o.Account == "") {
		if g.Account != "" {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(g.Account, o.Account), cmp.Compare(g.User, o.User))
}

// Units is what an allocation holds for fair share: its GPUs, or, holding
// none, its nodes.
func (a Allocation) Units() int {
	gpus := 0
	for _, n := range a.Nodes {
		gpus += len(n.GPUs)
	}
	if gpus == 0 {
		return len(a.Nodes)
	}
	return gpus
}

// DecayedUsage is units held from start to end, in unit-seconds, each
// second weighed 2^(-(now-t)/halfLife) (halfLife 0: no decay). Time after
// now does not count.
func DecayedUsage(units int, start, end, now time.Time, halfLife time.Duration) float64 {
	if end.After(now) {
		end = now
	}
	if units <= 0 || !end.After(start) {
		return 0
	}
	if halfLife <= 0 {
		return float64(units) * end.Sub(start).Seconds()
	}
	h := halfLife.Seconds()
	// ∫ 2^(-(now-t)/h) dt from start to end.
	weight := h / math.Ln2 * (math.Exp2(-now.Sub(end).Seconds()/h) - math.Exp2(-now.Sub(start).Seconds()/h))
	return float64(units) * weight
}

// FairShareFactors gives each of the groups its factor F = 2^(-U/S) from
// the usage by group: U its part of the usage of all of them, S = 1/n for
// the n groups. With no usage at all, every factor is 1.
func FairShareFactors(usage map[ShareGroup]float64, groups []ShareGroup) map[ShareGroup]float64 {
	total := 0.0
	for _, g := range groups {
		total += usage[g]
	}
	out := make(map[ShareGroup]float64, len(groups))
	for _, g := range groups {
		f := 1.0
		if total > 0 {
			f = math.Exp2(-usage[g] / total * float64(len(groups)))
		}
		out[g] = f
	}
	return out
}
