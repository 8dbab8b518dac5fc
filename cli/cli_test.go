package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/auth"
)

// fakeController is an in-process ControllerService that records requests
// and answers from fixed data.
type fakeController struct {
	phalanxv1.UnimplementedControllerServiceServer
	mu      sync.Mutex
	submits []*phalanxv1.SubmitJobRequest
	lists   []*phalanxv1.ListJobsRequest
	cancels []*phalanxv1.CancelJobRequest
	jobs    []*phalanxv1.Job

	controllers    []*phalanxv1.ControllerInfo // what ListControllers answers
	controllersErr error                       // what ListControllers fails with, when set
	adds           []*phalanxv1.AddControllerRequest
	removes        []*phalanxv1.RemoveControllerRequest
	tokens         []*phalanxv1.CreateTokenRequest
}

func (f *fakeController) SubmitJob(_ context.Context, req *phalanxv1.SubmitJobRequest) (*phalanxv1.SubmitJobResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.submits = append(f.submits, req)
	if req.Spec.Partition == "nope" {
		return nil, status.Error(codes.NotFound, "invalid partition specified: nope")
	}
	if req.TestOnly {
		return &phalanxv1.SubmitJobResponse{ExpectedStart: timestamppb.New(testNow)}, nil
	}
	return &phalanxv1.SubmitJobResponse{JobId: 42}, nil
}

func (f *fakeController) ListJobs(_ context.Context, req *phalanxv1.ListJobsRequest) (*phalanxv1.ListJobsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = append(f.lists, req)
	var out []*phalanxv1.Job
	for _, j := range f.jobs {
		if len(req.JobIds) == 0 || req.JobIds[0] == j.Id {
			out = append(out, j)
		}
	}
	return &phalanxv1.ListJobsResponse{Jobs: out}, nil
}

// ListPartitions answers the one partition the fake knows, gpu.
func (f *fakeController) ListPartitions(context.Context, *phalanxv1.ListPartitionsRequest) (*phalanxv1.ListPartitionsResponse, error) {
	return &phalanxv1.ListPartitionsResponse{Partitions: []*phalanxv1.Partition{{Name: "gpu"}}}, nil
}

