package scheduler

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestEarliestStartedMatchesGeneralSearch checks the sweep used for nodes
// without reservations against the general search over end times, on
// random started uses (some exclusive, some without an end, some over).
func TestEarliestStartedMatchesGeneralSearch(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const now = int64(1000)
		p := &pass{nowNs: now}
		c := nodeCap{head: -1, allGPUs: int32(rapid.IntRange(0, 8).Draw(t, "gpus")),
			allCPUs: rapid.IntRange(0, 16).Draw(t, "cpus"), allMem: int64(rapid.IntRange(0, 64).Draw(t, "mem"))}
		p.nodes = []nodeCap{c}
		for k, n := 0, rapid.IntRange(0, 20).Draw(t, "uses"); k < n; k++ {
			to := int64(rapid.IntRange(int(now)-5, int(now)+50).Draw(t, "to"))
			if rapid.IntRange(0, 5).Draw(t, "unlimited") == 0 {
				to = forever
			}
			p.addUse(0, use{from: math.MinInt64, to: to, gpus: rapid.IntRange(0, 3).Draw(t, "ugpus"),
				cpus: rapid.IntRange(0, 4).Draw(t, "ucpus"), mem: int64(rapid.IntRange(0, 16).Draw(t, "umem")),
				excl: rapid.IntRange(0, 6).Draw(t, "uexcl") == 0})
		}
		r := request{nodes: 1, gpus: rapid.IntRange(0, 8).Draw(t, "rgpus"), cpus: rapid.IntRange(0, 16).Draw(t, "rcpus"),
			mem: int64(rapid.IntRange(0, 64).Draw(t, "rmem")), excl: rapid.Bool().Draw(t, "rexcl")}
		dur := time.Duration(rapid.IntRange(0, 30).Draw(t, "dur"))
		if !p.nodes[0].wholeFits(&r) {
			t.Skip("the node can never hold the request")
		}
		want := p.earliestAny(0, &r, dur)
		if got := p.earliestStarted(&p.nodes[0], &r); got != want {
			t.Fatalf("earliestStarted = %d, general search = %d", got, want)
		}
	})
}
