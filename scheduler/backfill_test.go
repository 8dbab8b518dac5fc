package scheduler

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// TestBackfillNeverDelaysReservations runs each plan forward: every job
// holds its nodes until its time limit (live jobs from their start, placed
// jobs from now, reserved jobs from their reserved start), and no node may
// ever hold more than it has. So every reserved job can still start at its
// reserved time on its reserved nodes whatever was backfilled.
func TestBackfillNeverDelaysReservations(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genSnapshot(t, 8)
		plan := Schedule(s, epoch)
		var spans []span
		for _, j := range s.Jobs {
			if j.Live() {
				for _, a := range j.Alloc.Nodes {
					spans = append(spans, spanOf(j, a.Node, len(a.GPUs), j.StartTime, "live"))
				}
			}
		}
		for _, pl := range plan.Placements {
			j := jobByID(s.Jobs, pl.Job)
			for _, a := range pl.Alloc.Nodes {
				spans = append(spans, spanOf(j, a.Node, len(a.GPUs), epoch, "placed"))
			}
		}
		for _, r := range plan.Reservations {
			j := jobByID(s.Jobs, r.Job)
			if !r.Start.Equal(plan.Pending[r.Job].ExpectedStart) {
				t.Fatalf("job %d reserved at %v but expected at %v", r.Job, r.Start, plan.Pending[r.Job].ExpectedStart)
			}
			if len(r.Nodes) != j.Nodes {
				t.Fatalf("job %d reserved %d nodes, asks %d", r.Job, len(r.Nodes), j.Nodes)
			}
			if sn := plan.Pending[r.Job].SchedNodes; !slices.Equal(sn, r.Nodes) {
				t.Fatalf("job %d reserved %v but its pending info names %v (squeue's SCHEDNODES)", r.Job, r.Nodes, sn)
			}
			for _, n := range r.Nodes {
				spans = append(spans, spanOf(j, n, j.GPUsPerNode, r.Start, "reserved"))
			}
		}
		checkSpans(t, s, spans)
	})
}

// TestPlacedByFollowsTheQueue checks how each placement says it was made
// against the plan itself: backfill exactly when a job decided before it
// (in plan.Queue's order) was left waiting for Resources or Priority in a
// partition that holds one of its nodes, as Slurm's main scheduler then
// leaves those nodes to its backfill; in priority order (main) otherwise.
func TestPlacedByFollowsTheQueue(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genBusy(t)
		plan := Schedule(s, epoch)
		parts := map[string]*cluster.Partition{}
		for _, p := range s.Partitions {
			parts[p.Name] = p
		}
		placed := map[cluster.JobID]Placement{}
		for _, pl := range plan.Placements {
			placed[pl.Job] = pl
		}
		var waiting []*cluster.Partition // of the jobs left waiting so far
		for _, id := range plan.Queue {
			pl, ok := placed[id]
			if !ok {
				if r := plan.Pending[id].Reason; r == cluster.ReasonResources || r == cluster.ReasonPriority {
					waiting = append(waiting, parts[jobByID(s.Jobs, id).Partition])
				}
				continue
			}
			want := cluster.PlacedMain
			for _, a := range pl.Alloc.Nodes {
				for _, p := range waiting {
					if p.AllNodes || p.Contains(a.Node) {
						want = cluster.PlacedBackfill
					}
				}
			}
			if pl.By != want {
				t.Fatalf("job %d placed on %+v by %q; want %q (partitions with a job waiting before it: %d)",
					id, pl.Alloc.Nodes, pl.By, want, len(waiting))
			}
		}
	})
}

