package testcluster_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// clientOf returns a client that talks to replica i only (no failover).
func clientOf(t *testing.T, c *testcluster.Cluster, i int) phalanxv1.ControllerServiceClient {
	t.Helper()
	conn, err := c.DialAs([]string{c.APIAddrs()[i]}, testcluster.Root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return phalanxv1.NewControllerServiceClient(conn)
}

func ctx5(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func follower(t *testing.T, c *testcluster.Cluster, not ...int) int {
	t.Helper()
	leader := c.LeaderIndex()
	for i := 0; i < 3; i++ {
		skip := i == leader
		for _, n := range not {
			skip = skip || i == n
		}
		if !skip {
			return i
		}
	}
	t.Fatal("no follower")
	return -1
}

// Any replica takes any call: a submit through a follower is forwarded to
// the leader, and a read through the other follower right after sees it.
func TestFollowersForwardWritesAndReadTheirWrites(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Controllers: 3, Nodes: 2, Runtime: "fake"})
	a := follower(t, c)
	b := follower(t, c, a)
	for n := 0; n < 20; n++ {
		resp, err := clientOf(t, c, a).SubmitJob(ctx5(t), &phalanxv1.SubmitJobRequest{Spec: spec(t.TempDir(), "fwd", 1, 1, "#!/bin/sh\ntrue\n")})
		if err != nil {
			t.Fatalf("submit through follower %d: %v", a, err)
		}
		j, err := clientOf(t, c, b).GetJob(ctx5(t), &phalanxv1.GetJobRequest{JobId: resp.JobId})
		if err != nil || j.Id != resp.JobId {
			t.Fatalf("read of job %d through follower %d right after its submit: %v %v", resp.JobId, b, j, err)
		}
	}
	ctls, err := clientOf(t, c, b).ListControllers(ctx5(t), &phalanxv1.ListControllersRequest{})
	if err != nil || len(ctls.Controllers) != 3 {
		t.Fatalf("ListControllers = %v, %v", ctls, err)
	}
	roles := map[string]int{}
	for _, ci := range ctls.Controllers {
		if !ci.Reachable || !ci.Voter || ci.ApiAddr == "" {
			t.Errorf("controller %s: reachable %v voter %v api %q (%s)", ci.Id, ci.Reachable, ci.Voter, ci.ApiAddr, ci.Error)
		}
		roles[ci.Status.GetRole()]++
	}
	if roles["Leader"] != 1 || roles["Follower"] != 2 {
		t.Errorf("roles %v; want one leader and two followers", roles)
	}
}

