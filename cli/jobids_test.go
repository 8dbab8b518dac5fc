package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

func TestParseJobRefs(t *testing.T) {
	refs, err := parseJobRefs("87", "87_2,87_[1-3,7], 9_[0-8:4]", "88_5-6")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(refs); got != "[87 87_2 87_[1-3,7] 9_[0,4,8] 88_[5-6]]" {
		t.Errorf("refs %s", got)
	}
	if got := refIDs(refs); !slices.Equal(got, []uint64{87, 9, 88}) {
		t.Errorf("IDs to list %v; want each once, in order", got)
	}
	for _, bad := range []string{"x", "0", "40_x", "x_1", "40_", "40_[1-3%2]", "40_[1-3", "40_1]", "40_[[1]]", "40_-1", "40_4000001"} {
		if _, err := parseJobRefs(bad); err == nil || !strings.Contains(err.Error(), "invalid job id") {
			t.Errorf("%q: %v; want invalid job id", bad, err)
		}
	}
	if got := splitJobList(" 1_[1,3],2,,3_[4-5] "); !slices.Equal(got, []string{"1_[1,3]", "2", "3_[4-5]"}) {
		t.Errorf("split %q", got)
	}
	if _, err := parseJobRefs("87.1"); err == nil {
		t.Error("87.1: a step, which only scancel names")
	}
}

// scancel names steps too, JOBID.STEP, as Slurm's does.
func TestParseStepRefs(t *testing.T) {
	refs, err := parseStepRefs("87.0,88", "9_2.3", "40_[1-2].1")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(refs); got != "[87.0 88 9_2.3 40_[1-2].1]" {
		t.Errorf("refs %s", got)
	}
	for _, bad := range []string{"87.", "87.batch", "87.-1", "87.4294967296", "x.1", "87.1.2"} {
		if _, err := parseStepRefs(bad); err == nil || !strings.Contains(err.Error(), "invalid job id") {
			t.Errorf("%q: %v; want invalid job id", bad, err)
		}
	}
}

// queueFake is a controller holding two arrays and a job: array 87, tasks
// 0-5 (jobs 87-92), task 0 running; array 20, tasks 1, 3, 5 (jobs 20-22,
// pending); job 30, pending; and array 40, tasks 0-1, ended. Like the
// controllers it lists an array's tasks for the array's ID, and changes
// one job per UpdateJob; it records each change asked.
type queueFake struct {
	phalanxv1.UnimplementedControllerServiceServer
	mu      sync.Mutex
	jobs    []*phalanxv1.Job
	changes []string
	cancels []*phalanxv1.CancelJobRequest
}

func newQueueFake() *queueFake {
	f := &queueFake{}
	task := func(id, base uint64, idx int32, state string, count int32) {
		f.jobs = append(f.jobs, &phalanxv1.Job{Id: id, State: state, Spec: &phalanxv1.JobSpec{Name: "sweep"},
			ArrayTask: &phalanxv1.ArrayTask{ArrayJobId: base, TaskId: idx, Count: count}})
	}
	for i := range uint64(6) {
		task(87+i, 87, int32(i), map[bool]string{true: "RUNNING", false: "PENDING"}[i == 0], 6)
	}
	for i, idx := range []int32{1, 3, 5} {
		task(20+uint64(i), 20, idx, "PENDING", 3)
	}
	f.jobs = append(f.jobs, &phalanxv1.Job{Id: 30, State: "PENDING", Spec: &phalanxv1.JobSpec{Name: "one"}})
	task(40, 40, 0, "COMPLETED", 2)
	task(41, 40, 1, "COMPLETED", 2)
	return f
}

func (f *queueFake) job(id uint64) *phalanxv1.Job {
	for _, j := range f.jobs {
		if j.Id == id {
			return j
		}
	}
	return nil
}

func (f *queueFake) ListJobs(_ context.Context, req *phalanxv1.ListJobsRequest) (*phalanxv1.ListJobsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := &phalanxv1.ListJobsResponse{}
	for _, j := range f.jobs {
		if len(req.JobIds) == 0 || slices.Contains(req.JobIds, j.Id) || slices.Contains(req.JobIds, j.GetArrayTask().GetArrayJobId()) {
			out.Jobs = append(out.Jobs, j)
		}
	}
	return out, nil
}

