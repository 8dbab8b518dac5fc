package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/config"
)

// With NodeName lines, the config is the cluster: declared nodes are
// listed before they register (DOWN, not responding), a node that
// reports less than its line is INVAL with Slurm's reasons and comes back
// when it reports enough, and a node no line declares is refused.
func TestDeclaredNodes(t *testing.T) {
	s := newTestServer(t, Config{Nodes: []config.NodeConf{
		{Name: "n1", CPUs: 64, MemoryMB: 512000, GPUs: 8},
		{Name: "n2", CPUs: 128, MemoryMB: 1024000, GPUs: 8},
		{Name: "n3"},
	}})
	ctx := context.Background()
	api := &controllerService{s: s}
	list := func() string {
		t.Helper()
		resp, err := api.ListNodes(ctx, &phalanxv1.ListNodesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range resp.Nodes {
			out = append(out, fmt.Sprintf("%s %s nr=%v %q", n.Name, n.State, n.NotResponding, n.Reason))
		}
		return strings.Join(out, "\n")
	}
	if got, want := list(), `n1 DOWN nr=true "Not responding"
n2 DOWN nr=true "Not responding"
n3 DOWN nr=true "Not responding"`; got != want {
		t.Errorf("before any registration:\n%s\nwant\n%s", got, want)
	}

	// ... and their partition's (the default one, of every node).
	parts, err := api.ListPartitions(ctx, &phalanxv1.ListPartitionsRequest{})
	if err != nil || len(parts.Partitions) != 1 || strings.Join(parts.Partitions[0].Nodes, ",") != "n1,n2,n3" {
		t.Errorf("partitions before any registration: %v, %v; want one, of n1,n2,n3", parts, err)
	}

	// A declared node that never registered has no events yet, and asking
	// for them is no error.
	if evs, err := api.ListEvents(ctx, &phalanxv1.ListEventsRequest{Nodes: []string{"n3"}}); err != nil || len(evs.Events) != 0 {
		t.Errorf("events of n3 before it registered: %v, %v", evs, err)
	}

	register(t, s, nil, "n1", "n2") // 64 CPUs, 512000 MB, 8 GPUs each
	ns := &nodeService{s: s}
	_, err = ns.RegisterNode(ctx, &phalanxv1.RegisterNodeRequest{Name: "n3", Cpus: 8, MemoryMb: 1000, Gpus: 0})
	if err != nil {
		t.Fatal(err) // n3's line declares nothing: anything goes
	}
	if got, want := list(), `n1 IDLE nr=false ""
n2 INVAL nr=false "Low CPUs (reported:64 < configured:128), Low RealMemory (reported:512000 < configured:1024000)"
n3 IDLE nr=false ""`; got != want {
		t.Errorf("after registering:\n%s\nwant\n%s", got, want)
	}
	n2, _ := s.store.Node("n2")
	if n2.State != cluster.NodeInval || n2.ReasonUser != cluster.SystemUser {
		t.Errorf("n2 stored as %s by %q", n2.State, n2.ReasonUser)
	}

	// An INVAL node is not used, and an admin cannot resume it.
	resp, err := s.submit(ctx, testSpec(2, 8), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := cluster.JobID(resp.JobId)
	eventually(t, 10*time.Second, func() error { // considered, and not placed: n2 is INVAL, n3 has no GPU: ReqNodeNotAvail, for n2
		j, err := api.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: uint64(id)})
		if err != nil || j.State != string(cluster.JobPending) || j.Reason != string(cluster.ReasonNodeAvail)+", UnavailableNodes:n2" {
			return fmt.Errorf("job %v: %v", j, err)
		}
		return nil
	})
	_, err = s.updateNodes(ctx, &phalanxv1.UpdateNodeRequest{Names: []string{"n2"}, State: "RESUME"})
	if err == nil || !strings.Contains(err.Error(), "node n2 is INVAL (Low CPUs") {
		t.Errorf("RESUME of an INVAL node: %v", err)
	}

	// It comes back when it registers with what its line says, and the job
	// runs there.
	if _, err := ns.RegisterNode(ctx, &phalanxv1.RegisterNodeRequest{Name: "n2", Cpus: 128, MemoryMb: 1024000, Gpus: 8}); err != nil {
		t.Fatal(err)
	}
	if n2, _ := s.store.Node("n2"); n2.State != cluster.NodeUp || n2.Reason != "" {
		t.Errorf("n2 after registering enough: %s %q", n2.State, n2.Reason)
	}
	eventually(t, 10*time.Second, func() error {
		if j, _ := s.store.Job(id); j.State == cluster.JobPending {
			return fmt.Errorf("job still pending (%s)", j.Reason)
		}
		return nil
	})

	_, err = ns.RegisterNode(ctx, &phalanxv1.RegisterNodeRequest{Name: "n9", Cpus: 64, MemoryMb: 512000, Gpus: 8})
	if status.Code(toStatus(err)) != codes.PermissionDenied || !strings.Contains(err.Error(), `node "n9" is not declared in phalanx.conf`) {
		t.Errorf("undeclared node: %v", err)
	}
	if _, err := s.store.Node("n9"); err == nil {
		t.Error("the undeclared node was recorded")
	}
}