// Losing the leader costs an election, not a job: running jobs keep
// running on their first attempt, no node is declared down, and submits go
// on through the new leader with IDs after the old ones.
func TestLeaderFailoverTouchesNoRunningJob(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Controllers: 3, Nodes: 2, LeafSize: 2, NodeTTL: 2 * time.Second})
	dir := t.TempDir()
	run := submit(t, c, spec(dir, "long", 2, 8, "#!/bin/sh\nsleep 600\n"))
	c.WaitJob(run, 20*time.Second, "RUNNING")
	old := c.LeaderIndex()
	c.StopController(old)
	c.Leader()
	next := submit(t, c, spec(dir, "after", 1, 0, "#!/bin/sh\ntrue\n"))
	if next <= run {
		t.Errorf("job submitted after the failover got ID %d; want above %d", next, run)
	}
	c.WaitJob(next, 20*time.Second, "COMPLETED")
	// Past a whole node TTL after the election: nothing was declared lost.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		j, err := c.Client.GetJob(ctx5(t), &phalanxv1.GetJobRequest{JobId: run})
		if err != nil {
			t.Fatal(err)
		}
		if j.State != "RUNNING" || j.Attempt != 0 {
			t.Fatalf("running job after failover: %s attempt %d (%s)", j.State, j.Attempt, j.Reason)
		}
		nodes, err := c.Client.ListNodes(ctx5(t), &phalanxv1.ListNodesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes.Nodes {
			if n.State == "DOWN" {
				t.Fatalf("node %s declared DOWN after a controller failover (%s)", n.Name, n.Reason)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.StartController(old)
	c.Eventually(10*time.Second, func() error {
		ctls, err := clientOf(t, c, old).ListControllers(ctx5(t), &phalanxv1.ListControllersRequest{})
		if err != nil {
			return err
		}
		for _, ci := range ctls.Controllers {
			if !ci.Reachable {
				return fmt.Errorf("controller %s unreachable: %s", ci.Id, ci.Error)
			}
		}
		return nil
	})
}

// A retried submit (same request ID) returns the first job, whichever
// replica it reaches and even across a failover.
func TestSubmitIsExactlyOnceAcrossFailover(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Controllers: 3, Nodes: 1, Runtime: "fake"})
	req := &phalanxv1.SubmitJobRequest{Spec: spec(t.TempDir(), "once", 1, 1, "#!/bin/sh\ntrue\n"), RequestId: "7f3a9c"}
	first, err := c.Client.SubmitJob(ctx5(t), req)
	if err != nil {
		t.Fatal(err)
	}
	c.StopController(c.LeaderIndex())
	c.Leader()
	for i := range c.APIAddrs() {
		if c.Controller(i) == nil {
			continue
		}
		again, err := clientOf(t, c, i).SubmitJob(ctx5(t), req)
		if err != nil || again.JobId != first.JobId {
			t.Fatalf("retry through controller %d = %v, %v; want job %d", i, again, err, first.JobId)
		}
	}
	jobs, err := c.Client.ListJobs(ctx5(t), &phalanxv1.ListJobsRequest{IncludeFinished: true})
	if err != nil || len(jobs.Jobs) != 1 {
		t.Fatalf("jobs = %v, %v; want exactly one", jobs, err)
	}
}

// Without a majority there is no leader: writes and linearizable reads are
// refused with a NotLeader answer (never served from a stale state), while
// a read that asks for stale data gets the replica's own.
func TestMinorityRefusesWritesAndServesStaleReadsOnlyWhenAsked(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Controllers: 3, Nodes: 1, Runtime: "fake"})
	id := submit(t, c, spec(t.TempDir(), "seen", 1, 1, "#!/bin/sh\ntrue\n"))
	c.WaitJob(id, 10*time.Second, "RUNNING")
	left := follower(t, c)
	c.Eventually(10*time.Second, func() error {
		if j, err := c.Controller(left).Store().Job(jobID(id)); err != nil || j.State != "RUNNING" {
			return fmt.Errorf("follower's copy of job %d: %v %v", id, j, err)
		}
		return nil
	})
	for i := 0; i < 3; i++ {
		if i != left {
			c.StopController(i)
		}
	}
	one := clientOf(t, c, left)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := one.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: id})
	if status.Code(err) != codes.Unavailable || apiclient.NotLeader(err) == nil {
		t.Fatalf("linearizable read without a majority = %v; want UNAVAILABLE with NotLeader", err)
	}
	// One attempt, on a connection of its own: apiclient retries a write
	// refused with NotLeader until its deadline, and a deadline that falls
	// during an attempt is DeadlineExceeded (the write's fate unknown to
	// it), whatever the replica answered before.
	raw, err := grpc.NewClient(c.APIAddrs()[left], c.Transport(nil),
		grpc.WithPerRPCCredentials(auth.Issuer(auth.Ring(c.Key), testcluster.Root, time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_, err = phalanxv1.NewControllerServiceClient(raw).SubmitJob(ctx5(t), &phalanxv1.SubmitJobRequest{Spec: spec(t.TempDir(), "no", 1, 1, "#!/bin/sh\ntrue\n")})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("write without a majority = %v; want UNAVAILABLE", err)
	}
	j, err := one.GetJob(apiclient.Stale(ctx5(t)), &phalanxv1.GetJobRequest{JobId: id})
	if err != nil || j.State != "RUNNING" {
		t.Fatalf("stale read = %v, %v; want the replica's own copy of job %d", j, err, id)
	}
	st, err := one.GetControllerStatus(ctx5(t), &phalanxv1.GetControllerStatusRequest{})
	if err != nil || st.Role == "Leader" {
		t.Errorf("lone replica status = %v, %v", st, err)
	}
}

// Membership changes at run time: a voter is removed, the cluster goes on
// with two, and it is added back and catches up.
func TestRemoveAndAddAController(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Controllers: 3, Nodes: 1, Runtime: "fake"})
	gone := follower(t, c)
	id := fmt.Sprintf("ctl%d", gone)
	if _, err := c.Client.RemoveController(ctx5(t), &phalanxv1.RemoveControllerRequest{Id: id}); err != nil {
		t.Fatal(err)
	}
	ctls, err := c.Client.ListControllers(ctx5(t), &phalanxv1.ListControllersRequest{})
	if err != nil || len(ctls.Controllers) != 2 {
		t.Fatalf("after remove: %v, %v; want two members", ctls, err)
	}
	if _, err := c.Client.RemoveController(ctx5(t), &phalanxv1.RemoveControllerRequest{Id: "nosuch"}); status.Code(err) != codes.NotFound {
		t.Errorf("removing an unknown controller: %v; want NotFound", err)
	}
	c.StopController(gone)
	for n := 0; n < 10; n++ {
		submit(t, c, spec(t.TempDir(), "two", 1, 1, "#!/bin/sh\ntrue\n"))
	}
	c.StartController(gone)
	addrs := c.APIAddrs()
	srv := c.Controller(gone)
	if _, err := c.Client.AddController(ctx5(t), &phalanxv1.AddControllerRequest{Id: id, RaftAddr: srv.RaftAddr(), ApiAddr: addrs[gone]}); err != nil {
		t.Fatal(err)
	}
	c.Eventually(10*time.Second, func() error {
		want := c.Leader().Store().AppliedIndex()
		if got := srv.Store().AppliedIndex(); got < want {
			return fmt.Errorf("re-added controller applied %d of %d", got, want)
		}
		return nil
	})
}

