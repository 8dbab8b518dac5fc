package store

import (
	"bytes"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
)

func TestRegisterNode(t *testing.T) {
	for _, tc := range []struct {
		name       string
		before     func(t *testing.T, s *Store) // after the first registration
		wantState  cluster.NodeState
		wantReason string
	}{
		{"new node is UP", nil, cluster.NodeUp, ""},
		{"not responding comes back", func(t *testing.T, s *Store) {
			mustSetState(t, s, 10, cluster.NodeDown, ReasonNotResponding)
		}, cluster.NodeUp, ""},
		{"admin DOWN stays", func(t *testing.T, s *Store) {
			mustSetState(t, s, 10, cluster.NodeDown, "bad PSU")
		}, cluster.NodeDown, "bad PSU"},
		{"DRAIN stays", func(t *testing.T, s *Store) {
			mustSetState(t, s, 10, cluster.NodeDrain, "xid 79")
		}, cluster.NodeDrain, "xid 79"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, "")
			mustRegister(t, s, 1, "n1")
			if tc.before != nil {
				tc.before(t, s)
			}
			again := gpuNode("n1")
			again.GPUs, again.Addr, again.Leaf, again.Registered = 7, "10.0.0.1:7818", "leaf3", at(60)
			again.State, again.Reason = cluster.NodeDown, "ignored: the agent does not set state"
			if err := s.RegisterNode(20, again); err != nil {
				t.Fatal(err)
			}
			n, err := s.Node("n1")
			if err != nil {
				t.Fatal(err)
			}
			if n.State != tc.wantState || n.Reason != tc.wantReason {
				t.Errorf("state = %s %q; want %s %q", n.State, n.Reason, tc.wantState, tc.wantReason)
			}
			if n.GPUs != 7 || n.Addr != again.Addr || n.Leaf != "leaf3" || !n.Registered.Equal(at(60)) {
				t.Errorf("hardware not updated: %+v", n)
			}
		})
	}
}

func mustSetState(t *testing.T, s *Store, idx uint64, st cluster.NodeState, reason string) {
	t.Helper()
	if err := s.SetNodeState(idx, "n1", st, reason, "root", at(int(idx))); err != nil {
		t.Fatalf("SetNodeState: %v", err)
	}
}

func TestRegisterNodeInvalid(t *testing.T) {
	s := openTest(t, "")
	if err := s.RegisterNode(1, &cluster.Node{}); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("nameless node: %v; want ErrInvalid", err)
	}
}

func TestSetNodeStateDownLosesJobs(t *testing.T) {
	s := openTest(t, "")
	mustRegister(t, s, 1, "n1", "n2", "n3")
	if err := submitErr(s, 4, pendingJob(1, 2, 2)); err != nil {
		t.Fatal(err)
	}
	mustSubmit(t, s, 5, 2) // one node, stays pending
	mustSubmit(t, s, 6, 3) // on n3, unaffected
	ps := []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "n1", "n2")}, {Job: 3, Alloc: alloc([]int{0, 1}, "n3")}}
	if ids, err := s.PlaceJobs(7, ps); err != nil || len(ids) != 2 {
		t.Fatalf("PlaceJobs = %v, %v", ids, err)
	}
	if err := s.SetNodeState(8, "n2", cluster.NodeDown, ReasonNotResponding, cluster.SystemUser, at(9)); err != nil {
		t.Fatal(err)
	}
	j := mustJob(t, s, 1)
	if j.State != cluster.JobNodeFail || j.Reason != ReasonNotResponding || j.Tasks[1].State != cluster.TaskLost {
		t.Errorf("job 1 = %s %q tasks %+v", j.State, j.Reason, j.Tasks)
	}
	if !j.Live() {
		t.Errorf("rank 0 on n1 still runs; job 1 must stay live")
	}
	if st := mustJob(t, s, 2).State; st != cluster.JobPending {
		t.Errorf("pending job 2 = %s", st)
	}
	if st := mustJob(t, s, 3).State; st != cluster.JobConfiguring {
		t.Errorf("job 3 on n3 = %s", st)
	}
	n, _ := s.Node("n2")
	if n.State != cluster.NodeDown || !n.StateTime.Equal(at(9)) {
		t.Errorf("n2 = %s at %v", n.State, n.StateTime)
	}
}

func TestSetNodeStateErrors(t *testing.T) {
	s := openTest(t, "")
	mustRegister(t, s, 1, "n1")
	if err := s.SetNodeState(2, "nX", cluster.NodeDrain, "", "root", at(0)); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("unknown node: %v; want ErrNotFound", err)
	}
	if err := s.SetNodeState(3, "n1", "IDLE", "", "root", at(0)); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("state IDLE: %v; want ErrInvalid", err)
	}
	if _, err := s.Node("nX"); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("Node(nX) = %v; want ErrNotFound", err)
	}
}

func TestNodesSorted(t *testing.T) {
	s := openTest(t, "")
	mustRegister(t, s, 1, "n3", "n1", "n2")
	nodes := s.Nodes()
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	if !reflect.DeepEqual(names, []string{"n1", "n2", "n3"}) {
		t.Errorf("Nodes() = %v", names)
	}
}