func (f *queueFake) GetJob(_ context.Context, req *phalanxv1.GetJobRequest) (*phalanxv1.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if j := f.job(req.JobId); j != nil {
		return j, nil
	}
	return nil, status.Errorf(codes.NotFound, "Invalid job id specified: %d", req.JobId)
}

// change records what is asked of job id, refused as the controllers
// would: an unknown job, one that has ended, or one in the wrong state.
func (f *queueFake) change(what string, id uint64, wantState string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	j := f.job(id)
	switch {
	case j == nil:
		return status.Errorf(codes.NotFound, "Invalid job id specified: %d", id)
	case j.State == "COMPLETED":
		return status.Errorf(codes.InvalidArgument, "Job has already finished: job %d ended COMPLETED, there is nothing to update", id)
	case wantState != "" && j.State != wantState:
		return status.Errorf(codes.InvalidArgument, "job %d is %s", id, j.State)
	}
	f.changes = append(f.changes, fmt.Sprintf("%s %d", what, id))
	return nil
}

func (f *queueFake) UpdateJob(_ context.Context, req *phalanxv1.UpdateJobRequest) (*phalanxv1.UpdateJobResponse, error) {
	what, state := "update", ""
	if req.Hold != phalanxv1.HoldRequest_HOLD_REQUEST_UNSPECIFIED {
		what, state = strings.ToLower(strings.TrimPrefix(req.Hold.String(), "HOLD_REQUEST_")), "PENDING"
	}
	return &phalanxv1.UpdateJobResponse{}, f.change(what, req.JobId, state)
}

func (f *queueFake) RequeueJob(_ context.Context, req *phalanxv1.RequeueJobRequest) (*phalanxv1.RequeueJobResponse, error) {
	for _, id := range req.JobIds {
		if err := f.change("requeue", id, "RUNNING"); err != nil {
			return nil, err
		}
	}
	return &phalanxv1.RequeueJobResponse{Requeued: req.JobIds}, nil
}

func (f *queueFake) TopJobs(_ context.Context, req *phalanxv1.TopJobsRequest) (*phalanxv1.TopJobsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range req.JobIds { // refused as the controllers would
		switch j := f.job(id); {
		case j == nil:
			return nil, status.Errorf(codes.NotFound, "Invalid job id specified: %d", id)
		case j.Reason == "JobHeldUser":
			return nil, status.Errorf(codes.InvalidArgument, "Job is in held state, pending scheduler release for job %d", id)
		}
	}
	f.changes = append(f.changes, fmt.Sprint("top ", req.JobIds))
	return &phalanxv1.TopJobsResponse{}, nil
}

// scontrol top words a refusal of one job as Slurm's: "... for job N".
func TestTopRefusalsAsSlurm(t *testing.T) {
	f := newQueueFake()
	f.jobs = append(f.jobs, &phalanxv1.Job{Id: 31, State: "PENDING", Reason: "JobHeldUser", Spec: &phalanxv1.JobSpec{Name: "held"}})
	addr := serveFake(t, f)
	for _, tc := range []struct{ id, want string }{
		{"9999", "Invalid job id specified for job 9999\n"},
		{"31", "Job is in held state, pending scheduler release for job 31\n"},
	} {
		if code, _, stderr := runOut(t, addr, "scontrol", "top", tc.id); code != 1 || stderr != tc.want {
			t.Errorf("scontrol top %s: exit %d, stderr %q; want 1, %q", tc.id, code, stderr, tc.want)
		}
	}
}

func (f *queueFake) CancelJob(_ context.Context, req *phalanxv1.CancelJobRequest) (*phalanxv1.CancelJobResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels = append(f.cancels, req)
	for _, id := range req.JobIds {
		if f.job(id) == nil {
			return nil, status.Errorf(codes.NotFound, "Invalid job id specified: %d", id)
		}
	}
	return &phalanxv1.CancelJobResponse{}, nil
}

// takeChanges returns the changes asked since the last call.
func (f *queueFake) takeChanges() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.changes
	f.changes = nil
	return out
}