// A leader that removes itself steps down and stays a replica: added back
// without a restart, it is a working voter again (Raft's default shut it
// down for good while the process ran on, and scontrol ping called it UP:
// a "3-replica" cluster then stopped at the next loss of one).
func TestRemoveAndAddBackTheLeader(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Controllers: 3, Nodes: 1, Runtime: "fake"})
	old := c.LeaderIndex()
	id := fmt.Sprintf("ctl%d", old)
	if _, err := c.Client.RemoveController(ctx5(t), &phalanxv1.RemoveControllerRequest{Id: id}); err != nil {
		t.Fatal(err)
	}
	c.Eventually(10*time.Second, func() error {
		if l := c.LeaderIndex(); l < 0 || l == old {
			return fmt.Errorf("leader %d: want a new one", l)
		}
		return nil
	})
	srv := c.Controller(old)
	if _, err := c.Client.AddController(ctx5(t), &phalanxv1.AddControllerRequest{Id: id, RaftAddr: srv.RaftAddr(), ApiAddr: c.APIAddrs()[old]}); err != nil {
		t.Fatal(err)
	}
	c.Eventually(10*time.Second, func() error {
		ctls, err := c.Client.ListControllers(ctx5(t), &phalanxv1.ListControllersRequest{})
		if err != nil {
			return err
		}
		for _, ci := range ctls.Controllers {
			if ci.Id == id && ci.Reachable && ci.Status.GetRole() == "Follower" && ci.Voter {
				return nil
			}
		}
		return fmt.Errorf("controllers %v: want %s a reachable voting follower", ctls.Controllers, id)
	})
	// The re-added replica counts: with another one stopped, the two left
	// are a majority.
	c.StopController(follower(t, c, old))
	submit(t, c, spec(t.TempDir(), "after", 1, 1, "#!/bin/sh\ntrue\n"))
}

