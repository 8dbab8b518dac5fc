package testcluster_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/pki"
	"github.com/phalanx-hpc/phalanx/runtime/process"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// The controller benchmarks run phalanx-controller processes with real
// fsync (one, or three in a Raft group, on this machine's disk) in front of
// a simulated 64-node cluster of 8-GPU nodes (registered and heartbeating
// through the node API; no agents, so placed jobs hold their nodes for
// good). "queued" jobs wait behind a job that holds every node, so every
// scheduling pass sees them: the cost of a submit must not grow with them.
//
//	go test -run '^$' -bench Controller -benchtime 4s ./testcluster/

var controllerBin struct {
	once sync.Once
	path string
}

// TestMain builds phalanx-shim, which the clusters' agents start as their
// plain-process tasks' supervisor, and removes the binaries the tests built
// (it, the benchmarks' controller, the security tests' phx) once they have
// all run. It serves as the supervisor itself when started as one (by a
// process runtime a test makes itself).
func TestMain(m *testing.M) {
	process.RunShimIfAsked()
	dir, err := os.MkdirTemp("", "phx-shim-")
	if err == nil {
		testcluster.Shim, err = testcluster.BuildShim(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testcluster:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if controllerBin.path != "" {
		os.RemoveAll(filepath.Dir(controllerBin.path))
	}
	if phxBin.path != "" {
		os.RemoveAll(filepath.Dir(phxBin.path))
	}
	os.Exit(code)
}

func benchBinary(b *testing.B) string {
	controllerBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "phx-bench-")
		if err != nil {
			b.Fatal(err)
		}
		controllerBin.path = testcluster.BuildController(b, dir)
	})
	return controllerBin.path
}

// benchCluster is a running controller cluster for benchmarks.
type benchCluster struct {
	procs *testcluster.Procs
	stop  context.CancelFunc
	seq   atomic.Int64
}

func startBench(b *testing.B, replicas, nodes int) *benchCluster {
	b.Helper()
	procs := testcluster.StartProcs(b, benchBinary(b), testcluster.ProcOptions{Replicas: replicas, Dir: os.Getenv("PHX_BENCH_DIR"),
		Args: append([]string{"--node-ttl", "30s"}, strings.Fields(os.Getenv("PHX_BENCH_ARGS"))...),
		ReplicaArgs: func(i int) []string {
			if os.Getenv("PHX_BENCH_PPROF") == "" {
				return nil
			}
			return []string{"--debug-addr", fmt.Sprintf("127.0.0.1:%d", 6060+i)} // go tool pprof http://127.0.0.1:606N/debug/pprof/profile
		}})
	ctx, cancel := context.WithCancel(context.Background())
	c := &benchCluster{procs: procs, stop: cancel}
	b.Cleanup(cancel)
	simulateNodes(b, ctx, procs, nodes)
	return c
}

// simulateNodes registers 8-GPU nodes gpu001... and heartbeats for them
// until ctx ends.
func simulateNodes(b testing.TB, ctx context.Context, procs *testcluster.Procs, n int) {
	b.Helper()
	// Each node calls with its own certificate, as its agent does.
	apis := make([]phalanxv1.NodeServiceClient, n)
	for i := range apis {
		name := fmt.Sprintf("gpu%03d", i+1)
		conn, err := apiclient.Dial(procs.APIAddrs(), apiclient.WithDialOptions(procs.Transport(procs.Material(b, pki.KindNode, name))))
		if err != nil {
			b.Fatal(err)
		}
		context.AfterFunc(ctx, func() { conn.Close() })
		apis[i] = phalanxv1.NewNodeServiceClient(conn)
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err = apis[i].RegisterNode(rctx, &phalanxv1.RegisterNodeRequest{Name: name, Addr: "10.0.0.1", Cpus: 128, MemoryMb: 1 << 20, Gpus: 8, GpuModel: "NVIDIA A100-SXM4-80GB"})
		cancel()
		if err != nil {
			b.Fatalf("register %s: %v", name, err)
		}
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
			for i, api := range apis {
				hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				api.Heartbeat(hctx, &phalanxv1.HeartbeatRequest{Name: fmt.Sprintf("gpu%03d", i+1)})
				cancel()
			}
		}
	}()
}

