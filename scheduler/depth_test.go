package scheduler

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// A pass limited to the first QueueDepth jobs decides exactly those, in
// the order a full pass would, and places what a full pass would place
// among them.
func TestQueueDepthDecidesTheHeadOfTheQueue(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		var jobs []*cluster.Job
		n := rapid.IntRange(0, 60).Draw(rt, "jobs")
		for i := 1; i <= n; i++ {
			jobs = append(jobs, &cluster.Job{
				ID: cluster.JobID(i), Name: fmt.Sprint(i), Partition: "gpu", Nodes: 1,
				State:       rapid.SampledFrom([]cluster.JobState{cluster.JobPending, cluster.JobPending, cluster.JobRunning}).Draw(rt, "state"),
				GPUsPerNode: rapid.IntRange(1, 8).Draw(rt, "gpus"),
				QoS:         rapid.SampledFrom([]cluster.QoS{"", "high", "low"}).Draw(rt, "qos"),
				Priority:    int64(rapid.IntRange(0, 3).Draw(rt, "prio")),
				SubmitTime:  now.Add(-time.Duration(rapid.IntRange(0, 100).Draw(rt, "age")) * time.Minute),
			})
		}
		depth := rapid.IntRange(1, 70).Draw(rt, "depth")
		tier := func(string) int { return 0 }
		full := queue(jobs, tier, now, Options{})
		head := queue(jobs, tier, now, Options{QueueDepth: depth})
		if want := min(depth, len(full)); len(head) != want {
			rt.Fatalf("depth %d gave %d jobs; want %d", depth, len(head), want)
		}
		for i := range head {
			if head[i].job.ID != full[i].job.ID {
				rt.Fatalf("position %d: job %d; a full sort has job %d", i, head[i].job.ID, full[i].job.ID)
			}
		}
	})
}
