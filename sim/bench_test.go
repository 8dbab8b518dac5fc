package sim

import (
	"testing"
	"time"
)

// BenchmarkRun10k is the acceptance run of `phx sim --nodes 10000 --jobs
// 10000 --seed 1`: 10,000 8-GPU nodes on leaves of 32, spines of 16 leaves,
// 10,000 generated jobs. Run it with -benchtime=1x.
func BenchmarkRun10k(b *testing.B) {
	tree, err := GenerateTopology(FabricOptions{Nodes: 10000, LeafSize: 32, SpineSize: 16})
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{Tree: tree, Nodes: MakeNodes(tree, DefaultNodeShape), Clock: time.Now}
	specs := GenerateWorkload(GenOptions{Jobs: 10000, Seed: 1, Nodes: 10000, GPUsPerNode: 8, LeafSize: 32})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := Run(b.Context(), cfg, specs)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Summary.Passes), "passes/op")
		b.ReportMetric(res.Summary.SchedPassP50, "pass-p50-ms")
		b.ReportMetric(res.Summary.SchedPassP99, "pass-p99-ms")
	}
}
