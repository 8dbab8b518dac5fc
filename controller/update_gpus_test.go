package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// scontrol update NumNodes= keeps the GPUs a job asked for in all (-G), as
// Slurm keeps them (its SLURM_GPUS stays the total): -G alone is split
// again over the new nodes, with the --mem-per-gpu memory; a total the
// nodes cannot share evenly, and -G beside GPUs per node or per task, are
// refused, the job unchanged.
func TestUpdateNodesKeepsGPUTotal(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1", "n2", "n3", "n4")
	ctx := context.Background()
	submit := func(nodes, gpus int, form *phalanxv1.RequestForm) uint64 {
		t.Helper()
		spec := testSpec(nodes, gpus)
		spec.Hold, spec.RequestForm = true, form
		if form.MemPerGpuMb > 0 {
			spec.MemoryMb = form.MemPerGpuMb * int64(gpus)
		}
		resp, err := s.submit(ctx, spec, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp.JobId
	}
	setNodes := func(id uint64, n int32) error {
		return s.updateJob(ctx, &phalanxv1.UpdateJobRequest{JobId: id, Nodes: proto.Int32(n)})
	}
	shape := func(id uint64, nodes, gpus int, mem int64) {
		t.Helper()
		j, err := s.store.Job(cluster.JobID(id))
		if err != nil {
			t.Fatal(err)
		}
		if j.Nodes != nodes || j.GPUsPerNode != gpus || j.MemoryMB != mem {
			t.Errorf("job %d: %d nodes, %d GPUs and %d MB each; want %d, %d and %d MB", id, j.Nodes, j.GPUsPerNode, j.MemoryMB, nodes, gpus, mem)
		}
	}
	refused := func(err error, want string) {
		t.Helper()
		if !errors.Is(err, cluster.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("update: %v; want refused with %q", err, want)
		}
	}

	// sbatch -N 1 -G 4 --mem-per-gpu=1000
	split := submit(1, 4, &phalanxv1.RequestForm{Gpus: true, GpusSplit: true, MemPerGpuMb: 1000})
	if err := setNodes(split, 2); err != nil {
		t.Fatal(err)
	}
	shape(split, 2, 2, 2000)
	refused(setNodes(split, 3), "NumNodes=3: job 1 asked for --gpus=4, which 3 nodes cannot share evenly (every node gets the same GPUs): give a node count that divides 4")
	shape(split, 2, 2, 2000)
	for _, n := range []int32{4, 1} { // the total survives one update after another
		if err := setNodes(split, n); err != nil {
			t.Fatal(err)
		}
	}
	shape(split, 1, 4, 4000)
	// More GPUs on a node than any has is refused as a submit is.
	big := submit(2, 8, &phalanxv1.RequestForm{Gpus: true, GpusSplit: true})
	if err := setNodes(big, 1); err == nil {
		t.Error("-G 16 on 1 node of 8 GPUs: accepted")
	}
	shape(big, 2, 8, 0)

	// sbatch -N 2 --gpus-per-node=2 -G 4: its total is 2 nodes' GPUs.
	perNode := submit(2, 2, &phalanxv1.RequestForm{Gpus: true, GpusPerNode: true})
	refused(setNodes(perNode, 1), "NumNodes=1: job 3 asked for --gpus=4 with GPUs per node or per task, which make 2 nodes: keep NumNodes=2, or cancel the job and submit it again with -N 1")
	shape(perNode, 2, 2, 0)
	if err := setNodes(perNode, 2); err != nil {
		t.Errorf("NumNodes= its own count: %v", err)
	}
	// sbatch -N 2 --gpus-per-node=2: no total, the count per node stays.
	noTotal := submit(2, 2, &phalanxv1.RequestForm{GpusPerNode: true})
	if err := setNodes(noTotal, 3); err != nil {
		t.Fatal(err)
	}
	shape(noTotal, 3, 2, 0)
}
