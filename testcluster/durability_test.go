package testcluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// Replica processes killed with SIGKILL across snapshots and a compacted
// log: a follower down for thousands of entries comes back behind the
// leader's oldest log entry and catches up through InstallSnapshot; then
// every replica is killed at once, in the middle of a stream of submits,
// and after the restart every acknowledged submit exists exactly once.
func TestSIGKILLAcrossSnapshots(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of durable submits through three controller processes; not in -short")
	}
	const trailing = 20
	bin := testcluster.BuildController(t, t.TempDir())
	procs := testcluster.StartProcs(t, bin, testcluster.ProcOptions{Args: []string{
		"--snapshot-threshold", "100", "--snapshot-interval", "200ms", "--trailing-logs", fmt.Sprint(trailing),
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	simulateNodes(t, ctx, procs, 4)

	leader := procs.Leader()
	lagging := (leader + 1) % 3
	before, err := procs.Status(lagging, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	procs.Kill(lagging)
	acked := submitMany(t, procs, "bulk", 2000, 8, nil)

	// The leader's log no longer holds what the killed follower lacks.
	testcluster.Eventually(t, 30*time.Second, func() error {
		idx, err := snapshotIndex(filepath.Join(procs.Dir, procs.Replicas[leader].ID))
		if err != nil {
			return err
		}
		if first := idx - trailing; first <= before.LastLogIndex+1 {
			return fmt.Errorf("leader snapshot at %d keeps the log from %d; the follower stopped at %d", idx, first, before.LastLogIndex)
		}
		t.Logf("the follower stopped at index %d; the leader's log now starts near %d", before.LastLogIndex, idx-trailing)
		return nil
	})
	procs.Start(lagging)
	testcluster.Eventually(t, 30*time.Second, func() error {
		lead, err := procs.Status(leader, time.Second)
		if err != nil {
			return err
		}
		st, err := procs.Status(lagging, time.Second)
		if err != nil {
			return err
		}
		if st.AppliedIndex < lead.CommitIndex {
			return fmt.Errorf("restarted follower applied %d; the leader committed %d", st.AppliedIndex, lead.CommitIndex)
		}
		return nil
	})
	// It caught up through the leader's snapshot, not entries: a replica's
	// own snapshots never replace its state.
	logText, err := os.ReadFile(filepath.Join(procs.Dir, procs.Replicas[lagging].ID+".log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logText), "state replaced by a snapshot") {
		t.Errorf("the follower stopped at %d caught up without installing the leader's snapshot", before.LastLogIndex)
	}
	if idx, err := snapshotIndex(filepath.Join(procs.Dir, procs.Replicas[lagging].ID)); err != nil || idx <= before.LastLogIndex {
		t.Errorf("the follower caught up without a snapshot newer than where it stopped (%d): %d %v", before.LastLogIndex, idx, err)
	}
	checkJobs(t, procs, procs.Replicas[lagging].API, acked)

	// Every replica dies at once while clients submit.
	killed := make(chan struct{})
	go func() {
		time.Sleep(500 * time.Millisecond)
		for i := range procs.Replicas {
			procs.Kill(i)
		}
		close(killed)
	}()
	// Enough submits to still be going when the replicas die; the stream
	// stops there.
	more := submitMany(t, procs, "during", 100000, 8, killed)
	<-killed
	for i := range procs.Replicas {
		procs.Start(i)
	}
	if _, err := procs.WaitLeader(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if len(more) == 0 {
		t.Error("no submit was acknowledged before the kill: the test proves nothing")
	}
	for req, id := range more {
		acked[req] = id
	}
	for i := range procs.Replicas {
		checkJobs(t, procs, procs.Replicas[i].API, acked)
	}
}

// submitMany submits n jobs named name from clients concurrent clients,
// each with its own request ID, and returns the acknowledged ones (request
// ID -> job ID). It stops early, without failing, once stop is closed.
func submitMany(t *testing.T, procs *testcluster.Procs, name string, n, clients int, stop <-chan struct{}) map[string]uint64 {
	t.Helper()
	conn, err := procs.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	api := phalanxv1.NewControllerServiceClient(conn)
	var mu sync.Mutex
	acked := map[string]uint64{}
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := c; k < n; k += clients {
				select {
				case <-stop:
					return
				default:
				}
				req := fmt.Sprintf("%s-%d", name, k)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				resp, err := api.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: benchSpec(req), RequestId: req})
				cancel()
				if err != nil {
					if stop == nil {
						t.Errorf("submit %s: %v", req, err)
					}
					continue
				}
				mu.Lock()
				acked[req] = resp.JobId
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return acked
}

// checkJobs reads every job from the replica at addr, from its own state,
// and checks that each acknowledged submit is there, once, under its ID.
func checkJobs(t *testing.T, procs *testcluster.Procs, addr string, acked map[string]uint64) {
	t.Helper()
	conn, err := procs.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	api := phalanxv1.NewControllerServiceClient(conn)
	var jobs []*phalanxv1.Job
	testcluster.Eventually(t, 30*time.Second, func() error {
		var err error
		jobs, err = listAll(api, &phalanxv1.ListJobsRequest{History: true}, true)
		if err == nil && len(jobs) < len(acked) {
			err = fmt.Errorf("%d jobs; want at least %d", len(jobs), len(acked))
		}
		return err
	})
	byName := map[string][]uint64{}
	for _, j := range jobs {
		byName[j.Spec.Name] = append(byName[j.Spec.Name], j.Id)
	}
	for req, id := range acked {
		if got := byName[req]; len(got) != 1 || got[0] != id {
			t.Errorf("replica %s: submit %s acknowledged as job %d; the replica has %v", addr, req, id, got)
		}
	}
}

// snapshotIndex returns the Raft index of the newest snapshot in a
// replica's data dir.
func snapshotIndex(dataDir string) (uint64, error) {
	metas, err := filepath.Glob(filepath.Join(dataDir, "snapshots", "*", "meta.json"))
	if err != nil || len(metas) == 0 {
		return 0, fmt.Errorf("no snapshot in %s", dataDir)
	}
	var newest uint64
	for _, m := range metas {
		data, err := os.ReadFile(m)
		if err != nil {
			return 0, err
		}
		var meta struct{ Index uint64 }
		if err := json.Unmarshal(data, &meta); err != nil {
			return 0, fmt.Errorf("%s: %w", m, err)
		}
		newest = max(newest, meta.Index)
	}
	return newest, nil
}
