package controller

import (
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
)

func TestPortPickerSkipsPortsInUseOnTheMasterNode(t *testing.T) {
	live := &cluster.Job{ID: 1, State: cluster.JobRunning}
	live.Alloc = &cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "a"}}}
	live.Tasks = []cluster.Task{{Node: "a", State: cluster.TaskRunning}}
	live.MasterPort = 29500
	p := newPortPicker(29500, 29501, []*cluster.Job{live})
	if port, ok := p.pick("a"); !ok || port != 29501 {
		t.Errorf("pick on a = %d %v; want 29501", port, ok)
	}
	if _, ok := p.pick("a"); ok {
		t.Errorf("range exhausted on a, yet a port was handed out")
	}
	if port, ok := p.pick("b"); !ok || port != 29500 {
		t.Errorf("pick on b = %d %v; want 29500", port, ok)
	}
}
