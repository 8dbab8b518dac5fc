package sim

import (
	"math"
	"sort"
	"time"
)

// Summary is the one JSON object `phx sim` prints last. Times are virtual
// seconds from Epoch; only the sched_pass_ms fields come from the wall clock.
type Summary struct {
	Jobs         int `json:"jobs"`          // jobs in the workload
	Completed    int `json:"completed"`     // ended at their duration
	Timeouts     int `json:"timeouts"`      // ended at their time limit
	NodeFail     int `json:"node_fail"`     // ended by node failures past MaxRestarts
	Rejected     int `json:"rejected"`      // could never run on their partition
	NeverStarted int `json:"never_started"` // still pending when nothing more could happen

	MakespanS      float64 `json:"makespan_s"`      // Epoch to the last job's end
	GPUUtilization float64 `json:"gpu_utilization"` // GPU-seconds held / (GPUs × makespan)
	MeanWaitS      float64 `json:"mean_wait_s"`     // first start − submit, over started jobs
	P95WaitS       float64 `json:"p95_wait_s"`

	MultiNodeJobs   int     `json:"multi_node_jobs"`   // started jobs of more than one node
	MinLeafFraction float64 `json:"min_leaf_fraction"` // of those, on the fewest possible leaves
	MeanExtraLeaves float64 `json:"mean_extra_leaves"` // leaves beyond that minimum, on average

	BackfilledJobs int `json:"backfilled_jobs"`
	Preemptions    int `json:"preemptions"` // victims stopped for another job, each then requeued
	NodeFailures   int `json:"node_failures"`
	Requeues       int `json:"requeues"` // preemptions plus jobs hit by node failures

	Passes       int     `json:"passes"`
	Placements   int     `json:"placements"` // job starts, counting restarts
	SchedPassP50 float64 `json:"sched_pass_ms_p50"`
	SchedPassP99 float64 `json:"sched_pass_ms_p99"`
	SchedPassMax float64 `json:"sched_pass_ms_max"`
	Nodes        int     `json:"nodes"`
	GPUs         int     `json:"gpus"`
}

// JobRecord is what happened to one job; --jobs-csv writes one per row.
// Start is the start of the last attempt; Wait counts from submit to the
// first. Zero times mean "did not happen".
type JobRecord struct {
	ID          string
	Submit      float64
	Start, End  float64
	Wait        float64
	Nodes       int
	GPUsPerNode int
	Leaves      int
	MinLeaves   int
	Requeues    int
	Started     bool
	Backfilled  bool
	State       string
}

// Result is a run's summary and per-job records, in workload order.
type Result struct {
	Summary Summary
	Jobs    []JobRecord
}

func (s *sim) result() *Result {
	r := &Result{Jobs: make([]JobRecord, len(s.jobs))}
	sum := &r.Summary
	sum.Jobs, sum.Nodes = len(s.jobs), len(s.nodes)
	for _, n := range s.nodes {
		sum.GPUs += n.GPUs
	}
	var waits []float64
	var gpuSeconds, extra float64
	var onMin int
	for i, j := range s.jobs {
		r.Jobs[i] = s.record(j)
		gpuSeconds += j.gpuSeconds
		sum.Requeues += j.requeues
		switch r.Jobs[i].State {
		case "COMPLETED":
			sum.Completed++
		case "TIMEOUT":
			sum.Timeouts++
		case "NODE_FAIL":
			sum.NodeFail++
		case "REJECTED":
			sum.Rejected++
		case "PENDING":
			sum.NeverStarted++
		}
		if !j.started {
			continue
		}
		waits = append(waits, r.Jobs[i].Wait)
		if j.backfilled {
			sum.BackfilledJobs++
		}
		if j.job.Nodes > 1 {
			sum.MultiNodeJobs++
			extra += float64(j.leaves - j.minLeaves)
			if j.leaves <= j.minLeaves {
				onMin++
			}
		}
	}
	if !s.lastEnd.IsZero() { // else no job ran: 0
		sum.MakespanS = round(s.lastEnd.Sub(Epoch).Seconds(), 3)
	}
	if sum.MakespanS > 0 && sum.GPUs > 0 {
		sum.GPUUtilization = round(gpuSeconds/(float64(sum.GPUs)*sum.MakespanS), 4)
	}
	sum.MeanWaitS = round(mean(waits), 1)
	sum.P95WaitS = round(percentile(waits, 0.95), 1)
	if sum.MultiNodeJobs > 0 {
		sum.MinLeafFraction = round(float64(onMin)/float64(sum.MultiNodeJobs), 4)
		sum.MeanExtraLeaves = round(extra/float64(sum.MultiNodeJobs), 4)
	}
	sum.Preemptions, sum.NodeFailures = s.preemptions, s.nodeFailures
	sum.Passes, sum.Placements = len(s.passTimes), s.placedN
	ms := make([]float64, len(s.passTimes))
	for i, d := range s.passTimes {
		ms[i] = float64(d) / float64(time.Millisecond)
	}
	sum.SchedPassP50 = round(percentile(ms, 0.50), 3)
	sum.SchedPassP99 = round(percentile(ms, 0.99), 3)
	sum.SchedPassMax = round(percentile(ms, 1), 3)
	return r
}

func (s *sim) record(j *simJob) JobRecord {
	rec := JobRecord{ID: j.spec.ID, Submit: j.job.SubmitTime.Sub(Epoch).Seconds(), Nodes: j.job.Nodes,
		GPUsPerNode: j.job.GPUsPerNode, MinLeaves: j.minLeaves, Requeues: j.requeues, Backfilled: j.backfilled,
		State: string(j.job.State)}
	if j.rejected != "" {
		rec.State = "REJECTED"
	}
	if j.started {
		rec.Started = true
		rec.Start = j.lastStart.Sub(Epoch).Seconds()
		rec.Wait = j.firstStart.Sub(j.job.SubmitTime).Seconds()
		rec.Leaves = j.leaves
	}
	if j.job.State.Terminal() {
		rec.End = j.job.EndTime.Sub(Epoch).Seconds()
	}
	return rec
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var t float64
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}

// percentile is the nearest-rank percentile (p in (0, 1]) of xs; 0 for none.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sorted := append([]float64(nil), xs...)
	sort.Float64s(sorted)
	k := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

func round(x float64, digits int) float64 {
	f := math.Pow(10, float64(digits))
	return math.Round(x*f) / f
}
