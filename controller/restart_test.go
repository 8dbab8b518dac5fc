package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// A submit's restart policy: the defaults (3 restarts, on node faults),
// what sbatch's options change, and what is refused.
func TestRestartPolicyFromSpec(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*phalanxv1.JobSpec)
		want string // MaxRestarts/On, or the error's text
	}{
		{"defaults", func(*phalanxv1.JobSpec) {}, "3/node"},
		{"no-requeue", func(s *phalanxv1.JobSpec) { s.NoRequeue = true }, "0/node"},
		{"max and causes", func(s *phalanxv1.JobSpec) { s.MaxRestarts, s.RestartOn = proto.Int32(10), "exit,node" }, "10/node,exit"},
		{"none", func(s *phalanxv1.JobSpec) { s.RestartOn = "none" }, "3/none"},
		{"too many", func(s *phalanxv1.JobSpec) { s.MaxRestarts = proto.Int32(129) }, "--max-restarts=129: give 0 to 128"},
		{"negative", func(s *phalanxv1.JobSpec) { s.MaxRestarts = proto.Int32(-1) }, "--max-restarts=-1: give 0 to 128"},
		{"unknown cause", func(s *phalanxv1.JobSpec) { s.RestartOn = "node,oom" }, `--restart-on=node,oom: "oom" is not a restart cause`},
	} {
		spec := testSpec(1, 8)
		tc.edit(spec)
		j, err := jobFromSpec(spec, 1<<20)
		var got string
		if err != nil {
			got = err.Error()
			if !errors.Is(err, cluster.ErrInvalid) {
				t.Errorf("%s: %v is not ErrInvalid", tc.name, err)
			}
		} else {
			got = fmt.Sprintf("%d/%s", j.Restart.MaxRestarts, j.Restart.On)
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A submit's --signal is checked: a signal number Linux has, a lead of at
// most 65535 s.
func TestSignalFromSpec(t *testing.T) {
	for _, tc := range []struct {
		sig, secs int32
		want      string
	}{
		{10, 90, ""},
		{65, 60, "--signal: signal 65: give 1 to 64"},
		{-1, 60, "--signal: signal -1"},
		{10, 70000, "--signal: @70000: give 0 to 65535 seconds"},
	} {
		spec := testSpec(1, 8)
		spec.Signal, spec.SignalSeconds, spec.SignalBatch = tc.sig, tc.secs, true
		j, err := jobFromSpec(spec, 1<<20)
		switch {
		case tc.want == "" && (err != nil || j.Signal != cluster.JobSignal{Signal: 10, Before: 90 * time.Second, Batch: true}):
			t.Errorf("signal %d@%d: %+v, %v", tc.sig, tc.secs, j, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("signal %d@%d: %v, want %q", tc.sig, tc.secs, err, tc.want)
		}
	}
}

// A task its agent reports fenced (killed at the node's lease's end) ends
// the attempt and restarts the job, but blames no node: its lease ended
// because no controller answered, which after a majority outage is every
// node's lot. The next attempt may run on the same node.
func TestFencedTaskReportBlamesNoNode(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	ns := &nodeService{s: s}
	ctx := context.Background()
	resp, err := s.submit(ctx, testSpec(1, 8), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := cluster.JobID(resp.JobId)
	waitState(t, s, id, cluster.JobConfiguring)
	if _, err := ns.ReportTaskStatus(ctx, &phalanxv1.ReportTaskStatusRequest{
		Node: "n1", JobId: resp.JobId, State: string(cluster.TaskLost),
		Message: `task "phx-1-0-0": killed when the node's lease ended (no controller answered its agent in time)`, Fenced: true,
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		j, _ := s.store.Job(id)
		if j.Attempt != 1 || j.State != cluster.JobConfiguring {
			return fmt.Errorf("job %s attempt %d (%s); want CONFIGURING in attempt 1, on n1 again", j.State, j.Attempt, j.Reason)
		}
		return nil
	})
	if j, _ := s.store.Job(id); j.Attempts[0].Cause != cluster.RestartNode || j.Attempts[0].FaultNode != "" {
		t.Errorf("attempt 0: cause %s, fault node %q; want node, none", j.Attempts[0].Cause, j.Attempts[0].FaultNode)
	}
}
