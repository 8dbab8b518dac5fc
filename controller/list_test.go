package controller

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cli"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store"
)

// Listings of any size: pages bounded by bytes as well as by count, the
// filters sacct needs applied by the server, and squeue, sacct and
// scontrol show job over 100,000 stored jobs. The states are made with the
// store's own commands into a backup and restored into a real controller,
// which is far faster than as many submits.

// backupOf builds a state database with fill, which applies store
// commands at the indexes next hands out, and returns a backup of it.
func backupOf(t testing.TB, fill func(st *store.Store, next func() uint64)) string {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "state.db"), store.NoSync())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var idx uint64
	fill(st, func() uint64 { idx++; return idx })
	var buf bytes.Buffer
	if err := st.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "backup.db")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// must fails the test on a store command's error.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// newJob is a pending job of user alice, unless changed.
func newJob(id cluster.JobID, nodes int, submit time.Time) *cluster.Job {
	return &cluster.Job{
		ID: id, Name: "train", User: "alice", UID: 1000, Partition: "gpu", Nodes: nodes,
		Script: "#!/bin/sh\ntrue\n", WorkDir: "/home/alice", SubmitTime: submit,
		State: cluster.JobPending, Reason: string(cluster.ReasonNone), TimeLimit: time.Hour,
	}
}

// nodeNames registers n nodes and returns their names.
func nodeNames(t testing.TB, st *store.Store, next func() uint64, n int, at time.Time) []string {
	t.Helper()
	var names []string
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("gpu-node-%04d", i)
		must(t, st.RegisterNode(next(), &cluster.Node{Name: name, Addr: fmt.Sprintf("10.11.%d.%d:7818", i/250, i%250), CPUs: 128, MemoryMB: 1 << 20, GPUs: 8, Registered: at}))
		names = append(names, name)
	}
	must(t, st.SetPartitions(next(), []*cluster.Partition{{Name: "gpu", Nodes: names, Default: true, State: cluster.PartitionUp}}, ""))
	return names
}

// restore puts a backup into s through phx scontrol restore.
func restore(t testing.TB, s *Server, path string) {
	t.Helper()
	if out := phx(t, s, "scontrol", "restore", path); !strings.HasPrefix(out, "State restored from "+path+": ") {
		t.Fatalf("scontrol restore printed %q", out)
	}
}

// phx runs the command line against s (as alice, with root's credential:
// restore is an administrator's) and returns its output.
func phx(t testing.TB, s *Server, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	sys := &cli.System{
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string {
			return map[string]string{"PHX_SERVER": s.APIAddr(), "PHX_TOKEN": rootToken(t), "PHX_INSECURE": "1"}[k]
		},
		Environ:     func() []string { return nil },
		Now:         time.Now,
		Getwd:       func() (string, error) { return "/home/alice", nil },
		CurrentUser: func() (*user.User, error) { return &user.User{Username: "alice", Uid: "1000", Gid: "100"}, nil },
		ReadFile:    os.ReadFile,
		Executable:  func() (string, error) { return "/usr/bin/phx", nil },
		ConfigPath:  filepath.Join(t.TempDir(), "none.conf"),
	}
	if code := cli.Run(context.Background(), sys, append([]string{"phx", "--timeout", "60s"}, args...)); code != 0 {
		t.Fatalf("phx %s: status %d: %s", strings.Join(args, " "), code, stderr.String())
	}
	return stdout.String()
}

func apiClient(t testing.TB, s *Server) phalanxv1.ControllerServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(s.APIAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()), rootCredentials())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return phalanxv1.NewControllerServiceClient(conn)
}