// scontrol's job commands take Slurm's job IDs: an array's ID acts on its
// tasks (hold and release: the pending ones; requeue: the running ones;
// update: all in the queue), ARRAYID_TASKID and ARRAYID_[LIST] on those
// tasks, by their own job IDs; a task the array does not have is an error
// line, and the others are still changed.
func TestScontrolArrayIDs(t *testing.T) {
	f := newQueueFake()
	addr := serveFake(t, f)
	for _, tc := range []struct {
		args    string
		changes string
		stderr  string
	}{
		{"release 87", "release 88,release 89,release 90,release 91,release 92", ""},
		{"hold 87_2 87_[4-5],30", "hold 89,hold 91,hold 92,hold 30", ""},
		{"uhold 20_3", "user_hold 21", ""},
		{"hold 87_0", "", "scontrol: error: hold job 87_0: job 87 is RUNNING\n"},
		{"release 20_[1-5] 9999", "release 20,release 21,release 22",
			"Invalid job id specified for job 20_[2,4]\nInvalid job id specified for job 9999\n"}, // as Slurm's scontrol
		{"hold 40", "", "Job has already finished for job 40\n"}, // Slurm's words
		{"requeue 87", "requeue 87", ""},
		{"requeue 20_1,87_0", "requeue 87", "scontrol: error: requeue job 20_1: job 20 is PENDING\n"},
		{"top 87 20_5", "top [88 89 90 91 92 22]", ""},
		{"top 9_7", "", "Invalid job id specified for job 9_7\n"},
		{"update JobId=87_3 Nice=5", "update 90", ""},
		{"update JobId=87 TimeLimit=10", "update 87,update 88,update 89,update 90,update 91,update 92", ""},
		{"update JobId=20_7 Nice=1", "", "Invalid job id specified for job 20_7\n"},
	} {
		code, _, stderr := runOut(t, addr, append([]string{"scontrol"}, strings.Fields(tc.args)...)...)
		if got := strings.Join(f.takeChanges(), ","); got != tc.changes || stderr != tc.stderr || (code == 0) != (tc.stderr == "") {
			t.Errorf("scontrol %s: changed %q, code %d, stderr %q\nwant changes %q, stderr %q", tc.args, got, code, stderr, tc.changes, tc.stderr)
		}
	}
}

// scontrol show job and squeue -j take ARRAYID_TASKID: the task, whatever
// its own job ID.
func TestShowAndListArrayTasks(t *testing.T) {
	addr := serveFake(t, newQueueFake())
	_, stdout, stderr := runOut(t, addr, "scontrol", "show", "job", "20_3")
	if !strings.HasPrefix(stdout, "JobId=21 ArrayJobId=20 ArrayTaskId=3 ") || strings.Count(stdout, "JobId=") != 2 {
		t.Errorf("scontrol show job 20_3:\n%s%s", stdout, stderr)
	}
	for _, bad := range []string{"20_7", "9_7"} {
		if code, _, stderr := runOut(t, addr, "scontrol", "show", "job", bad); code != 1 || stderr != "slurm_load_jobs error: Invalid job id specified\n" {
			t.Errorf("scontrol show job %s: code %d, %q", bad, code, stderr)
		}
	}
	// An ID that does not read as one, or a list: Slurm 22.05's words
	// for it (scontrol show job 12_abc, 1a, 5,999).
	for _, bad := range []string{"20_x", "abc", "1a", "20,30"} {
		if code, stdout, stderr := runOut(t, addr, "scontrol", "show", "job", bad); code != 1 || stdout != "" || stderr != "scontrol_print_job error: Invalid job id specified\n" {
			t.Errorf("scontrol show job %s: code %d, stdout %q, stderr %q", bad, code, stdout, stderr)
		}
	}
	for args, want := range map[string]string{
		"-j 20_3":           "20_3\n",
		"-j 87_[1-2],20_5":  "87_[1-2]\n20_5\n", // pending tasks folded, as always; without start or priority, newest first (squeue's order)
		"-j 87_0,30 -t all": "30\n87_0\n",
		"-j 87_3":           "87_3\n",                               // a pending task named alone, as Slurm's
		"-r -j 87":          "87_1\n87_2\n87_3\n87_4\n87_5\n87_0\n", // PD before R
		"-j 40":             "",                                     // ended: listed only with -t, as by Slurm's squeue
		"-j 40_1,30":        "30\n",
		"-j 40 -t all":      "40_1\n40_0\n",
	} {
		code, stdout, stderr := runOut(t, addr, append([]string{"squeue", "-h", "-o", "%i"}, strings.Fields(args)...)...)
		if code != 0 || stdout != want {
			t.Errorf("squeue %s: code %d, stdout %q, stderr %q; want %q", args, code, stdout, stderr, want)
		}
	}
	if code, _, stderr := runOut(t, addr, "squeue", "-j", "20_7"); code != 1 || stderr != "slurm_load_jobs error: Invalid job id specified\n" {
		t.Errorf("squeue -j 20_7: code %d, %q", code, stderr)
	}
	// A list none of which exists is an empty table, as Slurm 22.05's
	// squeue prints it (squeue -j 999,998): only one job is an error.
	if code, stdout, stderr := runOut(t, addr, "squeue", "-j", "9999,20_7"); code != 0 || !strings.HasPrefix(stdout, "             JOBID PARTITION") || strings.Count(stdout, "\n") != 1 || stderr != "" {
		t.Errorf("squeue -j 9999,20_7: code %d, stdout %q, stderr %q; want 0 and the header alone", code, stdout, stderr)
	}
}