// phx scontrol raft add of a replica that does not run yet succeeds (it
// may be started next) but warns that the cluster now needs a majority of
// the larger membership; raft remove takes it out again.
func TestRaftAddWarnsOfASilentReplica(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Controllers: 3, Nodes: 1, Runtime: "fake"})
	dir := t.TempDir()
	root := auth.Identity{User: "root"}
	code, out, errOut := phxAs(t, c, root, dir, nil, "scontrol", "raft", "add", "ctl9", "127.0.0.1:1", "127.0.0.1:2")
	want := "scontrol: warning: controller ctl9 does not answer at 127.0.0.1:2 yet: until it runs, the cluster needs 3 of its 4 voters to work (start it, or phx scontrol raft remove ctl9)\n"
	if code != 0 || out != "" || errOut != want {
		t.Errorf("raft add of a replica not running: exit %d, %q, %q; want 0 and %q", code, out, errOut, want)
	}
	if code, _, errOut := phxAs(t, c, root, dir, nil, "scontrol", "raft", "remove", "ctl9"); code != 0 || errOut != "" {
		t.Errorf("raft remove ctl9: exit %d, %q", code, errOut)
	}
	// Without its API address nothing was asked: the warning says so
	// rather than that it is silent at its Raft address.
	code, _, errOut = phxAs(t, c, root, dir, nil, "scontrol", "raft", "add", "ctl8", "127.0.0.1:3")
	want = "scontrol: warning: controller ctl8 was added without its API address, so whether it runs cannot be checked (it records its address when it starts): until it runs, the cluster needs 3 of its 4 voters to work (start it, or phx scontrol raft remove ctl8)\n"
	if code != 0 || errOut != want {
		t.Errorf("raft add without an API address: exit %d, %q; want 0 and %q", code, errOut, want)
	}
	if code, _, errOut := phxAs(t, c, root, dir, nil, "scontrol", "raft", "remove", "ctl8"); code != 0 || errOut != "" {
		t.Errorf("raft remove ctl8: exit %d, %q", code, errOut)
	}
}

// A replica that was down while thousands of entries were committed and
// the log was compacted catches up from a snapshot (InstallSnapshot), and
// restarts across snapshots and a truncated log lose nothing.
func TestCatchUpThroughSnapshotAndRestartAcrossIt(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Controllers: 3, Nodes: 1, Runtime: "fake", SnapshotThreshold: 200, TrailingLogs: 50})
	lagging := follower(t, c)
	c.StopController(lagging)
	var ids []uint64
	for n := 0; n < 600; n++ {
		resp, err := c.Client.SubmitJob(ctx5(t), &phalanxv1.SubmitJobRequest{
			Spec: spec(t.TempDir(), "bulk", 1, 0, "#!/bin/sh\ntrue\n"), RequestId: fmt.Sprint("bulk-", n)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, resp.JobId)
	}
	leader := c.Leader()
	c.Eventually(10*time.Second, func() error {
		st, err := leader.Raft().Stats()["last_snapshot_index"], error(nil)
		if st == "0" || err != nil {
			return fmt.Errorf("no snapshot yet")
		}
		return nil
	})
	c.StartController(lagging)
	srv := c.Controller(lagging)
	c.Eventually(20*time.Second, func() error {
		if got, want := srv.Store().AppliedIndex(), leader.Store().AppliedIndex(); got < want {
			return fmt.Errorf("lagging replica applied %d of %d", got, want)
		}
		return nil
	})
	for _, id := range []uint64{ids[0], ids[len(ids)/2], ids[len(ids)-1]} {
		if _, err := srv.Store().Job(jobID(id)); err != nil {
			t.Errorf("job %d on the replica that caught up: %v", id, err)
		}
	}
	// Every replica restarts on its own disk: after snapshots and a
	// compacted log, nothing acknowledged is missing.
	for i := 0; i < 3; i++ {
		c.StopController(i)
	}
	for i := 0; i < 3; i++ {
		c.StartController(i)
	}
	c.Leader()
	jobs := 0
	for page := ""; ; {
		resp, err := c.Client.ListJobs(ctx5(t), &phalanxv1.ListJobsRequest{History: true, PageToken: page})
		if err != nil {
			t.Fatal(err)
		}
		jobs += len(resp.Jobs)
		if page = resp.NextPageToken; page == "" {
			break
		}
	}
	if jobs != len(ids) {
		t.Errorf("%d jobs after a full restart; want %d", jobs, len(ids))
	}
}

