package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// GenOptions shapes a generated workload.
type GenOptions struct {
	Jobs        int
	Seed        uint64
	Nodes       int // cluster size: gangs are capped at it
	GPUsPerNode int
	LeafSize    int // jobs that ask --switches=1 fit one leaf
	BlockSize   int // with blocks, some large gangs ask --segment=BlockSize
	// Load is the offered load: total GPU-seconds of work over GPU-seconds
	// of capacity during the arrival window. Zero means DefaultLoad.
	Load float64
	// Backlog is how much work is already queued at time 0, as a fraction
	// of the GPUs: the first jobs, until their GPUs add up to it, are all
	// submitted at 0, so the cluster starts full instead of spending the
	// first day filling up. Zero means DefaultBacklog; negative means none.
	Backlog float64
	// Preemptible is the fraction of small and medium jobs sent to
	// partition PreemptPartition, whose jobs may be requeued for the others.
	Preemptible float64
}

// DefaultLoad keeps the cluster busy with a queue, without piling up an
// absurd backlog.
const DefaultLoad = 0.9

// DefaultBacklog fills the cluster at time 0.
const DefaultBacklog = 1.0

// Partitions of generated and default workloads.
const (
	DefaultPartition = "gpu"
	PreemptPartition = "scavenger"
)

// jobClass is one kind of job in the generated mix.
type jobClass struct {
	share          float64
	nodes          func(r *rand.Rand) int
	medianS, sigma float64 // lognormal duration
	minS, maxS     float64
}

// mix: many small single-node jobs, some 2-16 node gangs, few 32-256 node
// gangs; durations are lognormal (heavy-tailed), longer for bigger jobs.
var mix = []jobClass{
	{share: 0.72, nodes: func(*rand.Rand) int { return 1 }, medianS: 1800, sigma: 1.3, minS: 60, maxS: 24 * 3600},
	{share: 0.24, nodes: mediumNodes, medianS: 2 * 3600, sigma: 1.1, minS: 300, maxS: 3 * 86400},
	{share: 0.04, nodes: largeNodes, medianS: 4 * 3600, sigma: 0.9, minS: 600, maxS: 3 * 86400},
}

func mediumNodes(r *rand.Rand) int {
	if r.Float64() < 0.75 {
		return []int{2, 4, 8, 16}[r.IntN(4)]
	}
	return 2 + r.IntN(15)
}

// largeNodes draws 32, 64, 128 or 256 nodes; drawJob halves what does not
// fit half the cluster, so a small cluster still gets big gangs without
// every one of them needing the whole machine.
func largeNodes(r *rand.Rand) int {
	return pick(r, []int{32, 64, 128, 256}, []float64{0.4, 0.3, 0.2, 0.1})
}

func pick(r *rand.Rand, values []int, weights []float64) int {
	x := r.Float64()
	for i, w := range weights {
		if x < w {
			return values[i]
		}
		x -= w
	}
	return values[len(values)-1]
}

// GenerateWorkload draws a realistic job mix from the seed: the same
// options always give the same jobs. Arrivals are a Poisson process whose
// rate makes the offered load o.Load, after a backlog at time 0 (see
// GenOptions.Backlog); time limits are the duration times a
// factor of 1 to 3, rounded up to a value a user would type.
func GenerateWorkload(o GenOptions) []JobSpec {
	r := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	load := o.Load
	if load <= 0 {
		load = DefaultLoad
	}
	specs := make([]JobSpec, o.Jobs)
	for i := range specs {
		specs[i] = drawJob(r, o, i)
	}
	backlog := backlogJobs(specs, o)
	var work float64 // GPU-seconds arriving after the backlog
	for _, s := range specs[backlog:] {
		work += float64(s.Nodes*s.GPUsPerNode) * s.DurationS
	}
	capacity := float64(o.Nodes*o.GPUsPerNode) * load
	meanGap := 0.0
	if capacity > 0 && len(specs) > backlog {
		meanGap = work / capacity / float64(len(specs)-backlog)
	}
	t := 0.0
	for i := backlog; i < len(specs); i++ {
		t += r.ExpFloat64() * meanGap
		specs[i].SubmitOffset = math.Round(t)
	}
	return specs
}

// backlogJobs counts the first jobs whose GPUs add up to the backlog.
func backlogJobs(specs []JobSpec, o GenOptions) int {
	frac := o.Backlog
	if frac == 0 {
		frac = DefaultBacklog
	}
	want, n := frac*float64(o.Nodes*o.GPUsPerNode), 0
	for sum := 0.0; n < len(specs) && sum < want; n++ {
		sum += float64(specs[n].Nodes * specs[n].GPUsPerNode)
	}
	return n
}

func drawJob(r *rand.Rand, o GenOptions, i int) JobSpec {
	x, c := r.Float64(), mix[len(mix)-1]
	for _, k := range mix {
		if x < k.share {
			c = k
			break
		}
		x -= k.share
	}
	s := JobSpec{ID: fmt.Sprint(i + 1), Nodes: c.nodes(r), GPUsPerNode: o.GPUsPerNode, Partition: DefaultPartition}
	for s.Nodes > 16 && s.Nodes > o.Nodes/2 {
		s.Nodes /= 2
	}
	s.Nodes = max(min(s.Nodes, o.Nodes), 1)
	if s.Nodes == 1 {
		s.GPUsPerNode = min(pick(r, []int{1, 2, 4, 8}, []float64{0.35, 0.2, 0.2, 0.25}), o.GPUsPerNode)
	}
	d := c.medianS * math.Exp(c.sigma*r.NormFloat64())
	s.DurationS = math.Round(math.Min(math.Max(d, c.minS), c.maxS))
	s.TimeLimitS = userLimit(s.DurationS * (1 + 2*r.Float64()))
	if r.Float64() < 0.1 {
		s.Priority = 10
	}
	if s.Nodes > 1 && s.Nodes <= o.LeafSize && r.Float64() < 0.2 {
		s.Switches, s.SwitchesWaitS = 1, 1800
	}
	if o.BlockSize > 0 && s.Nodes >= o.BlockSize && s.Nodes%o.BlockSize == 0 && r.Float64() < 0.5 {
		s.Segment = o.BlockSize
	}
	if s.Nodes <= 16 && r.Float64() < o.Preemptible {
		s.Partition = PreemptPartition
	}
	return s
}

// limitSteps are the limits people type, in seconds.
var limitSteps = []float64{
	5 * 60, 10 * 60, 15 * 60, 30 * 60, 45 * 60,
	3600, 5400, 2 * 3600, 3 * 3600, 4 * 3600, 6 * 3600, 8 * 3600, 12 * 3600, 16 * 3600,
	86400, 36 * 3600, 2 * 86400, 3 * 86400,
}

// userLimit rounds a wanted limit up to the next step, or to whole days.
func userLimit(s float64) float64 {
	for _, step := range limitSteps {
		if s <= step {
			return step
		}
	}
	return math.Ceil(s/86400) * 86400
}