// scancel cancels every valid job of its list and, as Slurm 22.05's,
// passes over the invalid ones in silence with exit 0; -v reports each,
// task IDs included (the tasks an array does not have are named, the
// others cancelled), exit 0 still; with --signal each is an error.
func TestScancelReportsEachInvalidID(t *testing.T) {
	args := []string{"20_3", "9_7", "9999", "20_[1-5]", "30,87"}
	if code, stdout, stderr := runOut(t, serveFake(t, newQueueFake()), append([]string{"scancel"}, args...)...); code != 0 || stdout != "" || stderr != "" {
		t.Errorf("without -v: code %d, stdout %q, stderr %q; want 0 and nothing", code, stdout, stderr)
	}
	errs := "scancel: error: Kill job error on job id 9_7: Invalid job id specified\n" +
		"scancel: error: Kill job error on job id 9999: Invalid job id specified\n" +
		"scancel: error: Kill job error on job id 20_[2,4]: Invalid job id specified\n"
	if code, _, stderr := runOut(t, serveFake(t, newQueueFake()), "scancel", "-s", "USR1", "9999"); code != 1 || stderr != "scancel: error: Kill job error on job id 9999: Invalid job id specified\n" {
		t.Errorf("-s USR1 9999: code %d, stderr %q; want 1 and the error", code, stderr)
	}
	f := newQueueFake()
	addr := serveFake(t, f)
	code, _, stderr := runOut(t, addr, append([]string{"scancel", "-v"}, args...)...)
	want := "scancel: Terminating job 20_3\nscancel: Terminating job 9_7\nscancel: Terminating job 9999\n" +
		"scancel: Terminating job 20_[1-5]\nscancel: Terminating job 30\nscancel: Terminating job 87\n" + errs
	if code != 0 || stderr != want {
		t.Errorf("-v: code %d, stderr %q; want 0, %q", code, stderr, want)
	}
	var sent []string
	for _, r := range f.cancels {
		if len(r.RequestId) != 32 {
			t.Errorf("cancel %v: no request ID of its own", r)
		}
		for _, at := range r.ArrayTasks {
			sent = append(sent, taskSetName(at.ArrayJobId, at.TaskIds))
		}
		sent = append(sent, fmt.Sprint(r.JobIds))
	}
	if got := strings.Join(sent, " "); got != "20_3 [] [9999] 20_[1,3,5] [] [30] [87]" {
		t.Errorf("sent %s", got)
	}
}

