package controller

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// fuzzSpec builds a spec from fuzzed fields; lists are comma-separated,
// the environment newline-separated.
type fuzzSpec struct {
	name, user, script, workDir, part, constraint, qos, nodelist, exclude, env string
	nodes, gpus, cpus, segment, switches, nice, uid                            int32
	mem, limit, wait                                                           int64
}

func (f fuzzSpec) spec() *phalanxv1.JobSpec {
	split := func(s, sep string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, sep)
	}
	return &phalanxv1.JobSpec{
		Name: f.name, User: f.user, Uid: f.uid, Script: f.script, WorkDir: f.workDir, Partition: f.part,
		Constraint: f.constraint, Qos: f.qos, Nodelist: split(f.nodelist, ","), Exclude: split(f.exclude, ","),
		Environment: split(f.env, "\n"), Nodes: f.nodes, GpusPerNode: f.gpus, CpusPerNode: f.cpus,
		Segment: f.segment, Switches: f.switches, Nice: f.nice, MemoryMb: f.mem,
		TimeLimitSeconds: f.limit, SwitchesWaitSeconds: f.wait,
	}
}

// FuzzJobFromSpec converts specs built from fuzzed fields. A conversion
// gives a job or an ErrInvalid error of one line, never both; an accepted
// spec can be stored (it marshals), its job has exactly the limits asked
// (no overflow), nothing negative, at least one node, a node list no longer
// than its node count and a segment that divides it; and converting the
// job back to a spec and again gives the same job.
func FuzzJobFromSpec(f *testing.F) {
	ok := "#!/bin/sh\nsrun hostname\n"
	for _, s := range []fuzzSpec{
		{name: "train", user: "alice", script: ok, workDir: "/home/alice", nodes: 2, gpus: 8, limit: 3600, env: "HOME=/home/alice\nLR=0.1"},
		{name: "t", user: "bob", script: ok, workDir: "/tmp", part: "gpu", constraint: "h100&ib", qos: "HIGH",
			nodelist: "n1,n2", exclude: "n3", nodes: 4, segment: 2, switches: 1, wait: 1800, nice: 100, mem: 64 << 10},
		{user: "alice", script: ok, workDir: "/tmp", limit: 9223372036854775807},
		{user: "alice", script: ok, workDir: "/tmp", wait: 9300000000},
		{user: "alice", script: "#!/bin/sh\necho caf\xe9\n", workDir: "/tmp"},
		{user: "alice", script: ok, workDir: "/tmp", env: "NAME=Jos\xe9"},
		{user: "alice", script: ok, workDir: "/tmp/r\xe9sultats"},
		{user: "alice", script: ok, workDir: "/tmp", nodelist: "n1,n1", nodes: 2},
		{user: "root", script: ok, workDir: "/", nice: -2147483648},
		{user: "alice", script: ok, workDir: "relative", nodes: -1, gpus: -8},
	} {
		f.Add(s.name, s.user, s.script, s.workDir, s.part, s.constraint, s.qos, s.nodelist, s.exclude, s.env,
			s.nodes, s.gpus, s.cpus, s.segment, s.switches, s.nice, s.uid, s.mem, s.limit, s.wait)
	}
	f.Fuzz(func(t *testing.T, name, user, script, workDir, part, constraint, qos, nodelist, exclude, env string,
		nodes, gpus, cpus, segment, switches, nice, uid int32, mem, limit, wait int64) {
		spec := fuzzSpec{name, user, script, workDir, part, constraint, qos, nodelist, exclude, env,
			nodes, gpus, cpus, segment, switches, nice, uid, mem, limit, wait}.spec()
		j, err := jobFromSpec(spec, 0)
		if (j == nil) == (err == nil) {
			t.Fatalf("jobFromSpec(%v) = %v, %v: want a job or an error", spec, j, err)
		}
		if err != nil {
			if !errors.Is(err, cluster.ErrInvalid) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("jobFromSpec(%v): %q is not one line of ErrInvalid", spec, err)
			}
			return
		}
		checkJob(t, spec, j)
		again, err := jobFromSpec(specToProto(j), 0)
		if err != nil || !reflect.DeepEqual(again, j) {
			t.Fatalf("jobFromSpec(%v) = %+v; converted back and again: %+v, %v", spec, j, again, err)
		}
	})
}

func checkJob(t *testing.T, spec *phalanxv1.JobSpec, j *cluster.Job) {
	t.Helper()
	if _, err := proto.Marshal(spec); err != nil {
		t.Fatalf("jobFromSpec accepted a spec that cannot be stored: %v", err)
	}
	switch {
	case int64(j.TimeLimit/time.Second) != spec.TimeLimitSeconds || j.TimeLimit < 0,
		int64(j.SwitchesWait/time.Second) != spec.SwitchesWaitSeconds || j.SwitchesWait < 0:
		t.Fatalf("jobFromSpec(%v): limit %v, wait %v: not what was asked", spec, j.TimeLimit, j.SwitchesWait)
	case j.Nodes < 1, j.GPUsPerNode < 0, j.CPUsPerNode < 0, j.MemoryMB < 0, j.Switches < 0, j.Segment < 0:
		t.Fatalf("jobFromSpec(%v) = %+v: out of range", spec, j)
	case len(j.NodeList) > j.Nodes, j.Segment > 0 && j.Nodes%j.Segment != 0:
		t.Fatalf("jobFromSpec(%v) = %+v: node list or segment does not fit the node count", spec, j)
	}
}
