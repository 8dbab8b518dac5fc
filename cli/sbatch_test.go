package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// TestSbatchRefusesBeforeSending is the regression test for input the
// API cannot carry or the controllers will refuse: text that is not UTF-8
// failed as an internal gRPC marshalling error, and a script of any size
// was sent. phx now refuses each with one line naming what is wrong, and
// sends nothing.
func TestSbatchRefusesBeforeSending(t *testing.T) {
	f, addr := startFake(t)
	for _, tc := range []struct {
		name    string
		script  string
		environ []string
		conf    string // phalanx.conf; empty: none
		stdin   bool   // the script comes on standard input
		want    string
	}{
		{name: "script line", script: "#!/bin/sh\necho caf\xe9\n",
			want: "sbatch: error: job.sh: line 2 is not valid UTF-8: save the script as UTF-8 (e.g. iconv -f latin1 -t utf-8)"},
		{name: "environment", script: "#!/bin/sh\n", environ: []string{"HOME=/home/alice", "NAME=Jos\xe9"},
			want: `sbatch: error: environment variable "NAME" is not valid UTF-8: unset it, or leave it out with --export=NONE,VAR1,VAR2`},
		{name: "configured script size", script: "#!/bin/sh\necho hello\n", conf: "ClusterName=c\nMaxScriptSize=16 # bytes\n",
			want: "sbatch: error: job.sh: 21 bytes, over the limit of 16 bytes (MaxScriptSize): shorten it, for instance by reading data or long commands from a file"},
		{name: "script size on stdin", script: "#!/bin/sh\necho hello\n", conf: "MaxScriptSize=16\n", stdin: true,
			want: "sbatch: error: reading the script from standard input: over the limit of 16 bytes (MaxScriptSize): shorten it, for instance by reading data or long commands from a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys, stdout, stderr := testSystem(t, addr)
			args := []string{"phx", "sbatch"}
			if tc.stdin {
				sys.Stdin = strings.NewReader(tc.script)
			} else {
				writeScript(t, sys, tc.script)
				args = append(args, "job.sh")
			}
			if tc.environ != nil {
				sys.Environ = func() []string { return tc.environ }
			}
			if tc.conf != "" {
				dir, _ := sys.Getwd()
				sys.ConfigPath = filepath.Join(dir, "phalanx.conf")
				if err := os.WriteFile(sys.ConfigPath, []byte(tc.conf), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			code := Run(context.Background(), sys, args)
			if code != 1 || stdout.Len() != 0 || stderr.String() != tc.want+"\n" {
				t.Fatalf("code %d, stdout %q\nstderr %q\nwant   %q", code, stdout, stderr, tc.want)
			}
		})
	}
	if len(f.submits) != 0 {
		t.Fatalf("sent %d jobs; want none", len(f.submits))
	}
}

// TestSbatchWarnsOncePerOption is the regression test for a script of
// 22,000 "#SBATCH --mail-user" lines printing 22,000 warnings.
func TestSbatchWarnsOncePerOption(t *testing.T) {
	_, addr := startFake(t)
	sys, stdout, stderr := testSystem(t, addr)
	writeScript(t, sys, "#!/bin/sh\n"+strings.Repeat("#SBATCH --mail-user=\"a@b\"\n", 22000)+"hostname\n")
	code := Run(context.Background(), sys, []string{"phx", "sbatch", "job.sh"})
	want := "sbatch: warning: --mail-user is ignored: Phalanx sends no mail (given 22000 times)\n"
	if code != 0 || stdout.String() != "Submitted batch job 42\n" || stderr.String() != want {
		t.Fatalf("code %d, stdout %q\nstderr %q\nwant   %q", code, stdout, stderr, want)
	}
}

func TestConfScriptLimit(t *testing.T) {
	for conf, want := range map[string]int{
		"":                                   4 << 20,
		"MaxScriptSize=8388608\n":            8 << 20,
		"maxscriptsize=1000 # small\n":       1000,
		"#MaxScriptSize=1000\n":              4 << 20,
		"MaxScriptSize=lots\n":               4 << 20,
		"MaxScriptSize=-5\n":                 4 << 20,
		"MaxScriptSize=999999999999\n":       64 << 20,
		"ClusterName=x MaxScriptSize=2048\n": 2048,
	} {
		if got := confScriptLimit([]byte(conf)); got != want {
			t.Errorf("confScriptLimit(%q) = %d, want %d", conf, got, want)
		}
	}
}

// arrayWaitFake answers sbatch for array 87 of three tasks: task 0
// completed, task 1 failed with code 3, task 2 running until it has been
// listed twice, then failed with code 7.
type arrayWaitFake struct {
	phalanxv1.UnimplementedControllerServiceServer
	mu    sync.Mutex
	lists int
}

func (f *arrayWaitFake) SubmitJob(context.Context, *phalanxv1.SubmitJobRequest) (*phalanxv1.SubmitJobResponse, error) {
	return &phalanxv1.SubmitJobResponse{JobId: 87}, nil
}

// GetJob answers for task 0, the array's ID.
func (f *arrayWaitFake) GetJob(context.Context, *phalanxv1.GetJobRequest) (*phalanxv1.Job, error) {
	return &phalanxv1.Job{Id: 87, State: "COMPLETED", ArrayTask: &phalanxv1.ArrayTask{ArrayJobId: 87, Count: 3}}, nil
}

func (f *arrayWaitFake) ListJobs(_ context.Context, req *phalanxv1.ListJobsRequest) (*phalanxv1.ListJobsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	last := &phalanxv1.Job{Id: 89, State: "RUNNING"}
	if f.lists > 2 {
		last = &phalanxv1.Job{Id: 89, State: "FAILED", ExitCode: 7, Reason: "NonZeroExitCode"}
	}
	jobs := []*phalanxv1.Job{{Id: 87, State: "COMPLETED"}, {Id: 88, State: "FAILED", ExitCode: 3}, last}
	out := &phalanxv1.ListJobsResponse{}
	for i, j := range jobs {
		j.ArrayTask = &phalanxv1.ArrayTask{ArrayJobId: 87, TaskId: int32(i), Count: 3}
		if slices.Contains(req.JobIds, j.Id) || slices.Contains(req.JobIds, 87) {
			out.Jobs = append(out.Jobs, j)
		}
	}
	return out, nil
}

// sbatch --wait of an array waits for every task, and exits with the
// highest exit code, as Slurm's does.
func TestSbatchWaitsForEveryArrayTask(t *testing.T) {
	f := &arrayWaitFake{}
	addr := serveFake(t, f)
	code, stdout, stderr := runOut(t, addr, "sbatch", "-W", "-a", "0-2", "--wrap", "true")
	if code != 7 || stdout != "Submitted batch job 87\n" || stderr != "sbatch: error: job 87_2 ended FAILED (NonZeroExitCode), exit code 7:0\n" {
		t.Errorf("code %d, stdout %q, stderr %q; want 7, after task 2 ended", code, stdout, stderr)
	}
	if f.lists != 3 {
		t.Errorf("listed %d times; want 3 (until task 2 ended)", f.lists)
	}
}
