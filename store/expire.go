package store

import (
	"cmp"
	"slices"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store/codec"
)

// Retention says what an Expire command forgets. Zero fields leave that
// kind alone.
type Retention struct {
	// RequestsBefore: submit requests older than this are forgotten (a
	// retry after that creates a new job).
	RequestsBefore time.Time
	// MaxRequests: beyond this many, the oldest requests are forgotten.
	MaxRequests int
	// HistoryBefore: finished jobs that ended before this are forgotten.
	HistoryBefore time.Time
	// MaxHistory: beyond this many finished jobs, the oldest are forgotten.
	MaxHistory int
	// EventsBefore: node events from before this are forgotten.
	EventsBefore time.Time
	// MaxEvents: beyond this many node events, the oldest are forgotten.
	MaxEvents int
}

// Expire forgets the submit requests, finished jobs and node events that
// outlived the retention. Every replica forgets the same ones: the choice
// depends only on the state and the command. The oldest requests and jobs
// are those of the earliest time, then the lowest job ID; the oldest
// events are the first recorded.
func (s *Store) Expire(idx uint64, r Retention) error {
	return s.apply(idx, func(c *change) error {
		c.expireRequests(r)
		c.expireHistory(r)
		c.expireEvents(r)
		return nil
	})
}

type aged struct {
	key  string
	id   cluster.JobID
	time int64
}

func oldestFirst(a, b aged) int {
	if c := cmp.Compare(a.time, b.time); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// expired returns, oldest first, the entries to forget: those before the
// cut-off (when set) and the oldest beyond max (when set). Without a count
// to enforce it sorts only what is past the cut-off.
func expired(n int, each func(func(aged)), before time.Time, max int) []aged {
	cut := int64(-1 << 63)
	if !before.IsZero() {
		cut = codec.Time(before)
	}
	var out []aged
	if max > 0 && n > max {
		each(func(a aged) { out = append(out, a) })
		slices.SortFunc(out, oldestFirst)
		k := n - max
		for k < len(out) && out[k].time < cut {
			k++
		}
		return out[:k]
	}
	each(func(a aged) {
		if a.time < cut {
			out = append(out, a)
		}
	})
	slices.SortFunc(out, oldestFirst)
	return out
}

func (c *change) expireRequests(r Retention) {
	if r.RequestsBefore.IsZero() && r.MaxRequests <= 0 {
		return
	}
	each := func(f func(aged)) {
		for k, req := range c.st.requests {
			f(aged{key: k, id: req.job, time: req.time})
		}
	}
	for _, e := range expired(len(c.st.requests), each, r.RequestsBefore, r.MaxRequests) {
		delete(c.st.requests, e.key)
		c.ops = append(c.ops, deleteOp{bucket: bucketRequests, key: []byte(e.key)})
	}
}

func (c *change) expireHistory(r Retention) {
	if r.HistoryBefore.IsZero() && r.MaxHistory <= 0 {
		return
	}
	each := func(f func(aged)) {
		for id, end := range c.st.finished {
			f(aged{id: id, time: end})
		}
	}
	for _, e := range expired(len(c.st.finished), each, r.HistoryBefore, r.MaxHistory) {
		delete(c.st.finished, e.id)
		c.st.forgetHeld(e.id)
		c.ops = append(c.ops, forgetJobOp{id: e.id, payload: c.st.forgetArrayTask(e.id)})
	}
}
