package testcluster_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

var (
	chaosDuration = flag.Duration("chaos.duration", defaultChaosDuration, "how long the chaos test runs its workload under faults")
	chaosSeed     = flag.Int64("chaos.seed", 0, "seed of the nemesis and the clients (0: from the clock; the test log says which)")
	chaosClients  = flag.Int("chaos.clients", 4, "concurrent clients")
	chaosReport   = flag.String("chaos.report", "", "also write the figures as JSON to this file")
)

// TestChaos runs three controller processes and four agents under a
// workload of concurrent submits, cancels and reads while a nemesis kills
// the leader, a follower or every replica with SIGKILL and restarts them,
// cuts the leader or a minority off the others, and pauses the leader or a
// follower with SIGSTOP; the replicas snapshot and compact their logs every
// few hundred entries meanwhile. At the end it heals
// everything and checks: every acknowledged submit exists exactly once; no
// GPU was ever held by two attempts at once (over every allocation the log
// records, not only the last); every job ended in one state with nothing
// left running; the replicas agree; and the history of operations is
// linearizable (porcupine, jobTableModel). `make chaos-controller` runs it
// longer, with a seed, and prints the figures.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test: several controller processes for a minute; not in -short")
	}
	seed := *chaosSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("chaos seed %d (rerun with -chaos.seed=%d)", seed, seed)
	bin := testcluster.BuildController(t, t.TempDir())
	procs := testcluster.StartProcs(t, bin, testcluster.ProcOptions{Args: []string{
		"--node-ttl", "3s", "--heartbeat-interval", "200ms", "--kill-grace", "1s", "--min-job-age", "24h",
		// Snapshots and log compaction every few hundred entries, so that
		// restarts cross snapshots and a replica that was down long
		// enough catches up through InstallSnapshot.
		"--snapshot-threshold", "300", "--snapshot-interval", "500ms", "--trailing-logs", "100",
	}})
	procs.StartAgents(4, 8)

	r := &chaosRun{t: t, procs: procs, start: time.Now(), seed: seed, rng: rand.New(rand.NewSource(seed)), workDir: t.TempDir()}
	// The run lasts chaos.duration, and longer if it takes that to inject
	// every kind of fault: the nemesis ends it.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	for i := 0; i < *chaosClients; i++ {
		wg.Add(1)
		c := r.newClient(i, seed+int64(i)+1)
		go func() { defer wg.Done(); c.run(ctx) }()
	}
	wg.Add(2)
	go func() { defer wg.Done(); r.nemesis(ctx, *chaosDuration, stop) }()
	go func() { defer wg.Done(); r.watchLeader(ctx) }()
	wg.Wait()
	workload := time.Since(r.start)
	r.healAll()
	r.settle()
	res := r.check()
	res.Seed, res.Duration = seed, workload.Round(time.Second).String()
	res.log(t)
	if *chaosReport != "" {
		data, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(*chaosReport, data, 0o644); err != nil {
			t.Error(err)
		}
	}
	if res.Operations.OK < 100 || res.Faults.Total == 0 {
		t.Errorf("the run did too little to mean anything: %d operations, %d faults", res.Operations.OK, res.Faults.Total)
	}
	if len(res.Faults.ByKind) < faultKinds {
		t.Errorf("%d kinds of fault injected; every run must see all %d", len(res.Faults.ByKind), faultKinds)
	}
	for _, a := range res.Anomalies {
		t.Error(a)
	}
}

// chaosRun is one run: the cluster, the history and the faults.
type chaosRun struct {
	t       *testing.T
	procs   *testcluster.Procs
	start   time.Time
	seed    int64
	workDir string

	mu        sync.Mutex
	rng       *rand.Rand
	history   []porcupine.Operation
	acked     map[string]uint64 // request -> job, for every acknowledged submit
	jobs      []uint64          // jobs known to clients
	faults    map[string]int
	elections int
	writesOK  []time.Duration // completion times of successful writes
}

func (r *chaosRun) now() int64 { return int64(time.Since(r.start)) }

func (r *chaosRun) record(op porcupine.Operation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.history = append(r.history, op)
	in, out := op.Input.(opInput), op.Output.(opOutput)
	if !out.unknown && in.kind != opRead {
		r.writesOK = append(r.writesOK, time.Duration(op.Return))
	}
	if in.kind == opSubmit && !out.unknown {
		if r.acked == nil {
			r.acked = map[string]uint64{}
		}
		r.acked[in.req] = out.job
		r.jobs = append(r.jobs, out.job)
	}
}

// chaosClient is one client: sequential operations, each recorded.
type chaosClient struct {
	r      *chaosRun
	id     int
	rng    *rand.Rand
	api    phalanxv1.ControllerServiceClient
	n      int
	seq    int      // cancels made, for their request IDs
	failed []string // submits whose outcome is unknown, retried later
	names  map[uint64]string
}

func (r *chaosRun) newClient(id int, seed int64) *chaosClient {
	conn, err := r.procs.Dial()
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { conn.Close() })
	return &chaosClient{r: r, id: id, rng: rand.New(rand.NewSource(seed)), api: phalanxv1.NewControllerServiceClient(conn), names: map[uint64]string{}}
}

