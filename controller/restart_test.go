package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

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

// A task its agent reports fenced (killed at the node's lease's end) in
// the leader's grace after its election ends the attempt and restarts the
// job, but blames no node: its lease ended because no controller
// answered, which after a majority outage is every node's lot. The next
// attempt may run on the same node.
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

// Whether a fenced task's report blames its node is the leader's call,
// made before it proposes the report. A fence within a NodeTTL of the
// leader's term's start may be the controllers' doing (an election, a
// majority of them down): no node is at fault. One later came while a
// leader answered for the whole lease: the node, or its link, was silent,
// and it is at fault as a node found silent past its TTL is, so that a
// flapping link does not fence its job at every attempt on the same node.
// The report's time counts, not when it arrives, capped at the leader's
// clock.
func TestFencedTaskReportBlamesItsNodeUnderASteadyLeader(t *testing.T) {
	// A TTL of an hour: the leader's own liveness checks (every quarter
	// of it, on the real clock) stay out of the test's way.
	const ttl = time.Hour
	for _, tc := range []struct {
		name          string
		fenced, heard time.Duration // from the term's start: the report's time, when the leader has it
		blamed        bool
	}{
		{"fenced in the leader's grace, reported late", ttl - time.Second, ttl + time.Minute, false},
		{"fenced a TTL into the term", ttl + time.Second, ttl + time.Second, true},
		{"stamped by a clock ahead of the leader's", 2 * ttl, ttl - time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &manualClock{t: time.Now()}
			s := newTestServer(t, Config{NodeTTL: ttl, HeartbeatInterval: time.Second, Clock: clock})
			began := s.nodes.termBegan()
			register(t, s, nil, "n1", "n2")
			ns := &nodeService{s: s}
			ctx := context.Background()
			resp, err := s.submit(ctx, testSpec(1, 8), false, nil)
			if err != nil {
				t.Fatal(err)
			}
			id := cluster.JobID(resp.JobId)
			node := waitState(t, s, id, cluster.JobConfiguring).Tasks[0].Node
			clock.Add(began.Add(tc.heard).Sub(clock.Now()))
			if _, err := ns.ReportTaskStatus(ctx, &phalanxv1.ReportTaskStatusRequest{
				Node: node, JobId: resp.JobId, State: string(cluster.TaskLost), Time: timestamppb.New(began.Add(tc.fenced)),
				Message: `task "phx-1-0-0": killed when the node's lease ended (no controller answered its agent in time)`, Fenced: true,
			}); err != nil {
				t.Fatal(err)
			}
			j := waitAttempt(t, s, id, 1)
			want := ""
			if tc.blamed {
				want = node
			}
			if a := j.Attempts[0]; a.State != cluster.JobNodeFail || a.Cause != cluster.RestartNode || a.FaultNode != want {
				t.Errorf("attempt 0 (%s on %s): %s, cause %s, fault node %q; want NODE_FAIL, node, %q", a.Reason, node, a.State, a.Cause, a.FaultNode, want)
			}
			if again := j.Tasks[0].Node; tc.blamed && again == node {
				t.Errorf("attempt 1 runs on %s again, the node at fault for attempt 0", again)
			}
		})
	}
}

// waitAttempt waits until job id's attempt n is CONFIGURING and returns
// the job.
func waitAttempt(t *testing.T, s *Server, id cluster.JobID, n int) *cluster.Job {
	t.Helper()
	var j *cluster.Job
	eventually(t, 10*time.Second, func() error {
		var err error
		if j, err = s.store.Job(id); err != nil {
			return err
		}
		if j.Attempt != n || j.State != cluster.JobConfiguring {
			return fmt.Errorf("job %d %s in attempt %d (%s); want CONFIGURING in attempt %d", id, j.State, j.Attempt, j.Reason, n)
		}
		return nil
	})
	return j
}
