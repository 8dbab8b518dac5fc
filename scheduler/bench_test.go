package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology"
)

// benchSnapshot is 1,000 8-GPU nodes on 125 leaves of 8 and 1,000 pending
// jobs of mixed shapes (1-16 nodes, 1-8 GPUs each).
func benchSnapshot() *Snapshot {
	tree, names := topology.Generate(125, 8, 16, "gpu")
	s := &Snapshot{Topology: tree, Partitions: []*cluster.Partition{{Name: "gpu", AllNodes: true, State: cluster.PartitionUp}}}
	for _, n := range names {
		s.Nodes = append(s.Nodes, &cluster.Node{Name: n, GPUs: 8, CPUs: 128, MemoryMB: 1 << 20,
			GPUModel: "NVIDIA H100", State: cluster.NodeUp})
	}
	shapes := []struct{ nodes, gpus int }{{1, 1}, {1, 2}, {1, 4}, {1, 8}, {2, 8}, {4, 8}, {8, 8}, {16, 8}}
	for i := 0; i < 1000; i++ {
		sh := shapes[(i*7)%len(shapes)]
		s.Jobs = append(s.Jobs, &cluster.Job{
			ID: cluster.JobID(i + 1), Name: fmt.Sprint("job", i), Partition: "gpu", State: cluster.JobPending,
			Nodes: sh.nodes, GPUsPerNode: sh.gpus, CPUsPerNode: 4, MemoryMB: 1024,
			Priority: int64(i % 5), SubmitTime: time.Unix(int64(i), 0),
		})
	}
	return s
}

func BenchmarkSchedule(b *testing.B) {
	s := benchSnapshot()
	now := time.Unix(5000, 0)
	b.ReportAllocs()
	b.ResetTimer()
	var placed int
	for i := 0; i < b.N; i++ {
		placed = len(Schedule(s, now).Placements)
	}
	b.ReportMetric(float64(placed), "placed/op")
}
