package testcluster_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// arrayPhx returns a phx that runs as root against c and returns its exit
// code, stdout and stderr.
func arrayPhx(t *testing.T, c *testcluster.Cluster) func(args ...string) (int, string, string) {
	if testing.Short() {
		t.Skip("builds phx; not in -short")
	}
	dir := t.TempDir()
	return func(args ...string) (int, string, string) {
		t.Helper()
		return phxAs(t, c, auth.Identity{User: "root"}, dir, nil, args...)
	}
}

// Job IDs of arrays through phx, as Slurm's commands take them: the
// array's ID releases and holds every pending task; ARRAYID_TASKID works
// in scontrol and squeue; scancel cancels the valid IDs of a list and
// reports each invalid one.
func TestArrayIDsThroughPhx(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "fake"})
	phx := arrayPhx(t, c)
	ctx := context.Background()
	mustRun := func(args ...string) string {
		t.Helper()
		code, out, errOut := phx(args...)
		if code != 0 {
			t.Fatalf("phx %v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	// Each task takes the node: one runs at a time.
	base, err := strconv.ParseUint(strings.TrimSpace(mustRun("sbatch", "--parsable", "-a", "0-5", "-H", "--exclusive", "--wrap", "sleep 600")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	task := func(i uint64) *phalanxv1.Job {
		t.Helper()
		j, err := c.Client.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: base + i})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	// held waits until the scheduler's reasons say which of tasks are
	// held (JobHeldUser, JobHeldAdmin), after what.
	held := func(after string, want map[uint64]bool) {
		t.Helper()
		c.Eventually(10*time.Second, func() error {
			for i, h := range want {
				if j := task(i); strings.HasPrefix(j.Reason, "JobHeld") != h {
					return fmt.Errorf("after %s, task %d is %s (%s); want held %v", after, i, j.State, j.Reason, h)
				}
			}
			return nil
		})
	}
	mustRun("scontrol", "release", fmt.Sprint(base))
	c.WaitJob(base, 10*time.Second, "RUNNING")
	held("scontrol release ARRAYID", map[uint64]bool{1: false, 2: false, 3: false, 4: false, 5: false})
	mustRun("scontrol", "hold", fmt.Sprint(base)) // task 0 runs: the others are held
	held("scontrol hold ARRAYID", map[uint64]bool{1: true, 2: true, 3: true, 4: true, 5: true})
	mustRun("scontrol", "release", fmt.Sprintf("%d_2", base))
	held("scontrol release ARRAYID_2", map[uint64]bool{2: false, 3: true})
	mustRun("scontrol", "update", fmt.Sprintf("JobId=%d_1", base), "JobName=renamed")
	if name := task(1).GetSpec().GetName(); name != "renamed" {
		t.Errorf("scontrol update JobId=%d_1 JobName=renamed: task 1 is named %q", base, name)
	}
	if out := mustRun("scontrol", "show", "job", fmt.Sprintf("%d_3", base)); !strings.HasPrefix(out, fmt.Sprintf("JobId=%d ArrayJobId=%d ArrayTaskId=3 ", base+3, base)) {
		t.Errorf("scontrol show job %d_3:\n%s", base, out)
	}
	if out := mustRun("squeue", "-h", "-o", "%i", "-j", fmt.Sprintf("%d_3", base)); out != fmt.Sprintf("%d_3\n", base) {
		t.Errorf("squeue -j %d_3: %q", base, out)
	}

	// Unknown IDs pass in silence, exit 0, as in Slurm 22.05; -v names them.
	code, _, errOut := phx("scancel", fmt.Sprintf("%d_2", base), "9999", fmt.Sprintf("%d_3", base))
	if code != 0 || errOut != "" {
		t.Errorf("scancel with an unknown ID: exit %d, %q; want 0, nothing", code, errOut)
	}
	code, _, errOut = phx("scancel", "-v", fmt.Sprintf("%d_[4-9]", base))
	if want := fmt.Sprintf("scancel: Terminating job %d_[4-9]\nscancel: error: Kill job error on job id %d_[6-9]: Invalid job id specified\n", base, base); code != 0 || errOut != want {
		t.Errorf("scancel -v of tasks the array partly has: exit %d, %q; want %q", code, errOut, want)
	}
	for _, i := range []uint64{2, 3, 4, 5} {
		c.WaitJob(base+i, 10*time.Second, "CANCELLED")
	}
	if j := task(1); j.State != "PENDING" {
		t.Errorf("task 1 is %s: no scancel named it", j.State)
	}
	code, _, errOut = phx("squeue", "-t", "BOGUS")
	if code != 1 || !strings.HasPrefix(errOut, "squeue: error: Invalid job state specified: BOGUS\n") {
		t.Errorf("squeue -t BOGUS: exit %d, %q", code, errOut)
	}
}

// sbatch --wait of an array waits for every task and exits with the
// highest exit code.
func TestSbatchWaitArrayThroughPhx(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1})
	phx := arrayPhx(t, c)
	code, out, errOut := phx("sbatch", "-W", "-a", "0-2", "--wrap", "sleep $SLURM_ARRAY_TASK_ID; exit $((SLURM_ARRAY_TASK_ID * 3))")
	if code != 6 || !strings.HasPrefix(out, "Submitted batch job ") {
		t.Errorf("sbatch -W -a 0-2: exit %d, %q, %q; want 6 (task 2's code)", code, out, errOut)
	}
}