// benchSpec is a job as phx sbatch sends it: a real script and the
// submitter's exported environment (about 3 KB in all).
func benchSpec(name string) *phalanxv1.JobSpec {
	env := []string{"PATH=/usr/local/cuda/bin:/opt/conda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	for i := 0; i < 40; i++ {
		env = append(env, fmt.Sprintf("VAR_%02d=%s", i, strings.Repeat("x", 40)))
	}
	script := "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=8\n#SBATCH -t 4:00:00\n" +
		strings.Repeat("# a comment line of the kind training scripts carry, explaining a flag\n", 12) +
		"srun torchrun --nnodes=$SLURM_NNODES --nproc-per-node=8 train.py --config cfg.yaml\n"
	return &phalanxv1.JobSpec{Name: name, User: "bench", Uid: 1000, Gid: 1000, WorkDir: "/home/bench", Nodes: 1,
		GpusPerNode: 8, Script: script, Environment: env, Output: "train-%j.out"}
}

// fill holds every node with one job and queues n more behind it.
func (c *benchCluster) fill(b *testing.B, nodes, n int) {
	b.Helper()
	hold := benchSpec("hold")
	hold.Nodes = int32(nodes)
	if _, err := c.submitters(1)[0].submit(hold, "hold"); err != nil {
		b.Fatal(err)
	}
	c.run(b, 32, n, "queued")
}

// clear cancels the jobs of one name (those a benchmark run submitted), so
// the next run starts from the same queue.
func (c *benchCluster) clear(b *testing.B, name string) {
	s := c.submitters(1)[0]
	defer s.conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.api.CancelJob(ctx, &phalanxv1.CancelJobRequest{Name: name}); err != nil {
		b.Fatalf("cancel %s jobs: %v", name, err)
	}
}

// submitter is one client: its own connection, like one phx process.
type submitter struct {
	api  phalanxv1.ControllerServiceClient
	conn *apiclient.Conn
}

func (c *benchCluster) submitters(n int) []*submitter {
	out := make([]*submitter, n)
	for i := range out {
		conn, err := c.procs.Dial()
		if err != nil {
			panic(err)
		}
		out[i] = &submitter{api: phalanxv1.NewControllerServiceClient(conn), conn: conn}
	}
	return out
}

func (s *submitter) submit(spec *phalanxv1.JobSpec, req string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t := time.Now()
	_, err := s.api.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: spec, RequestId: req})
	return time.Since(t), err
}

// run submits total jobs from clients concurrent clients and returns the
// rate and the latencies.
func (c *benchCluster) run(b *testing.B, clients, total int, name string) (float64, []time.Duration) {
	subs := c.submitters(clients)
	defer func() {
		for _, s := range subs {
			s.conn.Close()
		}
	}()
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	spec := benchSpec(name)
	var wg sync.WaitGroup
	start := time.Now()
	for i, s := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(total) {
				req := "r" + strconv.FormatInt(c.seq.Add(1), 10)
				d, err := s.submit(spec, req)
				if err != nil {
					b.Errorf("submit: %v", err)
					return
				}
				lat[i] = append(lat[i], d)
			}
		}()
	}
	wg.Wait()
	rate := float64(total) / time.Since(start).Seconds()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, k int) bool { return all[i] < all[k] })
	return rate, all
}

// BenchmarkControllerSubmit: durable submits per second (each acknowledged
// after its commit on a quorum's disks) by replicas, queue depth and
// concurrent clients. b.N submits per run.
func BenchmarkControllerSubmit(b *testing.B) {
	const nodes = 64
	for _, replicas := range []int{1, 3} {
		for _, queued := range []int{0, 10000} {
			b.Run(fmt.Sprintf("replicas=%d/queued=%d", replicas, queued), func(b *testing.B) {
				c := startBench(b, replicas, nodes)
				if queued > 0 {
					c.fill(b, nodes, queued)
				}
				for _, clients := range []int{1, 8, 64} {
					b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
						rate, lat := c.run(b, clients, max(b.N, clients), "job")
						b.StopTimer()
						c.clear(b, "job")
						b.ReportMetric(rate, "submits/s")
						b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
						b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
						b.ReportMetric(0, "ns/op")
					})
				}
			})
		}
	}
}

