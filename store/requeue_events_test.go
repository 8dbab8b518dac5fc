package store

import (
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Every way a job goes back to the queue for its next attempt records, once,
// an event of the job that says why: a node lost, a node an agent found
// at fault, a node an administrator set DOWN, a task fenced at its lease's
// end, a failed exit, a hang, a corrupt checkpoint, a preemption, scontrol
// requeue. It is the job's event (phx events --job), at the time the
// attempt ended.
func TestEveryRequeueRecordsWhy(t *testing.T) {
	lost := func(rank int, node, msg string, sec int) cluster.TaskReport {
		return cluster.TaskReport{JobID: 1, Rank: rank, Node: node, State: cluster.TaskLost, Message: msg, Time: at(sec)}
	}
	killed := func(rank int, node string, sec int) cluster.TaskReport {
		return cluster.TaskReport{JobID: 1, Rank: rank, Node: node, State: cluster.TaskKilled, ExitSignal: 15, Time: at(sec)}
	}
	fenced := func(rank int, node string, sec int) cluster.TaskReport {
		r := lost(rank, node, `task "phx-1-0-`+node+`": killed when the node's lease ended (no controller answered its agent in time)`, sec)
		r.Fenced = true
		return r
	}
	for _, tc := range []struct {
		name    string
		restart string // --restart-on
		fault   func(t *testing.T, s *Store, next func() uint64)
		want    string
		end     int // when the attempt ended
	}{
		{"node lost", "node", func(t *testing.T, s *Store, next func() uint64) {
			must(t, s.SetNodesDown(next(), []string{"n2"}, ReasonNotResponding, at(20)))
			must(t, s.ReportTask(next(), killed(0, "n1", 21)))
		}, "requeued because node n2 failed: Not responding (attempt 0 ended NODE_FAIL; restart 1 of 3; attempt 1 avoids n2 while it can)", 21},
		{"node at fault by its agent", "node", func(t *testing.T, s *Store, next func() uint64) {
			must(t, s.ReportTask(next(), lost(1, "n2", "gpu-xid: GPU 2 XID 79 (GPU has fallen off the bus); node drained", 20)))
			must(t, s.ReportTask(next(), killed(0, "n1", 22)))
		}, "requeued because node n2 failed: gpu-xid: GPU 2 XID 79 (GPU has fallen off the bus); node drained (attempt 0 ended NODE_FAIL; restart 1 of 3; attempt 1 avoids n2 while it can)", 22},
		{"node set DOWN", "node", func(t *testing.T, s *Store, next func() uint64) {
			must(t, s.SetNodeState(next(), "n2", cluster.NodeDown, "bad PSU", "root", at(20)))
			must(t, s.ReportTask(next(), killed(0, "n1", 21)))
			must(t, s.ReportTask(next(), lost(1, "n2", "node was declared down", 23)))
		}, "requeued because node n2 was set DOWN by root: bad PSU (attempt 0 ended NODE_FAIL; restart 1 of 3; attempt 1 avoids n2 while it can)", 23},
		{"fenced", "node", func(t *testing.T, s *Store, next func() uint64) {
			must(t, s.ReportTask(next(), fenced(0, "n1", 20)))
			must(t, s.ReportTask(next(), fenced(1, "n2", 21)))
		}, `requeued because a task was lost with no node at fault: task "phx-1-0-n1": killed when the node's lease ended (no controller answered its agent in time) (attempt 0 ended NODE_FAIL; restart 1 of 3)`, 21},
		{"exit", "exit", func(t *testing.T, s *Store, next func() uint64) {
			must(t, s.ReportTask(next(), cluster.TaskReport{JobID: 1, Rank: 1, Node: "n2", State: cluster.TaskExited, ExitCode: 3, Time: at(20)}))
			must(t, s.ReportTask(next(), killed(0, "n1", 21)))
		}, "requeued because a task exited with status 3 (attempt 0 ended FAILED; restart 1 of 3)", 21},
		{"signal", "exit", func(t *testing.T, s *Store, next func() uint64) {
			must(t, s.ReportTask(next(), cluster.TaskReport{JobID: 1, Rank: 0, Node: "n1", State: cluster.TaskExited, ExitSignal: 9, Time: at(20)}))
			must(t, s.ReportTask(next(), killed(1, "n2", 21)))
		}, "requeued because a task was killed by signal 9 (attempt 0 ended FAILED; restart 1 of 3)", 21},
		{"hang", "node,hang", func(t *testing.T, s *Store, next func() uint64) {
			must(t, s.ReportTask(next(), cluster.TaskReport{JobID: 1, Rank: 0, Node: "n1", State: cluster.TaskHung, ExitSignal: 15,
				Message: "no output, no checkpoint and idle GPUs for 30m0s", Time: at(20)}))
			must(t, s.ReportTask(next(), killed(1, "n2", 21)))
		}, "requeued because a task hung: no output, no checkpoint and idle GPUs for 30m0s (attempt 0 ended FAILED; restart 1 of 3)", 21},
		{"corrupt checkpoint", "node", func(t *testing.T, s *Store, next func() uint64) {
			must(t, s.ReportTask(next(), cluster.TaskReport{JobID: 1, Rank: 1, Node: "n2", State: cluster.TaskFailed, CheckpointCorrupt: true,
				Message: "checkpoint step 300 rank 1: w.bin: checksum mismatch", Time: at(20)}))
			must(t, s.ReportTask(next(), killed(0, "n1", 21)))
		}, "requeued because a rank's copy of the checkpoint step to resume from was corrupt: JobLaunchFailure: checkpoint step 300 rank 1: w.bin: checksum mismatch (attempt 0 ended FAILED; restart 1 of 3)", 21},
		{"preempted", "node", func(t *testing.T, s *Store, next func() uint64) {
			mustSubmit(t, s, next(), 2)
			if _, err := s.PreemptJobs(next(), []cluster.JobID{1}, []cluster.JobID{2}, at(20)); err != nil {
				t.Fatal(err)
			}
			must(t, s.ReportTask(next(), killed(0, "n1", 21)))
			must(t, s.ReportTask(next(), killed(1, "n2", 22)))
		}, "requeued because it was preempted for job 2 (attempt 0 ended PREEMPTED)", 22},
		{"scontrol requeue", "node", func(t *testing.T, s *Store, next func() uint64) {
			if _, err := s.RequeueJobs(next(), []cluster.JobID{1}, at(20)); err != nil {
				t.Fatal(err)
			}
			must(t, s.ReportTask(next(), killed(0, "n1", 21)))
			must(t, s.ReportTask(next(), killed(1, "n2", 22)))
		}, "requeued by scontrol requeue (attempt 0 ended REQUEUED)", 22},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, "")
			idx := uint64(0)
			next := func() uint64 { idx++; return idx }
			must(t, s.SetFeatureLevel(next(), FeatureRequeueEvents))
			mustRegister(t, s, next(), "n1")
			fencing(t, s, next(), "n2")
			j := pendingJob(1, 2, 2)
			on, err := cluster.ParseRestartCauses(tc.restart)
			if err != nil {
				t.Fatal(err)
			}
			j.Restart.On = on
			must(t, submitErr(s, next(), j))
			if ids, err := s.PlaceJobs(next(), []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "n1", "n2"), Time: at(5)}}); err != nil || len(ids) != 1 {
				t.Fatalf("PlaceJobs = %v, %v", ids, err)
			}
			must(t, s.ReportTask(next(), cluster.TaskReport{JobID: 1, Rank: 0, Node: "n1", State: cluster.TaskRunning, Time: at(6)}))
			must(t, s.ReportTask(next(), cluster.TaskReport{JobID: 1, Rank: 1, Node: "n2", State: cluster.TaskRunning, Time: at(6)}))
			tc.fault(t, s, next)
			if j := mustJob(t, s, 1); j.State != cluster.JobPending || j.Attempt != 1 {
				t.Fatalf("job 1 = %s attempt %d (%s); want PENDING in attempt 1", j.State, j.Attempt, j.Reason)
			}
			evs, err := s.Events(EventQuery{Jobs: []cluster.JobID{1}})
			if err != nil {
				t.Fatal(err)
			}
			var requeues []cluster.Event
			for _, e := range evs {
				if e.Kind == "requeued" {
					requeues = append(requeues, e)
				}
			}
			if len(requeues) != 1 {
				t.Fatalf("job 1's requeue events: %+v; want one", requeues)
			}
			e := requeues[0]
			if e.Message != tc.want || !e.Time.Equal(at(tc.end)) || e.Node != "" || e.User != cluster.SystemUser {
				t.Errorf("requeue event %q at %v on node %q by %q;\nwant %q at %v, the job's, by %s",
					e.Message, e.Time, e.Node, e.User, tc.want, at(tc.end), cluster.SystemUser)
			}
			if strings.Contains(e.Message, "\n") {
				t.Errorf("requeue event of more than one line: %q", e.Message)
			}
		})
	}
}