// withLine is registration's merge and reconfigure's: what a node offers
// is its line's CPUs, RealMemory and GPU count when the line gives them
// and it has as much, what its agent reported otherwise; its features are
// its agent's and its line's now; and what the stored node alone cannot
// tell waits for its agent.
func TestWithLine(t *testing.T) {
	node := func(cpus int, mem int64, gpus int, st cluster.NodeState, features ...string) *cluster.Node {
		return &cluster.Node{Name: "n1", CPUs: cpus, MemoryMB: mem, GPUs: gpus, State: st, Features: features}
	}
	line := func(cpus int, mem int64, gpus int, features ...string) config.NodeConf {
		return config.NodeConf{Name: "n1", CPUs: cpus, MemoryMB: mem, GPUs: gpus, GPUType: "h100", Features: features}
	}
	for _, tc := range []struct {
		name      string
		n         *cluster.Node
		was, now  config.NodeConf
		want      string
		undecided []string
	}{
		{"registration: the line caps what the agent reports; no Gres keeps its GPUs",
			node(16, 64000, 2, "", "x"), config.NodeConf{}, config.NodeConf{CPUs: 4, MemoryMB: 1000, Features: []string{"b"}},
			`16/64000/2 -> 4/1000/2 "" [x b]`, nil},
		{"registration: less than the line is INVAL, with what it reported",
			node(4, 64000, 2, ""), config.NodeConf{}, line(8, 0, 2),
			`4/64000/2 -> 4/64000/2 "INVAL" [] Low CPUs (reported:4 < configured:8)`, nil},
		{"reconfigure: a lower line applies; a feature gone from the line goes",
			node(8, 64000, 2, cluster.NodeUp, "x", "b", "ib"), line(8, 0, 2, "b", "ib"), line(4, 1000, 1, "b"),
			`8/64000/2 -> 4/1000/1 "UP" [x b]`, nil},
		{"reconfigure: a line raised past what the agent reported is INVAL",
			node(16, 64000, 2, cluster.NodeUp), line(0, 0, 0), line(32, 0, 0),
			`16/64000/2 -> 16/64000/2 "INVAL" [] Low CPUs (reported:16 < configured:32)`, nil},
		{"reconfigure: a cap raised is not known from the node: it waits for its agent",
			node(8, 64000, 2, cluster.NodeUp), line(8, 0, 0), line(16, 0, 0),
			`8/64000/2 -> 8/64000/2 "UP" []`, []string{"CPUs"}},
		{"reconfigure: a cap dropped too",
			node(8, 1000, 2, cluster.NodeUp), line(8, 1000, 2), line(0, 0, 2),
			`8/1000/2 -> 8/1000/2 "UP" []`, []string{"CPUs", "RealMemory"}},
		{"reconfigure: an INVAL node the line now fits is used again",
			node(4, 64000, 2, cluster.NodeInval), line(8, 0, 2), line(4, 0, 2),
			`4/64000/2 -> 4/64000/2 "UP" []`, nil},
		{"a new leader, same line: an INVAL node stays INVAL",
			node(4, 64000, 2, cluster.NodeInval), line(8, 0, 2), line(8, 0, 2),
			`4/64000/2 -> 4/64000/2 "INVAL" [] Low CPUs (reported:4 < configured:8)`, nil},
		{"a drained node stays drained, whatever its line",
			node(4, 64000, 2, cluster.NodeDrain), line(0, 0, 0), line(8, 0, 0),
			`4/64000/2 -> 4/64000/2 "DRAIN" []`, nil},
		{"a new leader whose line was raised: what the node offers waits, it is not INVAL",
			node(8, 64000, 2, cluster.NodeUp), line(16, 0, 2), line(16, 0, 2),
			`8/64000/2 -> 8/64000/2 "UP" []`, []string{"CPUs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, undecided := withLine(tc.n, tc.was, tc.now)
			got := fmt.Sprintf("%d/%d/%d -> %d/%d/%d %q %v", tc.n.CPUs, tc.n.MemoryMB, tc.n.GPUs, out.CPUs, out.MemoryMB, out.GPUs, out.State, out.Features)
			if out.Reason != "" {
				got += " " + out.Reason
			}
			if got != tc.want || !slices.Equal(undecided, tc.undecided) {
				t.Errorf("got  %s, undecided %q\nwant %s, undecided %q", got, undecided, tc.want, tc.undecided)
			}
		})
	}
}

