package testcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/testcluster"
)

// --open-mode: by default (Slurm's truncate) a job's output file, written
// by every node of the job, loses what an earlier job left and keeps every
// line of this one's nodes, and of its requeued attempt; append keeps the
// earlier content.
func TestOpenMode(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 4, LeafSize: 4})
	dir := t.TempDir()
	for _, name := range []string{"shared.out", "kept.out", "again.out"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("an earlier job\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	line := "#!/bin/sh\necho \"attempt $PHX_ATTEMPT rank $SLURM_NODEID\"\n"
	shared := spec(dir, "shared", 4, 1, line)
	shared.Output = "shared.out"
	kept := spec(dir, "kept", 2, 1, line)
	kept.Output, kept.OpenMode = "kept.out", phalanxv1.OpenMode_OPEN_MODE_APPEND
	again := spec(dir, "again", 2, 1, line+"[ \"$PHX_ATTEMPT\" -ge 1 ]\n") // attempt 0 fails
	again.Output, again.RestartOn, again.MaxRestarts = "again.out", "exit", proto.Int32(1)

	runAll(t, c, shared, kept, again)
	checkLines(t, dir, map[string]string{
		"shared.out": "attempt 0 rank 0; attempt 0 rank 1; attempt 0 rank 2; attempt 0 rank 3",
		"kept.out":   "an earlier job; attempt 0 rank 0; attempt 0 rank 1",
		"again.out":  "attempt 0 rank 0; attempt 0 rank 1; attempt 1 rank 0; attempt 1 rank 1",
	})
}

// On a file system that keeps no user extended attributes (ramfs here),
// the nodes cannot agree which one empties a shared file: it is appended
// to, and the job has an output-appended event that says why; a file of
// each node's own (-o out-%n) is emptied all the same.
func TestOpenModeWithoutMarks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a ramfs needs root (CI runs as root)")
	}
	dir := t.TempDir()
	if err := unix.Mount("phx-ramfs", dir, "ramfs", 0, "mode=0755"); err != nil {
		t.Fatalf("mount ramfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	c := testcluster.New(t, testcluster.Options{Nodes: 2, LeafSize: 2})
	for _, name := range []string{"shared.out", "own-0.out", "own-1.out"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("an earlier job\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	line := "#!/bin/sh\necho \"rank $SLURM_NODEID\"\n"
	shared := spec(dir, "shared", 2, 1, line)
	shared.Output = "shared.out"
	own := spec(dir, "own", 2, 1, line)
	own.Output = "own-%n.out"
	ids := runAll(t, c, shared, own)
	checkLines(t, dir, map[string]string{
		"shared.out": "an earlier job; rank 0; rank 1",
		"own-0.out":  "rank 0",
		"own-1.out":  "rank 1",
	})
	c.Eventually(10*time.Second, func() error {
		evs, err := c.Client.ListEvents(context.Background(), &phalanxv1.ListEventsRequest{Jobs: ids})
		appended := map[uint64]int{}
		for _, e := range evs.GetEvents() {
			if e.Kind == "output-appended" && strings.Contains(e.Message, "cannot agree which one empties it") {
				appended[e.Job]++
			}
		}
		if err != nil || appended[ids[0]] != 2 || appended[ids[1]] != 0 {
			return fmt.Errorf("events %v, %v; want an output-appended event from each node of job %d, none for job %d", evs, err, ids[0], ids[1])
		}
		return nil
	})
}

// runAll submits the jobs and waits for each to complete.
func runAll(t *testing.T, c *testcluster.Cluster, specs ...*phalanxv1.JobSpec) []uint64 {
	t.Helper()
	var ids []uint64
	for _, s := range specs {
		ids = append(ids, submit(t, c, s))
	}
	for _, id := range ids {
		if job := c.WaitJob(id, 60*time.Second, "COMPLETED", "FAILED", "CANCELLED"); job.State != "COMPLETED" {
			t.Fatalf("job %d ended %s (%s)", id, job.State, job.Reason)
		}
	}
	return ids
}

// checkLines checks the files of dir: each file's lines, sorted, joined
// by "; ".
func checkLines(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	for name, w := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		l := strings.Split(strings.TrimSpace(string(b)), "\n")
		slices.Sort(l)
		if got := strings.Join(l, "; "); got != w {
			t.Errorf("%s holds %q; want %q", name, got, w)
		}
	}
}
