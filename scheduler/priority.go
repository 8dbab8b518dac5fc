package scheduler

import (
	"container/heap"
	"sort"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Weights of the priority score; see Priority.
const (
	qosStep     = 1_000_000 // per QoS level: low 0, normal 1M, high 2M
	ageCapMin   = 7 * 24 * 60
	sizeCapGPUs = 10_000
)

// Priority is a pending job's score within its partition tier:
//
//	score = 1,000,000 × QoS level (low 0, normal 1, high 2)
//	      + Job.Priority                    (admin boost)
//	      + minutes since submit, at most 7 days (10,080)
//	      + GPUs asked in total (CPU-only: nodes), at most 10,000
//	      + Options.FairShare(job)          (0 without a hook)
//	      − Job.Nice
//
// The QoS weight dwarfs the other terms, so QoS acts as a class; inside it,
// admins move jobs with Priority, users lower theirs with Nice, age keeps
// old jobs from starving and size favours the gangs that are hardest to
// place.
func Priority(j *cluster.Job, now time.Time, o Options) int64 {
	score := int64(j.QoS.Level())*qosStep + j.Priority - int64(j.Nice)
	if age := now.Sub(j.SubmitTime); age > 0 {
		score += min(int64(age/time.Minute), ageCapMin)
	}
	size := int64(max(j.Nodes, 1))
	if j.GPUsPerNode > 0 {
		size *= int64(j.GPUsPerNode)
	}
	score += min(size, sizeCapGPUs)
	if o.FairShare != nil {
		score += o.FairShare(j)
	}
	return score
}

// ranked is a pending job with its sort keys computed once.
type ranked struct {
	job     *cluster.Job
	tier    int
	qos     int
	score   int64
	requeue bool
}

// queue returns the pending jobs in scheduling order: partition
// PriorityTier (higher first); QoS level (higher first); requeued jobs
// before the others of their tier and QoS; Priority score (higher first);
// submit time; ID. With o.QueueDepth, only the first QueueDepth.
func queue(jobs []*cluster.Job, tierOf func(string) int, now time.Time, o Options) []ranked {
	rank := ranker(tierOf, now, o)
	if o.QueueDepth > 0 {
		return top(jobs, o.QueueDepth, rank)
	}
	n := 0
	for _, j := range jobs {
		if j.State == cluster.JobPending {
			n++
		}
	}
	out := make([]ranked, 0, n)
	for _, j := range jobs {
		if j.State == cluster.JobPending {
			out = append(out, rank(j))
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].before(&out[b]) })
	return out
}

// ranker returns the function that computes a job's sort keys.
func ranker(tierOf func(string) int, now time.Time, o Options) func(*cluster.Job) ranked {
	return func(j *cluster.Job) ranked {
		return ranked{job: j, tier: tierOf(j.Partition), qos: j.QoS.Level(), score: Priority(j, now, o), requeue: j.Requeued}
	}
}

// top returns the first k pending jobs in queue order, in order, without
// ranking the rest in memory: a heap of the k best seen so far (the worst
// of them on top).
func top(jobs []*cluster.Job, k int, rank func(*cluster.Job) ranked) []ranked {
	h := make(worstFirst, 0, k)
	for _, j := range jobs {
		if j.State != cluster.JobPending {
			continue
		}
		r := rank(j)
		switch {
		case len(h) < k:
			heap.Push(&h, r)
		case r.before(&h[0]):
			h[0] = r
			heap.Fix(&h, 0)
		}
	}
	out := make([]ranked, len(h))
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(&h).(ranked)
	}
	return out
}

// worstFirst is a heap of ranked jobs, the one that comes last in the
// queue on top.
type worstFirst []ranked

func (h worstFirst) Len() int           { return len(h) }
func (h worstFirst) Less(a, b int) bool { return h[b].before(&h[a]) }
func (h worstFirst) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *worstFirst) Push(x any)        { *h = append(*h, x.(ranked)) }
func (h *worstFirst) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (x *ranked) before(y *ranked) bool {
	switch {
	case x.tier != y.tier:
		return x.tier > y.tier
	case x.qos != y.qos:
		return x.qos > y.qos
	case x.requeue != y.requeue:
		return x.requeue
	case x.score != y.score:
		return x.score > y.score
	case !x.job.SubmitTime.Equal(y.job.SubmitTime):
		return x.job.SubmitTime.Before(y.job.SubmitTime)
	}
	return x.job.ID < y.job.ID
}