// TestListPagesBoundedBySize lists jobs that each hold 128 nodes (about
// 11 KB on the wire with their tasks and attempt records): one page of the
// default 1,000 jobs would pass the 4 MiB a gRPC client accepts, and the
// listing would fail. Pages end at maxPageBytes instead, and the listing
// goes on from there.
func TestListPagesBoundedBySize(t *testing.T) {
	s := newTestServer(t, Config{NodeTTL: time.Hour, MinJobAge: time.Hour, SchedInterval: time.Hour})
	now := time.Now()
	restore(t, s, backupOf(t, func(st *store.Store, next func() uint64) {
		names := nodeNames(t, st, next, 128, now)
		alloc := cluster.Allocation{}
		for _, n := range names {
			alloc.Nodes = append(alloc.Nodes, cluster.NodeAlloc{Node: n})
		}
		place := func(from, to cluster.JobID) {
			var ps []store.Placement
			for id := from; id <= to; id++ {
				_, err := st.SubmitJob(next(), newJob(id, len(names), now.Add(-time.Hour)), nil, nil)
				must(t, err)
				ps = append(ps, store.Placement{Job: id, Alloc: alloc, MasterPort: 29500, Time: now.Add(-time.Hour)})
			}
			placed, err := st.PlaceJobs(next(), ps)
			if err != nil || len(placed) != len(ps) {
				t.Fatalf("placed %d of %d jobs: %v", len(placed), len(ps), err)
			}
		}
		place(1, 50) // then their nodes fail: they end NODE_FAIL
		must(t, st.SetNodesDown(next(), names, "rack power", now.Add(-30*time.Minute)))
		for _, n := range names {
			must(t, st.SetNodeState(next(), n, cluster.NodeUp, "", "", now.Add(-20*time.Minute)))
		}
		place(51, 450) // and these are live
	}))
	api := apiClient(t, s)
	for _, tc := range []struct {
		req         *phalanxv1.ListJobsRequest
		jobs, pages int
	}{
		{&phalanxv1.ListJobsRequest{History: true, PageSize: 5000}, 450, 5},
		{&phalanxv1.ListJobsRequest{JobIds: []uint64{7, 300, 449, 7}}, 3, 1},
	} {
		req := proto.Clone(tc.req).(*phalanxv1.ListJobsRequest)
		var jobs, pages int
		last := uint64(0)
		for {
			resp, err := api.ListJobs(context.Background(), req)
			if err != nil {
				t.Fatalf("%v: page %d: %v", tc.req, pages+1, err)
			}
			if size := proto.Size(resp); size > maxPageBytes {
				t.Errorf("%v: page %d is %d bytes, more than %d", tc.req, pages+1, size, maxPageBytes)
			}
			for _, j := range resp.Jobs {
				if j.Id <= last || len(j.Alloc) != 128 {
					t.Fatalf("%v: job %d after %d, %d nodes: want ascending IDs, 128 nodes each", tc.req, j.Id, last, len(j.Alloc))
				}
				last = j.Id
			}
			jobs, pages = jobs+len(resp.Jobs), pages+1
			if req.PageToken = resp.NextPageToken; req.PageToken == "" {
				break
			}
		}
		if jobs != tc.jobs || pages < tc.pages {
			t.Errorf("%v: %d jobs in %d pages; want %d jobs in at least %d pages of at most %d bytes", tc.req, jobs, pages, tc.jobs, tc.pages, maxPageBytes)
		}
	}
	// What failed first in the issue: squeue -t all.
	if out := phx(t, s, "squeue", "-h", "-t", "all"); strings.Count(out, "\n") != 450 {
		t.Errorf("squeue -t all printed %d lines; want 450", strings.Count(out, "\n"))
	}
}

// TestListWindow checks the selection sacct asks the server for: by the
// window of time, by states held within it, and by name, user and ID.
func TestListWindow(t *testing.T) {
	s := newTestServer(t, Config{NodeTTL: time.Hour, SchedInterval: time.Hour})
	now := time.Now().Truncate(time.Second)
	h := func(hours float64) time.Time { return now.Add(time.Duration(hours * float64(time.Hour))) }
	restore(t, s, backupOf(t, func(st *store.Store, next func() uint64) {
		names := nodeNames(t, st, next, 2, h(-20))
		submit := func(id cluster.JobID, at time.Time, edit func(*cluster.Job)) {
			j := newJob(id, 1, at)
			if edit != nil {
				edit(j)
			}
			_, err := st.SubmitJob(next(), j, nil, nil)
			must(t, err)
		}
		run := func(id cluster.JobID, node string, from, to time.Time, exit int) {
			placed, err := st.PlaceJobs(next(), []store.Placement{{Job: id, Alloc: cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: node}}}, Time: from}})
			if err != nil || len(placed) != 1 {
				t.Fatalf("place job %d: %v", id, err)
			}
			r := cluster.TaskReport{JobID: id, Node: node, State: cluster.TaskRunning, Time: from}
			must(t, st.ReportTask(next(), r))
			if !to.IsZero() {
				r.State, r.ExitCode, r.Time = cluster.TaskExited, exit, to
				must(t, st.ReportTask(next(), r))
			}
		}
		submit(1, h(-5), nil) // ran -4h to -3h
		run(1, names[0], h(-4), h(-3), 0)
		submit(2, h(-5), func(j *cluster.Job) { j.Name, j.User = "eval", "bob" }) // cancelled pending at -2h
		_, err := st.CancelJobs(next(), []cluster.JobID{2}, h(-2), "Cancelled by user", nil)
		must(t, err)
		submit(3, h(-1), func(j *cluster.Job) { j.Partition = "cpu" }) // pending
		submit(4, h(-0.5), nil)                                        // running since -20m
		run(4, names[1], h(-1.0/3), time.Time{}, 0)
		submit(5, h(-10), func(j *cluster.Job) { j.User = "bob" }) // failed at -9h
		run(5, names[0], h(-9.5), h(-9), 3)
	}))
	api := apiClient(t, s)
	win := func(from, to float64, states ...string) *phalanxv1.ListJobsRequest {
		return &phalanxv1.ListJobsRequest{History: true, States: states, WindowStart: timestamppb.New(h(from)), WindowEnd: timestamppb.New(h(to))}
	}
	for _, tc := range []struct {
		name string
		req  *phalanxv1.ListJobsRequest
		want string
	}{
		{"no window: every job", &phalanxv1.ListJobsRequest{History: true}, "1 2 3 4 5"},
		{"not ended before the start", win(-3.5, 0), "1 2 3 4"},
		{"submitted by the end", win(-24, -4.5), "1 2 5"},
		{"running in the window", win(-3.5, -3.2, "RUNNING"), "1"},
		{"running, ended or not", win(-9.2, 0, "RUNNING"), "1 4 5"},
		{"pending in the window", win(-2.5, -2.4, "PENDING"), "2"},
		{"pending now", win(0, 0, "PENDING"), "3"},
		{"ended in the window", win(-24, 0, "COMPLETED", "FAILED"), "1 5"},
		{"ended outside it", win(-2.5, 0, "COMPLETED", "FAILED"), ""},
		{"a state never reached", win(-24, 0, "BOOT_FAIL"), ""},
		{"unset start", &phalanxv1.ListJobsRequest{History: true, States: []string{"CANCELLED"}, WindowEnd: timestamppb.New(h(0))}, "2"},
		{"users", &phalanxv1.ListJobsRequest{History: true, Users: []string{"bob"}}, "2 5"},
		{"names and partitions", &phalanxv1.ListJobsRequest{History: true, Names: []string{"train"}, Partitions: []string{"gpu"}}, "1 4 5"},
		{"IDs, finished ones too", &phalanxv1.ListJobsRequest{JobIds: []uint64{5, 4, 99}, History: true}, "4 5"},
		{"IDs within MinJobAge only", &phalanxv1.ListJobsRequest{JobIds: []uint64{5, 4, 99}}, "4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := api.ListJobs(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, j := range resp.Jobs {
				ids = append(ids, fmt.Sprint(j.Id))
			}
			if got := strings.Join(ids, " "); got != tc.want {
				t.Errorf("jobs %q; want %q", got, tc.want)
			}
		})
	}
	_, err := api.ListJobs(context.Background(), win(0, -1))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "the window ends") {
		t.Errorf("a window that ends before it starts: %v; want InvalidArgument", err)
	}
}