func (f *fakeController) GetJob(_ context.Context, req *phalanxv1.GetJobRequest) (*phalanxv1.Job, error) {
	for _, j := range f.jobs {
		if j.Id == req.JobId {
			return j, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "job %d: invalid job id specified: not found", req.JobId)
}

func (f *fakeController) CancelJob(_ context.Context, req *phalanxv1.CancelJobRequest) (*phalanxv1.CancelJobResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels = append(f.cancels, req)
	if len(req.JobIds) == 1 && req.JobIds[0] == 999 {
		return nil, status.Error(codes.NotFound, "job 999: invalid job id specified: not found")
	}
	if len(req.JobIds) == 0 && req.Name == "vv" { // a filter that matches two jobs
		return &phalanxv1.CancelJobResponse{Cancelled: []uint64{41, 42}}, nil
	}
	return &phalanxv1.CancelJobResponse{Cancelled: req.JobIds}, nil
}

func (f *fakeController) ListControllers(context.Context, *phalanxv1.ListControllersRequest) (*phalanxv1.ListControllersResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.controllersErr != nil {
		return nil, f.controllersErr
	}
	return &phalanxv1.ListControllersResponse{Controllers: f.controllers}, nil
}

func (f *fakeController) AddController(_ context.Context, req *phalanxv1.AddControllerRequest) (*phalanxv1.AddControllerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.adds = append(f.adds, req)
	return &phalanxv1.AddControllerResponse{}, nil
}

func (f *fakeController) RemoveController(_ context.Context, req *phalanxv1.RemoveControllerRequest) (*phalanxv1.RemoveControllerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removes = append(f.removes, req)
	for _, ci := range f.controllers {
		if ci.Id == req.Id {
			return &phalanxv1.RemoveControllerResponse{}, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "controller %q is not a member (phx scontrol show controllers lists them)", req.Id)
}

func (f *fakeController) setControllers(ctls ...*phalanxv1.ControllerInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.controllers = ctls
}

// startFake serves a fakeController on 127.0.0.1:0 and returns its address.
func startFake(t testing.TB) (*fakeController, string) {
	t.Helper()
	f := &fakeController{jobs: []*phalanxv1.Job{{
		Id: 7, State: "RUNNING", StartTime: timestamppb.New(testNow.Add(-time.Minute)),
		Spec:  &phalanxv1.JobSpec{Name: "train", User: "alice", Partition: "gpu", Nodes: 1},
		Alloc: []*phalanxv1.NodeAlloc{{Node: "gpu001"}},
	}}}
	return f, serveFake(t, f)
}

// serveFake serves a ControllerService on 127.0.0.1:0 and returns its address.
func serveFake(t testing.TB, srvImpl phalanxv1.ControllerServiceServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(requireCredential), grpc.StreamInterceptor(requireStreamCredential))
	phalanxv1.RegisterControllerServiceServer(srv, srvImpl)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// testCredential is the credential testSystem's phx sends, from
// $PHX_TOKEN; the fake server refuses calls without it.
const testCredential = "credential-of-alice"

func requireCredential(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if got := auth.Incoming(ctx); got != testCredential {
		return nil, status.Errorf(codes.Unauthenticated, "credential %q, want %q", got, testCredential)
	}
	return h(ctx, req)
}

func requireStreamCredential(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if got := auth.Incoming(ss.Context()); got != testCredential {
		return status.Errorf(codes.Unauthenticated, "credential %q, want %q", got, testCredential)
	}
	return h(srv, ss)
}

// testSystem is a System talking to addr, as user alice in a temp dir.
func testSystem(t *testing.T, addr string) (*System, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	dir := t.TempDir()
	env := map[string]string{"PHX_SERVER": addr, "HOME": "/home/alice", "PHX_TOKEN": testCredential, "PHX_INSECURE": "1"}
	return &System{
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv:      func(k string) string { return env[k] },
		Environ:     func() []string { return []string{"HOME=/home/alice", "LR=0.1"} },
		Now:         func() time.Time { return testNow },
		Getwd:       func() (string, error) { return dir, nil },
		CurrentUser: func() (*user.User, error) { return &user.User{Username: "alice", Uid: "1000", Gid: "100"}, nil },
		LookupUser: func(name string) (*user.User, error) {
			if name == "alice" || name == "bob" {
				return &user.User{Username: name}, nil
			}
			return nil, user.UnknownUserError(name)
		},
		ReadFile:   os.ReadFile,
		Executable: func() (string, error) { return "/opt/phalanx/bin/phx", nil },
		ConfigPath: filepath.Join(dir, "no-such.conf"),
	}, &stdout, &stderr
}

func writeScript(t *testing.T, sys *System, body string) string {
	t.Helper()
	dir, _ := sys.Getwd()
	p := filepath.Join(dir, "job.sh")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSbatchSubmits(t *testing.T) {
	f, addr := startFake(t)
	sys, stdout, stderr := testSystem(t, addr)
	script := "#!/bin/bash\n#SBATCH -J train --gres=gpu:h100:8\n#SBATCH -N 4\nsrun hostname\n"
	writeScript(t, sys, script)
	code := Run(context.Background(), sys, []string{"phx", "sbatch", "-N", "2", "-t", "1-00:00:00", "job.sh"})
	if code != 0 || stdout.String() != "Submitted batch job 42\n" || stderr.Len() != 0 {
		t.Fatalf("code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	dir, _ := sys.Getwd()
	want := &phalanxv1.JobSpec{
		Name: "train", User: "alice", Uid: 1000, Gid: 100, TimeLimitSeconds: 86400, Script: script,
		Environment: []string{"HOME=/home/alice", "LR=0.1"}, WorkDir: dir,
		Nodes: 2, GpusPerNode: 8, GpuType: "h100",
		ScriptPath: filepath.Join(dir, "job.sh"), SubmitLine: "sbatch -N 2 -t 1-00:00:00 job.sh",
		RequestForm: &phalanxv1.RequestForm{}, // none of -n, --ntasks-per-node, --gpus-per-node, -G, --mem-per-*
	}
	if len(f.submits) != 1 || !proto.Equal(f.submits[0].Spec, want) || f.submits[0].TestOnly {
		t.Fatalf("sent %v\nwant %v", f.submits, want)
	}
}

func TestSbatchParsableAndTestOnly(t *testing.T) {
	_, addr := startFake(t)
	sys, stdout, _ := testSystem(t, addr)
	if code := Run(context.Background(), sys, []string{"phx", "sbatch", "--parsable", "--wrap", "hostname"}); code != 0 || stdout.String() != "42\n" {
		t.Fatalf("code %d, stdout %q", code, stdout)
	}
	sys, stdout, stderr := testSystem(t, addr)
	code := Run(context.Background(), sys, []string{"phx", "sbatch", "--test-only", "-p", "gpu", "--wrap", "hostname"})
	if code != 0 || stdout.Len() != 0 || !strings.HasPrefix(stderr.String(), "sbatch: Job would be accepted, expected start ") ||
		!strings.HasSuffix(stderr.String(), " using 1 node(s) in partition gpu\n") {
		t.Fatalf("code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestSbatchEmptyScript: an empty script, on standard input or in a file,
// and one of white space only are refused with Slurm's words.
func TestSbatchEmptyScript(t *testing.T) {
	f, addr := startFake(t)
	for _, tc := range []struct {
		name, script, stdin string
		args                []string
		want                string
	}{
		{"empty stdin", "", "", []string{"phx", "sbatch"}, "sbatch: error: Batch script is empty!\n"},
		{"empty file", "", "", []string{"phx", "sbatch", "job.sh"}, "sbatch: error: Batch script is empty!\n"},
		{"blank stdin", "", "\n  \n", []string{"/usr/bin/sbatch"}, "sbatch: error: Batch script contains only whitespace!\n"},
		{"blank file", " \n\t\r\n", "", []string{"phx", "sbatch", "job.sh"}, "sbatch: error: Batch script contains only whitespace!\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys, stdout, stderr := testSystem(t, addr)
			writeScript(t, sys, tc.script)
			sys.Stdin = strings.NewReader(tc.stdin)
			if code := Run(context.Background(), sys, tc.args); code != 1 || stdout.Len() != 0 || stderr.String() != tc.want {
				t.Fatalf("code %d, stdout %q\nstderr %q\nwant   %q", code, stdout, stderr, tc.want)
			}
		})
	}
	if len(f.submits) != 0 {
		t.Errorf("an empty script was submitted: %v", f.submits)
	}
}

// TestErrors checks that every failure is one line on stderr, prefixed
// with the command, with exit status 1 and nothing sent that should not be.
func TestErrors(t *testing.T) {
	f, addr := startFake(t)
	dead := closedAddr(t)
	for _, tc := range []struct {
		name   string
		server string
		args   []string
		want   string
	}{
		{"unknown option", addr, []string{"phx", "sbatch", "--bogus", "job.sh"}, "sbatch: error: unrecognized option '--bogus'"},
		{"bad time", addr, []string{"phx", "sbatch", "-t", "1:2:3:4", "job.sh"},
			`sbatch: error: --time=1:2:3:4: invalid time limit "1:2:3:4": use M, M:S, H:M:S, D-H, D-H:M or D-H:M:S (e.g. 30, 4:00:00, 1-12:00:00)`},
		{"server message", addr, []string{"phx", "sbatch", "-p", "nope", "job.sh"}, "sbatch: error: Batch job submission failed: invalid partition specified: nope"},
		{"unreachable", dead, []string{"phx", "sbatch", "job.sh"},
			"sbatch: error: cannot reach the controller at " + dead + " (is phalanx-controller running? set PHX_SERVER or --server)"},
		{"unreachable squeue", dead, []string{"/usr/bin/squeue"},
			"squeue: error: cannot reach the controller at " + dead + " (is phalanx-controller running? set PHX_SERVER or --server)"},
		{"scancel -s unknown", addr, []string{"phx", "scancel", "-s", "USR1", "999"}, "scancel: error: Kill job error on job id 999: Invalid job id specified"},
		{"scancel nothing", addr, []string{"phx", "scancel"}, "scancel: error: No job identification provided"},
		{"scontrol unknown", addr, []string{"phx", "scontrol", "show", "job", "999"}, "slurm_load_jobs error: Invalid job id specified"},
		{"squeue bad state", addr, []string{"phx", "squeue", "-t", "XX"}, // Slurm 22.05's two lines, and an empty one
			"squeue: error: Invalid job state specified: XX\nsqueue: error: Valid job states include: " +
				"PENDING,RUNNING,SUSPENDED,COMPLETED,CANCELLED,FAILED,TIMEOUT,NODE_FAIL,PREEMPTED,BOOT_FAIL,DEADLINE,OUT_OF_MEMORY," +
				"COMPLETING,CONFIGURING,RESIZING,RESV_DEL_HOLD,REQUEUED,REQUEUE_FED,REQUEUE_HOLD,REVOKED,SIGNALING,SPECIAL_EXIT,STAGE_OUT,STOPPED\n"},
		{"squeue all among states", addr, []string{"phx", "squeue", "-t", "PD,all"},
			"squeue: error: Invalid job state specified: all\nsqueue: error: Valid job states include: " +
				"PENDING,RUNNING,SUSPENDED,COMPLETED,CANCELLED,FAILED,TIMEOUT,NODE_FAIL,PREEMPTED,BOOT_FAIL,DEADLINE,OUT_OF_MEMORY," +
				"COMPLETING,CONFIGURING,RESIZING,RESV_DEL_HOLD,REQUEUED,REQUEUE_FED,REQUEUE_HOLD,REVOKED,SIGNALING,SPECIAL_EXIT,STAGE_OUT,STOPPED\n"},
		{"squeue bad sort", addr, []string{"phx", "squeue", "-S", "P,x"}, "squeue: error: Invalid sort specification: x"},
		{"unknown command", addr, []string{"phx", "frob"}, `phx: error: unknown command "frob": run phx --help`},
		{"unknown phx flag", addr, []string{"phx", "--bogus", "squeue"}, "phx: error: unknown option --bogus: run phx --help"},
		{"bad phx flag value", addr, []string{"phx", "--timeout", "5", "squeue"}, "phx: error: --timeout 5: want a duration such as 30s, 5m or 1h30m"},
		{"unknown install-links flag", addr, []string{"phx", "install-links", "--bogus", "/tmp"},
			"install-links: error: unknown option --bogus: run phx install-links --help"},
		{"unknown completion flag", addr, []string{"phx", "completion", "-x", "bash"}, "completion: error: unknown option -x: run phx completion --help"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys, stdout, stderr := testSystem(t, tc.server)
			writeScript(t, sys, "#!/bin/sh\ntrue\n")
			code := Run(context.Background(), sys, tc.args)
			if code != 1 || stdout.Len() != 0 || stderr.String() != tc.want+"\n" {
				t.Fatalf("code %d, stdout %q\nstderr %q\nwant   %q", code, stdout, stderr, tc.want)
			}
		})
	}
	for _, s := range f.submits {
		if s.Spec.Partition != "nope" {
			t.Errorf("a failing command submitted %v", s.Spec)
		}
	}
}

func closedAddr(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

// runOut runs phx against addr and returns its exit status and output.
func runOut(t *testing.T, addr string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	sys, out, errOut := testSystem(t, addr)
	code = Run(context.Background(), sys, append([]string{"phx"}, args...))
	return code, out.String(), errOut.String()
}

func TestScontrolShowControllers(t *testing.T) {
	f, addr := startFake(t)
	down := controllerInfo("ctl3", "", 0)
	down.Error = "rpc error: code = DeadlineExceeded desc = context deadline exceeded"
	follower := controllerInfo("ctl2", "Follower", 119)
	f.setControllers(controllerInfo("ctl1", "Leader", 120), follower, down)

	code, stdout, stderr := runOut(t, addr, "scontrol", "show", "controllers")
	want := "ControllerId=ctl1 Address=10.0.0.1:7819 ApiAddress=10.0.0.1:7817 Role=Leader AppliedIndex=120 LastContact=N/A\n" +
		"   Voter=yes Term=3 LeaderId=ctl1\n" +
		"   CommitIndex=120 LastLogIndex=121 DurableIndex=118\n" +
		"\n" +
		"ControllerId=ctl2 Address=10.0.0.2:7819 ApiAddress=10.0.0.2:7817 Role=Follower AppliedIndex=119 LastContact=" +
		fmtTime(follower.Status.LastContact, time.Local, "") + "\n" +
		"   Voter=yes Term=3 LeaderId=ctl1\n" +
		"   CommitIndex=120 LastLogIndex=121 DurableIndex=117\n" +
		"\n" +
		"ControllerId=ctl3 Address=10.0.0.3:7819 ApiAddress=10.0.0.3:7817 Role=Unreachable AppliedIndex=N/A LastContact=N/A\n" +
		"   Voter=yes Term=N/A LeaderId=N/A\n" +
		"   CommitIndex=N/A LastLogIndex=N/A DurableIndex=N/A\n" +
		"   Reason=context deadline exceeded\n" +
		"\n"
	if code != 0 || stdout != want || stderr != "" {
		t.Fatalf("code %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}

	code, stdout, _ = runOut(t, addr, "scontrol", "show", "controller", "ctl3")
	if code != 0 || !strings.HasPrefix(stdout, "ControllerId=ctl3 ") || strings.Count(stdout, "ControllerId=") != 1 {
		t.Fatalf("show controller ctl3: code %d, stdout:\n%s", code, stdout)
	}
	code, stdout, stderr = runOut(t, addr, "scontrol", "show", "controller", "ctl9")
	if code != 1 || stdout != "" || stderr != "Controller ctl9 not found\n" {
		t.Fatalf("show controller ctl9: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestScontrolPing(t *testing.T) {
	f, addr := startFake(t)
	f.setControllers(controllerInfo("ctl1", "Follower", 9), controllerInfo("ctl2", "Leader", 9), controllerInfo("ctl3", "Follower", 9))
	code, stdout, stderr := runOut(t, addr, "scontrol", "ping")
	want := "Controller ctl1 at 10.0.0.1:7817 is UP\n" +
		"Controller ctl2 (leader) at 10.0.0.2:7817 is UP\n" +
		"Controller ctl3 at 10.0.0.3:7817 is UP\n"
	if code != 0 || stdout != want || stderr != "" {
		t.Fatalf("all up: code %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}

	// An election: the replica that answers has no leader to name.
	f.setControllers(controllerInfo("ctl1", "Candidate", 9), controllerInfo("ctl2", "", 0), controllerInfo("ctl3", "Follower", 9))
	code, stdout, stderr = runOut(t, addr, "scontrol", "ping")
	want = "Controller ctl1 at 10.0.0.1:7817 is UP\n" +
		"Controller ctl2 at 10.0.0.2:7817 is DOWN\n" +
		"Controller ctl3 at 10.0.0.3:7817 is UP\n"
	if code != 1 || stdout != want || !strings.HasPrefix(stderr, "scontrol: error: no controller is the leader: ") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("no leader: code %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
}

// A replica outside the cluster (waiting to be added, or removed) answers
// the list with NotLeader: ping asks the next address, and one that is the
// only address is not called DOWN.
func TestScontrolPingPastAReplicaOutsideTheCluster(t *testing.T) {
	outside, outsideAddr := startFake(t)
	msg := "controller ctl4 is not a member of the cluster (it waits to be added with scontrol raft add, or was removed): ask another replica"
	st, err := status.New(codes.Unavailable, msg).WithDetails(&phalanxv1.NotLeader{})
	if err != nil {
		t.Fatal(err)
	}
	outside.controllersErr = st.Err()
	member, memberAddr := startFake(t)
	member.setControllers(controllerInfo("ctl1", "Leader", 9), controllerInfo("ctl2", "Follower", 9))
	code, stdout, stderr := runOut(t, outsideAddr+","+memberAddr, "scontrol", "ping")
	want := "Controller ctl1 (leader) at 10.0.0.1:7817 is UP\n" +
		"Controller ctl2 at 10.0.0.2:7817 is UP\n"
	if code != 0 || stdout != want || stderr != "" {
		t.Fatalf("outside replica first: code %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
	code, stdout, stderr = runOut(t, outsideAddr, "--timeout", "1s", "scontrol", "ping")
	if code != 1 || stdout != "" || !strings.HasPrefix(stderr, "scontrol: error: "+msg) {
		t.Fatalf("outside replica alone: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestScontrolPingNoneReachable(t *testing.T) {
	dead := closedAddr(t)
	code, stdout, stderr := runOut(t, dead, "scontrol", "ping")
	if code != 1 || stdout != "Controller at "+dead+" is DOWN\n" ||
		stderr != "scontrol: error: cannot reach the controller at "+dead+" (is phalanx-controller running? set PHX_SERVER or --server)\n" {
		t.Fatalf("code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestScontrolRaft(t *testing.T) {
	f, addr := startFake(t)
	f.setControllers(controllerInfo("ctl1", "Leader", 9), controllerInfo("ctl2", "Follower", 9))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"scontrol", "raft", "add", "ctl4"}, "scontrol: error: raft add takes the new controller's ID and Raft address: write scontrol raft add ID RAFT_HOST:PORT [API_HOST:PORT]"},
		{[]string{"scontrol", "raft", "add"}, "scontrol: error: raft add takes the new controller's ID and Raft address: write scontrol raft add ID RAFT_HOST:PORT [API_HOST:PORT]"},
		{[]string{"scontrol", "raft", "add", "ctl4", "10.0.0.4"}, `scontrol: error: the Raft address "10.0.0.4" is not HOST:PORT: write scontrol raft add ID RAFT_HOST:PORT [API_HOST:PORT]`},
		{[]string{"scontrol", "raft", "add", "ctl4", "10.0.0.4:99999"}, `scontrol: error: the Raft address "10.0.0.4:99999": the port is not a number from 1 to 65535: write scontrol raft add ID RAFT_HOST:PORT [API_HOST:PORT]`},
		{[]string{"scontrol", "raft", "add", "ctl4", "10.0.0.4:7819", "10.0.0.4:http"}, `scontrol: error: the API address "10.0.0.4:http": the port is not a number from 1 to 65535: write scontrol raft add ID RAFT_HOST:PORT [API_HOST:PORT]`},
		{[]string{"scontrol", "raft", "remove"}, "scontrol: error: raft remove takes one controller ID (scontrol show controllers lists them): write scontrol raft remove ID"},
		{[]string{"scontrol", "raft"}, "scontrol: error: write scontrol raft add ID RAFT_HOST:PORT [API_HOST:PORT], scontrol raft remove ID or scontrol raft transfer [ID]"},
		{[]string{"scontrol", "raft", "join", "ctl4"}, `scontrol: error: invalid raft command "join": write scontrol raft add ID RAFT_HOST:PORT [API_HOST:PORT], scontrol raft remove ID or scontrol raft transfer [ID]`},
		{[]string{"scontrol", "raft", "remove", "ctl9"}, `scontrol: error: controller "ctl9" is not a member (phx scontrol show controllers lists them)`},
	} {
		code, stdout, stderr := runOut(t, addr, tc.args...)
		if code != 1 || stdout != "" || stderr != tc.want+"\n" {
			t.Errorf("%q: code %d, stdout %q\nstderr %q\nwant   %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
	f.mu.Lock()
	if len(f.adds) != 0 || len(f.removes) != 1 {
		t.Errorf("refused commands sent adds %v, removes %v", f.adds, f.removes)
	}
	f.mu.Unlock()

	if code, stdout, stderr := runOut(t, addr, "scontrol", "raft", "add", "ctl4", "10.0.0.4:7819", "10.0.0.4"); code != 0 || stdout+stderr != "" {
		t.Fatalf("raft add: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, stdout, stderr := runOut(t, addr, "scontrol", "raft", "remove", "ctl2"); code != 0 || stdout+stderr != "" {
		t.Fatalf("raft remove: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	wantAdd := &phalanxv1.AddControllerRequest{Id: "ctl4", RaftAddr: "10.0.0.4:7819", ApiAddr: "10.0.0.4:7817"}
	if len(f.adds) != 1 || !proto.Equal(f.adds[0], wantAdd) {
		t.Errorf("sent adds %v, want %v", f.adds, wantAdd)
	}
	if len(f.removes) != 2 || f.removes[1].Id != "ctl2" {
		t.Errorf("sent removes %v, want the second for ctl2", f.removes)
	}
}

func TestScontrolUsage(t *testing.T) {
	code, stdout, _ := runOut(t, "127.0.0.1:1", "scontrol", "--help")
	if code != 0 || !strings.HasPrefix(stdout, scontrolUsage+"\n\nOptions:\n") || !strings.Contains(stdout, "scontrol ping") ||
		!strings.Contains(stdout, "raft remove ID") || !strings.Contains(stdout, "-o, --oneliner") {
		t.Fatalf("code %d, stdout:\n%s", code, stdout)
	}
	code, _, stderr := runOut(t, "127.0.0.1:1", "scontrol", "ping", "extra")
	if code != 1 || stderr != "scontrol: error: scontrol ping takes no arguments\n" {
		t.Fatalf("ping extra: code %d, stderr %q", code, stderr)
	}
}

// sbatch --begin sends the time read as Slurm reads it; sbatch --wait
// waits for the job to end and exits with its exit code (1 for one that
// ended badly with code 0, 0 for a completed one).
func TestSbatchBeginAndWait(t *testing.T) {
	f, addr := startFake(t)
	sys, _, _ := testSystem(t, addr)
	if code := Run(context.Background(), sys, []string{"phx", "sbatch", "--begin=now+90minutes", "--wrap", "hostname"}); code != 0 {
		t.Fatalf("sbatch --begin: code %d", code)
	}
	if got := f.submits[0].Spec.BeginTime.AsTime(); !got.Equal(sys.Now().Add(90 * time.Minute)) {
		t.Errorf("--begin=now+90minutes sent %v, want %v", got, sys.Now().Add(90*time.Minute))
	}
	if code, _, stderr := runOut(t, addr, "sbatch", "--begin=someday", "--wrap", "hostname"); code != 1 || !strings.Contains(stderr, "--begin=someday: invalid time") {
		t.Errorf("bad --begin: code %d, %q", code, stderr)
	}
	for _, tc := range []struct {
		job  *phalanxv1.Job
		code int
	}{
		{&phalanxv1.Job{Id: 42, State: "FAILED", ExitCode: 3}, 3},
		{&phalanxv1.Job{Id: 42, State: "COMPLETED"}, 0},
		{&phalanxv1.Job{Id: 42, State: "CANCELLED"}, 0},                 // before it ran: 0:0, as Slurm's
		{&phalanxv1.Job{Id: 42, State: "CANCELLED", ExitSignal: 15}, 1}, // while it ran
		{&phalanxv1.Job{Id: 42, State: "FAILED", ExitSignal: 9}, 1},
	} {
		f.mu.Lock()
		f.jobs = []*phalanxv1.Job{tc.job}
		f.mu.Unlock()
		code, stdout, stderr := runOut(t, addr, "sbatch", "--wait", "--wrap", "hostname")
		if code != tc.code || stdout != "Submitted batch job 42\n" {
			t.Errorf("sbatch --wait, job %s %d:%d: code %d, stdout %q, stderr %q; want code %d", tc.job.State, tc.job.ExitCode, tc.job.ExitSignal, code, stdout, stderr, tc.code)
		}
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := runOut(t, closedAddr(t), "--version")
	if code != 0 || !strings.HasPrefix(stdout, "phx version ") || strings.TrimSpace(stdout) == "phx version" {
		t.Errorf("phx --version: code %d, %q", code, stdout)
	}
}

// squeue refuses a user or a partition that does not exist, as Slurm's
// does, instead of printing an empty table.
func TestSqueueRefusesUnknownUserAndPartition(t *testing.T) {
	_, addr := startFake(t)
	for args, want := range map[string]string{
		"-u carol":      "squeue: error: Invalid user: carol\n",
		"-p nope":       "squeue: error: Invalid partition name specified: nope\n",
		"-u bob -p gpu": "",
		"-u 0":          "", // a UID, as squeue(1) takes them: root's
		"-u 4000000000": "squeue: error: Invalid user: 4000000000\n",
	} {
		code, _, stderr := runOut(t, addr, append([]string{"squeue"}, strings.Fields(args)...)...)
		if stderr != want || (code == 0) != (want == "") {
			t.Errorf("squeue %s: code %d, stderr %q; want %q", args, code, stderr, want)
		}
	}
}

// arrayFake answers for a job array of two tasks, 40 and 41.
type arrayFake struct {
	phalanxv1.UnimplementedControllerServiceServer
}

func arrayTask(id uint64, idx int32) *phalanxv1.Job {
	return &phalanxv1.Job{Id: id, State: "PENDING", Spec: &phalanxv1.JobSpec{Name: "sweep", WorkDir: "/w"},
		ArrayTask: &phalanxv1.ArrayTask{ArrayJobId: 40, TaskId: idx, Count: 2}}
}

func (arrayFake) GetJob(_ context.Context, req *phalanxv1.GetJobRequest) (*phalanxv1.Job, error) {
	return arrayTask(req.JobId, int32(req.JobId-40)), nil
}

func (arrayFake) ListJobs(_ context.Context, req *phalanxv1.ListJobsRequest) (*phalanxv1.ListJobsResponse, error) {
	return &phalanxv1.ListJobsResponse{Jobs: []*phalanxv1.Job{arrayTask(40, 0), arrayTask(41, 1)}}, nil
}

// scontrol show job ARRAYID shows every task of the array; a task's own
// ID shows that task.
func TestScontrolShowArray(t *testing.T) {
	addr := serveFake(t, arrayFake{})
	records := func(out string) int { return strings.Count("\n"+out, "\nJobId=") }
	_, stdout, stderr := runOut(t, addr, "scontrol", "show", "job", "40")
	if records(stdout) != 2 || !strings.Contains(stdout, "JobId=41 ArrayJobId=40 ArrayTaskId=1") {
		t.Errorf("scontrol show job 40:\n%s%s", stdout, stderr)
	}
	_, stdout, _ = runOut(t, addr, "scontrol", "show", "job", "41")
	if records(stdout) != 1 {
		t.Errorf("scontrol show job 41 shows %d jobs, want the task alone", records(stdout))
	}
}

// scontrol's options come before or after the command, as Slurm's getopt
// permutes them; those Phalanx cannot honour are refused in one line.
func TestScontrolOptions(t *testing.T) {
	f, addr := startFake(t)
	f.jobs = []*phalanxv1.Job{{Id: 7, State: "PENDING", Reason: "Resources", Spec: &phalanxv1.JobSpec{Name: "train", Partition: "gpu", Nodes: 1}}}
	_, long, _ := runOut(t, addr, "scontrol", "show", "job", "7")
	if !strings.HasPrefix(long, "JobId=7 JobName=train\n   UserId=") || !strings.HasSuffix(long, "\n   \n\n") {
		t.Fatalf("show job 7:\n%q", long)
	}
	for _, args := range [][]string{{"scontrol", "-o", "show", "job", "7"}, {"scontrol", "show", "job", "7", "--oneliner"}, {"scontrol", "show", "-o", "job", "7"}} {
		code, stdout, stderr := runOut(t, addr, args...)
		if code != 0 || stderr != "" || stdout != oneLine(long[:len(long)-1]) || strings.Count(stdout, "\n") != 1 ||
			!strings.HasPrefix(stdout, "JobId=7 JobName=train UserId=") || !strings.HasSuffix(stdout, " \n") {
			t.Errorf("%q: code %d, stderr %q, stdout %q", args, code, stderr, stdout)
		}
	}
	for _, tc := range []struct{ args, want string }{
		{"-M other show job 7", "scontrol: error: -M/--clusters other: a Phalanx controller serves one cluster; leave the option out\n"},
		{"show job 7 --json", "scontrol: error: --json is not supported: use scontrol's records, or squeue/sinfo -o for fixed fields\n"},
		{"-x show job 7", "scontrol: error: invalid option -- 'x'\n"},
	} {
		code, stdout, stderr := runOut(t, addr, append([]string{"scontrol"}, strings.Fields(tc.args)...)...)
		if code != 1 || stdout != "" || stderr != tc.want {
			t.Errorf("scontrol %s: code %d, stdout %q, stderr %q, want %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}
