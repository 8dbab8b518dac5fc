package testcluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// TestNodelistAndExcludeSteerPlacement: --nodelist pins a job to the named
// node, --exclude keeps it off the others.
func TestNodelistAndExcludeSteerPlacement(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 4, LeafSize: 2})
	dir := t.TempDir()
	pinned := spec(dir, "pinned", 1, 8, "#!/bin/sh\ntrue\n")
	pinned.Nodelist = []string{c.Nodes[2]}
	avoid := spec(dir, "avoid", 1, 8, "#!/bin/sh\ntrue\n")
	avoid.Exclude = []string{c.Nodes[0], c.Nodes[1], c.Nodes[2]}

	for _, tc := range []struct {
		name string
		id   uint64
		want string
	}{
		{"--nodelist", submit(t, c, pinned), c.Nodes[2]},
		{"--exclude", submit(t, c, avoid), c.Nodes[3]},
	} {
		job := c.WaitJob(tc.id, 20*time.Second, "COMPLETED", "FAILED")
		if job.State != "COMPLETED" || len(job.Alloc) != 1 || job.Alloc[0].Node != tc.want {
			t.Errorf("%s job: %s on %v; want COMPLETED on %s", tc.name, job.State, job.Alloc, tc.want)
		}
	}
}

// TestSegmentThatDoesNotDivideIsRefusedAtSubmit: --segment=K with a node
// count that is not a multiple of K never enters the queue.
func TestSegmentThatDoesNotDivideIsRefusedAtSubmit(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 4, LeafSize: 2})
	s := spec(t.TempDir(), "seg", 3, 8, "#!/bin/sh\ntrue\n")
	s.Segment = 2
	_, err := c.Client.SubmitJob(context.Background(), &phalanxv1.SubmitJobRequest{Spec: s})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "--segment=2 must divide the node count 3") {
		t.Fatalf("submit -N3 --segment=2: %v; want InvalidArgument naming --segment=2 and the node count", err)
	}
}