func TestSetPartitions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := openTest(t, path)
	first := []*cluster.Partition{
		{Name: "zeta", AllNodes: true, Default: true, State: cluster.PartitionUp},
		{Name: "alpha", Nodes: []string{"n1", "n2"}, State: cluster.PartitionDrain, MaxTime: 3600e9, MaxNodes: 4, PriorityTier: 2},
		{Name: "mid", Nodes: []string{"n3"}, State: cluster.PartitionUp},
	}
	if err := s.SetPartitions(1, first, "d1"); err != nil {
		t.Fatal(err)
	}
	if got := s.Partitions(); !reflect.DeepEqual(got, first) {
		t.Errorf("Partitions() = %+v; want the configured order %+v", got, first)
	}
	second := []*cluster.Partition{{Name: "only", AllNodes: true, State: cluster.PartitionUp}}
	if err := s.SetPartitions(2, second, ""); err != nil { // an administrator's change
		t.Fatal(err)
	}
	if got := s.Partitions(); !reflect.DeepEqual(got, second) {
		t.Errorf("after replace: %+v", got)
	}
	if d := s.PartitionsConfig(); d != "d1" {
		t.Errorf("an administrator's change set the config digest to %q; want the config's, d1", d)
	}
	dup := []*cluster.Partition{{Name: "a"}, {Name: "a"}}
	if err := s.SetPartitions(3, dup, "d2"); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("duplicate names: %v; want ErrInvalid", err)
	}
	if got := s.Partitions(); !reflect.DeepEqual(got, second) || s.PartitionsConfig() != "d1" {
		t.Errorf("a rejected SetPartitions changed the partitions: %+v, digest %q", got, s.PartitionsConfig())
	}
	s.Close()
	s = openTest(t, path)
	if got := s.Partitions(); !reflect.DeepEqual(got, second) || s.PartitionsConfig() != "d1" {
		t.Errorf("reopened: %+v, digest %q; want what was stored", got, s.PartitionsConfig())
	}
}

// A node that registers with less than its NodeName line is INVAL, and UP
// once it registers with enough; an admin's drain survives both, and an
// INVAL node cannot be resumed by hand.
func TestRegisterInval(t *testing.T) {
	short := func(idx uint64) *cluster.Node {
		n := gpuNode("n1")
		n.Registered = at(int(idx))
		n.State, n.Reason = cluster.NodeInval, "Low RealMemory (reported:1 < configured:2)"
		return n
	}
	enough := func(idx uint64) *cluster.Node {
		n := gpuNode("n1")
		n.Registered = at(int(idx))
		return n
	}
	state := func(s *Store) string {
		n, _ := s.Node("n1")
		return string(n.State) + " " + n.Reason + " by " + n.ReasonUser
	}
	s := openTest(t, "")
	if err := s.RegisterNode(1, short(1)); err != nil {
		t.Fatal(err)
	}
	if got := state(s); got != "INVAL Low RealMemory (reported:1 < configured:2) by phalanx" {
		t.Errorf("after a short registration: %s", got)
	}
	if err := s.SetNodeState(2, "n1", cluster.NodeUp, "", "alice", at(2)); !errors.Is(err, cluster.ErrConflict) {
		t.Errorf("resume of an INVAL node: %v; want a conflict", err)
	}
	if err := s.RegisterNode(3, enough(3)); err != nil {
		t.Fatal(err)
	}
	if got := state(s); got != "UP  by " {
		t.Errorf("after registering enough: %s", got)
	}

	mustSetState(t, s, 4, cluster.NodeDrain, "cable swap")
	for i, n := range []*cluster.Node{short(5), enough(6)} {
		if err := s.RegisterNode(uint64(5+i), n); err != nil {
			t.Fatal(err)
		}
		if got := state(s); got != "DRAIN cable swap by root" {
			t.Errorf("registration %d after an admin's drain: %s", i, got)
		}
	}
}

// A node records the Raft entries of its last registration and its last
// state change, and keeps them through a snapshot.
func TestNodeEntriesOfRegistrationAndState(t *testing.T) {
	s := openTest(t, "")
	want := func(s *Store, what string, registered, state uint64) {
		t.Helper()
		n, err := s.Node("n1")
		if err != nil {
			t.Fatal(err)
		}
		if n.RegisteredIndex != registered || n.StateIndex != state {
			t.Errorf("%s: registered at entry %d, state changed at %d; want %d and %d", what, n.RegisteredIndex, n.StateIndex, registered, state)
		}
	}
	if err := s.RegisterNode(5, gpuNode("n1")); err != nil {
		t.Fatal(err)
	}
	want(s, "new node", 5, 5)
	if err := s.SetNodeHealth(6, "n1", "", at(1)); err != nil {
		t.Fatal(err)
	}
	want(s, "a health report that changes nothing", 5, 5)
	if err := s.SetNodeState(7, "n1", cluster.NodeDown, "maintenance", "root", at(2)); err != nil {
		t.Fatal(err)
	}
	want(s, "set DOWN", 5, 7)
	// Registered again at an earlier time (another leader's clock): it
	// stays DOWN, and entry 9 is after entry 7 all the same.
	n := gpuNode("n1")
	n.Registered = at(1)
	if err := s.RegisterNode(9, n); err != nil {
		t.Fatal(err)
	}
	want(s, "registered while DOWN", 9, 7)
	var buf bytes.Buffer
	if err := s.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	r := openTest(t, "")
	if err := r.Restore(&buf, 0); err != nil {
		t.Fatal(err)
	}
	want(r, "restored from a snapshot", 9, 7)
}
