package testcluster_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/testcluster"
)

// sacct's Flags through phx: a job started in priority order is SchedMain,
// one started past a job left waiting is SchedBackfill, and the waiting
// one, not started, has none.
func TestSacctFlags(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 2, Runtime: "fake"})
	phx := arrayPhx(t, c)
	submit := func(args ...string) string {
		t.Helper()
		code, out, errOut := phx(append([]string{"sbatch", "--parsable", "--exclusive"}, args...)...)
		if code != 0 {
			t.Fatalf("sbatch %v: exit %d: %s", args, code, errOut)
		}
		return strings.TrimSpace(out)
	}
	wait := func(id string, states ...string) {
		t.Helper()
		c.Eventually(20*time.Second, func() error {
			code, out, errOut := phx("squeue", "-h", "-t", "all", "-j", id, "-o", "%T")
			if got := strings.TrimSpace(out); code != 0 || !slices.Contains(states, got) {
				return fmt.Errorf("job %s is %q (%s); want one of %v", id, got, errOut, states)
			}
			return nil
		})
	}
	first := submit("-N", "1", "-t", "60", "--wrap", "sleep 600")
	wait(first, "CONFIGURING", "RUNNING")
	waiting := submit("-N", "2", "-t", "60", "--wrap", "sleep 600") // both nodes: after first's hour
	backfilled := submit("-N", "1", "-t", "30", "--wrap", "sleep 600")
	wait(backfilled, "CONFIGURING", "RUNNING")
	code, out, errOut := phx("sacct", "-n", "-P", "-j", first+","+waiting+","+backfilled, "-o", "JobID,Flags")
	want := first + "|SchedMain\n" + waiting + "|\n" + backfilled + "|SchedBackfill\n"
	if code != 0 || out != want {
		t.Errorf("sacct: exit %d, stdout:\n%s\nstderr %q; want:\n%s", code, out, errOut, want)
	}
}
