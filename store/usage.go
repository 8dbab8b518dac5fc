package store

import (
	"math"
	"slices"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store/codec"
)

// Fair share's past: what the released attempts of the stored jobs held.
// Each is recorded by job, so that it goes when its job is forgotten, and
// summed by group (cluster.Job.FairShareGroup) as it comes and goes, so
// that reading the usage costs one step per group, not one per attempt:
// a group's sum is its usage decayed to a time, and decays as a whole.

// heldRecord is what one released attempt held: units (cluster's
// Allocation.Units) from start to end (Unix ns), against group.
type heldRecord struct {
	group      cluster.ShareGroup
	units      int
	start, end int64
}

// groupUsage is a group's decayed usage of released attempts, v at time
// at (Unix ns).
type groupUsage struct {
	v  float64
	at int64
}

// decayed is u brought to time t (not before u.at).
func (st *state) decayed(u groupUsage, t int64) groupUsage {
	if t <= u.at {
		return u
	}
	if st.halfLife > 0 {
		u.v *= math.Exp2(-float64(t-u.at) / float64(st.halfLife))
	}
	u.at = t
	return u
}

// worth is record r's usage at time t.
func (st *state) worth(r heldRecord, t int64) float64 {
	return cluster.DecayedUsage(r.units, codec.FromTime(r.start), codec.FromTime(r.end), codec.FromTime(t), st.halfLife)
}

// recordHeld adds what attempt a of job j held to the past.
func (st *state) recordHeld(j *cluster.Job, a *cluster.Attempt) {
	if a.StartTime.IsZero() || a.EndTime.IsZero() {
		return
	}
	r := heldRecord{group: j.FairShareGroup(), units: a.Alloc.Units(), start: codec.Time(a.StartTime), end: codec.Time(a.EndTime)}
	st.held[j.ID] = append(slices.Clip(st.held[j.ID]), r)
	u := st.decayed(st.usage[r.group], r.end)
	u.v += st.worth(r, u.at)
	st.usage[r.group] = u
}

// forgetHeld takes a forgotten job's attempts out of the past.
func (st *state) forgetHeld(id cluster.JobID) {
	for _, r := range st.held[id] {
		u := st.usage[r.group]
		if u.v -= st.worth(r, u.at); u.v <= 0 {
			u.v = 0 // what rounding leaves
		}
		st.usage[r.group] = u
	}
	delete(st.held, id)
}

// Usage is fair share's usage by group: what every stored job's attempts
// held, released ones and those holding now, in unit-seconds decayed to
// now with the store's half-life (DecayHalfLife; cluster.DecayedUsage).
// Groups that hold nothing are absent. Finished jobs count until they are
// forgotten (PurgeJobAfter, MaxJobHistory).
func (s *Store) Usage(now time.Time) map[cluster.ShareGroup]float64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, t := s.st, codec.Time(now)
	out := map[cluster.ShareGroup]float64{}
	for g, u := range st.usage {
		if u = st.decayed(u, t); u.v > 0 {
			out[g] = u.v
		}
	}
	for _, j := range st.active {
		if len(j.Attempts) == 0 {
			continue
		}
		if a := j.Attempts[len(j.Attempts)-1]; !a.Released() && a.Attempt == j.Attempt {
			if v := cluster.DecayedUsage(a.Alloc.Units(), a.StartTime, now, now, st.halfLife); v > 0 {
				out[j.FairShareGroup()] += v
			}
		}
	}
	return out
}
