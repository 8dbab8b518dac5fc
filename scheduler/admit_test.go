package scheduler

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

func TestAdmit(t *testing.T) {
	nodes := []*cluster.Node{
		{Name: "n1", GPUs: 8, CPUs: 64, MemoryMB: 1 << 19, State: cluster.NodeUp, Features: []string{"ib"}},
		{Name: "n2", GPUs: 8, CPUs: 64, MemoryMB: 1 << 19, State: cluster.NodeUp},
	}
	snap := &Snapshot{Nodes: nodes, Partitions: []*cluster.Partition{
		{Name: "gpu", AllNodes: true, Default: true, State: cluster.PartitionUp, MaxTime: 2 * time.Hour, DefaultTime: time.Hour, MaxNodes: 2},
		{Name: "whole", AllNodes: true, State: cluster.PartitionUp, Exclusive: true, AllowAccounts: []string{"ml"}},
		{Name: "wide", AllNodes: true, State: cluster.PartitionUp, MinNodes: 2},
	}}
	job := func(edit func(*cluster.Job)) *cluster.Job {
		j := &cluster.Job{Nodes: 1, GPUsPerNode: 8, Account: "ml"}
		if edit != nil {
			edit(j)
		}
		return j
	}
	j := job(nil)
	if err := Admit(snap, j, nil); err != nil || j.Partition != "gpu" || j.TimeLimit != time.Hour || j.Exclusive {
		t.Errorf("default partition: %v, %+v; want gpu, its DefaultTime, not exclusive", err, j)
	}
	j = job(func(j *cluster.Job) { j.Partition = "whole" })
	if err := Admit(snap, j, nil); err != nil || !j.Exclusive {
		t.Errorf("OverSubscribe=EXCLUSIVE partition: %v, exclusive %v; want whole nodes", err, j.Exclusive)
	}
	if err := Admit(snap, job(func(j *cluster.Job) { j.Partition, j.Nodes = "wide", 2 }), nil); err != nil {
		t.Errorf("MinNodes=2 partition, 2 nodes: %v; want admitted", err)
	}
	for _, tc := range []struct {
		edit func(*cluster.Job)
		want string
		is   error
	}{
		{func(j *cluster.Job) { j.Partition = "nope" }, "Invalid partition name specified: nope", cluster.ErrNotFound},
		{func(j *cluster.Job) { j.Partition, j.Account = "whole", "physics" }, "Invalid account or account/partition combination", cluster.ErrPermission},
		{func(j *cluster.Job) { j.TimeLimit = 3 * time.Hour }, "exceeds partition gpu's MaxTime 2:00:00: ask for at most 2:00:00, or use another partition", cluster.ErrInvalid},
		{func(j *cluster.Job) { j.Nodes = 3 }, "3 nodes exceed partition gpu's MaxNodes 2: ask for at most 2, or use another partition", cluster.ErrInvalid},
		{func(j *cluster.Job) { j.Partition = "wide" }, "node count 1 is below partition wide's MinNodes 2: ask for at least 2, or use another partition", cluster.ErrInvalid},
		{func(j *cluster.Job) { j.Constraint = "ib&nvl" }, `has feature "nvl"`, cluster.ErrInvalid},
		{func(j *cluster.Job) { j.NodeList = []string{"n9"} }, "--nodelist: node n9 is not in partition gpu", cluster.ErrInvalid},
		{func(j *cluster.Job) { j.GPUsPerNode = 16 }, "at most 8 GPUs", cluster.ErrUnsatisfiable},
	} {
		j := job(tc.edit)
		err := Admit(snap, j, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.is) {
			t.Errorf("%+v: %v, want %q (%v)", j, err, tc.want, tc.is)
		}
	}
}