func (c *chaosClient) run(ctx context.Context) {
	for ctx.Err() == nil {
		switch p := c.rng.Intn(100); {
		case p < 45:
			c.submit()
		case p < 60:
			c.cancel()
		default:
			c.read()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(c.rng.Intn(20)) * time.Millisecond):
		}
	}
}

// call gives every operation the same deadline, as phx does.
func callCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 3*time.Second)
}

func (c *chaosClient) submit() {
	var req string
	if len(c.failed) > 0 && c.rng.Intn(3) == 0 { // retry a submit whose outcome is unknown
		req, c.failed = c.failed[0], c.failed[1:]
	} else {
		c.n++
		req = fmt.Sprintf("c%d-%d", c.id, c.n)
	}
	gpus := 1 + c.rng.Intn(8)
	secs := 0.05 + c.rng.Float64()*0.4
	s := &phalanxv1.JobSpec{Name: req, User: "chaos", Uid: -1, Gid: -1, WorkDir: c.r.workDir, Nodes: 1,
		GpusPerNode: int32(gpus), Output: "/dev/null", Script: fmt.Sprintf("#!/bin/sh\nsleep %.2f\n", secs)}
	op := porcupine.Operation{ClientId: c.id, Input: opInput{kind: opSubmit, req: req}, Call: c.r.now()}
	ctx, cancel := callCtx()
	resp, err := c.api.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: s, RequestId: req})
	cancel()
	op.Return = c.r.now()
	if err != nil {
		op.Output, op.Return = opOutput{unknown: true}, never
		c.failed = append(c.failed, req)
	} else {
		op.Output = opOutput{job: resp.JobId}
		c.names[resp.JobId] = req
	}
	c.r.record(op)
}

// pick returns a job this client submitted (and its request), if any.
func (c *chaosClient) pick() (uint64, string, bool) {
	if len(c.names) == 0 {
		return 0, "", false
	}
	ids := make([]uint64, 0, len(c.names))
	for id := range c.names {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, k int) bool { return ids[i] < ids[k] })
	// Mostly recent jobs: they are the ones still changing.
	i := len(ids) - 1 - min(len(ids)-1, int(c.rng.ExpFloat64()*5))
	return ids[i], c.names[ids[i]], true
}

func (c *chaosClient) cancel() {
	id, req, ok := c.pick()
	if !ok {
		return
	}
	op := porcupine.Operation{ClientId: c.id, Input: opInput{kind: opCancel, req: req, job: id}, Call: c.r.now()}
	ctx, cancel := callCtx()
	c.seq++ // one request ID per cancel, kept by the client's retries
	resp, err := c.api.CancelJob(ctx, &phalanxv1.CancelJobRequest{JobIds: []uint64{id}, RequestId: fmt.Sprintf("cancel-%d-%d", c.id, c.seq)})
	cancel()
	op.Return = c.r.now()
	switch {
	case err == nil:
		op.Output = opOutput{changed: len(resp.Cancelled) == 1}
	case status.Code(err) == codes.NotFound:
		op.Output = opOutput{} // not found: a read's not-found, for the model
		op.Input = opInput{kind: opRead, req: req, job: id}
	default:
		op.Output, op.Return = opOutput{unknown: true}, never
	}
	c.r.record(op)
}

func (c *chaosClient) read() {
	id, req, ok := c.pick()
	if !ok {
		return
	}
	op := porcupine.Operation{ClientId: c.id, Input: opInput{kind: opRead, req: req, job: id}, Call: c.r.now()}
	ctx, cancel := callCtx()
	j, err := c.api.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: id})
	cancel()
	op.Return = c.r.now()
	switch {
	case err == nil:
		op.Output = opOutput{found: true, state: j.State, attempt: j.Attempt}
		if j.Spec.GetName() != req {
			c.r.t.Errorf("job %d read back with name %q; it was submitted as %q", id, j.Spec.GetName(), req)
		}
	case status.Code(err) == codes.NotFound:
		op.Output = opOutput{}
	default:
		return // a read that failed changed nothing: leave it out
	}
	c.r.record(op)
}

// faultKinds is how many kinds of fault the nemesis injects; a fault and
// the calm after it last about 5s, so the default run (what CI runs) sees
// each kind about once or twice.
const (
	faultKinds           = 7
	defaultChaosDuration = 45 * time.Second
)