// genBusy is a small cluster where jobs often wait: UP 8-GPU nodes, the
// partitions of genSnapshot (p: every node; q: some), a few running jobs
// with time limits and more pending ones than fit.
func genBusy(t *rapid.T) *Snapshot {
	s := &Snapshot{}
	n := rapid.IntRange(1, 6).Draw(t, "nodes")
	q := &cluster.Partition{Name: "q", State: cluster.PartitionUp}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("n%02d", i+1)
		s.Nodes = append(s.Nodes, &cluster.Node{Name: name, GPUs: 8, CPUs: 8, MemoryMB: 1000, Leaf: "l1", State: cluster.NodeUp})
		if rapid.Bool().Draw(t, "inq") {
			q.Nodes = append(q.Nodes, name)
		}
	}
	s.Partitions = []*cluster.Partition{{Name: "p", AllNodes: true, State: cluster.PartitionUp}, q}
	id := cluster.JobID(1)
	for range rapid.IntRange(0, n).Draw(t, "running") {
		j := &cluster.Job{ID: id, Partition: "p", State: cluster.JobPending, Nodes: 1, GPUsPerNode: rapid.IntRange(1, 8).Draw(t, "runGPUs"),
			TimeLimit: time.Duration(rapid.IntRange(1, 3).Draw(t, "runLimit")) * time.Hour, SubmitTime: epoch}
		node := s.Nodes[rapid.IntRange(0, n-1).Draw(t, "runNode")].Name
		alloc := cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: node, GPUs: firstN(j.GPUsPerNode)}}}
		if cluster.Usage(s.Jobs)[node].GPUs != nil || cluster.Place(j, alloc, 1, epoch, cluster.PlacedMain) != nil {
			continue // one running job per node keeps the GPUs apart
		}
		s.Jobs = append(s.Jobs, j)
		id++
	}
	for range rapid.IntRange(1, 10).Draw(t, "pending") {
		s.Jobs = append(s.Jobs, &cluster.Job{ID: id, Partition: rapid.SampledFrom([]string{"p", "q"}).Draw(t, "part"),
			State: cluster.JobPending, Nodes: rapid.IntRange(1, n).Draw(t, "jobNodes"), GPUsPerNode: rapid.IntRange(1, 8).Draw(t, "jobGPUs"),
			Priority: rapid.Int64Range(0, 100).Draw(t, "prio"), SubmitTime: epoch,
			TimeLimit: time.Duration(rapid.IntRange(0, 3).Draw(t, "limit")) * time.Hour})
		id++
	}
	return s
}

// span is one job's hold on one node over [from, to); to is zero forever.
type span struct {
	node     string
	from, to time.Time
	gpus     int
	cpus     int
	mem      int64
	excl     bool
	what     string
}

func spanOf(j *cluster.Job, node string, gpus int, from time.Time, what string) span {
	sp := span{node: node, from: from, gpus: gpus, cpus: j.CPUsPerNode, mem: j.MemoryMB, excl: j.Exclusive,
		what: what + " job " + j.ID.String()}
	if j.TimeLimit > 0 {
		sp.to = from.Add(j.TimeLimit)
		if sp.to.Before(epoch) {
			sp.to = epoch // overdue: ends now
		}
	}
	return sp
}

func (sp span) covers(t time.Time) bool {
	return !t.Before(sp.from) && (sp.to.IsZero() || t.Before(sp.to))
}

// checkSpans sums the spans at every instant one of them starts (or now)
// and fails on a node over capacity or an exclusive job sharing a node.
func checkSpans(t *rapid.T, s *Snapshot, spans []span) {
	for _, sp := range spans {
		n := nodeNamed(s, sp.node)
		at := sp.from
		if at.Before(epoch) {
			at = epoch
		}
		gpus, cpus, mem, holders, excl := 0, 0, int64(0), 0, false
		for _, o := range spans {
			if o.node == sp.node && o.covers(at) {
				gpus, cpus, mem, holders = gpus+o.gpus, cpus+o.cpus, mem+o.mem, holders+1
				excl = excl || o.excl
			}
		}
		if gpus > n.GPUs || cpus > n.CPUs || mem > n.MemoryMB || (excl && holders > 1) {
			t.Fatalf("%s overbooked at +%v when %s starts: %d GPUs, %d CPUs, %d MB, %d holders (exclusive %v)",
				sp.node, at.Sub(epoch), sp.what, gpus, cpus, mem, holders, excl)
		}
	}
}
