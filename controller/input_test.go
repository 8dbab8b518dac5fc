package controller

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// TestJobFromSpecRefusesBadInput is the regression test for specs the
// controller took without looking: text that is not UTF-8 (which then
// cannot be stored or sent), a script and an environment of any size, and
// time limits that overflowed into wrong durations.
func TestJobFromSpecRefusesBadInput(t *testing.T) {
	many := make([]string, cluster.MaxEnvVars+1)
	for i := range many {
		many[i] = "V" + strconv.Itoa(i) + "=1"
	}
	big := "#!/bin/sh\n" + strings.Repeat("#", cluster.DefaultMaxScriptSize)
	for _, tc := range []struct {
		name string
		edit func(*phalanxv1.JobSpec)
		want string
	}{
		{"script line", func(s *phalanxv1.JobSpec) { s.Script = "#!/bin/sh\necho caf\xe9\n" }, "batch script: line 2 is not valid UTF-8"},
		{"environment", func(s *phalanxv1.JobSpec) { s.Environment = []string{"HOME=/", "NAME=Jos\xe9"} }, `environment variable "NAME" is not valid UTF-8`},
		{"legacy environment map", func(s *phalanxv1.JobSpec) { s.Env = map[string]string{"K\xff": "v"} }, "is not valid UTF-8"},
		{"working directory", func(s *phalanxv1.JobSpec) { s.WorkDir = "/tmp/r\xe9sultats" }, "the job's work_dir is not valid UTF-8"},
		{"nodelist", func(s *phalanxv1.JobSpec) { s.Nodelist = []string{"n1", "n\xe5"} }, "the job's nodelist is not valid UTF-8"},
		{"script size", func(s *phalanxv1.JobSpec) { s.Script = big },
			"batch script: 4194314 bytes (4.0 MiB), over the limit of 4194304 bytes (4.0 MiB) (MaxScriptSize)"},
		{"too many variables", func(s *phalanxv1.JobSpec) { s.Environment = many }, "the environment has 10001 variables, over the limit of 10000"},
		{"time limit", func(s *phalanxv1.JobSpec) { s.TimeLimitSeconds = 9223372036854775807 }, "time limit of 9223372036854775807 seconds is longer than 36500 days"},
		{"switches wait", func(s *phalanxv1.JobSpec) { s.SwitchesWaitSeconds = 10_000_000_000 }, "--switches wait of 10000000000 seconds is longer than 36500 days"},
		// Taken, then failed at launch: "exec: environment variable contains NUL".
		{"NUL in the name", func(s *phalanxv1.JobSpec) { s.Name = "a\x00b" }, `job name "a\x00b" holds a NUL byte`},
		{"line break in the name", func(s *phalanxv1.JobSpec) { s.Name = "a\nb" }, `job name "a\nb" holds a line break`},
		{"long name", func(s *phalanxv1.JobSpec) { s.Name = strings.Repeat("x", 257) }, "job name of 257 bytes: at most 256"},
		// Paths with a NUL were taken, then failed at launch: "invalid argument".
		{"NUL in the output", func(s *phalanxv1.JobSpec) { s.Output = "/tmp/a\x00b.out" }, "the job's output holds a NUL byte"},
		{"NUL in the working directory", func(s *phalanxv1.JobSpec) { s.WorkDir = "/tmp/a\x00b" }, "the job's work_dir holds a NUL byte"},
		{"NUL in the checkpoint store", func(s *phalanxv1.JobSpec) { s.CheckpointDir = "/ck\x00" }, "the job's checkpoint_dir holds a NUL byte"},
		{"NUL in the script", func(s *phalanxv1.JobSpec) { s.Script = "#!/bin/sh\necho \x00\n" }, "batch script: line 2 holds a NUL byte"},
	} {
		spec := testSpec(1, 8)
		tc.edit(spec)
		j, err := jobFromSpec(spec, 0)
		if j != nil || !errors.Is(err, cluster.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, %v; want ErrInvalid saying %q", tc.name, j, err, tc.want)
		}
	}
	spec := testSpec(1, 8)
	spec.Script = "#!/bin/sh\n" + strings.Repeat("#", 90)
	if _, err := jobFromSpec(spec, 64); err == nil || !strings.Contains(err.Error(), "over the limit of 64 bytes (MaxScriptSize)") {
		t.Errorf("a configured MaxScriptSize: %v", err)
	}
	spec = testSpec(1, 8)
	spec.TimeLimitSeconds = int64(cluster.MaxTimeLimit.Seconds())
	if j, err := jobFromSpec(spec, 0); err != nil || j.TimeLimit != cluster.MaxTimeLimit {
		t.Errorf("the longest time limit: %v, %v", j, err)
	}
}

// TestSubmitAndReadAJobAtTheLimits is the regression test for jobs the
// API could not carry: gRPC's default 4 MiB message limit refused a script
// of Slurm's default limit, on the way in (the controller) and out (GetJob
// in phx and, with the job's other fields, the agents' assignments).
func TestSubmitAndReadAJobAtTheLimits(t *testing.T) {
	s := newTestServer(t, Config{Insecure: true}) // about sizes, not credentials
	register(t, s, nil, "n1")
	conn, err := apiclient.Dial([]string{s.APIAddr()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	api := phalanxv1.NewControllerServiceClient(conn)
	spec := testSpec(1, 8)
	spec.Script = "#!/bin/sh\n" + strings.Repeat("# padding\n", (cluster.DefaultMaxScriptSize-10)/10)
	spec.Script += strings.Repeat("#", cluster.DefaultMaxScriptSize-len(spec.Script)) // exactly at the limit
	for i := 0; len(strings.Join(spec.Environment, "\n")) < cluster.MaxEnvBytes-(64<<10); i++ {
		spec.Environment = append(spec.Environment, "VAR"+strconv.Itoa(i)+"="+strings.Repeat("x", 60<<10))
	}
	ctx := context.Background()
	resp, err := api.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: spec})
	if err != nil {
		t.Fatalf("submit a %d-byte script with a %d-variable environment: %v", len(spec.Script), len(spec.Environment), err)
	}
	j, err := api.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: resp.JobId})
	if err != nil || j.Spec.Script != spec.Script || len(j.Spec.Environment) != len(spec.Environment) {
		t.Fatalf("GetJob: %v (script of %d bytes)", err, len(j.GetSpec().GetScript()))
	}
	spec.Script += "x"
	_, err = api.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: spec})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "over the limit of 4194304 bytes (4.0 MiB) (MaxScriptSize)") {
		t.Fatalf("a script one byte over the limit: %v; want InvalidArgument naming the limit", err)
	}
}