// After a leader change nothing is placed on a node the new leader has not
// heard from: a job bound to a node that went silent waits (it is neither
// placed there nor failed) until the node speaks again.
func TestNewLeaderPlacesNothingOnUnheardNodes(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Controllers: 3, Nodes: 2, LeafSize: 2, Runtime: "fake", NodeTTL: 4 * time.Second})
	silent := c.Nodes[1]
	c.CutNode(silent)
	c.StopController(c.LeaderIndex())
	c.Leader()
	s := spec(t.TempDir(), "bound", 1, 1, "#!/bin/sh\ntrue\n")
	s.Nodelist = []string{silent}
	id := submit(t, c, s)
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		j, err := c.Client.GetJob(ctx5(t), &phalanxv1.GetJobRequest{JobId: id})
		if err != nil {
			t.Fatal(err)
		}
		if j.State != "PENDING" {
			t.Fatalf("job bound to an unheard node is %s on %v; want PENDING", j.State, j.Alloc)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.HealNode(silent)
	c.WaitJob(id, 10*time.Second, "RUNNING")
}

func jobID(id uint64) cluster.JobID { return cluster.JobID(id) }

// Leadership moves on request, to the replica named.
func TestTransferLeadership(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Controllers: 3, Nodes: 1, Runtime: "fake"})
	to := follower(t, c)
	resp, err := c.Client.TransferLeadership(ctx5(t), &phalanxv1.TransferLeadershipRequest{Id: fmt.Sprintf("ctl%d", to)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.LeaderId != fmt.Sprintf("ctl%d", to) {
		t.Errorf("leader after the transfer: %q; want ctl%d", resp.LeaderId, to)
	}
	if got := c.LeaderIndex(); got != to {
		t.Errorf("replica %d leads; want %d", got, to)
	}
	submit(t, c, spec(t.TempDir(), "after", 1, 1, "#!/bin/sh\ntrue\n"))
}

// A backup of one cluster restores into a new one: every job comes back,
// on every replica, and job IDs go on after the restored ones; a cluster
// that already holds jobs is not overwritten unless forced.
func TestBackupRestoresIntoANewCluster(t *testing.T) {
	old := testcluster.New(t, testcluster.Options{Controllers: 1, Nodes: 1, Runtime: "fake"})
	var ids []uint64
	for n := 0; n < 5; n++ {
		ids = append(ids, submit(t, old, spec(t.TempDir(), fmt.Sprint("j", n), 1, 1, "#!/bin/sh\ntrue\n")))
	}
	old.WaitJob(ids[0], 10*time.Second, "RUNNING")
	waitRegistered(t, old)
	backup := backupOf(t, old)

	fresh := testcluster.New(t, testcluster.Options{Controllers: 3, Nodes: 1, Runtime: "fake"})
	waitRegistered(t, fresh)
	restore := func(force bool) (*phalanxv1.RestoreResponse, error) { return restoreInto(t, fresh, backup, force) }
	before := fresh.Leader().Store().AppliedIndex()
	resp, err := restore(false)
	if err != nil {
		t.Fatalf("restore into an empty cluster: %v", err)
	}
	// The state moves on from the cluster's index, not back to the backup's
	// (agents order what the controller tells them by it).
	for i := range fresh.APIAddrs() {
		fresh.Eventually(10*time.Second, func() error {
			if got := fresh.Controller(i).Store().AppliedIndex(); got <= before {
				return fmt.Errorf("replica %d: applied index %d after the restore; want above %d, the cluster's before it", i, got, before)
			}
			return nil
		})
	}
	if resp.Jobs != 5 {
		t.Errorf("restored %d jobs; want 5", resp.Jobs)
	}
	for i := range fresh.APIAddrs() {
		srv := fresh.Controller(i)
		fresh.Eventually(10*time.Second, func() error {
			for _, id := range ids {
				if _, err := srv.Store().JobRecord(jobID(id)); err != nil {
					return fmt.Errorf("replica %d: %v", i, err)
				}
			}
			return nil
		})
	}
	// The replicas recorded are the new cluster's, at its addresses, not the
	// old cluster's that the backup holds.
	fresh.Eventually(10*time.Second, func() error {
		return registered(fresh)
	})
	if next := submit(t, fresh, spec(t.TempDir(), "next", 1, 1, "#!/bin/sh\ntrue\n")); next <= ids[len(ids)-1] {
		t.Errorf("first job after the restore got ID %d; want above %d", next, ids[len(ids)-1])
	}
	if _, err := restore(false); status.Code(err) != codes.Aborted {
		t.Errorf("restore over a cluster with jobs: %v; want Aborted unless forced", err)
	}
	if _, err := restore(true); err != nil {
		t.Errorf("forced restore: %v", err)
	}
}

// A backup restored by force over a cluster that went on working: the job
// that was running when it was taken, and the one that waited then and ran
// since, both run to an end again; neither is left waiting for a task the
// agent ended before the restore.
func TestForcedRestoreOverALiveCluster(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "process"})
	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	waits := fmt.Sprintf("#!/bin/sh\nwhile [ ! -e %s ]; do sleep 0.05; done\n", gate)
	running := submit(t, c, spec(dir, "running", 1, 1, waits))
	c.WaitJob(running, 10*time.Second, "RUNNING")
	waiting := submit(t, c, spec(dir, "waiting", 1, 8, "#!/bin/sh\ntrue\n")) // all the GPUs: after the first
	backup := backupOf(t, c)

	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint64{running, waiting} {
		c.WaitJob(id, 20*time.Second, "COMPLETED")
	}
	if _, err := restoreInto(t, c, backup, true); err != nil {
		t.Fatalf("forced restore: %v", err)
	}
	for _, id := range []uint64{running, waiting} {
		j := c.WaitJob(id, 30*time.Second, "COMPLETED")
		t.Logf("job %d after the restore: %s, attempt %d", id, j.State, j.Attempt)
	}
}

