package sbatch

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// parseWith parses a command line with the test submitter, changed by edit.
func parseWith(t *testing.T, line, script string, edit func(*Env)) (*Request, error) {
	t.Helper()
	args, err := Split(line)
	if err != nil {
		t.Fatal(err)
	}
	env := fuzzEnv(script)
	if edit != nil {
		edit(&env)
	}
	return Parse(args, env)
}

// TestParseRefusesInvalidUTF8 is the regression test for text that is not
// UTF-8 reaching the API, where it failed as an internal gRPC marshalling
// error: each source of text is refused with a one-line error naming it.
func TestParseRefusesInvalidUTF8(t *testing.T) {
	for _, tc := range []struct {
		name, line, script string
		edit               func(*Env)
		want               string
	}{
		{"script line", "job.sh", "#!/bin/sh\n#SBATCH -N 2\necho caf\xe9\n", nil,
			"job.sh: line 3 is not valid UTF-8: save the script as UTF-8"},
		{"directive", "job.sh", "#!/bin/sh\n#SBATCH -J caf\xe9\n", nil, "job.sh: line 2 is not valid UTF-8"},
		{"option", "-J caf\xe9 job.sh", "#!/bin/sh\n", nil, `--job-name="caf\xe9" is not valid UTF-8`},
		{"--export value", "--export=ALL,X=\xff job.sh", "#!/bin/sh\n", nil, `--export="ALL,X=\xff" is not valid UTF-8`},
		{"environment variable", "job.sh", "#!/bin/sh\n", func(e *Env) { e.Environ = append(e.Environ, "LC_NAME=Jos\xe9") },
			`environment variable "LC_NAME" is not valid UTF-8: unset it, or leave it out with --export=NONE,VAR1,VAR2`},
		{"working directory", "job.sh", "#!/bin/sh\n", func(e *Env) { e.Cwd = "/home/alice/r\xe9sultats" },
			`working directory "/home/alice/r\xe9sultats" is not valid UTF-8`},
		{"script file name", "caf\xe9.sh", "#!/bin/sh\n", nil, `job name "caf\xe9.sh" (the script's file name) is not valid UTF-8: name the job with -J`},
		{"user", "job.sh", "#!/bin/sh\n", func(e *Env) { e.User = "b\xf6b" }, `user name "b\xf6b" is not valid UTF-8`},
		{"script argument", "job.sh ok caf\xe9", "#!/bin/sh\n", nil, "script argument 2 is not valid UTF-8"},
	} {
		req, err := parseWith(t, tc.line, tc.script, tc.edit)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, %v; want one line saying %q", tc.name, req, err, tc.want)
		}
	}
	// A script file name that is not UTF-8 is fine with a job name.
	req, err := parseWith(t, "-J ok caf\xe9.sh", "#!/bin/sh\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := proto.Marshal(req.Spec); err != nil {
		t.Fatalf("marshal: %v", err)
	}
}

// TestParseScriptSize is the regression test for a script of any size
// being sent: the limit is MaxScriptSize (its default unless the config
// says otherwise), checked before the directives are read.
func TestParseScriptSize(t *testing.T) {
	line := "#SBATCH --mail-user=" + strings.Repeat("x", 24) + "\n" // 45 bytes
	script := "#!/bin/sh\n" + strings.Repeat(line, cluster.DefaultMaxScriptSize/len(line))
	req, err := parseWith(t, "job.sh", script, nil)
	if err != nil {
		t.Fatalf("a script of %d bytes: %v", len(script), err)
	}
	if len(req.Warnings) != 1 || !strings.HasSuffix(req.Warnings[0], "(given 93206 times)") {
		t.Fatalf("warnings = %q; want one, with its count", req.Warnings)
	}
	_, err = parseWith(t, "job.sh", script+line, nil)
	if want := "job.sh: 4194325 bytes (4.0 MiB), over the limit of 4194304 bytes (4.0 MiB) (MaxScriptSize)"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("over the default limit: %v; want %q", err, want)
	}
	_, err = parseWith(t, "job.sh", "#!/bin/sh\necho hello\n", func(e *Env) { e.MaxScriptSize = 16 })
	if err == nil || !strings.Contains(err.Error(), "job.sh: 21 bytes, over the limit of 16 bytes") {
		t.Fatalf("over a configured limit: %v", err)
	}
}

func TestParseEnvironmentLimits(t *testing.T) {
	many := func(e *Env) {
		for i := range cluster.MaxEnvVars {
			e.Environ = append(e.Environ, "V"+strconv.Itoa(i)+"=1")
		}
	}
	_, err := parseWith(t, "job.sh", "#!/bin/sh\n", many)
	if err == nil || !strings.Contains(err.Error(), "over the limit of 10000") {
		t.Fatalf("too many variables: %v", err)
	}
	req, err := parseWith(t, "--export=NONE,HOME job.sh", "#!/bin/sh\n", many)
	if err != nil || len(req.Spec.Environment) != 1 {
		t.Fatalf("the way out the message gives, --export=NONE,HOME: %v, %v", req, err)
	}
	huge := func(e *Env) { e.Environ = append(e.Environ, "BLOB="+strings.Repeat("x", cluster.MaxEnvVarBytes)) }
	_, err = parseWith(t, "job.sh", "#!/bin/sh\n", huge)
	if err == nil || !strings.Contains(err.Error(), `environment variable "BLOB" is`) {
		t.Fatalf("one variable too long: %v", err)
	}
}

// A --comment is bounded wherever it is given, a directive included.
func TestParseBoundsTheComment(t *testing.T) {
	long := strings.Repeat("c", cluster.MaxComment+1)
	for _, tc := range []struct{ line, script string }{
		{"--comment=" + long + " job.sh", "#!/bin/sh\n"},
		{"job.sh", "#!/bin/sh\n#SBATCH --comment=" + long + "\n"},
	} {
		_, err := parseWith(t, tc.line, tc.script, nil)
		if want := "--comment of 65537 bytes: at most 65536"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a long comment (%d bytes of script): %v; want %q", len(tc.script), err, want)
		}
	}
}

// As Slurm's sbatch, a --begin after the --deadline is refused before any
// contact (the controller refuses a deadline already passed).
func TestParseRefusesBeginAfterDeadline(t *testing.T) {
	rfc := func(e *Env) { e.ParseTime = func(s string) (time.Time, error) { return time.Parse(time.RFC3339, s) } }
	_, err := parseWith(t, "--begin=2026-11-27T14:00:00Z --deadline=2026-11-27T13:00:00Z job.sh", "#!/bin/sh\n", rfc)
	if err == nil || !strings.HasPrefix(err.Error(), "Incompatible begin and deadline time specification") {
		t.Errorf("--begin after --deadline: %v", err)
	}
	if _, err := parseWith(t, "--begin=2026-11-27T12:00:00Z --deadline=2026-11-27T13:00:00Z job.sh", "#!/bin/sh\n", rfc); err != nil {
		t.Errorf("--begin before --deadline: %v", err)
	}
}
