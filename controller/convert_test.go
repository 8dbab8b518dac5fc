package controller

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// The request form (which options gave the tasks, GPUs and memory) goes
// from the submit to the job and back to the spec the agents read; a spec
// without one (an older client) gives a job and a spec without one.
func TestRequestFormThroughTheJob(t *testing.T) {
	for _, f := range []*phalanxv1.RequestForm{
		{Ntasks: true, NtasksPerNode: true, GpusPerNode: true, Gpus: true, MemPerCpuMb: 4096, MemPerGpuMb: 81920, GpusPerTask: true},
		{Gpus: true, GpusSplit: true, MemPerGpuMb: 1024},
		{},
		nil,
	} {
		spec := &phalanxv1.JobSpec{User: "alice", Script: "#!/bin/sh\nsrun hostname\n", WorkDir: "/home/alice", Nodes: 2, RequestForm: f}
		j, err := jobFromSpec(spec, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := specToProto(j).GetRequestForm(); !proto.Equal(got, f) {
			t.Errorf("request form %v came back as %v", f, got)
		}
	}
	spec := &phalanxv1.JobSpec{User: "alice", Script: "#!/bin/sh\n", WorkDir: "/home/alice", Nodes: 1, RequestForm: &phalanxv1.RequestForm{MemPerCpuMb: -1}}
	if _, err := jobFromSpec(spec, 0); err == nil {
		t.Errorf("a negative --mem-per-cpu was taken")
	}
	// -G alone split over the nodes: not beside --gpus-per-node, nor without -G.
	for _, f := range []*phalanxv1.RequestForm{{GpusSplit: true}, {Gpus: true, GpusPerNode: true, GpusSplit: true}} {
		spec.RequestForm = f
		if _, err := jobFromSpec(spec, 0); err == nil || !strings.Contains(err.Error(), "leave gpus_split out") {
			t.Errorf("request form %v: %v; want refused", f, err)
		}
	}
}