// backupOf takes a backup of c's state.
func backupOf(t *testing.T, c *testcluster.Cluster) []byte {
	t.Helper()
	stream, err := c.Client.Backup(ctx5(t), &phalanxv1.BackupRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var backup []byte
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("backup: %v", err)
		}
		backup = append(backup, chunk.Data...)
	}
	if len(backup) == 0 {
		t.Fatal("empty backup")
	}
	return backup
}

// restoreInto restores backup into c, forced or not.
func restoreInto(t *testing.T, c *testcluster.Cluster, backup []byte, force bool) (*phalanxv1.RestoreResponse, error) {
	st, err := c.Client.Restore(ctx5(t))
	if err != nil {
		return nil, err
	}
	for off := 0; off < len(backup); off += 64 << 10 {
		st.Send(&phalanxv1.RestoreRequest{Data: backup[off:min(off+64<<10, len(backup))], Force: force && off == 0})
	}
	return st.CloseAndRecv()
}

// registered checks that the leader's state records every replica of c at
// its own addresses.
func registered(c *testcluster.Cluster) error {
	var have []string
	for _, ctl := range c.Leader().Store().Controllers() {
		have = append(have, ctl.ID+"="+ctl.APIAddr)
	}
	var want []string
	for i := range c.APIAddrs() {
		want = append(want, c.Controller(i).ID()+"="+c.Controller(i).APIAddr())
	}
	if strings.Join(have, ",") != strings.Join(want, ",") {
		return fmt.Errorf("controllers recorded: %v; want %v", have, want)
	}
	return nil
}

func waitRegistered(t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	c.Eventually(10*time.Second, func() error { return registered(c) })
}
