package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/config"
)

// TestDefaultPartitionFromConfigRightAfterElection is the regression test
// for "no default partition" with PartitionName=gpu Nodes=n[1-2]
// Default=YES: the leader used to become ready (hand out job IDs) before it
// had committed the configured partitions, so a submit right after the
// election, or any submit on a fresh cluster racing the takeover, found no
// partition at all.
func TestDefaultPartitionFromConfigRightAfterElection(t *testing.T) {
	conf, err := config.Parse(strings.NewReader("PartitionName=gpu Nodes=n[1-2] Default=YES\n"), "phalanx.conf")
	if err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, Config{Partitions: conf.Partitions})
	parts := s.store.Partitions()
	if len(parts) != 1 || parts[0].Name != "gpu" || !parts[0].Default {
		t.Fatalf("partitions once the leader is ready = %v; want the configured default partition gpu", parts)
	}
	register(t, s, nil, "n1", "n2")
	resp, err := s.submit(context.Background(), testSpec(2, 8), false, nil)
	if err != nil {
		t.Fatalf("submit without -p: %v", err)
	}
	j, err := s.store.Job(cluster.JobID(resp.JobId))
	if err != nil || j.Partition != "gpu" {
		t.Fatalf("job = %+v, %v; want partition gpu", j, err)
	}
}

