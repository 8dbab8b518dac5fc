package sim

import (
	"context"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// The simulator admits jobs as the controller does (scheduler.Admit): a
// job over its partition's MaxTime or MaxNodes, or on a partition that
// does not exist, is rejected at submit, not run.
func TestSimulatorAdmitsAsTheController(t *testing.T) {
	cfg := fabric(t, FabricOptions{Nodes: 4, LeafSize: 2, SpineSize: 2})
	cfg.Partitions = []*cluster.Partition{{Name: "gpu", AllNodes: true, Default: true, State: cluster.PartitionUp, MaxTime: time.Hour, MaxNodes: 2}}
	specs := []JobSpec{
		{ID: "fits", Nodes: 2, GPUsPerNode: 8, DurationS: 60, TimeLimitS: 3600},
		{ID: "too-long", Nodes: 1, GPUsPerNode: 8, DurationS: 60, TimeLimitS: 7200},
		{ID: "too-wide", Nodes: 3, GPUsPerNode: 8, DurationS: 60, TimeLimitS: 60},
	}
	res, err := Run(context.Background(), cfg, specs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"fits": string(cluster.JobCompleted), "too-long": "REJECTED", "too-wide": "REJECTED"}
	for _, r := range res.Jobs {
		if r.State != want[r.ID] {
			t.Errorf("job %s: %s, want %s", r.ID, r.State, want[r.ID])
		}
	}
}
