package testcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

const envScript = `#!/bin/sh
for v in SLURM_JOB_ID SLURM_JOB_NAME SLURM_JOB_NODELIST SLURM_NNODES SLURM_NODEID SLURM_PROCID \
  SLURM_LOCALID SLURM_NTASKS SLURM_GPUS_ON_NODE SLURM_JOB_PARTITION SLURM_SUBMIT_DIR SLURM_RESTART_COUNT \
  MASTER_ADDR MASTER_PORT WORLD_SIZE RANK NODE_RANK LOCAL_WORLD_SIZE PET_NNODES PET_NODE_RANK \
  PET_MASTER_ADDR PET_MASTER_PORT CUDA_VISIBLE_DEVICES PHX_JOB_ID PHX_ATTEMPT; do
  eval "echo $v=\${$v-UNSET}"
done
`

func spec(dir, name string, nodes, gpus int, script string) *phalanxv1.JobSpec {
	return &phalanxv1.JobSpec{
		Name: name, User: "alice", Uid: -1, Gid: -1, Script: script, WorkDir: dir,
		Nodes: int32(nodes), GpusPerNode: int32(gpus), Output: name + "-%j-%n.out",
	}
}

func submit(t *testing.T, c *testcluster.Cluster, s *phalanxv1.JobSpec) uint64 {
	t.Helper()
	resp, err := c.Client.SubmitJob(context.Background(), &phalanxv1.SubmitJobRequest{Spec: s})
	if err != nil {
		t.Fatalf("submit %s: %v", s.Name, err)
	}
	return resp.JobId
}

func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("output: %v", err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	return env
}

func TestGangJobsCompleteWithTheirEnvironment(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 4, LeafSize: 2})
	dir := t.TempDir()
	big := submit(t, c, spec(dir, "ddp", 2, 8, envScript))
	small := submit(t, c, spec(dir, "single", 1, 2, envScript))

	job := c.WaitJob(big, 20*time.Second, "COMPLETED", "FAILED")
	if job.State != "COMPLETED" {
		t.Fatalf("2-node job ended %s (%s); tasks %v", job.State, job.Reason, job.Tasks)
	}
	if len(job.Alloc) != 2 {
		t.Fatalf("2-node job got %d nodes", len(job.Alloc))
	}
	// Both nodes under one leaf switch: the topology has leaves of 2.
	leafOf := func(n string) string { return c.Topology.LeafOf(n) }
	if leafOf(job.Alloc[0].Node) != leafOf(job.Alloc[1].Node) {
		t.Errorf("2-node job spans leaves: %s on %s, %s on %s", job.Alloc[0].Node, leafOf(job.Alloc[0].Node), job.Alloc[1].Node, leafOf(job.Alloc[1].Node))
	}
	var port string
	for rank := 0; rank < 2; rank++ {
		env := readEnv(t, filepath.Join(dir, "ddp-"+strconv.FormatUint(big, 10)+"-"+strconv.Itoa(rank)+".out"))
		want := map[string]string{
			"SLURM_JOB_ID":         strconv.FormatUint(big, 10),
			"SLURM_JOB_NAME":       "ddp",
			"SLURM_NNODES":         "2",
			"SLURM_NODEID":         strconv.Itoa(rank),
			"SLURM_PROCID":         strconv.Itoa(rank),
			"SLURM_LOCALID":        "0",
			"SLURM_NTASKS":         "2",
			"SLURM_GPUS_ON_NODE":   "8",
			"SLURM_JOB_PARTITION":  "gpu",
			"SLURM_SUBMIT_DIR":     dir,
			"SLURM_RESTART_COUNT":  "UNSET", // as Slurm's: set once the job has restarted
			"MASTER_ADDR":          "127.0.0.1",
			"WORLD_SIZE":           "2",
			"RANK":                 strconv.Itoa(rank),
			"NODE_RANK":            strconv.Itoa(rank),
			"LOCAL_WORLD_SIZE":     "8",
			"PET_NNODES":           "2",
			"PET_NODE_RANK":        strconv.Itoa(rank),
			"PET_MASTER_ADDR":      "127.0.0.1",
			"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7",
			"PHX_JOB_ID":           strconv.FormatUint(big, 10),
			"PHX_ATTEMPT":          "0",
		}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("rank %d: %s=%q, want %q", rank, k, env[k], v)
			}
		}
		if env["SLURM_JOB_NODELIST"] == "" || !strings.Contains(env["SLURM_JOB_NODELIST"], "[") {
			t.Errorf("rank %d: SLURM_JOB_NODELIST=%q, want a compressed hostlist", rank, env["SLURM_JOB_NODELIST"])
		}
		if env["MASTER_PORT"] == "" || env["MASTER_PORT"] != env["PET_MASTER_PORT"] {
			t.Errorf("rank %d: MASTER_PORT=%q PET_MASTER_PORT=%q", rank, env["MASTER_PORT"], env["PET_MASTER_PORT"])
		}
		if port == "" {
			port = env["MASTER_PORT"]
		} else if env["MASTER_PORT"] != port {
			t.Errorf("ranks disagree on MASTER_PORT: %s vs %s", port, env["MASTER_PORT"])
		}
	}

	job = c.WaitJob(small, 20*time.Second, "COMPLETED", "FAILED")
	if job.State != "COMPLETED" {
		t.Fatalf("1-node job ended %s (%s)", job.State, job.Reason)
	}
	env := readEnv(t, filepath.Join(dir, "single-"+strconv.FormatUint(small, 10)+"-0.out"))
	if env["WORLD_SIZE"] != "1" || env["RANK"] != "0" || len(strings.Split(env["CUDA_VISIBLE_DEVICES"], ",")) != 2 {
		t.Errorf("1-node job env: WORLD_SIZE=%s RANK=%s CUDA_VISIBLE_DEVICES=%s", env["WORLD_SIZE"], env["RANK"], env["CUDA_VISIBLE_DEVICES"])
	}
}

