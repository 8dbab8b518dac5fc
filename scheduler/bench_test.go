package scheduler

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology"
)

// benchShapes is the pending mix: many small jobs, few large gangs.
var benchShapes = []struct {
	nodes, gpus int
	weight      int // per mille
}{
	{1, 1, 300}, {1, 2, 100}, {1, 4, 100}, {1, 8, 200}, {2, 8, 100}, {4, 8, 80},
	{8, 8, 50}, {16, 8, 35}, {32, 8, 20}, {64, 8, 8}, {128, 8, 4}, {256, 8, 3},
}

func drawShape(rng *rand.Rand) (int, int) {
	x := rng.IntN(1000)
	for _, s := range benchShapes {
		if x < s.weight {
			return s.nodes, s.gpus
		}
		x -= s.weight
	}
	return 1, 1
}

// benchCluster is nodes 8-GPU nodes on leaves of 32 under spines of 16
// leaves, with about busy of their GPUs held by running jobs (whole-node
// gangs and partial nodes, time limits 1-24h, started up to 12h ago), and
// pending pending jobs of the mix above.
func benchCluster(nodes, pending int, busy float64) (*Snapshot, time.Time) {
	rng := rand.New(rand.NewPCG(1, 2))
	now := epoch.Add(24 * time.Hour)
	tree, names := topology.Generate((nodes+31)/32, 32, 16, "gpu")
	names = names[:nodes]
	s := &Snapshot{Topology: tree, Partitions: []*cluster.Partition{{Name: "gpu", AllNodes: true, State: cluster.PartitionUp}}}
	for _, n := range names {
		s.Nodes = append(s.Nodes, &cluster.Node{Name: n, GPUs: 8, CPUs: 128, MemoryMB: 2 << 20, GPUModel: "NVIDIA H100", State: cluster.NodeUp})
	}
	id := cluster.JobID(1)
	used, target := 0, int(busy*float64(nodes*8))
	for i := 0; i < nodes && used < target; {
		n, g := drawShape(rng)
		n = min(n, 16, nodes-i)
		alloc := cluster.Allocation{}
		for k := 0; k < n; k++ {
			alloc.Nodes = append(alloc.Nodes, cluster.NodeAlloc{Node: names[i+k], GPUs: firstN(g), CPUs: 4 * g, MemoryMB: int64(g) << 16})
		}
		j := &cluster.Job{ID: id, Partition: "gpu", State: cluster.JobRunning, Nodes: n, GPUsPerNode: g,
			CPUsPerNode: 4 * g, MemoryMB: int64(g) << 16, TimeLimit: time.Duration(1+rng.IntN(24)) * time.Hour,
			StartTime: now.Add(-time.Duration(rng.IntN(12*60)) * time.Minute), Alloc: &alloc}
		for k := range alloc.Nodes {
			j.Tasks = append(j.Tasks, cluster.Task{Rank: k, Node: alloc.Nodes[k].Node, State: cluster.TaskRunning})
		}
		s.Jobs = append(s.Jobs, j)
		id++
		used += n * g
		i += n + rng.IntN(2) // leave some nodes idle between jobs
	}
	for k := 0; k < pending; k++ {
		n, g := drawShape(rng)
		s.Jobs = append(s.Jobs, &cluster.Job{ID: id, Name: fmt.Sprint("job", k), Partition: "gpu", State: cluster.JobPending,
			Nodes: n, GPUsPerNode: g, CPUsPerNode: 4 * g, MemoryMB: int64(g) << 16,
			TimeLimit: time.Duration(1+rng.IntN(24)) * time.Hour, Priority: int64(rng.IntN(100)),
			QoS:        []cluster.QoS{"normal", "normal", "normal", "high", "low"}[rng.IntN(5)],
			SubmitTime: now.Add(-time.Duration(rng.IntN(48*60)) * time.Minute)})
		id++
	}
	return s, now
}

func firstN(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// benchPasses runs b.N passes, timing each, and reports the p50 and p99
// pass time, the most the heap held right after a pass (snapshot
// included), and what one pass allocates.
func benchPasses(b *testing.B, s *Snapshot, now time.Time) {
	b.Helper()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before, peak := ms.TotalAlloc, uint64(0)
	times := make([]time.Duration, 0, b.N)
	var plan *Plan
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		plan = Schedule(s, now)
		times = append(times, time.Since(start))
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
	}
	b.StopTimer()
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	pct := func(p float64) float64 {
		return float64(times[min(len(times)-1, int(p*float64(len(times))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(ms.TotalAlloc-before)/float64(b.N)/(1<<20), "alloc-MB/pass")
	b.ReportMetric(float64(len(plan.Placements)), "placed")
	b.ReportMetric(float64(len(plan.Reservations)), "reserved")
}

// BenchmarkSchedule is 1,000 nodes and 1,000 pending jobs, 30% busy.
func BenchmarkSchedule(b *testing.B) {
	s, now := benchCluster(1000, 1000, 0.3)
	benchPasses(b, s, now)
}

// BenchmarkSchedule10k is the target: 10,000 8-GPU nodes (leaves of
// 32, spines of 16 leaves), half busy, 10,000 pending jobs from 1 GPU to
// 256 nodes. Run on one core: -cpu 1.
func BenchmarkSchedule10k(b *testing.B) {
	s, now := benchCluster(10000, 10000, 0.5)
	benchPasses(b, s, now)
}

// BenchmarkScheduleCounted10k is BenchmarkSchedule10k with ten 128-node
// jobs that ask for node counts ([a*40&b*40]) first in the queue: one node
// in ten has a, another b, so a plain gang never holds the counts and the
// counted placement (counts.go) does the work.
func BenchmarkScheduleCounted10k(b *testing.B) {
	s, now := benchCluster(10000, 10000, 0.5)
	for i, n := range s.Nodes {
		switch i % 10 {
		case 0:
			n.Features = []string{"a"}
		case 5:
			n.Features = []string{"b"}
		}
	}
	for k := range 10 {
		s.Jobs = append(s.Jobs, &cluster.Job{ID: cluster.JobID(1_000_000 + k), Partition: "gpu", State: cluster.JobPending,
			Nodes: 128, GPUsPerNode: 8, Constraint: "[a*40&b*40]", TimeLimit: time.Hour, Priority: 1000, QoS: "high", SubmitTime: now})
	}
	benchPasses(b, s, now)
}
