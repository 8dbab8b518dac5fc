package store

import (
	"testing"

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