// BenchmarkControllerFailover: the leader is killed with SIGKILL while a
// client submits; the figure is the time from the kill to the next
// acknowledged submit (the client retries through the other replicas, with
// the same request ID). Ten kills per run; each killed replica is restarted
// and the cluster settles before the next.
func BenchmarkControllerFailover(b *testing.B) {
	c := startBench(b, 3, 8)
	s := c.submitters(1)[0]
	defer s.conn.Close()
	var gaps []time.Duration
	for kill := 0; kill < 10; kill++ {
		leader := c.procs.Leader()
		if leader < 0 {
			var err error
			if leader, err = c.procs.WaitLeader(30 * time.Second); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := s.submit(benchSpec("warm"), fmt.Sprint("warm-", kill)); err != nil {
			b.Fatal(err)
		}
		killed := time.Now()
		c.procs.Kill(leader)
		for n := 0; ; n++ {
			if _, err := s.submit(benchSpec("after"), fmt.Sprint("after-", kill, "-", n)); err == nil {
				break
			}
			if time.Since(killed) > 60*time.Second {
				b.Fatal("no submit acknowledged within 60s of killing the leader")
			}
		}
		gaps = append(gaps, time.Since(killed))
		c.procs.Start(leader)
		if _, err := c.procs.WaitLeader(30 * time.Second); err != nil {
			b.Fatal(err)
		}
		testcluster.Eventually(b, 30*time.Second, func() error { // the restarted replica caught up
			st, err := c.procs.Status(leader, time.Second)
			if err != nil || st.LeaderId == "" {
				return fmt.Errorf("restarted replica: %v %v", st, err)
			}
			return nil
		})
	}
	sort.Slice(gaps, func(i, k int) bool { return gaps[i] < gaps[k] })
	b.Logf("kill -> next acknowledged submit, 10 kills: %v", gaps)
	b.ReportMetric(float64(gaps[len(gaps)/2].Milliseconds()), "median-ms")
	b.ReportMetric(float64(gaps[len(gaps)-1].Milliseconds()), "max-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkControllerMemory: the leader's resident memory with 100,000
// finished jobs in history and 10,000 active (queued behind a job holding
// every node), after a full scheduling pass.
func BenchmarkControllerMemory(b *testing.B) {
	const nodes = 64
	c := startBench(b, 3, nodes)
	c.run(b, 64, 100000, "done")
	c.clear(b, "done") // cancelled while pending: finished, in history
	c.fill(b, nodes, 10000)
	leader := c.procs.Leader()
	api := c.submitters(1)[0].api
	testcluster.Eventually(b, 30*time.Second, func() error { // a full pass has decided the whole queue
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := api.ListJobs(ctx, &phalanxv1.ListJobsRequest{Partitions: []string{"gpu"}, States: []string{"PENDING"}, PageSize: 5000})
		if err != nil {
			return err
		}
		for _, j := range resp.Jobs {
			if j.Reason == "None" {
				return fmt.Errorf("job %d has no reason yet", j.Id)
			}
		}
		return nil
	})
	mem, err := c.procs.RSS(leader)
	if err != nil {
		b.Fatal(err)
	}
	if path := os.Getenv("PHX_BENCH_HEAP"); path != "" && os.Getenv("PHX_BENCH_PPROF") != "" {
		saveHeapProfile(b, fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap", 6060+leader), path)
		saveHeapProfile(b, fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?debug=1", 6060+leader), path+".txt")
	}
	b.ReportMetric(float64(mem.Anon)/(1<<20), "leader-anon-MiB")
	b.ReportMetric(float64(mem.File)/(1<<20), "leader-mapped-MiB")
	b.ReportMetric(float64(mem.Anon+mem.File)/(1<<20), "leader-RSS-MiB")
	b.ReportMetric(0, "ns/op")
}

// saveHeapProfile saves a replica's heap profile (go tool pprof it).
func saveHeapProfile(b *testing.B, url, path string) {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	io.Copy(f, resp.Body)
}
