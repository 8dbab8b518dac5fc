package cli

import (
	"context"
	"fmt"
	"os/user"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// sacctJobs are the jobs of the formatting tests, in format_test.go's
// notation: one of each state, a name and an ID too wide for their columns.
// Job 123456789012345 was placed by a version that did not record how.
// Job 11 was killed by signal 9 (the agent reports 137, as a shell would):
// Slurm prints 0:9.
const sacctJobs = `
job id=7 name=pretrain-llama-70b user=alexandria account=ml part=gpu-long state=RUNNING submit=-2h start=-65m nodes=gpu[001-004] gpus=8 cpus=32 mem=65536 limit=1-00:00:00 submit-line=sbatch_-N_4_pretrain.sh_--resume comment=warm_restart placed=main
job id=8 name=eval user=bob part=gpu state=PENDING reason=Resources submit=-10m req-nodes=2
job id=9 name=sweep user=bob part=gpu state=COMPLETED submit=-3h start=-3h end=-2h nodes=gpu005 cpus=8 mem=1000 placed=backfill
job id=10 name=big user=carol part=gpu state=FAILED reason=NonZeroExitCode exit=1:0 submit=-50h start=-50h end=-1h nodes=gpu[010-011] cpus=4 placed=main
job id=11 name=x user=d part=gpu state=NODE_FAIL exit=137:9 submit=-5m start=-4m end=-1m nodes=gpu012 placed=backfill
job id=12 name=c user=d part=gpu state=CANCELLED reason=Cancelled submit=-5m end=-1m
job id=123456789012345 name=t user=d part=gpu state=TIMEOUT submit=-5h start=-5h end=-1h nodes=gpu013 limit=4:00:00
`

// TestFormatSacct checks sacct's layout against Slurm's: every column is
// followed by a space (trailing one included), JobID is left-aligned in 12,
// the rest right-aligned; text too wide ends in +, dates are cut, numbers
// and times never; -p/-P separate with | (with or without a last one).
// Rows are in Slurm's order: by submit time, then array, task and ID.
func TestFormatSacct(t *testing.T) {
	jobs := parseObjects(t, sacctJobs).jobs
	for _, tc := range []struct {
		name string
		view SacctView
		want string
	}{
		{"default", SacctView{}, `
JobID           JobName  Partition    Account  AllocCPUS      State ExitCode 
------------ ---------- ---------- ---------- ---------- ---------- -------- 
10                  big        gpu                     8     FAILED      1:0 
12345678901+          t        gpu                     0    TIMEOUT      0:0 
9                 sweep        gpu                     8  COMPLETED      0:0 
7            pretrain-+   gpu-long         ml        128    RUNNING      0:0 
8                  eval        gpu                     2    PENDING      0:0 
11                    x        gpu                     0  NODE_FAIL      0:9 
12                    c        gpu                     1  CANCELLED      0:0 
`},
		{"fields, prefixes and widths", SacctView{Format: "jobid%5,jobname%-15,state%4,elapsed,start,end,nodelist,nnodes,submit,timelimit,user,reason,alloctres,exitcode"}, `
JobID JobName         Stat    Elapsed               Start                 End        NodeList   NNodes              Submit  Timelimit      User                 Reason  AllocTRES ExitCode 
----- --------------- ---- ---------- ------------------- ------------------- --------------- -------- ------------------- ---------- --------- ---------------------- ---------- -------- 
   10 big             FAI+ 2-01:00:00 2024-04-29T10:00:00 2024-05-01T11:00:00    gpu[010-011]        2 2024-04-29T10:00:00  UNLIMITED     carol                   None billing=8+      1:0 
1234+ t               TIM+   04:00:00 2024-05-01T07:00:00 2024-05-01T11:00:00          gpu013        1 2024-05-01T07:00:00   04:00:00         d                   None     node=1      0:0 
    9 sweep           COM+   01:00:00 2024-05-01T09:00:00 2024-05-01T10:00:00          gpu005        1 2024-05-01T09:00:00  UNLIMITED       bob                   None billing=8+      0:0 
    7 pretrain-llama+ RUN+   01:05:00 2024-05-01T10:55:00             Unknown    gpu[001-004]        4 2024-05-01T10:00:00 1-00:00:00 alexandr+                   None billing=1+      0:0 
    8 eval            PEN+   00:00:00             Unknown             Unknown   None assigned        2 2024-05-01T11:50:00 Partition+       bob              Resources                 0:0 
   11 x               NOD+   00:03:00 2024-05-01T11:56:00 2024-05-01T11:59:00          gpu012        1 2024-05-01T11:55:00  UNLIMITED         d                   None     node=1      0:9 
   12 c               CAN+   00:00:00                None 2024-05-01T11:59:00   None assigned        1 2024-05-01T11:55:00 Partition+         d                   None                 0:0 
`},
		{"parsable", SacctView{Parsable: true, Trailing: true, Format: "JobID,State,ExitCode,NodeList"}, `
JobID|State|ExitCode|NodeList|
10|FAILED|1:0|gpu[010-011]|
123456789012345|TIMEOUT|0:0|gpu013|
9|COMPLETED|0:0|gpu005|
7|RUNNING|0:0|gpu[001-004]|
8|PENDING|0:0|None assigned|
11|NODE_FAIL|0:9|gpu012|
12|CANCELLED|0:0|None assigned|
`},
		{"parsable2, no header", SacctView{Parsable: true, NoHeader: true, Format: "jobid,alloctres,cputime,cputimeraw"}, `
10|billing=8,cpu=8,node=2|16-08:00:00|1411200
123456789012345|node=1|00:00:00|0
9|billing=8,cpu=8,mem=1000M,node=1|08:00:00|28800
7|billing=128,cpu=128,gres/gpu=32,mem=256G,node=4|5-18:40:00|499200
8||00:00:00|0
11|node=1|00:00:00|0
12||00:00:00|0
`},
		{"brief, noheader, own delimiter", SacctView{Format: "JobID,State,ExitCode", Parsable: true, Trailing: true, Delimiter: ";", NoHeader: true}, `
10;FAILED;1:0;
123456789012345;TIMEOUT;0:0;
9;COMPLETED;0:0;
7;RUNNING;0:0;
8;PENDING;0:0;
11;NODE_FAIL;0:9;
12;CANCELLED;0:0;
`},
		{"what was asked, and the wait", SacctView{Parsable: true, Format: "jobid,reqmem,reqtres,ntasks,planned,suspended,derivedexitcode,comment"}, `
JobID|ReqMem|ReqTRES|NTasks|Planned|Suspended|DerivedExitCode|Comment
10|0|billing=8,cpu=8,node=2||00:00:00|00:00:00|1:0|
123456789012345|0|billing=1,cpu=1,node=1||00:00:00|00:00:00|0:0|
9|1000M|billing=8,cpu=8,mem=1000M,node=1||00:00:00|00:00:00|0:0|
7|256G|billing=128,cpu=128,gres/gpu=32,mem=256G,node=4||00:55:00|00:00:00|0:0|warm restart
8|0|billing=2,cpu=2,node=2||00:10:00|00:00:00|0:0|
11|0|billing=1,cpu=1,node=1||00:01:00|00:00:00|0:9|
12|0|billing=1,cpu=1,node=1||INVALID|00:00:00|0:0|
`},
		{"cluster and submit line (none recorded by older clients)", SacctView{Parsable: true, Cluster: "phalanx", Format: "jobid,cluster,submitline"}, `
JobID|Cluster|SubmitLine
10|phalanx|
123456789012345|phalanx|
9|phalanx|
7|phalanx|sbatch -N 4 pretrain.sh --resume
8|phalanx|
11|phalanx|
12|phalanx|
`},
		{"flags: how each was started; nothing for one that never started or whose record does not say", SacctView{Format: "jobid,state,flags"}, `
JobID             State               Flags 
------------ ---------- ------------------- 
10               FAILED           SchedMain 
12345678901+    TIMEOUT                     
9             COMPLETED       SchedBackfill 
7               RUNNING           SchedMain 
8               PENDING                     
11            NODE_FAIL       SchedBackfill 
12            CANCELLED                     
`},
		{"flags, parsable2", SacctView{Parsable: true, Format: "jobid,flags,state"}, `
JobID|Flags|State
10|SchedMain|FAILED
123456789012345||TIMEOUT
9|SchedBackfill|COMPLETED
7|SchedMain|RUNNING
8||PENDING
11|SchedBackfill|NODE_FAIL
12||CANCELLED
`},
		{"flags cut to a width", SacctView{Format: "jobid%4,flags%6", NoHeader: true}, `
  10 Sched+ 
123+        
   9 Sched+ 
   7 Sched+ 
   8        
  11 Sched+ 
  12        
`},
		{"unknown field", SacctView{Format: "jobid,bogus"}, `error: sacct: error: Invalid field requested: "bogus"`},
		{"a field of Slurm's phx does not record", SacctView{Format: "jobid,maxrss"}, "error: MaxRSS is a field of Slurm's that Phalanx does not record: it keeps no job steps, usage, energy, reservations, WCKeys or database IDs (sacct --helpformat lists the fields it has)"},
		// Slurm's prefixes: "res" is Reservation (refused), not Reserved;
		// a prefix of ALL is every field.
		{"a prefix stands for Slurm's field", SacctView{Format: "jobid,res"}, "error: Reservation is a field of Slurm's that Phalanx does not record: it keeps no job steps, usage, energy, reservations, WCKeys or database IDs (sacct --helpformat lists the fields it has)"},
		// A width is read as C's atoi reads it; an empty field ends the list.
		{"widths as atoi, the list ends at an empty field", SacctView{Format: "jobid%x,state%3abc,,jobname", NoHeader: true}, `
 FA+ 
 TI+ 
 CO+ 
 RU+ 
 PE+ 
 NO+ 
 CA+ 
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.view.Now = testNow
			got, err := FormatSacct(jobs, tc.view)
			if err != nil {
				got = "error: " + err.Error()
			}
			if want := strings.TrimPrefix(tc.want, "\n"); got != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestSacctFieldsAll(t *testing.T) {
	for _, all := range []string{"ALL%7", "a%7", "Al%7", "%7"} { // Slurm's: a prefix of ALL, the empty one too
		cols, err := sacctColumns(all)
		if err != nil || len(cols) != len(sacctFields) || cols[3].width != 7 {
			t.Fatalf("%s = %d columns (%v), want every field, 7 wide", all, len(cols), err)
		}
	}
	if _, err := FormatSacct(parseObjects(t, sacctJobs).jobs, SacctView{Format: "all", Now: testNow}); err != nil {
		t.Fatal(err)
	}
}

func at(s string) *timestamppb.Timestamp {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		panic(err)
	}
	return timestamppb.New(t)
}

// TestParseSacct checks the requests sacct sends, Slurm's default time
// window included: midnight to now; with -s, now (or -S) to -S; with -j,
// no start. testNow is 2024-05-01T12:00:00 UTC; the user is alice.
func TestParseSacct(t *testing.T) {
	now, midnight := timestamppb.New(testNow), at("2024-05-01T00:00:00")
	// Up to now, this second included (a job just submitted is listed).
	thisSecond := at("2024-05-01T12:00:01")
	alice := []string{"alice"}
	for _, tc := range []struct {
		args []string
		root bool
		want *phalanxv1.ListJobsRequest
	}{
		{nil, false, &phalanxv1.ListJobsRequest{Users: alice, WindowStart: midnight, WindowEnd: thisSecond}},
		{nil, true, &phalanxv1.ListJobsRequest{WindowStart: midnight, WindowEnd: thisSecond}},
		{[]string{"-a", "-X"}, false, &phalanxv1.ListJobsRequest{WindowStart: midnight, WindowEnd: thisSecond}},
		{[]string{"-j", "7,8"}, false, &phalanxv1.ListJobsRequest{JobIds: []uint64{7, 8}, WindowEnd: thisSecond}},
		{[]string{"-j7", "-u", "bob"}, false, &phalanxv1.ListJobsRequest{JobIds: []uint64{7}, Users: []string{"bob"}, WindowEnd: thisSecond}},
		// -s picks rows here, each attempt by its own state: the server,
		// which picks whole jobs by theirs, is asked for the window alone.
		// The window of one instant is a second long, as Slurm's query makes it.
		{[]string{"-s", "CD,f,timeout,bf"}, false, &phalanxv1.ListJobsRequest{Users: alice, WindowStart: now, WindowEnd: thisSecond}},
		{[]string{"--state=R", "-S", "2024-04-30"}, false, &phalanxv1.ListJobsRequest{Users: alice, WindowStart: at("2024-04-30T00:00:00"), WindowEnd: at("2024-04-30T00:00:01")}},
		{[]string{"-s", "PD", "-j", "3"}, false, &phalanxv1.ListJobsRequest{JobIds: []uint64{3}, WindowEnd: thisSecond}},
		// A task of an array: the array is asked for, the task picked here.
		{[]string{"-j", "9_7,12,9_3,9"}, false, &phalanxv1.ListJobsRequest{JobIds: []uint64{9, 12}, WindowEnd: thisSecond}},
		{[]string{"-S", "2024-04-30T10:00", "-E", "now-1hours", "--uid=bob,carol"}, false, &phalanxv1.ListJobsRequest{Users: []string{"bob", "carol"}, WindowStart: at("2024-04-30T10:00:00"), WindowEnd: at("2024-05-01T11:00:00")}},
		{[]string{"-u", "-1", "-r", "gpu,cpu", "--name", "a,b", "--partition=x"}, false, &phalanxv1.ListJobsRequest{Partitions: []string{"gpu", "cpu", "x"}, Names: []string{"a", "b"}, WindowStart: midnight, WindowEnd: thisSecond}},
	} {
		q, err := parseSacct(tc.args, "")
		if err == nil {
			err = q.resolve(testNow, time.UTC, func() (*user.User, error) {
				if tc.root {
					return &user.User{Username: "root", Uid: "0"}, nil
				}
				return &user.User{Username: "alice", Uid: "1000"}, nil
			})
		}
		tc.want.History = true
		if err != nil || !proto.Equal(q.req, tc.want) {
			t.Errorf("%q: %v, %v\nwant %v", tc.args, q.req, err, tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want SacctSelect
	}{
		{[]string{"-s", "CD,f,timeout,bf,rq,NF,oom,Deadline,s"}, SacctSelect{States: []string{"COMPLETED", "FAILED", "TIMEOUT", "BOOT_FAIL", "REQUEUED", "NODE_FAIL", "OUT_OF_MEMORY", "DEADLINE", "SUSPENDED"}, Start: testNow, End: thisSecond.AsTime()}},
		{[]string{"-s", "R", "-S", "2024-04-30T10:00", "-E", "2024-04-30T11:00"}, SacctSelect{States: []string{"RUNNING"}, Start: at("2024-04-30T10:00:00").AsTime(), End: at("2024-04-30T11:00:00").AsTime()}},
		{[]string{"-s", "CA,,F", "-j", "7"}, SacctSelect{States: []string{"CANCELLED", "FAILED"}, End: thisSecond.AsTime(), ByJob: true}},
	} {
		q, err := parseSacct(tc.args, "")
		if err == nil {
			err = q.resolve(testNow, time.UTC, func() (*user.User, error) { return &user.User{Username: "alice", Uid: "1000"}, nil })
		}
		if err != nil || !reflect.DeepEqual(q.view.Select, tc.want) {
			t.Errorf("%q: rows picked by %+v, %v; want %+v", tc.args, q.view.Select, err, tc.want)
		}
	}
}

func TestParseSlurmTime(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"2024-04-30", "2024-04-30T00:00:00"}, {"2024-04-30T13:45", "2024-04-30T13:45:00"},
		{"2024-4-3T01:02:03", "2024-04-03T01:02:03"}, {"2014-07-03-11:40", "2014-07-03T11:40:00"},
		// A time of day is its last occurrence: sacct looks back.
		{"14:30", "2024-04-30T14:30:00"}, {"9:05:06", "2024-05-01T09:05:06"},
		{"12am", "error"}, {"12:00am", "2024-05-01T00:00:00"}, {"1:15PM", "2024-04-30T13:15:00"},
		{"04/30", "2024-04-30T00:00:00"}, {"04/30/23-10:00", "2023-04-30T10:00:00"}, {"4.30.23", "2023-04-30T00:00:00"},
		{"0430", "2024-04-30T00:00:00"}, {"043023-08:00:01", "2023-04-30T08:00:01"},
		{"now", "2024-05-01T12:00:00"}, {"now-1hours", "2024-05-01T11:00:00"}, {"now+30", "2024-05-01T12:00:30"},
		{"NOW-2days", "2024-04-29T12:00:00"}, {"now-1week", "2024-04-24T12:00:00"}, {"now-90minutes", "2024-05-01T10:30:00"},
		{"today", "2024-05-01T00:00:00"}, {"midnight", "2024-05-01T00:00:00"}, {"noon", "2024-05-01T12:00:00"},
		{"teatime", "2024-04-30T16:00:00"}, {"fika", "2024-04-30T15:00:00"},
		{"yesterday", "error"}, {"2024-02-30", "error"}, {"25:00", "error"}, {"now-1fortnight", "error"}, {"", "error"},
	} {
		got, err := parseSlurmTime(tc.in, testNow, time.UTC)
		s := got.Format(timeLayout)
		if err != nil {
			s = "error"
		}
		if s != tc.want {
			t.Errorf("parseSlurmTime(%q) = %s (%v), want %s", tc.in, s, err, tc.want)
		}
	}
}

// TestParseSlurmTimeFarFromNow is the regression test for now±COUNT
// overflowing: now+9999999999999weeks was a time in the year 2000.
func TestParseSlurmTimeFarFromNow(t *testing.T) {
	for _, in := range []string{"now+9999999999999weeks", "now-99999999999999999999", "now+15300weeks"} {
		got, err := parseSlurmTime(in, testNow, time.UTC)
		if err == nil || !got.IsZero() || !strings.Contains(err.Error(), "more than 292 years from now") {
			t.Errorf("parseSlurmTime(%q) = %v, %v; want an error saying it is too far from now", in, got, err)
		}
	}
	got, err := parseSlurmTime("now-15000weeks", testNow, time.UTC)
	if want := testNow.Add(-15000 * 7 * 24 * time.Hour); err != nil || !got.Equal(want) {
		t.Fatalf("now-15000weeks = %v, %v; want %v", got, err, want)
	}
}

func TestSacctErrors(t *testing.T) {
	f, addr := startFake(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		// Slurm 22.05's sacct's words and exit status, checked live.
		{[]string{"sacct", "--bogus"}, "sacct: unrecognized option '--bogus'"},
		{[]string{"sacct", "-jx", "-Z"}, "sacct: invalid option -- 'Z'"},
		{[]string{"sacct", "-s", "XX"}, "sacct: fatal: unrecognized job state value 'XX'"},
		{[]string{"sacct", "-s", "CD, F"}, "sacct: fatal: unrecognized job state value ' F'"},
		{[]string{"sacct", "-s", "all"}, "sacct: fatal: unrecognized job state value 'all'"},
		{[]string{"sacct", "-s", "cd,CG"}, "sacct: fatal: job state CG is not supported / accounted"},
		{[]string{"sacct", "-s", "configuring"}, "sacct: fatal: job state configuring is not supported / accounted"},
		{[]string{"sacct", "-s", "SE"}, "sacct: fatal: job state SE is not supported / accounted"},
		{[]string{"sacct", "-S", "yesterday"}, `sacct: error: --starttime=yesterday: invalid time "yesterday": ` + errSlurmTime.Error()},
		{[]string{"sacct", "-E", "2024-13-01"}, `sacct: error: --endtime=2024-13-01: invalid time "2024-13-01": no such date or time of day (months run 1-12, days to the month's last, hours 0-23, minutes and seconds 0-59)`},
		{[]string{"sacct", "-S", "2024-05-02", "-E", "05/01"}, "sacct: error: Start time (2024-05-02T00:00:00) requested is after end time (2024-05-01T00:00:00)."},
		{[]string{"sacct", "-o", "jobid,bogus%20"}, `sacct: error: Invalid field requested: "bogus"`},
		{[]string{"sacct", "-o", "jobid,maxrss"}, "sacct: error: MaxRSS is a field of Slurm's that Phalanx does not record: it keeps no job steps, usage, energy, reservations, WCKeys or database IDs (sacct --helpformat lists the fields it has)"},
		{[]string{"sacct", "-j", "x"}, "sacct: fatal: Bad job/step specified: x"},
		{[]string{"sacct", "-j", "_7"}, "sacct: fatal: Bad job/step specified: _7"},
		{[]string{"sacct", "-j", "7.foo"}, "sacct: fatal: Bad job/step specified: 7.foo"},
		{[]string{"sacct", "-u", "nosuchuser"}, "sacct: error: Invalid user id: nosuchuser"},
		{[]string{"sacct", "--uid=bob,nosuchuser"}, "sacct: error: Invalid user id: nosuchuser"},
		{[]string{"sacct", "7", "-X", "8"}, "sacct: error: Unknown arguments:\nsacct: error:  7\nsacct: error:  8"},
	} {
		code, stdout, stderr := runOut(t, addr, tc.args...)
		if code != 1 || stdout != "" || stderr != tc.want+"\n" {
			t.Errorf("%q: code %d, stdout %q\nstderr %q\nwant   %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
	if len(f.lists) != 0 {
		t.Errorf("failing commands listed jobs: %v", f.lists)
	}
}

func TestSacctHelp(t *testing.T) {
	code, stdout, _ := runOut(t, "127.0.0.1:1", "sacct", "--help")
	if code != 0 || !strings.HasPrefix(stdout, "Usage: sacct [OPTIONS]\n") || !strings.Contains(stdout, "--allocations") || !strings.Contains(stdout, "now[{+|-}COUNT") {
		t.Errorf("--help: code %d, stdout:\n%s", code, stdout)
	}
	code, stdout, _ = runOut(t, "127.0.0.1:1", "sacct", "-e")
	// Slurm's layout, each name padded to 19, the last of a line too.
	if code != 0 || !strings.HasPrefix(stdout, "Account             AllocCPUS           AllocNodes          AllocTRES          \n") ||
		!strings.HasSuffix(stdout, "\nUID                 User                WorkDir            \n") {
		t.Errorf("--helpformat: code %d, stdout:\n%s", code, stdout)
	}
}

// pagedFake serves a fixed list of jobs two at a time, following page
// tokens as the controller gives them, and records every request.
type pagedFake struct {
	phalanxv1.UnimplementedControllerServiceServer
	mu    sync.Mutex
	jobs  []*phalanxv1.Job
	reqs  []*phalanxv1.ListJobsRequest
	stuck bool // answer page 3 for ever, as a broken server would
}

func (f *pagedFake) ListJobs(_ context.Context, req *phalanxv1.ListJobsRequest) (*phalanxv1.ListJobsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	after, _ := strconv.Atoi(req.PageToken)
	resp := &phalanxv1.ListJobsResponse{}
	for _, j := range f.jobs {
		if int(j.Id) > after && len(resp.Jobs) < 2 {
			resp.Jobs = append(resp.Jobs, j)
		}
	}
	if last := resp.Jobs[len(resp.Jobs)-1]; last.Id != f.jobs[len(f.jobs)-1].Id {
		resp.NextPageToken = fmt.Sprint(last.Id)
	}
	if f.stuck {
		resp.NextPageToken = "3"
	}
	return resp, nil
}

// TestListsFollowPages checks that squeue, scontrol show job and sacct
// print every page the controller gives, and that sacct asks for history.
func TestListsFollowPages(t *testing.T) {
	f := &pagedFake{jobs: parseObjects(t, sacctJobs).jobs}
	addr := serveFake(t, f)
	for _, tc := range []struct {
		args []string // args[0] is the program: phx, or a link named for the command
		each string   // printed once per job, once more for a header
		want int
	}{
		{[]string{"phx", "squeue", "-t", "all"}, "\n", 1 + 7},
		{[]string{"phx", "scontrol", "show", "job"}, "JobId=", 7},
		{[]string{"phx", "sacct", "-a", "-S", "2024-01-01", "-P"}, "\n", 1 + 7},
		{[]string{"/usr/local/bin/sacct", "-n", "-u", "bob"}, "\n", 7},
	} {
		f.mu.Lock()
		f.reqs = nil
		f.mu.Unlock()
		sys, stdout, stderr := testSystem(t, addr)
		if code := Run(context.Background(), sys, tc.args); code != 0 {
			t.Fatalf("%q: code %d, stderr %q", tc.args, code, stderr)
		}
		if n := strings.Count(stdout.String(), tc.each); n != tc.want || !strings.Contains(stdout.String(), "12345678901") {
			t.Errorf("%q printed %q %d times, want %d:\n%s", tc.args, tc.each, n, tc.want, stdout)
		}
		f.mu.Lock()
		if len(f.reqs) != 4 || f.reqs[3].PageToken != "12" {
			t.Errorf("%q: %d requests, the last for page %q; want 4, the last after job 12", tc.args, len(f.reqs), f.reqs[len(f.reqs)-1].PageToken)
		}
		if r := f.reqs[0]; strings.HasSuffix(tc.args[0], "sacct") || tc.args[1] == "sacct" {
			if !r.History || r.WindowEnd == nil {
				t.Errorf("%q asked for %v; want the history up to now", tc.args, r)
			}
		}
		f.mu.Unlock()
	}
}

// TestListsStopOnARepeatedPage: a server that hands out the same page
// token again would make a listing loop for ever; phx stops with an error.
func TestListsStopOnARepeatedPage(t *testing.T) {
	addr := serveFake(t, &pagedFake{jobs: parseObjects(t, sacctJobs).jobs, stuck: true})
	code, stdout, stderr := runOut(t, addr, "squeue")
	if code != 1 || stdout != "" || stderr != "squeue: error: the controller gave page \"3\" again: listing stopped\n" {
		t.Errorf("code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestSacctDuplicatesOption(t *testing.T) {
	for _, args := range [][]string{{"-D"}, {"--duplicates"}, {"-XD"}} {
		if q, err := parseSacct(args, ""); err != nil || !q.view.Duplicates {
			t.Errorf("%q: duplicates %v (%v), want every attempt", args, q != nil && q.view.Duplicates, err)
		}
	}
}

func TestSacctFormatOptions(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		env, want string
	}{
		{nil, "", ""},
		{nil, "jobid,user", "jobid,user"},
		{[]string{"-o", "jobid", "--format=user%20"}, "jobid,user", "jobid,user%20"},
		{[]string{"-b"}, "jobid,user", "JobID,State,ExitCode"},
		{[]string{"-b", "-o", "jobname"}, "", "jobname,JobID,State,ExitCode"},
	} {
		q, err := parseSacct(tc.args, tc.env)
		if err != nil || q.view.Format != tc.want {
			t.Errorf("%q with SACCT_FORMAT=%q: format %q (%v), want %q", tc.args, tc.env, q.view.Format, err, tc.want)
		}
	}
}

// A restarted job has a row per attempt with -D, the ended ones as they
// ended, each submitted when the one before ended (as Slurm records a
// requeued job anew), and only its newest without; a task of an array is
// ARRAYID_INDEX (JobIDRaw its own ID); GPUHours is the GPUs held times the
// time held.
func TestSacctAttemptsArraysAndGPUHours(t *testing.T) {
	for _, dup := range []bool{true, false} {
		jobs := parseObjects(t, `
job id=20 name=train user=alice part=gpu state=RUNNING submit=-3h start=-1h failed-on=gpu009 attempt=1 nodes=gpu[001-002] gpus=8
job id=41 array-job=40 array-task=3 name=sweep user=bob part=gpu state=COMPLETED submit=-2h start=-2h end=-90m nodes=gpu005 gpus=2
`).jobs
		got, err := FormatSacct(jobs, SacctView{Parsable: true, Format: "JobID,JobIDRaw,Restarts,State,NodeList,GPUHours,Submit", Now: testNow, Duplicates: dup})
		if err != nil {
			t.Fatal(err)
		}
		want := `JobID|JobIDRaw|Restarts|State|NodeList|GPUHours|Submit
20|20|0|NODE_FAIL|gpu009|0.00|2024-05-01T09:00:00
40_3|41|0|COMPLETED|gpu005|1.00|2024-05-01T10:00:00
20|20|1|RUNNING|gpu[001-002]|16.00|2024-05-01T11:00:00
`
		if !dup {
			want = strings.Replace(want, "20|20|0|NODE_FAIL|gpu009|0.00|2024-05-01T09:00:00\n", "", 1)
		}
		if got != want {
			t.Errorf("-D %v: got:\n%s\nwant:\n%s", dup, got, want)
		}
	}
}

// requeuedJob was requeued twice: attempt 0 ran 11:00-11:20 and failed
// with its node, attempt 1 ran 11:25-11:47:45 until scontrol requeue, and
// attempt 2 runs since 11:48 (testNow is 12:00). Job 21 ran 11:30-11:45.
func requeuedJobs() []*phalanxv1.Job {
	clock := func(s string) *timestamppb.Timestamp { return at("2024-05-01T" + s) }
	spec := &phalanxv1.JobSpec{Name: "train", User: "alice", Partition: "gpu"}
	return []*phalanxv1.Job{{
		Id: 20, Spec: spec, State: "RUNNING", Attempt: 2, SubmitTime: clock("11:00:00"), StartTime: clock("11:48:00"),
		Attempts: []*phalanxv1.Attempt{
			{Attempt: 0, StartTime: clock("11:00:00"), EndTime: clock("11:20:00"), State: "NODE_FAIL"},
			{Attempt: 1, StartTime: clock("11:25:00"), EndTime: clock("11:47:45"), State: "REQUEUED"},
			{Attempt: 2, StartTime: clock("11:48:00")},
		},
	}, {
		Id: 21, Spec: spec, State: "COMPLETED", SubmitTime: clock("11:30:00"), StartTime: clock("11:30:00"), EndTime: clock("11:45:00"),
		Attempts: []*phalanxv1.Attempt{{Attempt: 0, StartTime: clock("11:30:00"), EndTime: clock("11:45:00"), State: "COMPLETED"}},
	}}
}

// Each row, an attempt of a job, is picked by its own state and times, as
// Slurm picks its records: -s R now is the running attempt alone, -s NF
// and -s RQ the attempts that ended so, a window the attempts that were in
// the queue or ran in it.
func TestSacctPicksRowsByTheirOwnStateAndTimes(t *testing.T) {
	clock := func(s string) time.Time { return at("2024-05-01T" + s).AsTime() }
	for _, tc := range []struct {
		name string
		sel  SacctSelect
		want string
	}{
		{"everything", SacctSelect{}, "20|0|NODE_FAIL 20|1|REQUEUED 21|0|COMPLETED 20|2|RUNNING"},
		{"-s R, now", SacctSelect{States: []string{"RUNNING"}, Start: testNow, End: testNow}, "20|2|RUNNING"},
		{"-s NF,RQ", SacctSelect{States: []string{"NODE_FAIL", "REQUEUED"}, Start: clock("11:00:00"), End: testNow}, "20|0|NODE_FAIL 20|1|REQUEUED"},
		{"-s CD", SacctSelect{States: []string{"COMPLETED"}, Start: clock("11:00:00"), End: testNow}, "21|0|COMPLETED"},
		{"-s NF, ended before the window", SacctSelect{States: []string{"NODE_FAIL"}, Start: clock("11:21:00"), End: testNow}, ""},
		{"-s R, when attempt 0 ran", SacctSelect{States: []string{"RUNNING"}, Start: clock("11:10:00"), End: clock("11:15:00")}, "20|0|NODE_FAIL"},
		{"-s PD, between attempts 0 and 1", SacctSelect{States: []string{"PENDING"}, Start: clock("11:21:00"), End: clock("11:24:00")}, "20|1|REQUEUED"},
		{"-S 11:47 -E 11:47:30", SacctSelect{Start: clock("11:47:00"), End: clock("11:47:30")}, "20|1|REQUEUED"},
		{"-S 11:47:50 -E 11:47:55", SacctSelect{Start: clock("11:47:50"), End: clock("11:47:55")}, "20|2|RUNNING"},
		{"-S 11:46", SacctSelect{Start: clock("11:46:00"), End: testNow}, "20|1|REQUEUED 20|2|RUNNING"},
		// The bounds as in Slurm's queries: running after the start (not
		// ended at it), eligible before the end (not at it), an end state
		// reached in the window, both bounds included; a window of one
		// instant is a second long.
		{"-s R, ended at the start", SacctSelect{States: []string{"RUNNING"}, Start: clock("11:20:00"), End: clock("11:21:00")}, ""},
		{"-s R, started at the end", SacctSelect{States: []string{"RUNNING"}, Start: clock("11:21:00"), End: clock("11:25:00")}, ""},
		{"-s R, one instant", SacctSelect{States: []string{"RUNNING"}, Start: clock("11:48:00"), End: clock("11:48:00")}, "20|2|RUNNING"},
		{"-s NF, one instant", SacctSelect{States: []string{"NODE_FAIL"}, Start: clock("11:20:00"), End: clock("11:20:00")}, "20|0|NODE_FAIL"},
		{"-s NF, ended at the end", SacctSelect{States: []string{"NODE_FAIL"}, Start: clock("11:10:00"), End: clock("11:20:00")}, "20|0|NODE_FAIL"},
		{"-S 11:00 -E 11:00", SacctSelect{Start: clock("11:00:00"), End: clock("11:00:00")}, "20|0|NODE_FAIL"},
		{"-S 11:45 -E 11:30: job 21, eligible at the end, is not", SacctSelect{Start: clock("11:45:00"), End: clock("11:30:00")}, "20|1|REQUEUED"},
	} {
		got, err := FormatSacct(requeuedJobs(), SacctView{Format: "JobID,Restarts,State", Parsable: true, NoHeader: true, Now: testNow, Select: tc.sel, Duplicates: true})
		if got = strings.TrimSpace(strings.ReplaceAll(got, "\n", " ")); err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// Without -D a job is one row, its newest among those selected, as
// Slurm's sacct shows a job requeued: -s RQ finds the attempt requeued.
func TestSacctNewestRowOfEachJob(t *testing.T) {
	clock := func(s string) time.Time { return at("2024-05-01T" + s).AsTime() }
	for _, tc := range []struct {
		name string
		sel  SacctSelect
		want string
	}{
		{"everything", SacctSelect{}, "21|0|COMPLETED 20|2|RUNNING"},
		{"-s RQ", SacctSelect{States: []string{"REQUEUED"}, Start: clock("11:00:00"), End: testNow}, "20|1|REQUEUED"},
		{"-s NF,RQ", SacctSelect{States: []string{"NODE_FAIL", "REQUEUED"}, Start: clock("11:00:00"), End: testNow}, "20|1|REQUEUED"},
		{"-S 11:10 -E 11:20", SacctSelect{Start: clock("11:10:00"), End: clock("11:20:00")}, "20|0|NODE_FAIL"},
	} {
		got, err := FormatSacct(requeuedJobs(), SacctView{Format: "JobID,Restarts,State", Parsable: true, NoHeader: true, Now: testNow, Select: tc.sel})
		if got = strings.TrimSpace(strings.ReplaceAll(got, "\n", " ")); err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// Each attempt's row shows how that attempt was started; a requeued job
// waiting for its next attempt shows nothing until it starts.
func TestSacctFlagsPerAttempt(t *testing.T) {
	jobs := requeuedJobs()
	for i, by := range []string{"main", "backfill", "main"} {
		jobs[0].Attempts[i].PlacedBy = by
	}
	jobs[1].Attempts[0].PlacedBy = "backfill"
	clock := func(s string) *timestamppb.Timestamp { return at("2024-05-01T" + s) }
	jobs = append(jobs, &phalanxv1.Job{Id: 22, Spec: jobs[0].Spec, State: "PENDING", Reason: "Requeued", Attempt: 1, SubmitTime: clock("11:00:00"),
		Attempts: []*phalanxv1.Attempt{{Attempt: 0, StartTime: clock("11:00:00"), EndTime: clock("11:30:00"), State: "REQUEUED", PlacedBy: "backfill"}}})
	got, err := FormatSacct(jobs, SacctView{Format: "JobID,Restarts,State,Flags", Parsable: true, NoHeader: true, Now: testNow, Duplicates: true})
	want := "20|0|NODE_FAIL|SchedMain\n22|0|REQUEUED|SchedBackfill\n20|1|REQUEUED|SchedBackfill\n21|0|COMPLETED|SchedBackfill\n" +
		"22|1|PENDING|\n20|2|RUNNING|SchedMain\n"
	if err != nil || got != want {
		t.Errorf("got:\n%s(%v)\nwant:\n%s", got, err, want)
	}
}

// sacct -j ARRAYID_TASKID prints that task; -j ARRAYID every task.
func TestSacctJobsByArrayTask(t *testing.T) {
	task := func(id uint64, idx int32) *phalanxv1.Job {
		return &phalanxv1.Job{Id: id, State: "COMPLETED", SubmitTime: at("2024-05-01T11:00:00"), ArrayTask: &phalanxv1.ArrayTask{ArrayJobId: 9, TaskId: idx},
			Spec: &phalanxv1.JobSpec{Name: "sweep", User: "alice"}}
	}
	// The fake answers every job whatever the IDs asked, as the controller
	// answers every task of array 9 for -j 9.
	addr := serveFake(t, &pagedFake{jobs: []*phalanxv1.Job{task(9, 1), task(10, 3), task(11, 7),
		{Id: 12, State: "PENDING", SubmitTime: at("2024-05-01T11:00:00"), Spec: &phalanxv1.JobSpec{User: "alice"}}}})
	for args, want := range map[string]string{
		"9_7":     "9_7\n",
		"9_1,9_7": "9_1\n9_7\n",
		"9":       "9_1\n9_3\n9_7\n",
		"9_3,12":  "12\n9_3\n", // submitted together: an array's tasks after other jobs
		"9_[1-3]": "9_1\n9_3\n",
		"9_4":     "",
	} {
		code, stdout, stderr := runOut(t, addr, "sacct", "-j", args, "-n", "-P", "-o", "JobID")
		if code != 0 || stdout != want {
			t.Errorf("sacct -j %s: code %d, stdout %q, stderr %q; want %q", args, code, stdout, stderr, want)
		}
	}
}

// -u takes names the system knows, and UIDs: a known one stands for its
// user's name, an unknown one for itself.
func TestSacctUsers(t *testing.T) {
	lookupUserID = func(uid string) (*user.User, error) {
		if uid == "1001" {
			return &user.User{Username: "bob", Uid: uid}, nil
		}
		return nil, user.UnknownUserIdError(0)
	}
	t.Cleanup(func() { lookupUserID = user.LookupId })
	sys, _, _ := testSystem(t, "127.0.0.1:1")
	for args, want := range map[string][]string{
		"alice,1001": {"alice", "bob"},
		"4242":       {"4242"},
	} {
		q, err := parseSacct([]string{"-u", args}, "")
		if err == nil {
			err = q.checkUsers(sys.LookupUser)
		}
		if err != nil || !slices.Equal(q.req.Users, want) {
			t.Errorf("-u %s: users %q, %v; want %q", args, q.req.GetUsers(), err, want)
		}
	}
}

// An array's pending tasks are one row, as Slurm's sacct shows them:
// ARRAYID_[LIST%THROTTLE]; its started tasks a row each.
func TestSacctFoldsPendingArrayTasks(t *testing.T) {
	jobs := parseObjects(t, `
job id=40 name=a user=u part=gpu state=RUNNING submit=-1h start=-30m nodes=n1 array-job=40 array-task=0 throttle=2
job id=41 name=a user=u part=gpu state=PENDING submit=-1h array-job=40 array-task=2 throttle=2
job id=42 name=a user=u part=gpu state=PENDING submit=-1h array-job=40 array-task=3 throttle=2
job id=43 name=a user=u part=gpu state=PENDING submit=-1h array-job=40 array-task=5 throttle=2
job id=50 name=b user=u part=gpu state=PENDING submit=-1h
`).jobs
	got, err := FormatSacct(jobs, SacctView{Parsable: true, NoHeader: true, Format: "JobID,State", Now: testNow})
	if want := "50|PENDING\n40_0|RUNNING\n40_[2-3,5%2]|PENDING\n"; err != nil || got != want {
		t.Errorf("got %q (%v); want %q", got, err, want)
	}
}

// A job's eligible time is its record's: its --begin time when later than
// its submission; none while it is held or waits on a dependency, nor for
// one cancelled held. Such a job is in no window, but -j names it. As in
// Slurm 22.05's records (checked live): Reserved runs from the eligible
// time (INVALID before it comes or once ended without starting, 00:00:00
// without one); a job never started has Start None once ended, Partition_Limit
// for a limit unless it has its own, and the CPUs it asks for as AllocCPUS;
// Reason is None once started or ended.
func TestSacctEligible(t *testing.T) {
	clock := func(s string) *timestamppb.Timestamp { return at("2024-05-01T" + s) }
	spec := func(hold bool, begin string) *phalanxv1.JobSpec {
		s := &phalanxv1.JobSpec{Name: "j", User: "alice", Hold: hold, CpusPerNode: 2}
		if begin != "" {
			s.BeginTime = clock(begin)
		}
		return s
	}
	jobs := func() []*phalanxv1.Job {
		return []*phalanxv1.Job{
			{Id: 1, Spec: spec(true, ""), State: "PENDING", Reason: "JobHeldUser", SubmitTime: clock("11:00:00")},
			{Id: 2, Spec: spec(false, ""), State: "PENDING", Reason: "Dependency", SubmitTime: clock("11:00:00")},
			{Id: 3, Spec: spec(false, "13:00:00"), State: "PENDING", Reason: "BeginTime", SubmitTime: clock("11:00:00")},
			{Id: 4, Spec: spec(false, "11:30:00"), State: "COMPLETED", SubmitTime: clock("11:00:00"), StartTime: clock("11:31:00"), EndTime: clock("11:32:00"),
				Alloc: []*phalanxv1.NodeAlloc{{Node: "n1", Cpus: 2}}, TimeLimitSeconds: 600},
			{Id: 5, Spec: spec(true, ""), State: "CANCELLED", SubmitTime: clock("11:00:00"), EndTime: clock("11:10:00")},
			{Id: 6, Spec: spec(false, ""), State: "PENDING", Reason: "Resources", SubmitTime: clock("11:00:00")},
			{Id: 7, Spec: spec(false, ""), State: "CANCELLED", SubmitTime: clock("11:00:00"), EndTime: clock("11:10:00")},
		}
	}
	format := "JobID,State,Eligible,Reserved,Start,AllocCPUS,Timelimit,Reason"
	got, err := FormatSacct(jobs(), SacctView{Format: format, Parsable: true, NoHeader: true, Now: testNow})
	want := `1|PENDING|Unknown|00:00:00|Unknown|2|Partition_Limit|JobHeldUser
2|PENDING|Unknown|00:00:00|Unknown|2|Partition_Limit|Dependency
3|PENDING|2024-05-01T13:00:00|INVALID|Unknown|2|Partition_Limit|BeginTime
4|COMPLETED|2024-05-01T11:30:00|00:01:00|2024-05-01T11:31:00|2|00:10:00|None
5|CANCELLED|Unknown|00:00:00|None|2|Partition_Limit|None
6|PENDING|2024-05-01T11:00:00|01:00:00|Unknown|2|Partition_Limit|Resources
7|CANCELLED|2024-05-01T11:00:00|INVALID|None|2|Partition_Limit|None
`
	if err != nil || got != want {
		t.Errorf("got:\n%s(%v)\nwant:\n%s", got, err, want)
	}
	window := SacctSelect{Start: at("2024-05-01T00:00:00").AsTime(), End: testNow}
	got, _ = FormatSacct(jobs(), SacctView{Format: "JobID", Parsable: true, NoHeader: true, Now: testNow, Select: window})
	if want := "4\n6\n7\n"; got != want {
		t.Errorf("today's window: %q, want %q", got, want)
	}
	window.ByJob, window.Start = true, time.Time{}
	got, _ = FormatSacct(jobs(), SacctView{Format: "JobID", Parsable: true, NoHeader: true, Now: testNow, Select: window})
	if want := "1\n2\n3\n4\n5\n6\n7\n"; got != want {
		t.Errorf("-j: %q, want %q", got, want)
	}
}

// A job cancelled while running shows the signal that ended it (Slurm
// shows it on the .batch step, which Phalanx does not have: the issue asks
// that a cancelled job not be 0:0); a job record's NTasks is empty (a
// step's); ReqMem and the TRES are the job's in all, billing its CPUs.
func TestSacctRecordValues(t *testing.T) {
	jobs := parseObjects(t, `
job id=10 name=c user=d part=gpu state=CANCELLED exit=143:15 submit=-5m start=-4m end=-1m nodes=gpu[001-002] cpus=4 mem=1024 gpus=2
`).jobs
	got, err := FormatSacct(jobs, SacctView{Format: "JobID,State,ExitCode,DerivedExitCode,NTasks,ReqMem,AllocTRES,ReqTRES", Parsable: true, Now: testNow})
	want := "JobID|State|ExitCode|DerivedExitCode|NTasks|ReqMem|AllocTRES|ReqTRES\n" +
		"10|CANCELLED|0:15|0:15||2G|billing=8,cpu=8,gres/gpu=4,mem=2G,node=2|billing=8,cpu=8,gres/gpu=4,mem=2G,node=2\n"
	if err != nil || got != want {
		t.Errorf("got:\n%s(%v)\nwant:\n%s", got, err, want)
	}
	// ReqMem is text to Slurm: cut to its width, with a +.
	if got, _ := FormatSacct(jobs, SacctView{Format: "ReqMem%1", NoHeader: true, Now: testNow}); got != "+ \n" {
		t.Errorf("ReqMem%%1: %q, want %q", got, "+ \n")
	}
}

// -j ID.STEP names a step: phx records none, so it names the job's row
// under -X (as Slurm's sacct -X shows the job of a step named) and
// nothing without.
func TestSacctJobSteps(t *testing.T) {
	addr := serveFake(t, &pagedFake{jobs: []*phalanxv1.Job{
		{Id: 7, State: "COMPLETED", SubmitTime: at("2024-05-01T11:00:00"), Spec: &phalanxv1.JobSpec{User: "alice"}},
		{Id: 8, State: "COMPLETED", SubmitTime: at("2024-05-01T11:00:00"), Spec: &phalanxv1.JobSpec{User: "alice"}}}})
	for args, want := range map[string]string{
		"-X -j 7.batch":      "7\n",
		"-j 7.batch":         "",
		"-j 7.0,8":           "8\n",
		"-X -j 7.extern,8.3": "7\n8\n",
	} {
		code, stdout, stderr := runOut(t, addr, append([]string{"sacct", "-n", "-P", "-o", "JobID"}, strings.Fields(args)...)...)
		if code != 0 || stdout != want {
			t.Errorf("sacct %s: code %d, stdout %q, stderr %q; want %q", args, code, stdout, stderr, want)
		}
	}
}
