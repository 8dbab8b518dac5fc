package nodeagent

import (
	"reflect"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// The wire form is read once: the effective time limit (the spec's when
// the controller sent none), the ranks the controller saw start, the
// environment of an older controller (a map), the grace and the prolog.
func TestAssignmentFromWire(t *testing.T) {
	w := wireAssignment(9, "/w", "#!/bin/sh\n")
	w.Rank, w.GraceSeconds, w.Stop, w.StopReason = 1, 30, true, "CANCELLED"
	w.Prolog = &phalanxv1.Prolog{Programs: []string{"/etc/prolog"}, TimeoutSeconds: 20}
	w.Job.Spec.TimeLimitSeconds, w.Job.Spec.Env = 600, map[string]string{"A": "1"}
	w.Job.Alloc = append(w.Job.Alloc, &phalanxv1.NodeAlloc{Node: "gpu002", Gpus: []int32{0}, Addr: "10.0.0.2"})
	w.Job.Tasks = []*phalanxv1.Task{{Rank: 0, State: "RUNNING"}, {Rank: 1, State: "ASSIGNED"}}
	as := assignmentFromWire(w)
	if as.key != (taskKey{job: 9, rank: 1}) || !as.stop || as.stopReason != "CANCELLED" || as.grace != 30*time.Second || !as.hasJob {
		t.Errorf("assignment %+v", as)
	}
	if as.prolog.TimeoutOrDefault() != 20*time.Second || as.prolog.Programs[0] != "/etc/prolog" {
		t.Errorf("prolog %+v", as.prolog)
	}
	j := as.job
	if j.timeLimit != 10*time.Minute || !reflect.DeepEqual(j.startedRanks, []int{0}) || j.env["A"] != "1" {
		t.Errorf("job %+v", j)
	}
	if got := j.nodeNames(); !reflect.DeepEqual(got, []string{node, "gpu002"}) || j.ranks[1].addr != "10.0.0.2" {
		t.Errorf("ranks %+v", j.ranks)
	}
	w.Job.TimeLimitSeconds = 60 // the controller's effective limit wins
	if got := assignmentFromWire(w).job.timeLimit; got != time.Minute {
		t.Errorf("time limit %v, want the job's 1m", got)
	}
	if assignmentFromWire(&phalanxv1.Assignment{}).hasJob {
		t.Error("an assignment without a job has one")
	}
}
