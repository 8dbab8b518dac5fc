package store

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// eventLines prints events one per line: "seq node kind user: message".
func eventLines(t *testing.T, s *Store, q EventQuery) string {
	t.Helper()
	evs, err := s.Events(q)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%d %s %s %s %s: %s\n", e.Seq, e.Time.Format("15:04:05"), e.Node, e.Kind, e.User, e.Message)
	}
	return b.String()
}

// Every registration, state change and new health verdict is an event,
// recorded by the command that makes the change; a command that changes
// nothing, is refused, or is replayed records none.
func TestEventsComeWithTheirChange(t *testing.T) {
	s := openTest(t, "")
	idx := uint64(0)
	next := func() uint64 { idx++; return idx }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	n1 := gpuNode("n1")
	n1.NICs = []cluster.NIC{{Device: "mlx5_0", Port: 1}, {Device: "mlx5_1", Port: 1}}
	must(s.RegisterNode(next(), n1))
	must(s.SetNodeState(next(), "n1", cluster.NodeDrain, "maintenance", "alice", at(10)))
	must(s.SetNodeHealth(next(), "n1", "rdma-link: mlx5_1/1 DOWN (Disabled)", at(20)))
	must(s.SetNodeHealth(next(), "n1", "rdma-link: mlx5_1/1 DOWN (Disabled)", at(21))) // the same verdict: nothing
	must(s.SetNodeHealth(next(), "n1", "", at(30)))
	must(s.SetNodeState(next(), "n1", cluster.NodeUp, "", "alice", at(40)))
	must(s.SetNodeHealth(next(), "n1", "gpu-xid: GPU 2 XID 79", at(50)))
	must(s.SetNodeHealth(next(), "n1", "gpu-xid: GPU 2 XID 79; disk: 10 MB free", at(51)))
	must(s.SetNodeHealth(next(), "n1", "", at(60)))
	must(s.SetNodesDown(next(), []string{"n1", "nope"}, ReasonNotResponding, at(70)))
	again := gpuNode("n1")
	again.Registered = at(80)
	must(s.RegisterNode(next(), again))
	if err := s.SetNodeState(next(), "nope", cluster.NodeDrain, "x", "alice", at(90)); !errors.Is(err, cluster.ErrNotFound) {
		t.Fatalf("drain of an unknown node: %v", err)
	}
	if err := s.SetNodeHealth(next(), "nope", "x", at(90)); !errors.Is(err, cluster.ErrNotFound) {
		t.Fatalf("health of an unknown node: %v", err)
	}
	must(s.SetNodeState(3, "n1", cluster.NodeDown, "replayed", "alice", at(95))) // already applied
	again.Weight = 5
	must(s.RegisterNode(next(), again)) // the leader merging the config: not a registration

	want := `1 05:06:07 n1 registered phalanx: 8 GPUs (a100), 2 NICs, 64 CPUs, 512000 MB
2 05:06:17 n1 drained alice: maintenance
3 05:06:27 n1 unhealthy phalanx: rdma-link: mlx5_1/1 DOWN (Disabled) (left DRAIN by alice)
4 05:06:37 n1 healthy phalanx: health checks pass (left DRAIN by alice)
5 05:06:47 n1 resumed alice: was DRAIN: maintenance
6 05:06:57 n1 drained phalanx: gpu-xid: GPU 2 XID 79
7 05:06:58 n1 drained phalanx: gpu-xid: GPU 2 XID 79; disk: 10 MB free
8 05:07:07 n1 resumed phalanx: health checks pass (was DRAIN: gpu-xid: GPU 2 XID 79; disk: 10 MB free)
9 05:07:17 n1 down phalanx: Not responding
10 05:07:27 n1 registered phalanx: 8 GPUs (a100), 0 NICs, 64 CPUs, 512000 MB; UP again (was DOWN: Not responding)
`
	if got := eventLines(t, s, EventQuery{}); got != want {
		t.Errorf("events:\n%s\nwant:\n%s", got, want)
	}
	if n, _ := s.Node("n1"); n.State != cluster.NodeUp || n.Health != "" {
		t.Errorf("node n1 %s with health %q, want UP and healthy", n.State, n.Health)
	}
}

