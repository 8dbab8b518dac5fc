package store

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// TestSimulation applies random command sequences, as a Raft log would, and
// checks after every command that the store's invariants hold: the active
// index is exact, no GPU is held by two live jobs, and a placed gang has a
// task on every node of its allocation.
func TestSimulation(t *testing.T) {
	dir := t.TempDir()
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		s, err := Open(filepath.Join(dir, fmt.Sprintf("sim%d.db", n)))
		if err != nil {
			rt.Fatalf("Open: %v", err)
		}
		defer s.Close()
		sim := &simulation{s: s, nodes: []string{"n1", "n2", "n3"}}
		for _, name := range sim.nodes {
			sim.do(rt, func(idx uint64) error { return s.RegisterNode(idx, gpuNode(name)) })
		}
		steps := rapid.IntRange(1, 40).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			sim.step(rt)
			if err := checkConsistency(s); err != nil {
				rt.Fatalf("after step %d: %v", i, err)
			}
		}
	})
}

type simulation struct {
	s     *Store
	idx   uint64
	next  cluster.JobID
	nodes []string
}

// do applies one command at the next index; rejections are fine.
func (m *simulation) do(rt *rapid.T, f func(idx uint64) error) {
	m.idx++
	_ = f(m.idx)
	if got := m.s.AppliedIndex(); got != m.idx {
		rt.Fatalf("applied index %d after command %d", got, m.idx)
	}
}

func (m *simulation) step(rt *rapid.T) {
	switch rapid.IntRange(0, 7).Draw(rt, "op") {
	case 0:
		m.next++
		j := pendingJob(m.next, rapid.IntRange(1, 2).Draw(rt, "nodes"), 2)
		m.do(rt, func(idx uint64) error { return submitErr(m.s, idx, j) })
	case 6:
		m.submitWithRequest(rt)
	case 7:
		before := rapid.IntRange(0, 3).Draw(rt, "expire")
		m.do(rt, func(idx uint64) error {
			return m.s.Expire(idx, Retention{RequestsBefore: at(before), HistoryBefore: at(before), MaxHistory: 3, MaxRequests: 3})
		})
	case 1:
		m.place(rt)
	case 2:
		m.report(rt)
	case 3:
		id := cluster.JobID(rapid.IntRange(1, int(m.next)+1).Draw(rt, "cancel"))
		m.do(rt, func(idx uint64) error {
			_, err := m.s.CancelJobs(idx, []cluster.JobID{id}, at(1), "c", nil)
			return err
		})
	case 4:
		node := rapid.SampledFrom(m.nodes).Draw(rt, "node")
		st := rapid.SampledFrom([]cluster.NodeState{cluster.NodeUp, cluster.NodeDown, cluster.NodeDrain}).Draw(rt, "state")
		m.do(rt, func(idx uint64) error { return m.s.SetNodeState(idx, node, st, "sim", "root", at(2)) })
	case 5:
		m.replay(rt)
	}
}

// submitWithRequest submits with a request ID from a small pool: a reused
// ID still remembered must answer with its first job and create nothing.
func (m *simulation) submitWithRequest(rt *rapid.T) {
	req := []byte{byte(rapid.IntRange(0, 3).Draw(rt, "req"))}
	first, seen := m.s.RequestJob(req)
	m.next++
	j := pendingJob(m.next, 1, 2)
	j.SubmitTime = at(rapid.IntRange(0, 4).Draw(rt, "submitted"))
	m.do(rt, func(idx uint64) error {
		id, err := m.s.SubmitJob(idx, j, nil, req)
		switch {
		case err != nil:
			rt.Fatalf("submit with request: %v", err)
		case seen && id != first:
			rt.Fatalf("retried request %x answered job %d; first was %d", req, id, first)
		case !seen && id != j.ID:
			rt.Fatalf("new request %x answered job %d; want %d", req, id, j.ID)
		}
		return nil
	})
}

// replay re-applies an already applied index, as Raft does after a restart:
// nothing may change.
func (m *simulation) replay(rt *rapid.T) {
	before, err := m.s.State()
	if err != nil {
		rt.Fatal(err)
	}
	if err := m.s.SetNodeState(m.idx, "n1", cluster.NodeDown, "replay", "root", at(3)); err != nil {
		rt.Fatalf("replayed command: %v", err)
	}
	after, _ := m.s.State()
	if !reflect.DeepEqual(before, after) {
		rt.Fatalf("a replayed index changed the state")
	}
}

// place proposes a batch of random placements, some overlapping.
func (m *simulation) place(rt *rapid.T) {
	var ps []Placement
	for i := rapid.IntRange(1, 3).Draw(rt, "batch"); i > 0; i-- {
		id := cluster.JobID(rapid.IntRange(1, int(m.next)+1).Draw(rt, "job"))
		var a cluster.Allocation
		for k := rapid.IntRange(1, 2).Draw(rt, "width"); k > 0; k-- {
			a.Nodes = append(a.Nodes, cluster.NodeAlloc{
				Node:     rapid.SampledFrom(m.nodes).Draw(rt, "on"),
				GPUs:     []int{rapid.IntRange(0, 8).Draw(rt, "g1"), rapid.IntRange(0, 8).Draw(rt, "g2")},
				CPUs:     8,
				MemoryMB: 1000,
			})
		}
		ps = append(ps, Placement{Job: id, Alloc: a, Time: at(1)})
	}
	m.do(rt, func(idx uint64) error {
		placed, err := m.s.PlaceJobs(idx, ps)
		for _, id := range placed {
			j, jerr := m.s.Job(id)
			if jerr != nil || j.State != cluster.JobConfiguring || len(j.Tasks) != len(j.Alloc.Nodes) || len(j.Tasks) != j.Nodes {
				rt.Fatalf("placed job %d is not a whole gang: %+v (%v)", id, j, jerr)
			}
		}
		return err
	})
}

// report sends a random report for a random task of a random job.
func (m *simulation) report(rt *rapid.T) {
	if m.next == 0 {
		return
	}
	id := cluster.JobID(rapid.IntRange(1, int(m.next)).Draw(rt, "rjob"))
	j, err := m.s.Job(id)
	if err != nil || len(j.Tasks) == 0 {
		return
	}
	task := j.Tasks[rapid.IntRange(0, len(j.Tasks)-1).Draw(rt, "rank")]
	r := cluster.TaskReport{
		JobID: id, Attempt: j.Attempt, Rank: task.Rank, Node: task.Node,
		State:    rapid.SampledFrom([]cluster.TaskState{cluster.TaskRunning, cluster.TaskExited, cluster.TaskKilled, cluster.TaskFailed}).Draw(rt, "rstate"),
		ExitCode: rapid.IntRange(0, 1).Draw(rt, "code"),
		Time:     at(5),
	}
	m.do(rt, func(idx uint64) error { return m.s.ReportTask(idx, r) })
}