// A job ID or a hostlist that does not parse is one line that says how to
// write one, whichever command reads it: squeue -j abc said only `invalid
// job id "abc"`, sinfo -n and scontrol update NodeName= only the hostlist's
// fault.
func TestBadIDsAndHostlistsSayHowToWriteThem(t *testing.T) {
	addr := closedAddr(t) // refused before any call
	for _, tc := range []struct{ args, want string }{
		{"squeue -j abc", `squeue: error: invalid job id "abc": write JOBID (a number), ARRAYID_TASKID or ARRAYID_[LIST]`},
		{"scancel abc", `scancel: error: invalid job id "abc": write JOBID (a number), ARRAYID_TASKID or ARRAYID_[LIST]`},
		{"logs x", `logs: error: invalid job id "x": write JOBID or ARRAYID_INDEX`},
		{"sinfo -n gpu[2-1]", `sinfo: error: --nodes=gpu[2-1]: hostlist "gpu[2-1]": reversed range "2-1": write a node name or a hostlist such as gpu[001-004],gpu010`},
		{"scontrol update NodeName=gpu[2-1] State=DRAIN Reason=x", `scontrol: error: NodeName=gpu[2-1]: hostlist "gpu[2-1]": reversed range "2-1": write a node name or a hostlist such as gpu[001-004],gpu010`},
		{"scontrol show hostnames gpu[1", `scontrol: error: hostlist "gpu[1": unclosed '[': write a node name or a hostlist such as gpu[001-004],gpu010`},
		{"events --node gpu[x]", `events: error: --node=gpu[x]: hostlist "gpu[x]": "x" is not a number: write a node name or a hostlist such as gpu[001-004],gpu010`},
		{"srun --jobid=4 -w gpu[2-1] true", `srun: error: --nodelist=gpu[2-1]: hostlist "gpu[2-1]": reversed range "2-1": write a node name or a hostlist such as gpu[001-004],gpu010`},
	} {
		code, stdout, stderr := runOut(t, addr, strings.Fields(tc.args)...)
		if code != 1 || stdout != "" || stderr != tc.want+"\n" {
			t.Errorf("phx %s: code %d, stdout %q, stderr %q\nwant 1, %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// scontrol hold, top, requeue...: the ID's own hint, once.
func TestScontrolJobListErrors(t *testing.T) {
	addr := closedAddr(t)
	for args, want := range map[string]string{
		"scontrol hold abc":    `scontrol: error: hold: invalid job id "abc": write JOBID (a number), ARRAYID_TASKID or ARRAYID_[LIST]`,
		"scontrol requeue 4_x": `scontrol: error: requeue: invalid job id "4_x": write ARRAYID_INDEX or ARRAYID_[LIST]`,
		"scontrol top":         `scontrol: error: top: no job ID given: write scontrol top JOBID[,JOBID...]`,
	} {
		if code, _, stderr := runOut(t, addr, strings.Fields(args)...); code != 1 || stderr != want+"\n" {
			t.Errorf("phx %s: code %d, stderr %q\nwant %q", args, code, stderr, want)
		}
	}
}

// scancel -v words a signal and a step as Slurm 22.05's scancel does
// ("Signal %u to job %s", "Terminating step %s"): it said "Terminating
// job 42" of a --signal, which terminates nothing.
func TestScancelVerboseSaysSignalAndStep(t *testing.T) {
	addr := serveFake(t, cancelsAll{})
	for _, tc := range []struct{ args, want string }{
		{"scancel -v -s USR1 30", "scancel: Signal 10 to job 30\n"},
		{"scancel -v --signal=9 30", "scancel: Signal 9 to job 30\n"},
		{"scancel -v 30.0", "scancel: Terminating step 30.0\n"},
		{"scancel -v -s TERM 30.1", "scancel: Signal 15 to step 30.1\n"},
		{"scancel -v 30", "scancel: Terminating job 30\n"},
	} {
		if code, _, stderr := runOut(t, addr, strings.Fields(tc.args)...); code != 0 || stderr != tc.want {
			t.Errorf("%s: code %d, stderr %q; want 0, %q", tc.args, code, stderr, tc.want)
		}
	}
}

// cancelsAll cancels, or signals, every job it is asked to.
type cancelsAll struct {
	phalanxv1.UnimplementedControllerServiceServer
}

func (cancelsAll) CancelJob(_ context.Context, req *phalanxv1.CancelJobRequest) (*phalanxv1.CancelJobResponse, error) {
	return &phalanxv1.CancelJobResponse{Cancelled: req.JobIds}, nil
}