func TestSubmitValidatesConstraintsAgainstThePartition(t *testing.T) {
	parts := []*cluster.Partition{
		{Name: "gpu", Nodes: []string{"n1", "n2", "n3", "n4"}, Default: true, State: cluster.PartitionUp},
		{Name: "other", Nodes: []string{"m1"}, State: cluster.PartitionUp},
	}
	s := newTestServer(t, Config{Partitions: parts})
	register(t, s, []string{"h100", "ib"}, "n1", "n2", "n3", "n4")
	register(t, s, nil, "m1")
	for _, tc := range []struct {
		name string
		edit func(*phalanxv1.JobSpec)
		want string // error substring; empty: accepted
		is   error
	}{
		{"segment does not divide", func(j *phalanxv1.JobSpec) { j.Nodes, j.Segment = 3, 2 }, "--segment=2 must divide the node count 3", cluster.ErrInvalid},
		{"segment divides", func(j *phalanxv1.JobSpec) { j.Nodes, j.Segment = 4, 2 }, "", nil},
		{"negative switches", func(j *phalanxv1.JobSpec) { j.Switches = -1 }, "--switches=-1", cluster.ErrInvalid},
		{"bad qos", func(j *phalanxv1.JobSpec) { j.Qos = "urgent" }, `invalid qos specification "urgent": use high, normal or low`, cluster.ErrInvalid},
		{"qos any case", func(j *phalanxv1.JobSpec) { j.Qos = "HIGH" }, "", nil},
		{"negative nice as a user", func(j *phalanxv1.JobSpec) { j.Nice = -5 }, "only root", cluster.ErrInvalid},
		{"nice", func(j *phalanxv1.JobSpec) { j.Nice = 100 }, "", nil},
		{"nodelist longer than -N", func(j *phalanxv1.JobSpec) { j.Nodelist = []string{"n1", "n2"} }, "--nodelist names 2 nodes but the job asks for 1", cluster.ErrInvalid},
		{"nodelist unknown node", func(j *phalanxv1.JobSpec) { j.Nodelist = []string{"zz9"} }, "--nodelist: node zz9 is not in partition gpu", cluster.ErrInvalid},
		{"nodelist node of another partition", func(j *phalanxv1.JobSpec) { j.Nodelist = []string{"m1"} }, "node m1 is not in partition gpu", cluster.ErrInvalid},
		{"exclude unknown node", func(j *phalanxv1.JobSpec) { j.Exclude = []string{"n9"} }, "--exclude: node n9 is not in partition gpu", cluster.ErrInvalid},
		{"nodelist and exclude overlap", func(j *phalanxv1.JobSpec) { j.Nodelist, j.Exclude = []string{"n1"}, []string{"n1"} }, "both in --nodelist and in --exclude", cluster.ErrInvalid},
		{"exclude leaves too few", func(j *phalanxv1.JobSpec) { j.Nodes, j.Exclude = 3, []string{"n1", "n2"} }, "2 nodes left after --exclude", cluster.ErrUnsatisfiable},
		{"unknown feature", func(j *phalanxv1.JobSpec) { j.Constraint = "h100&nvl72" }, `no node of partition gpu has feature "nvl72"`, cluster.ErrInvalid},
		{"mixed operators, as Slurm reads them", func(j *phalanxv1.JobSpec) { j.Constraint = "h100&ib|h100" }, "", nil},
		{"matching OR", func(j *phalanxv1.JobSpec) { j.Constraint = "ib&[h100|a100]" }, `no node of partition gpu has feature "a100"`, cluster.ErrInvalid},
		{"matching OR, features present", func(j *phalanxv1.JobSpec) { j.Constraint = "[h100|ib]" }, "", nil},
		{"matching OR, malformed", func(j *phalanxv1.JobSpec) { j.Constraint = "[h100|ib" }, "unbalanced brackets", cluster.ErrInvalid},
		{"node counts", func(j *phalanxv1.JobSpec) { j.Nodes, j.Constraint = 3, "[h100*1&ib*2]" }, "", nil},
		{"node counts, no -N", func(j *phalanxv1.JobSpec) { j.Nodes, j.Constraint = 0, "[h100*1&ib*2]" }, "", nil},
		{"node counts over -N", func(j *phalanxv1.JobSpec) { j.Nodes, j.Constraint = 1, "ib*2" }, "counts 2 nodes; the job asks for 1 node: ask for at least 2 (-N)", cluster.ErrUnsatisfiable},
		{"node counts over the partition", func(j *phalanxv1.JobSpec) { j.Nodes, j.Constraint = 0, "[h100*2&ib*3]" }, "partition gpu has 4 nodes; the job asks for 5", cluster.ErrUnsatisfiable},
		{"node count of an unknown feature", func(j *phalanxv1.JobSpec) { j.Nodes, j.Constraint = 2, "nvl72*1" }, `no node of partition gpu has feature "nvl72"`, cluster.ErrInvalid},
		{"node counts in an OR", func(j *phalanxv1.JobSpec) { j.Nodes, j.Constraint = 2, "[h100*1|ib*1]" }, "a count in an OR", cluster.ErrInvalid},
		{"features all present", func(j *phalanxv1.JobSpec) { j.Constraint = "h100&ib" }, "", nil},
		{"nodelist and exclude fine", func(j *phalanxv1.JobSpec) { j.Nodes, j.Nodelist, j.Exclude = 2, []string{"n1"}, []string{"n4"} }, "", nil},
		{"more GPUs per node than any node has", func(j *phalanxv1.JobSpec) { j.GpusPerNode = 9 }, "at most 8 GPUs", cluster.ErrUnsatisfiable},
		{"tasks' GPUs over the node's", func(j *phalanxv1.JobSpec) { j.GpusPerNode, j.TasksPerNode, j.GpusPerTask = 4, 4, 2 }, "is 8 GPUs per node, but the job asks for 4", cluster.ErrInvalid},
		{"tasks of their own GPUs", func(j *phalanxv1.JobSpec) { j.GpusPerNode, j.TasksPerNode, j.GpusPerTask = 8, 4, 2 }, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := testSpec(1, 1)
			tc.edit(spec)
			_, err := s.submit(context.Background(), spec, true, nil)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error = %v; want one containing %q", err, tc.want)
			case tc.is != nil && !errors.Is(err, tc.is):
				t.Fatalf("error %v does not wrap %v", err, tc.is)
			}
		})
	}
	// As in Slurm, node counts raise a node count the job did not give.
	spec := testSpec(0, 1)
	spec.Constraint = "[h100*1&ib*2]"
	resp, err := s.submit(context.Background(), spec, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if j, err := s.store.Job(cluster.JobID(resp.GetJobId())); err != nil || j.Nodes != 3 {
		t.Fatalf("job = %+v, %v; want 3 nodes", j, err)
	}
}