func TestFailingRankFailsTheJob(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 2, LeafSize: 2})
	dir := t.TempDir()
	id := submit(t, c, spec(dir, "fail", 2, 1, "#!/bin/sh\nif [ \"$RANK\" = 1 ]; then exit 7; fi\nsleep 600\n"))
	job := c.WaitJob(id, 20*time.Second, "FAILED", "COMPLETED")
	if job.State != "FAILED" || job.ExitCode != 7 {
		t.Fatalf("job ended %s exit %d; want FAILED exit 7", job.State, job.ExitCode)
	}
	// Rank 0 is stopped because its peer failed; the GPUs come back.
	c.Eventually(20*time.Second, func() error { return allIdle(c) })
}

func TestCancelStopsEveryProcess(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 2, LeafSize: 2})
	dir := t.TempDir()
	// The script leaves a child behind: cancel must take it too.
	script := "#!/bin/sh\nsleep 600 &\necho $! > child-$RANK.pid\necho $$ > main-$RANK.pid\nwait\n"
	id := submit(t, c, spec(dir, "sleeper", 2, 8, script))
	c.WaitJob(id, 20*time.Second, "RUNNING")
	var pids []int
	c.Eventually(10*time.Second, func() error {
		pids = pids[:0]
		for _, f := range []string{"child-0.pid", "child-1.pid", "main-0.pid", "main-1.pid"} {
			data, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				return err
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				return err
			}
			pids = append(pids, pid)
		}
		return nil
	})
	if _, err := c.Client.CancelJob(context.Background(), &phalanxv1.CancelJobRequest{JobIds: []uint64{id}}); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	job := c.WaitJob(id, 10*time.Second, "CANCELLED")
	if job.EndTime == nil {
		t.Errorf("cancelled job has no end time")
	}
	c.Eventually(10*time.Second, func() error {
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil {
				return errorf("process %d still alive after scancel", pid)
			}
		}
		return nil
	})
	c.Eventually(10*time.Second, func() error { return allIdle(c) })
}

func TestImpossibleRequestIsRefusedAtSubmit(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 2, LeafSize: 2})
	dir := t.TempDir()
	for _, s := range []*phalanxv1.JobSpec{
		spec(dir, "nine", 1, 9, envScript),
		spec(dir, "three-nodes", 3, 1, envScript),
	} {
		_, err := c.Client.SubmitJob(context.Background(), &phalanxv1.SubmitJobRequest{Spec: s})
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "Requested node configuration is not available") {
			t.Errorf("%s: got %v; want FailedPrecondition 'Requested node configuration is not available'", s.Name, err)
		}
	}
	bad := spec(dir, "nopart", 1, 1, envScript)
	bad.Partition = "nosuch"
	if _, err := c.Client.SubmitJob(context.Background(), &phalanxv1.SubmitJobRequest{Spec: bad}); status.Code(err) != codes.NotFound {
		t.Errorf("unknown partition: got %v; want NotFound", err)
	}
	jobs, err := c.Client.ListJobs(context.Background(), &phalanxv1.ListJobsRequest{IncludeFinished: true})
	if err != nil || len(jobs.Jobs) != 0 {
		t.Errorf("refused jobs were recorded: %v %v", jobs, err)
	}
}

func TestTimeLimitEndsJobWithTimeout(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, LeafSize: 1})
	s := spec(t.TempDir(), "slow", 1, 1, "#!/bin/sh\nsleep 600\n")
	s.TimeLimitSeconds = 1
	id := submit(t, c, s)
	job := c.WaitJob(id, 20*time.Second, "TIMEOUT", "COMPLETED", "FAILED")
	if job.State != "TIMEOUT" {
		t.Fatalf("job ended %s; want TIMEOUT", job.State)
	}
}

func TestLostNodeEndsJobWithNodeFail(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 2, LeafSize: 2, NodeTTL: time.Second})
	s := spec(t.TempDir(), "victim", 2, 8, "#!/bin/sh\nsleep 600\n")
	s.NoRequeue = true // NODE_FAIL stays (fence_test.go has the restart)
	id := submit(t, c, s)
	job := c.WaitJob(id, 20*time.Second, "RUNNING")
	c.CutNode(job.Alloc[1].Node)
	job = c.WaitJob(id, 20*time.Second, "NODE_FAIL")
	nodes, err := c.Client.ListNodes(context.Background(), &phalanxv1.ListNodesRequest{Names: []string{job.Alloc[1].Node}})
	if err != nil || nodes.Nodes[0].State != "DOWN" {
		t.Fatalf("lost node: %v %v; want DOWN", nodes, err)
	}
}

