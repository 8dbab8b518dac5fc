package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// ETTR: what failures cost one long training job, and the checkpoint
// interval that costs least. One job holds Nodes nodes for Duration of
// wall time. Failures of each kind arrive as a Poisson process at
// PerNodeDay per node per day; each stops the whole job (a gang), which
// loses the work since its last complete checkpoint and waits the kind's
// Detect time (until Phalanx notices) and Recover time (until the job runs
// again: the scheduler's restart, measured by `make chaos`, plus the job's
// own start-up: loading the checkpoint, NCCL's init). Every Interval of
// work the job takes a checkpoint that stops training for CheckpointCost
// (saved to node-local disk; Phalanx copies it to the store in the
// background); work becomes safe when that save ends. The effective
// training time ratio (ETTR) is the work kept over the wall time.
// Monte Carlo over Runs seeded runs; same configuration and seed, same
// result.

// FailureKind is one cause of interruptions.
type FailureKind struct {
	Name       string
	PerNodeDay float64       // failures per node per day
	Detect     time.Duration // from the failure to the job's attempt ending
	Recover    time.Duration // from then to the job running again
}

// ETTRConfig is a job and its failure model.
type ETTRConfig struct {
	Nodes, GPUsPerNode int
	Duration           time.Duration
	Kinds              []FailureKind
	CheckpointCost     time.Duration // training stopped per checkpoint
	Runs               int
	Seed               uint64
}

// ETTRResult is the outcome for one checkpoint interval.
type ETTRResult struct {
	Interval      time.Duration
	ETTR          float64 // mean over the runs
	Failures      float64 // mean interruptions per run
	LostGPUHours  float64 // mean GPU-hours not kept as work
	ByKind        map[string]float64
	DownFraction  float64 // of the wall time, waiting for detection and recovery
	RedoFraction  float64 // of the wall time, work lost and done again
	CkptFraction  float64 // of the wall time, spent saving checkpoints
	YoungDalyHint time.Duration
}

// Validate says what is wrong with c.
func (c ETTRConfig) Validate() error {
	switch {
	case c.Nodes <= 0 || c.GPUsPerNode <= 0:
		return fmt.Errorf("ettr: give a positive number of nodes and GPUs per node")
	case c.Duration <= 0:
		return fmt.Errorf("ettr: give a positive duration")
	case c.Runs <= 0:
		return fmt.Errorf("ettr: give at least one run")
	case c.CheckpointCost < 0:
		return fmt.Errorf("ettr: the checkpoint cost cannot be negative")
	}
	for _, k := range c.Kinds {
		if k.PerNodeDay < 0 || k.Detect < 0 || k.Recover < 0 {
			return fmt.Errorf("ettr: failure kind %s: rates and times cannot be negative", k.Name)
		}
	}
	return nil
}

// rate is the job's failures per second, all kinds together.
func (c ETTRConfig) rate() float64 {
	var perDay float64
	for _, k := range c.Kinds {
		perDay += k.PerNodeDay
	}
	return perDay * float64(c.Nodes) / 86400
}

// ETTR simulates the job with a checkpoint every interval of work.
func ETTR(c ETTRConfig, interval time.Duration) (ETTRResult, error) {
	if err := c.Validate(); err != nil {
		return ETTRResult{}, err
	}
	if interval <= 0 {
		return ETTRResult{}, fmt.Errorf("ettr: give a positive checkpoint interval")
	}
	out := ETTRResult{Interval: interval, ByKind: map[string]float64{}}
	if r := c.rate(); r > 0 {
		// Young and Daly's first-order optimum: sqrt(2 * cost * MTBF).
		out.YoungDalyHint = time.Duration(math.Sqrt(2*c.CheckpointCost.Seconds()/r) * float64(time.Second))
	}
	for run := range c.Runs {
		rng := rand.New(rand.NewPCG(c.Seed, uint64(run)))
		r := runETTR(c, interval, rng)
		total := c.Duration.Seconds()
		out.ETTR += r.kept / total
		out.Failures += float64(r.failures)
		out.DownFraction += r.down / total
		out.RedoFraction += r.redo / total
		out.CkptFraction += r.ckpt / total
		for k, n := range r.byKind {
			out.ByKind[k] += float64(n)
		}
	}
	n := float64(c.Runs)
	out.ETTR /= n
	out.Failures /= n
	out.DownFraction /= n
	out.RedoFraction /= n
	out.CkptFraction /= n
	for k := range out.ByKind {
		out.ByKind[k] /= n
	}
	out.LostGPUHours = (1 - out.ETTR) * c.Duration.Hours() * float64(c.Nodes*c.GPUsPerNode)
	return out, nil
}