// nemesis injects one fault after another, each kind once before any comes
// twice, and ends the run (stop) once it has lasted d and every kind was
// injected.
func (r *chaosRun) nemesis(ctx context.Context, d time.Duration, stop context.CancelFunc) {
	pause := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	pause(2 * time.Second) // a calm start
	// The fault kinds, shuffled: each comes once before any comes twice.
	var deck []int
	injected := 0
	for ctx.Err() == nil {
		if time.Since(r.start) >= d && injected >= faultKinds {
			stop()
			return
		}
		r.mu.Lock()
		if len(deck) == 0 {
			deck = r.rng.Perm(faultKinds)
		}
		kind := deck[0]
		hold := time.Duration(1500+r.rng.Intn(2500)) * time.Millisecond
		calm := time.Duration(1000+r.rng.Intn(2000)) * time.Millisecond
		follower := r.rng.Intn(2)
		r.mu.Unlock()
		leader := r.procs.Leader()
		if leader < 0 {
			pause(calm)
			continue
		}
		deck = deck[1:]
		injected++
		other := (leader + 1 + follower) % 3
		switch kind {
		case 0:
			r.fault("kill leader (SIGKILL), restart")
			r.procs.Kill(leader)
			pause(hold)
			r.procs.Start(leader)
		case 1:
			r.fault("isolate the leader")
			r.procs.Partition([]int{(leader + 1) % 3, (leader + 2) % 3})
			pause(hold)
			r.procs.Heal()
		case 2:
			r.fault("isolate a follower")
			r.procs.Partition([]int{leader, 3 - leader - other})
			pause(hold)
			r.procs.Heal()
		case 3:
			r.fault("pause the leader (SIGSTOP)")
			r.procs.Pause(leader)
			pause(hold)
			r.procs.Resume(leader)
		case 4:
			r.fault("kill a follower (SIGKILL), restart")
			r.procs.Kill(other)
			pause(hold)
			r.procs.Start(other)
		case 5:
			r.fault("kill every replica (SIGKILL), restart them")
			for i := range r.procs.Replicas {
				r.procs.Kill(i)
			}
			pause(hold / 2)
			for i := range r.procs.Replicas {
				r.procs.Start(i)
			}
		case 6:
			r.fault("pause a follower (SIGSTOP)")
			r.procs.Pause(other)
			pause(hold)
			r.procs.Resume(other)
		}
		pause(calm)
	}
}

func (r *chaosRun) fault(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.faults == nil {
		r.faults = map[string]int{}
	}
	r.faults[name]++
	r.t.Logf("%6.1fs nemesis: %s", time.Since(r.start).Seconds(), name)
}

// watchLeader counts elections: changes of the replica that reports
// itself leader (polled, so quick double changes may be missed).
func (r *chaosRun) watchLeader(ctx context.Context) {
	last := ""
	for ctx.Err() == nil {
		for i := range r.procs.Replicas {
			st, err := r.procs.Status(i, 200*time.Millisecond)
			if err != nil || st.Role != "Leader" {
				continue
			}
			if key := fmt.Sprintf("%s@%d", st.Id, st.Term); key != last {
				if last != "" {
					r.mu.Lock()
					r.elections++
					r.mu.Unlock()
				}
				last = key
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// healAll ends every fault: links healed, paused replicas resumed, dead
// ones restarted.
func (r *chaosRun) healAll() {
	r.procs.Heal()
	for i := range r.procs.Replicas {
		r.procs.Resume(i)
		if !r.procs.Running(i) {
			r.procs.Start(i)
		}
	}
	if _, err := r.procs.WaitLeader(30 * time.Second); err != nil {
		r.t.Fatal(err)
	}
}

// settle cancels what is still queued and waits until nothing holds
// resources, so the final state is complete.
func (r *chaosRun) settle() {
	api := r.client()
	testcluster.Eventually(r.t, 60*time.Second, func() error {
		ctx, cancel := callCtx()
		defer cancel()
		if _, err := api.CancelJob(ctx, &phalanxv1.CancelJobRequest{User: "chaos"}); err != nil {
			return err
		}
		jobs, err := listAll(api, &phalanxv1.ListJobsRequest{IncludeFinished: true}, false)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			if stateRank(j.State) != 3 {
				return fmt.Errorf("job %d is still %s", j.Id, j.State)
			}
			for _, task := range j.Tasks {
				if !taskEnded(task.State) {
					return fmt.Errorf("job %d still has task %d %s", j.Id, task.Rank, task.State)
				}
			}
		}
		return nil
	})
}

func (r *chaosRun) client() phalanxv1.ControllerServiceClient {
	conn, err := r.procs.Dial()
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { conn.Close() })
	return phalanxv1.NewControllerServiceClient(conn)
}

// listAll pages through a listing; stale reads the replica called, from its
// own state.
func listAll(api phalanxv1.ControllerServiceClient, req *phalanxv1.ListJobsRequest, stale bool) ([]*phalanxv1.Job, error) {
	var out []*phalanxv1.Job
	for {
		ctx, cancel := callCtx()
		if stale {
			ctx = apiclient.Stale(ctx)
		}
		resp, err := api.ListJobs(ctx, req)
		cancel()
		if err != nil {
			return nil, err
		}
		out = append(out, resp.Jobs...)
		if resp.NextPageToken == "" {
			return out, nil
		}
		req.PageToken = resp.NextPageToken
	}
}

func taskEnded(s string) bool {
	switch s {
	case "EXITED", "KILLED", "TIMEOUT", "FAILED", "LOST":
		return true
	}
	return false
}