func TestStateSurvivesControllerRestart(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 2, LeafSize: 2})
	dir := t.TempDir()
	done := submit(t, c, spec(dir, "done", 1, 1, "#!/bin/sh\ntrue\n"))
	c.WaitJob(done, 20*time.Second, "COMPLETED")
	run := submit(t, c, spec(dir, "run", 2, 8, "#!/bin/sh\nsleep 600\n"))
	c.WaitJob(run, 20*time.Second, "RUNNING")
	wait := submit(t, c, spec(dir, "wait", 2, 8, "#!/bin/sh\ntrue\n"))
	c.WaitJob(wait, 5*time.Second, "PENDING")

	c.StopController(0)
	c.StartController(0)
	c.Leader()

	for id, want := range map[uint64]string{done: "COMPLETED", run: "RUNNING", wait: "PENDING"} {
		j, err := c.Client.GetJob(context.Background(), &phalanxv1.GetJobRequest{JobId: id})
		if err != nil || j.State != want {
			t.Errorf("after restart job %d: %v %v; want %s", id, j.GetState(), err, want)
		}
	}
	next := submit(t, c, spec(dir, "next", 1, 0, "#!/bin/sh\ntrue\n"))
	if next != wait+1 {
		t.Errorf("after restart the next job ID is %d; want %d", next, wait+1)
	}
	if _, err := c.Client.CancelJob(context.Background(), &phalanxv1.CancelJobRequest{JobIds: []uint64{run}}); err != nil {
		t.Fatal(err)
	}
	c.WaitJob(wait, 20*time.Second, "COMPLETED")
}

func allIdle(c *testcluster.Cluster) error {
	nodes, err := c.Client.ListNodes(context.Background(), &phalanxv1.ListNodesRequest{})
	if err != nil {
		return err
	}
	for _, n := range nodes.Nodes {
		if n.GpusUsed != 0 {
			return errorf("node %s still has %d GPUs in use", n.Name, n.GpusUsed)
		}
	}
	return nil
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// The submitter's exported variables reach the task, whether the submit
// carries them as a list (what phx sbatch sends) or as the first release's
// map; the job's own PATH replaces the agent's default (after the srun
// shim), and a variable
// named like one of Phalanx's loses to it.
func TestExportedEnvironmentReachesTheTask(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "process"})
	dir := t.TempDir()
	script := "#!/bin/sh\necho LR=$LR\necho PATH=$PATH\necho SLURM_NNODES=$SLURM_NNODES\n"
	list := spec(dir, "list", 1, 1, script)
	list.Environment = []string{"LR=0.1", "PATH=/opt/job/bin:/usr/bin:/bin", "SLURM_NNODES=99"}
	legacy := spec(dir, "map", 1, 1, script)
	legacy.Env = map[string]string{"LR": "0.2", "PATH": "/opt/job/bin:/usr/bin:/bin"}
	for name, s := range map[string]*phalanxv1.JobSpec{"list": list, "map": legacy} {
		id := submit(t, c, s)
		c.WaitJob(id, 20*time.Second, "COMPLETED")
		env := readEnv(t, filepath.Join(dir, name+"-"+strconv.FormatUint(id, 10)+"-0.out"))
		want := map[string]string{"list": "0.1", "map": "0.2"}[name]
		// The agent puts its srun shim first on the job's PATH.
		if env["LR"] != want || !strings.HasSuffix(env["PATH"], "/bin:/opt/job/bin:/usr/bin:/bin") || env["SLURM_NNODES"] != "1" {
			t.Errorf("%s: the task saw LR=%q PATH=%q SLURM_NNODES=%q; want %s, the shim then the job's PATH, 1", name, env["LR"], env["PATH"], env["SLURM_NNODES"], want)
		}
	}
}

// Agents export the config's ClusterName, which they learn from the
// controllers when they register, as SLURM_CLUSTER_NAME.
func TestClusterNameReachesTasks(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, ClusterName: "mycluster"})
	dir := t.TempDir()
	id := submit(t, c, spec(dir, "name", 1, 1, "#!/bin/sh\necho SLURM_CLUSTER_NAME=${SLURM_CLUSTER_NAME-UNSET}\n"))
	if job := c.WaitJob(id, 20*time.Second, "COMPLETED", "FAILED"); job.State != "COMPLETED" {
		t.Fatalf("job ended %s (%s)", job.State, job.Reason)
	}
	if env := readEnv(t, filepath.Join(dir, "name-"+strconv.FormatUint(id, 10)+"-0.out")); env["SLURM_CLUSTER_NAME"] != "mycluster" {
		t.Errorf("SLURM_CLUSTER_NAME=%q; want mycluster, the controllers' ClusterName", env["SLURM_CLUSTER_NAME"])
	}
}