// A registration keeps the node's health verdict: a node that comes back
// UP with a check still failing is drained at its agent's next report,
// though the report is the same as before.
func TestRegistrationKeepsTheHealthVerdict(t *testing.T) {
	s := openTest(t, "")
	mustRegister(t, s, 1, "n1")
	if err := s.SetNodeState(2, "n1", cluster.NodeDrain, "maintenance", "alice", at(1)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetNodeHealth(3, "n1", "shm: 64 MB", at(2)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetNodesDown(4, []string{"n1"}, ReasonNotResponding, at(3)); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, s, 5, "n1")
	if n, _ := s.Node("n1"); n.Health != "shm: 64 MB" {
		t.Fatalf("health after registering again: %q", n.Health)
	}
	if err := s.SetNodeHealth(6, "n1", "shm: 64 MB", at(4)); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Node("n1"); n.State != cluster.NodeDrain || n.ReasonUser != cluster.SystemUser {
		t.Errorf("node %s by %s, want drained by %s", n.State, n.ReasonUser, cluster.SystemUser)
	}
}

func TestEventQueries(t *testing.T) {
	s := openTest(t, "")
	mustRegister(t, s, 1, "n1", "n2", "n3") // events 1-3 at t0
	for i, node := range []string{"n1", "n2", "n1", "n3"} {
		if err := s.SetNodeState(uint64(10+i), node, cluster.NodeDrain, fmt.Sprint("r", i), "alice", at(60*(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	// A leader's clock may step back a little: event 8 is older than 7.
	if err := s.SetNodeState(20, "n2", cluster.NodeUp, "", "alice", at(150)); err != nil {
		t.Fatal(err)
	}
	seqs := func(q EventQuery) string {
		t.Helper()
		evs, err := s.Events(q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range evs {
			out = append(out, fmt.Sprint(e.Seq))
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		q    EventQuery
		want string
	}{
		{EventQuery{}, "1,2,3,4,5,6,7,8"},
		{EventQuery{Nodes: []string{"n1"}}, "1,4,6"},
		{EventQuery{Nodes: []string{"n2", "n3"}}, "2,3,5,7,8"},
		{EventQuery{Since: at(120)}, "5,6,7,8"},
		{EventQuery{Since: at(180)}, "6,7"},
		{EventQuery{Since: at(1000)}, ""},
		{EventQuery{After: 5}, "6,7,8"},
		{EventQuery{After: 2, Limit: 3}, "3,4,5"},
		{EventQuery{Nodes: []string{"n1"}, After: 1, Limit: 1}, "4"},
		{EventQuery{After: 1<<64 - 1}, ""},
	} {
		if got := seqs(tc.q); got != tc.want {
			t.Errorf("%+v: events %s, want %s", tc.q, got, tc.want)
		}
	}
}

// Expire forgets events by age and beyond a count, the same on every
// replica; numbers are never reused, across restarts too.
func TestExpireEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := openTest(t, path)
	mustRegister(t, s, 1, "n1", "n2", "n3", "n4", "n5") // events 1-5
	for i := range 5 {
		if err := s.SetNodeState(uint64(10+i), fmt.Sprint("n", i+1), cluster.NodeDrain, "r", "alice", at(100*(i+1))); err != nil {
			t.Fatal(err)
		}
	} // events 6-10, at 100 s apart
	if err := s.Expire(20, Retention{EventsBefore: at(250)}); err != nil {
		t.Fatal(err)
	}
	if got := eventLines(t, s, EventQuery{}); !strings.HasPrefix(got, "8 ") || strings.Count(got, "\n") != 3 {
		t.Errorf("after expiring events before 250 s:\n%s", got)
	}
	if err := s.Expire(21, Retention{MaxEvents: 2}); err != nil {
		t.Fatal(err)
	}
	if got := eventLines(t, s, EventQuery{}); !strings.HasPrefix(got, "9 ") || strings.Count(got, "\n") != 2 {
		t.Errorf("after keeping 2 events:\n%s", got)
	}
	if err := s.Expire(22, Retention{EventsBefore: at(10000)}); err != nil {
		t.Fatal(err)
	}
	if got := eventLines(t, s, EventQuery{}); got != "" {
		t.Errorf("after expiring every event:\n%s", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, path)
	if err := s.SetNodeState(23, "n1", cluster.NodeUp, "", "alice", at(2000)); err != nil {
		t.Fatal(err)
	}
	if got := eventLines(t, s, EventQuery{}); !strings.HasPrefix(got, "11 ") {
		t.Errorf("the first event after the restart:\n%s\nwant number 11", got)
	}
	// Expire without event retention leaves them alone.
	if err := s.Expire(24, Retention{HistoryBefore: at(10000), RequestsBefore: at(10000)}); err != nil {
		t.Fatal(err)
	}
	if got := eventLines(t, s, EventQuery{}); got == "" {
		t.Errorf("an Expire without event retention forgot the events")
	}
}

// A snapshot carries the events and the next number; a store restored
// from it goes on numbering from there.
func TestSnapshotCarriesEvents(t *testing.T) {
	src := openTest(t, "")
	mustRegister(t, src, 1, "n1", "n2")
	if err := src.SetNodeHealth(3, "n1", "disk: 1 MB free", at(5)); err != nil {
		t.Fatal(err)
	}
	if err := src.Expire(4, Retention{MaxEvents: 2}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := src.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	dst := openTest(t, "")
	mustRegister(t, dst, 1, "stale", "other", "more", "events") // replaced by the restore
	if err := dst.Restore(bytes.NewReader(buf.Bytes()), 0); err != nil {
		t.Fatal(err)
	}
	want := eventLines(t, src, EventQuery{})
	if got := eventLines(t, dst, EventQuery{}); got != want || !strings.HasPrefix(got, "2 ") {
		t.Errorf("restored events:\n%s\nwant:\n%s", got, want)
	}
	if err := dst.SetNodeHealth(5, "n1", "", at(6)); err != nil {
		t.Fatal(err)
	}
	if got := eventLines(t, dst, EventQuery{After: 3}); !strings.HasPrefix(got, "4 ") {
		t.Errorf("the first event after the restore:\n%s\nwant number 4", got)
	}
}

func TestSetHealthEventTime(t *testing.T) {
	s := openTest(t, "")
	mustRegister(t, s, 1, "n1")
	when := t0.Add(3 * time.Hour)
	if err := s.SetNodeHealth(2, "n1", "memlock: 64 KB", when); err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(EventQuery{After: 1})
	if err != nil || len(evs) != 1 || !evs[0].Time.Equal(when) {
		t.Fatalf("events %v, %v: want one at %v", evs, err, when)
	}
	if n, _ := s.Node("n1"); !n.StateTime.Equal(when) || n.Health != "memlock: 64 KB" {
		t.Errorf("node drained at %v with health %q", n.StateTime, n.Health)
	}
}