func TestNodeConfMergesWeightAndFeatures(t *testing.T) {
	s := newTestServer(t, Config{Nodes: []config.NodeConf{{Name: "n1", Weight: 7, Features: []string{"nvl72", "ib"}}, {Name: "n2"}}})
	register(t, s, []string{"ib", "h100"}, "n1", "n2")
	n1, err := s.store.Node("n1")
	if err != nil || n1.Weight != 7 || strings.Join(n1.Features, ",") != "ib,h100,nvl72" {
		t.Fatalf("n1 = %+v, %v; want weight 7, features ib,h100,nvl72", n1, err)
	}
	n2, err := s.store.Node("n2")
	if err != nil || n2.Weight != 0 || strings.Join(n2.Features, ",") != "ib,h100" {
		t.Fatalf("n2 = %+v, %v; want the registered features only", n2, err)
	}
}

// MaxJobCount caps the jobs that have not finished, as Slurm's does: a
// submit beyond it is refused with ResourceExhausted and a message that
// says what to do, until a job ends; --test-only is still answered.
func TestMaxJobCount(t *testing.T) {
	s := newTestServer(t, Config{MaxJobCount: 2})
	register(t, s, nil, "n1")
	ctx := context.Background()
	var ids []uint64
	for i := 0; i < 2; i++ {
		resp, err := s.submit(ctx, testSpec(1, 8), false, nil)
		if err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
		ids = append(ids, resp.JobId)
	}
	_, err := s.submit(ctx, testSpec(1, 8), false, nil)
	want := "the cluster holds MaxJobCount=2 jobs that have not finished: submit again once some have ended, or raise MaxJobCount"
	if err == nil || err.Error() != want || status.Code(toStatus(err)) != codes.ResourceExhausted {
		t.Fatalf("third submit: %v (%s); want %q, ResourceExhausted", err, status.Code(toStatus(err)), want)
	}
	if _, err := s.submit(ctx, testSpec(1, 8), true, nil); err != nil {
		t.Errorf("--test-only at the cap: %v", err)
	}
	if _, err := (&controllerService{s: s}).CancelJob(ctx, &phalanxv1.CancelJobRequest{JobIds: []uint64{ids[1]}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.submit(ctx, testSpec(1, 8), false, nil); err != nil {
		t.Errorf("submit after a job ended: %v", err)
	}
}

// A partition's AllowAccounts and DenyAccounts (Slurm's keys) decide whose
// jobs it takes, at submit (and when scontrol update moves a job, which
// runs the same checks).
func TestPartitionAccounts(t *testing.T) {
	s := newTestServer(t, Config{Partitions: []*cluster.Partition{
		{Name: "gpu", AllNodes: true, Default: true, State: cluster.PartitionUp, AllowAccounts: []string{"ml", "vision"}},
		{Name: "open", AllNodes: true, State: cluster.PartitionUp, DenyAccounts: []string{"guest"}},
	}})
	register(t, s, nil, "n1")
	for _, tc := range []struct {
		part, account string
		ok            bool
	}{
		{"gpu", "ml", true}, {"gpu", "", false}, {"gpu", "guest", false},
		{"open", "", true}, {"open", "ml", true}, {"open", "guest", false},
	} {
		spec := testSpec(1, 1)
		spec.Partition, spec.Account = tc.part, tc.account
		_, err := s.submit(context.Background(), spec, true, nil)
		if tc.ok != (err == nil) || (err != nil && (!strings.Contains(err.Error(), "Invalid account or account/partition combination specified") || !errors.Is(err, cluster.ErrPermission))) {
			t.Errorf("account %q in partition %s: %v; want ok=%v", tc.account, tc.part, err, tc.ok)
		}
	}
}
