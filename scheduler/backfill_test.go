package scheduler

import (
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
			for _, n := range r.Nodes {
				spans = append(spans, spanOf(j, n, j.GPUsPerNode, r.Start, "reserved"))
			}
		}
		checkSpans(t, s, spans)
	})
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
