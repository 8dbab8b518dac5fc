package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"

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

// TestEveryTextFieldIsChecked: a NUL byte or text that is not UTF-8 in
// any string of a spec (alone, in a list, a map's key or value) is
// refused, whichever check reads it (checkText passes over the fields
// others check: checkedText).
func TestEveryTextFieldIsChecked(t *testing.T) {
	fields := testSpec(1, 8).ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.Kind() != protoreflect.StringKind && !(fd.IsMap() && fd.MapKey().Kind() == protoreflect.StringKind) {
			continue
		}
		for _, bad := range []string{"a\x00b", "caf\xe9"} {
			for _, where := range []string{"key", "value"} {
				if where == "value" && !(fd.IsMap() && fd.MapValue().Kind() == protoreflect.StringKind) {
					continue
				}
				spec := testSpec(1, 8)
				// With a list, the environment's map form is read by
				// checkText alone.
				spec.Environment = append(spec.Environment, "HOME=/")
				m := spec.ProtoReflect()
				str := protoreflect.ValueOfString
				switch {
				case fd.IsMap() && where == "key":
					m.Mutable(fd).Map().Set(str(bad).MapKey(), str("v"))
				case fd.IsMap():
					m.Mutable(fd).Map().Set(str("KEY").MapKey(), str(bad))
				case fd.IsList():
					m.Mutable(fd).List().Append(str("KEY=" + bad))
				default:
					m.Set(fd, str("KEY="+bad))
				}
				if err := checkSpecInput(spec, 0); !errors.Is(err, cluster.ErrInvalid) {
					t.Errorf("%s holding %q: %v; want ErrInvalid", fd.Name(), bad, err)
				}
			}
		}
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

// BenchmarkCheckSpecInput: the input checks of one submit with a training
// job's script and environment (as the controller benchmark sends).
func BenchmarkCheckSpecInput(b *testing.B) {
	env := []string{"PATH=/usr/local/cuda/bin:/opt/conda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	for i := range 40 {
		env = append(env, fmt.Sprintf("VAR_%02d=%s", i, strings.Repeat("x", 40)))
	}
	script := "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=8\n" + strings.Repeat("# a comment line, explaining a flag\n", 12) + "srun train.py\n"
	spec := &phalanxv1.JobSpec{Name: "train", User: "bench", Uid: 1000, Gid: 1000, WorkDir: "/home/bench", Nodes: 1,
		GpusPerNode: 8, Script: script, Environment: env, Output: "train-%j.out"}
	for b.Loop() {
		if err := checkSpecInput(spec, 4<<20); err != nil {
			b.Fatal(err)
		}
	}
}
