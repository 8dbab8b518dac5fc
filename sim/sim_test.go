package sim

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fabric builds a generated cluster of 8-GPU nodes for tests.
func fabric(t *testing.T, o FabricOptions) Config {
	t.Helper()
	tree, err := GenerateTopology(o)
	if err != nil {
		t.Fatal(err)
	}
	return Config{Tree: tree, Nodes: MakeNodes(tree, DefaultNodeShape)}
}

// fakeClock advances a millisecond per reading, so pass timings are
// non-zero but reproducible.
func fakeClock() func() time.Time {
	t := time.Unix(0, 0)
	return func() time.Time { t = t.Add(time.Millisecond); return t }
}

func TestGenerateTopology(t *testing.T) {
	tree, err := GenerateTopology(FabricOptions{Nodes: 70, LeafSize: 32, SpineSize: 2, BlockSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	nodes := tree.Nodes()
	if len(nodes) != 70 || nodes[0] != "gpu0001" || nodes[69] != "gpu0070" {
		t.Fatalf("nodes %d, %v..%v", len(nodes), nodes[0], nodes[len(nodes)-1])
	}
	if got := tree.Leaves(); !reflect.DeepEqual(got, []string{"leaf1", "leaf2", "leaf3"}) {
		t.Errorf("leaves %v", got)
	}
	for node, want := range map[string]string{"gpu0032": "leaf1", "gpu0033": "leaf2", "gpu0070": "leaf3"} {
		if got := tree.LeafOf(node); got != want {
			t.Errorf("LeafOf(%s) = %s, want %s", node, got, want)
		}
	}
	if got := tree.Parent("leaf3"); got != "spine2" || tree.Parent("spine2") != "core" {
		t.Errorf("leaf3 under %q, spine2 under %q", got, tree.Parent("spine2"))
	}
	if got := tree.BlockOf("gpu0017"); got != "block2" || len(tree.Blocks()) != 5 {
		t.Errorf("BlockOf(gpu0017) = %s, %d blocks", got, len(tree.Blocks()))
	}
	if _, err := GenerateTopology(FabricOptions{Nodes: 0, LeafSize: 1, SpineSize: 1}); err == nil {
		t.Error("a fabric of no nodes was generated")
	}
	if got := newLeafCapacity(MakeNodes(tree, DefaultNodeShape)); !reflect.DeepEqual([]int(got), []int{32, 64, 70}) {
		t.Errorf("leaf capacity %v", got)
	}
}

func TestGenerateWorkload(t *testing.T) {
	o := GenOptions{Jobs: 3000, Seed: 5, Nodes: 100, GPUsPerNode: 8, LeafSize: 16, BlockSize: 8, Preemptible: 0.2}
	a, b := GenerateWorkload(o), GenerateWorkload(o)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same options gave different workloads")
	}
	o.Seed = 6
	if reflect.DeepEqual(a, GenerateWorkload(o)) {
		t.Fatal("different seeds gave the same workload")
	}
	var single, gangs, large, preemptible, switches, segments int
	last := -1.0
	for _, s := range a {
		if err := s.Validate(); err != nil {
			t.Fatalf("job %s: %v", s.ID, err)
		}
		switch {
		case s.Nodes > 100 || s.GPUsPerNode > 8:
			t.Fatalf("job %s asks %d nodes x %d GPUs of a 100 x 8 cluster", s.ID, s.Nodes, s.GPUsPerNode)
		case s.TimeLimitS < s.DurationS:
			t.Fatalf("job %s: limit %v below duration %v", s.ID, s.TimeLimitS, s.DurationS)
		case s.SubmitOffset < last:
			t.Fatalf("job %s submitted before the one ahead of it", s.ID)
		}
		last = s.SubmitOffset
		switch {
		case s.Nodes == 1:
			single++
		case s.Nodes <= 16:
			gangs++
		default:
			large++
		}
		if s.Partition == PreemptPartition {
			preemptible++
		}
		if s.Switches > 0 {
			switches++
		}
		if s.Segment > 0 {
			segments++
		}
	}
	if !(single > 2*gangs && gangs > 2*large && large > 0) {
		t.Errorf("mix: %d single-node, %d 2-16 node gangs, %d large gangs", single, gangs, large)
	}
	if preemptible == 0 || switches == 0 || segments == 0 {
		t.Errorf("%d preemptible, %d with --switches, %d with --segment", preemptible, switches, segments)
	}
	if userLimit(61) != 300 || userLimit(3601) != 5400 || userLimit(4*86400+1) != 5*86400 {
		t.Errorf("userLimit: %v %v %v", userLimit(61), userLimit(3601), userLimit(4*86400+1))
	}
}

// TestDeterminism: the same seed twice gives the same summary and the same
// jobs CSV; only pass timings may differ, and here even they do not, since
// the clock is fake.
func TestDeterminism(t *testing.T) {
	run := func() (*Result, string) {
		cfg := fabric(t, FabricOptions{Nodes: 64, LeafSize: 8, SpineSize: 4, BlockSize: 4})
		cfg.FailRate, cfg.Seed, cfg.Clock = 0.01, 3, fakeClock()
		specs := GenerateWorkload(GenOptions{Jobs: 400, Seed: 3, Nodes: 64, GPUsPerNode: 8, LeafSize: 8,
			BlockSize: 4, Preemptible: 0.3})
		res, err := Run(t.Context(), cfg, specs)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteCSV(&b, res.Jobs); err != nil {
			t.Fatal(err)
		}
		return res, b.String()
	}
	r1, csv1 := run()
	r2, csv2 := run()
	if r1.Summary != r2.Summary {
		t.Errorf("summaries differ:\n%+v\n%+v", r1.Summary, r2.Summary)
	}
	if csv1 != csv2 {
		t.Error("job CSVs differ")
	}
	s := r1.Summary
	if s.Completed+s.Timeouts+s.NodeFail != 400 || s.Passes == 0 || s.SchedPassP50 != 1 {
		t.Errorf("summary %+v", s)
	}
	if s.NodeFailures == 0 || s.Preemptions == 0 || s.BackfilledJobs == 0 {
		t.Errorf("the run did not exercise failures, preemption and backfill: %+v", s)
	}
}

// TestNoJobRan: a run where no job starts (none, or every one rejected)
// has a makespan of 0, not the time from the epoch back to Go's zero time.
func TestNoJobRan(t *testing.T) {
	for name, specs := range map[string][]JobSpec{
		"no jobs":  nil,
		"rejected": {{ID: "big", Nodes: 99, GPUsPerNode: 8, DurationS: 10}},
	} {
		res, err := Run(t.Context(), fabric(t, FabricOptions{Nodes: 4, LeafSize: 4, SpineSize: 1}), specs)
		if err != nil {
			t.Fatal(err)
		}
		if s := res.Summary; s.MakespanS != 0 || s.GPUUtilization != 0 || s.Rejected != len(specs) {
			t.Errorf("%s: summary %+v, want makespan_s 0", name, s)
		}
	}
}

// TestNodeFailures: with a high failure rate, nodes fail, the jobs on them
// are requeued and run again, and every job still ends.
func TestNodeFailures(t *testing.T) {
	cfg := fabric(t, FabricOptions{Nodes: 16, LeafSize: 4, SpineSize: 4})
	cfg.FailRate, cfg.Seed, cfg.Repair = 0.05, 11, time.Hour
	specs := GenerateWorkload(GenOptions{Jobs: 200, Seed: 11, Nodes: 16, GPUsPerNode: 8, LeafSize: 4, Load: 0.6})
	res, err := Run(t.Context(), cfg, specs)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.NodeFailures == 0 || s.Requeues == 0 || s.Preemptions != 0 {
		t.Fatalf("failures %d, requeues %d, preemptions %d", s.NodeFailures, s.Requeues, s.Preemptions)
	}
	if s.NodeFail == 0 || s.Completed+s.Timeouts+s.NodeFail != 200 || s.Placements != 200+s.Requeues {
		t.Errorf("completed %d, timeouts %d, node_fail %d, placements %d, requeues %d",
			s.Completed, s.Timeouts, s.NodeFail, s.Placements, s.Requeues)
	}
	requeued := 0
	for _, j := range res.Jobs {
		requeued += j.Requeues
		if j.State == "NODE_FAIL" && j.Requeues != DefaultMaxRestarts {
			t.Errorf("job %s ended NODE_FAIL after %d restarts, want %d", j.ID, j.Requeues, DefaultMaxRestarts)
		}
		if j.End < j.Start || j.Start < j.Submit+j.Wait {
			t.Errorf("job %s: submit %v, first start %v, last start %v, end %v", j.ID, j.Submit, j.Submit+j.Wait, j.Start, j.End)
		}
	}
	if requeued != s.Requeues {
		t.Errorf("jobs count %d requeues, summary %d", requeued, s.Requeues)
	}
}

func TestWriteCSV(t *testing.T) {
	var b bytes.Buffer
	err := WriteCSV(&b, []JobRecord{
		{ID: "a,b", Submit: 1.5, Start: 2, End: 10, Wait: 0.5, Nodes: 2, GPUsPerNode: 8, Leaves: 1, MinLeaves: 1,
			Started: true, Backfilled: true, State: "COMPLETED"},
		{ID: "never", Submit: 3, Nodes: 1, MinLeaves: 1, State: "PENDING"},
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{csvHeader,
		{"a,b", "1.5", "2", "10", "2", "1", "8", "0.5", "COMPLETED", "1", "0", "true"},
		{"never", "3", "", "", "1", "", "0", "", "PENDING", "1", "0", "false"},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("got\n%q\nwant\n%q", rows, want)
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	cfg := fabric(t, FabricOptions{Nodes: 8, LeafSize: 4, SpineSize: 2})
	specs := GenerateWorkload(GenOptions{Jobs: 3000, Seed: 1, Nodes: 8, GPUsPerNode: 8, LeafSize: 4})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Run(ctx, cfg, specs); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a cancelled context = %v, want context.Canceled", err)
	}
}