// A NodeName line caps what a node offers, as Slurm schedules slurm.conf's
// values: a node reporting 16 CPUs, 64000 MB and 2 GPUs under
// CPUs=4 RealMemory=1000 (no Gres: the GPUs it reports) shows and runs 4
// CPUs, 1000 MB and 2 GPUs.
func TestNodeLineCapsWhatItReports(t *testing.T) {
	s := newTestServer(t, Config{Nodes: []config.NodeConf{{Name: "n5", CPUs: 4, MemoryMB: 1000}}})
	ctx := context.Background()
	ns := &nodeService{s: s}
	if _, err := ns.RegisterNode(ctx, &phalanxv1.RegisterNodeRequest{Name: "n5", Cpus: 16, MemoryMb: 64000, Gpus: 2}); err != nil {
		t.Fatal(err)
	}
	resp, err := (&controllerService{s: s}).ListNodes(ctx, &phalanxv1.ListNodesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if n := resp.Nodes[0]; n.Cpus != 4 || n.MemoryMb != 1000 || n.Gpus != 2 || n.State != "IDLE" {
		t.Errorf("n5 listed with %d CPUs, %d MB, %d GPUs, %s; want 4, 1000, 2, IDLE", n.Cpus, n.MemoryMb, n.Gpus, n.State)
	}
	spec := testSpec(1, 0)
	spec.CpusPerNode = 8
	if _, err := s.submit(ctx, spec, false, nil); err == nil || !strings.Contains(err.Error(), "at most 4 CPUs") {
		t.Errorf("a job for 8 CPUs on a node: %v; want it refused, n5 offering 4", err)
	}
}

// A node's layout (Sockets, CoresPerSocket, ThreadsPerCore) is its
// NodeName line's, registered or not, and a reconfigure changes it.
func TestNodeLayout(t *testing.T) {
	n1 := config.NodeConf{Name: "n1", CPUs: 16, Sockets: 2, CoresPerSocket: 4, ThreadsPerCore: 2}
	s := newTestServer(t, Config{Nodes: []config.NodeConf{n1, {Name: "n2", CPUs: 8}}})
	ctx := context.Background()
	layouts := func() string {
		t.Helper()
		resp, err := (&controllerService{s: s}).ListNodes(ctx, &phalanxv1.ListNodesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range resp.Nodes {
			out = append(out, fmt.Sprintf("%s %d:%d:%d", n.Name, n.Sockets, n.CoresPerSocket, n.ThreadsPerCore))
		}
		return strings.Join(out, ", ")
	}
	if got, want := layouts(), "n1 2:4:2, n2 0:0:0"; got != want {
		t.Errorf("before registering: %s, want %s", got, want)
	}
	register(t, s, nil, "n1")
	if got, want := layouts(), "n1 2:4:2, n2 0:0:0"; got != want {
		t.Errorf("registered: %s, want %s", got, want)
	}
	file := s.cfg
	n1.Sockets, n1.ThreadsPerCore = 4, 1
	file.Nodes = []config.NodeConf{n1, {Name: "n2", CPUs: 8}}
	s.cfg.Reload = func() (Config, error) { return file, nil }
	changes, _, err := s.reconfigure(ctx)
	if want := []string{"node n1: Sockets 2 to 4, ThreadsPerCore 2 to 1"}; err != nil || !slices.Equal(changes, want) {
		t.Errorf("reconfigure: %q, %v; want %q", changes, err, want)
	}
	if got, want := layouts(), "n1 4:4:1, n2 0:0:0"; got != want {
		t.Errorf("after reconfigure: %s, want %s", got, want)
	}
}
