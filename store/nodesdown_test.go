package store

import (
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Nodes that go silent together go DOWN in one command: every job on any
// of them ends NODE_FAIL with all its tasks there LOST; other nodes and jobs
// are untouched; unknown or already DOWN nodes are skipped.
func TestSetNodesDown(t *testing.T) {
	s := openTest(t, "")
	mustRegister(t, s, 1, "n1", "n2", "n3", "n4")
	if err := submitErr(s, 5, pendingJob(1, 2, 2)); err != nil { // on n1 and n2
		t.Fatal(err)
	}
	mustSubmit(t, s, 6, 2) // on n3
	mustSubmit(t, s, 7, 3) // on n4
	ps := []Placement{
		{Job: 1, Alloc: alloc([]int{0, 1}, "n1", "n2")},
		{Job: 2, Alloc: alloc([]int{0, 1}, "n3")},
		{Job: 3, Alloc: alloc([]int{0, 1}, "n4")},
	}
	if ids, err := s.PlaceJobs(8, ps); err != nil || len(ids) != 3 {
		t.Fatalf("PlaceJobs = %v, %v", ids, err)
	}
	if err := s.SetNodesDown(9, []string{"n1", "n2", "n3", "nosuch"}, ReasonNotResponding, at(10)); err != nil {
		t.Fatal(err)
	}
	j := mustJob(t, s, 1)
	if j.State != cluster.JobNodeFail || j.Tasks[0].State != cluster.TaskLost || j.Tasks[1].State != cluster.TaskLost || j.Live() {
		t.Errorf("job 1 = %s tasks %+v live %v; want NODE_FAIL, both tasks LOST, nothing held", j.State, j.Tasks, j.Live())
	}
	if st := mustJob(t, s, 2).State; st != cluster.JobNodeFail {
		t.Errorf("job 2 on n3 = %s; want NODE_FAIL", st)
	}
	if st := mustJob(t, s, 3).State; st != cluster.JobConfiguring {
		t.Errorf("job 3 on n4 = %s; want untouched", st)
	}
	for name, want := range map[string]cluster.NodeState{"n1": cluster.NodeDown, "n2": cluster.NodeDown, "n3": cluster.NodeDown, "n4": cluster.NodeUp} {
		if n, _ := s.Node(name); n.State != want {
			t.Errorf("%s = %s; want %s", name, n.State, want)
		}
	}
	// Already DOWN: nothing changes, not even the state time.
	if err := s.SetNodesDown(11, []string{"n1"}, "again", at(20)); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Node("n1"); n.Reason != ReasonNotResponding || !n.StateTime.Equal(at(10)) {
		t.Errorf("n1 after a second DOWN: %q at %v", n.Reason, n.StateTime)
	}
}

// A node an administrator sets DOWN whose tasks stop by themselves (it
// fences) ends its jobs' attempts NODE_FAIL at once, the node at fault;
// its tasks there end when their agent reports them, and the job is then
// restarted elsewhere, as Slurm requeues the jobs of a node set DOWN.
func TestSetNodeStateDownOnAFencingNodeRestartsTheJob(t *testing.T) {
	s := downUnderJob(t)
	j := mustJob(t, s, 1)
	if j.State != cluster.JobNodeFail || j.Reason != "bad PSU" || j.Tasks[1].State.Ended() || !j.RestartPending() {
		t.Fatalf("job 1 = %s %q tasks %+v; want NODE_FAIL (bad PSU), rank 1 on n2 still running, a restart pending", j.State, j.Reason, j.Tasks)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.ReportTask(8, cluster.TaskReport{JobID: 1, Rank: 0, Node: "n1", State: cluster.TaskKilled, ExitSignal: 15, Time: at(8)}))
	must(s.ReportTask(9, cluster.TaskReport{JobID: 1, Rank: 1, Node: "n2", State: cluster.TaskLost, Time: at(9)}))
	j = mustJob(t, s, 1)
	if j.State != cluster.JobPending || j.Attempt != 1 || j.Attempts[0].FaultNode != "n2" {
		t.Fatalf("job 1 once its tasks ended: %s attempt %d, attempt 0 fault node %q; want PENDING attempt 1, n2 at fault", j.State, j.Attempt, j.Attempts[0].FaultNode)
	}
}

// A node set DOWN by hand that then goes silent, its task not reported:
// the task is lost once the node is found silent (fenced by then), and the
// job restarts; the node keeps the administrator's reason.
func TestDownNodeFoundSilentLosesItsTasks(t *testing.T) {
	s := downUnderJob(t)
	if err := s.ReportTask(7, cluster.TaskReport{JobID: 1, Rank: 0, Node: "n1", State: cluster.TaskKilled, ExitSignal: 15, Time: at(8)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetNodesDown(8, []string{"n2"}, ReasonNotResponding, at(40)); err != nil {
		t.Fatal(err)
	}
	if j := mustJob(t, s, 1); j.State != cluster.JobPending || j.Attempt != 1 {
		t.Fatalf("job 1 = %s attempt %d; want PENDING attempt 1", j.State, j.Attempt)
	}
	if n, _ := s.Node("n2"); n.State != cluster.NodeDown || n.Reason != "bad PSU" {
		t.Errorf("n2 = %s %q; want DOWN, bad PSU", n.State, n.Reason)
	}
}

// downUnderJob is a store where job 1 runs on n1 and n2, n2 fences, and
// an administrator set n2 DOWN (entry 6, "bad PSU").
func downUnderJob(t *testing.T) *Store {
	t.Helper()
	s := openTest(t, "")
	mustRegister(t, s, 1, "n1", "n2")
	fencing(t, s, 3, "n2")
	if err := submitErr(s, 4, pendingJob(1, 2, 2)); err != nil {
		t.Fatal(err)
	}
	if ids, err := s.PlaceJobs(5, []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "n1", "n2")}}); err != nil || len(ids) != 1 {
		t.Fatalf("PlaceJobs = %v, %v", ids, err)
	}
	if err := s.SetNodeState(6, "n2", cluster.NodeDown, "bad PSU", "root", at(7)); err != nil {
		t.Fatal(err)
	}
	return s
}

// fencing registers node name again as one whose tasks stop by themselves.
func fencing(t *testing.T, s *Store, idx uint64, name string) {
	t.Helper()
	n := gpuNode(name)
	n.Fences, n.Registered = true, t0.Add(time.Second)
	if err := s.RegisterNode(idx, n); err != nil {
		t.Fatal(err)
	}
}