// TestCommandsWith100kJobs runs squeue, sacct and scontrol show job over
// 100,000 stored jobs: 97,000 finished two days ago, 2,000 finished
// within MinJobAge, 1,000 pending.
func TestCommandsWith100kJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 jobs: not in -short")
	}
	s := newTestServer(t, Config{NodeTTL: time.Hour, MinJobAge: time.Hour, SchedInterval: time.Hour})
	now := time.Now()
	restore(t, s, backupOf(t, func(st *store.Store, next func() uint64) {
		nodeNames(t, st, next, 4, now)
		for first := cluster.JobID(1); first <= 100_000; first += 1000 {
			submit, end := now.Add(-50*time.Hour), now.Add(-49*time.Hour)
			switch {
			case first > 99_000:
				submit, end = now.Add(-5*time.Minute), time.Time{}
			case first > 97_000:
				submit, end = now.Add(-30*time.Minute), now.Add(-10*time.Minute)
			}
			var ids []cluster.JobID
			for id := first; id < first+1000; id++ {
				_, err := st.SubmitJob(next(), newJob(id, 1, submit), nil, nil)
				must(t, err)
				ids = append(ids, id)
			}
			if !end.IsZero() {
				_, err := st.CancelJobs(next(), ids, end, "Cancelled by user", nil)
				must(t, err)
			}
		}
	}))
	for _, tc := range []struct {
		args []string
		each string // once per job listed
		want int
	}{
		{[]string{"squeue", "-h"}, "\n", 1000},
		{[]string{"squeue", "-h", "-t", "all"}, "\n", 3000},
		{[]string{"scontrol", "show", "job"}, "JobId=", 3000},
		{[]string{"sacct", "-a", "-X", "-S", "now-3days", "-n", "-P", "-o", "jobid,state"}, "\n", 100_000},
		{[]string{"sacct", "-s", "CA", "-S", "now-1hours", "-E", "now", "-n"}, "CANCELLED", 2000},
		{[]string{"sacct", "-a", "-j", "1,50000,100000", "-n", "-P", "-o", "jobid,state"}, "|", 3},
	} {
		start := time.Now()
		if out := phx(t, s, tc.args...); strings.Count(out, tc.each) != tc.want {
			t.Errorf("phx %s: %d jobs; want %d", strings.Join(tc.args, " "), strings.Count(out, tc.each), tc.want)
		}
		t.Logf("phx %s: %v", strings.Join(tc.args, " "), time.Since(start).Round(time.Millisecond))
	}
}