// ettrRun is one run's account, in seconds.
type ettrRun struct {
	kept, down, redo, ckpt float64
	failures               int
	byKind                 map[string]int
}

// runETTR plays one run: cycles of interval of work and a checkpoint's
// cost, cut by failures.
func runETTR(c ETTRConfig, interval time.Duration, rng *rand.Rand) ettrRun {
	out := ettrRun{byKind: map[string]int{}}
	total, tau, cost := c.Duration.Seconds(), interval.Seconds(), c.CheckpointCost.Seconds()
	rate := c.rate()
	t := 0.0
	for t < total {
		next := math.Inf(1)
		if rate > 0 {
			next = t + rng.ExpFloat64()/rate
		}
		end := math.Min(next, total)
		span := end - t
		cycles := math.Floor(span / (tau + cost))
		out.kept += cycles * tau
		out.ckpt += cycles * cost
		rest := span - cycles*(tau+cost)
		if next >= total { // the job's end: the last work is kept
			out.kept += math.Min(rest, tau)
			out.ckpt += math.Max(rest-tau, 0)
			break
		}
		out.redo += math.Min(rest, tau) // lost with the failure
		out.ckpt += math.Max(rest-tau, 0)
		k := pickKind(c.Kinds, rng)
		out.failures++
		out.byKind[k.Name]++
		downtime := (k.Detect + k.Recover).Seconds()
		out.down += math.Min(downtime, total-next)
		t = next + downtime
	}
	return out
}

// pickKind draws a failure's kind by the kinds' rates.
func pickKind(kinds []FailureKind, rng *rand.Rand) FailureKind {
	var sum float64
	for _, k := range kinds {
		sum += k.PerNodeDay
	}
	x := rng.Float64() * sum
	for _, k := range kinds {
		if x < k.PerNodeDay {
			return k
		}
		x -= k.PerNodeDay
	}
	return kinds[len(kinds)-1]
}

// BestInterval tries each interval and returns every result, and the index
// of the one with the highest ETTR.
func BestInterval(c ETTRConfig, intervals []time.Duration) ([]ETTRResult, int, error) {
	var out []ETTRResult
	best := -1
	for _, iv := range slices.Sorted(slices.Values(intervals)) {
		r, err := ETTR(c, iv)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, r)
		if best < 0 || r.ETTR > out[best].ETTR {
			best = len(out) - 1
		}
	}
	if best < 0 {
		return nil, 0, fmt.Errorf("ettr: give at least one checkpoint interval")
	}
	return out, best, nil
}

// Llama3Failures is the failure model of Llama 3's pre-training (Meta,
// "The Llama 3 Herd of Models", 2024: 419 unexpected interruptions in 54
// days on 16,384 GPUs, 2,048 nodes), grouped by how Phalanx sees them,
// per node-day: GPU faults (faulty GPUs, HBM3, SRAM, the GPU system
// processor, thermal, silent data corruption: 268) end in an XID, seen at
// once (0.2 s in `make chaos`); network switches, cables and NICs (42) in
// a link down (0.5 s); host maintenance and hardware (48: maintenance 32,
// SSDs and power supplies 3 each, chassis, IO boards, dependencies, CPUs
// and memory 2 each) in a lost node, seen after the node TTL; software
// bugs (54) exit and are seen at once; NCCL watchdog timeouts (7) are
// hangs, seen after the hang timeout. The kinds add up to the 419.
// restart is what follows detection: the scheduler's restart plus the
// job's own start-up.
func Llama3Failures(nodeTTL, hangTimeout, restart time.Duration) []FailureKind {
	const nodeDays = 54 * 2048
	return []FailureKind{
		{Name: "gpu", PerNodeDay: 268.0 / nodeDays, Detect: 200 * time.Millisecond, Recover: restart},
		{Name: "network", PerNodeDay: 42.0 / nodeDays, Detect: 500 * time.Millisecond, Recover: restart},
		{Name: "host", PerNodeDay: 48.0 / nodeDays, Detect: nodeTTL, Recover: restart},
		{Name: "software", PerNodeDay: 54.0 / nodeDays, Detect: 0, Recover: restart},
		{Name: "hang", PerNodeDay: 7.0 / nodeDays, Detect: hangTimeout, Recover: restart},
	}
}