// Each restart is its own event; a failed attempt that is not restarted
// (its restarts used up) records none.
func TestRequeueEventPerRestart(t *testing.T) {
	s := openTest(t, "")
	idx := uint64(0)
	next := func() uint64 { idx++; return idx }
	must(t, s.SetFeatureLevel(next(), FeatureRequeueEvents))
	mustRegister(t, s, next(), "n1")
	j := pendingJob(1, 1, 2)
	j.Restart.MaxRestarts = 1
	must(t, submitErr(s, next(), j))
	for attempt := range 2 {
		if ids, err := s.PlaceJobs(next(), []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "n1"), Time: at(10 * attempt)}}); err != nil || len(ids) != 1 {
			t.Fatalf("PlaceJobs attempt %d = %v, %v", attempt, ids, err)
		}
		must(t, s.ReportTask(next(), cluster.TaskReport{JobID: 1, Attempt: attempt, Node: "n1", State: cluster.TaskLost, Message: "prolog on n1: exit 1", Time: at(10*attempt + 5)}))
	}
	if j := mustJob(t, s, 1); j.State != cluster.JobNodeFail || j.Attempt != 1 {
		t.Fatalf("job 1 = %s attempt %d; want NODE_FAIL in attempt 1, its one restart used", j.State, j.Attempt)
	}
	evs, err := s.Events(EventQuery{Jobs: []cluster.JobID{1}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, string(e.Kind)+": "+e.Message)
	}
	want := []string{"requeued: requeued because node n1 failed: prolog on n1: exit 1 (attempt 0 ended NODE_FAIL; restart 1 of 1; attempt 1 avoids n1 while it can)"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("job 1's events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A requeue records its event only once the state's feature level says so:
// until every voter's release records them (SetFeatureLevel), replicas of
// the earlier release, applying the same entries without recording them,
// would number every later event differently. The level stays across a
// restart, and a state at a level this release does not know is refused.
func TestRequeueEventsFromTheirFeatureLevel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, NoSync())
	if err != nil {
		t.Fatal(err)
	}
	idx := uint64(0)
	next := func() uint64 { idx++; return idx }
	mustRegister(t, s, next(), "n1")
	must(t, submitErr(s, next(), pendingJob(1, 1, 2)))
	lose := func(attempt int, sec int) {
		t.Helper()
		if ids, err := s.PlaceJobs(next(), []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "n1"), Time: at(sec)}}); err != nil || len(ids) != 1 {
			t.Fatalf("PlaceJobs attempt %d = %v, %v", attempt, ids, err)
		}
		must(t, s.ReportTask(next(), cluster.TaskReport{JobID: 1, Attempt: attempt, Node: "n1", State: cluster.TaskLost, Message: "prolog on n1: exit 1", Time: at(sec + 5)}))
	}
	requeues := func() int {
		t.Helper()
		evs, err := s.Events(EventQuery{Jobs: []cluster.JobID{1}})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	lose(0, 10)
	if n := requeues(); n != 0 || s.FeatureLevel() != 0 {
		t.Fatalf("at feature level %d, a restart recorded %d events; want none at level 0", s.FeatureLevel(), n)
	}
	must(t, s.SetFeatureLevel(next(), FeatureRequeueEvents))
	lose(1, 20)
	if n := requeues(); n != 1 {
		t.Fatalf("at feature level %d, a restart recorded %d events; want 1", s.FeatureLevel(), n)
	}
	if err := s.SetFeatureLevel(next(), FeatureLevel+1); err == nil || !strings.Contains(err.Error(), "upgrade phalanx-controller") {
		t.Errorf("SetFeatureLevel(%d) = %v; want a refusal that says to upgrade", FeatureLevel+1, err)
	}
	must(t, s.Close())
	s, err = Open(path, NoSync())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.FeatureLevel(); got != FeatureRequeueEvents {
		t.Errorf("after a restart, feature level %d; want %d", got, FeatureRequeueEvents)
	}
	must(t, s.Close())
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	must(t, db.Update(func(tx *bolt.Tx) error { return putUint64(tx.Bucket(bucketMeta), keyFeatures, FeatureLevel+1) }))
	must(t, db.Close())
	if s, err := Open(path, NoSync()); err == nil || !strings.Contains(err.Error(), "upgrade phalanx-controller") {
		if s != nil {
			s.Close()
		}
		t.Errorf("opening a state at feature level %d: %v; want a refusal that says to upgrade", FeatureLevel+1, err)
	}
}
