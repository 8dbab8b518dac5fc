package sbatch

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// TestParse runs testdata/*: each "sbatch" case gives the command line on its
// first input line and the script (read for any file name) on the rest.
func TestParse(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.HasPrefix(path, "testdata/fuzz/") {
			return // the corpora of the fuzz targets
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "sbatch":
				host := ""
				if d.HasArg("host") {
					d.ScanArgs(t, "host", &host)
				}
				return runParse(t, d.Input, host)
			case "split":
				words, err := Split(d.Input)
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				return fmt.Sprintf("%q\n", words)
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

func runParse(t *testing.T, input, host string) string {
	line, script, _ := strings.Cut(input, "\n")
	args, err := Split(line)
	if err != nil {
		t.Fatal(err)
	}
	var read []string
	env := Env{
		User: "alice", UID: 1000, GID: 100, Cwd: "/home/alice/run", Host: host,
		Environ: []string{"HOME=/home/alice", "PATH=/usr/bin", "EMPTY="},
		ReadFile: func(name string) ([]byte, error) {
			read = append(read, name)
			if script == "" {
				return nil, fs.ErrNotExist
			}
			return []byte(script), nil
		},
	}
	req, err := Parse(args, env)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	var b strings.Builder
	for _, name := range read {
		fmt.Fprintf(&b, "read %s\n", name)
	}
	if req.Help {
		b.WriteString("help\n")
		return b.String()
	}
	if req.Version {
		b.WriteString("version\n")
		return b.String()
	}
	writeSpec(&b, req.Spec)
	if req.Parsable {
		b.WriteString("parsable\n")
	}
	if req.TestOnly {
		b.WriteString("test-only\n")
	}
	for _, w := range req.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}

func writeSpec(b *strings.Builder, s *phalanxv1.JobSpec) {
	fmt.Fprintf(b, "name=%s user=%s uid=%d gid=%d workdir=%s\n", s.Name, s.User, s.Uid, s.Gid, s.WorkDir)
	fmt.Fprintf(b, "nodes=%d gpus-per-node=%d gpu-type=%q cpus=%d mem-mb=%d time-s=%d\n",
		s.Nodes, s.GpusPerNode, s.GpuType, s.CpusPerNode, s.MemoryMb, s.TimeLimitSeconds)
	for _, kv := range [][2]string{{"partition", s.Partition}, {"account", s.Account}, {"image", s.Image},
		{"output", s.Output}, {"error", s.Error}} {
		if kv[1] != "" {
			fmt.Fprintf(b, "%s=%s\n", kv[0], kv[1])
		}
	}
	if s.Priority != 0 {
		fmt.Fprintf(b, "priority=%d\n", s.Priority)
	}
	if len(s.ScriptArgs) > 0 {
		fmt.Fprintf(b, "script=%s args=%q\n", s.ScriptPath, s.ScriptArgs)
	}
	if s.TasksPerNode != 0 || s.GpusPerTask != 0 || s.CpusPerTask != 0 {
		fmt.Fprintf(b, "tasks-per-node=%d gpus-per-task=%d cpus-per-task=%d\n", s.TasksPerNode, s.GpusPerTask, s.CpusPerTask)
	}
	if s.SubmitHost != "" {
		fmt.Fprintf(b, "submit-host=%s\n", s.SubmitHost)
	}
	writeForm(b, s.RequestForm)
	writePlacement(b, s)
	if s.Env != nil {
		b.WriteString("env map: sbatch sends the environment as a list\n")
	}
	fmt.Fprintf(b, "env: %s\n", strings.Join(s.Environment, " "))
	if strings.Contains(s.Script, "sbatch --wrap") {
		fmt.Fprintf(b, "script:\n%s", s.Script)
	}
}

// writeForm prints which options gave the tasks, GPUs and memory, when
// any did.
func writeForm(b *strings.Builder, f *phalanxv1.RequestForm) {
	var given []string
	for _, o := range []struct {
		set  bool
		name string
	}{{f.GetNtasks(), "ntasks"}, {f.GetNtasksPerNode(), "ntasks-per-node"}, {f.GetGpusPerNode(), "gpus-per-node"}, {f.GetGpus(), "gpus"}, {f.GetGpusSplit(), "gpus-split"}, {f.GetGpusPerTask(), "gpus-per-task"}} {
		if o.set {
			given = append(given, o.name)
		}
	}
	if f.GetMemPerCpuMb() != 0 {
		given = append(given, fmt.Sprintf("mem-per-cpu=%d", f.GetMemPerCpuMb()))
	}
	if f.GetMemPerGpuMb() != 0 {
		given = append(given, fmt.Sprintf("mem-per-gpu=%d", f.GetMemPerGpuMb()))
	}
	if len(given) > 0 {
		fmt.Fprintf(b, "given: %s\n", strings.Join(given, " "))
	}
}

// writePlacement prints the placement and ordering fields that are set.
func writePlacement(b *strings.Builder, s *phalanxv1.JobSpec) {
	if len(s.Nodelist) > 0 {
		fmt.Fprintf(b, "nodelist=%s\n", strings.Join(s.Nodelist, ","))
	}
	if len(s.Exclude) > 0 {
		fmt.Fprintf(b, "exclude=%s\n", strings.Join(s.Exclude, ","))
	}
	for _, kv := range [][2]string{{"constraint", s.Constraint}, {"qos", s.Qos}} {
		if kv[1] != "" {
			fmt.Fprintf(b, "%s=%s\n", kv[0], kv[1])
		}
	}
	if s.Exclusive {
		b.WriteString("exclusive\n")
	}
	if s.Switches != 0 || s.SwitchesWaitSeconds != 0 {
		fmt.Fprintf(b, "switches=%d wait-s=%d\n", s.Switches, s.SwitchesWaitSeconds)
	}
	if s.Segment != 0 {
		fmt.Fprintf(b, "segment=%d\n", s.Segment)
	}
	if s.Nice != 0 {
		fmt.Fprintf(b, "nice=%d\n", s.Nice)
	}
	if s.Signal != 0 {
		fmt.Fprintf(b, "signal=%d seconds=%d batch=%v\n", s.Signal, s.SignalSeconds, s.SignalBatch)
	}
	if s.CheckpointDir != "" || s.CheckpointKeep != 0 {
		fmt.Fprintf(b, "checkpoint-dir=%s keep=%d\n", s.CheckpointDir, s.CheckpointKeep)
	}
	if s.HangTimeoutSeconds != 0 {
		fmt.Fprintf(b, "hang-timeout-s=%d\n", s.HangTimeoutSeconds)
	}
	if s.OpenMode != phalanxv1.OpenMode_OPEN_MODE_UNSPECIFIED {
		fmt.Fprintf(b, "open-mode=%s\n", s.OpenMode)
	}
	if s.Array != "" || s.Dependency != "" || s.Hold {
		fmt.Fprintf(b, "array=%q dependency=%q hold=%v\n", s.Array, s.Dependency, s.Hold)
	}
	if s.NoRequeue || s.MaxRestarts != nil || s.RestartOn != "" {
		fmt.Fprintf(b, "no-requeue=%v max-restarts=%v restart-on=%q\n", s.NoRequeue, s.GetMaxRestarts(), s.RestartOn)
	}
}

// The command is recorded as Slurm shows it: the script's absolute path
// and arguments (none for --wrap or standard input) and the whole line.
func TestParseRecordsTheCommand(t *testing.T) {
	for _, c := range []struct {
		line, path, submit string
		args               []string
	}{
		{"-N 2 sub/job.sh a 'b c' -N 3", "/home/alice/run/sub/job.sh", "sbatch -N 2 sub/job.sh a b c -N 3", []string{"a", "b c", "-N", "3"}},
		{"/abs/job.sh", "/abs/job.sh", "sbatch /abs/job.sh", nil},
		{"--wrap 'sleep 1'", "", "sbatch --wrap sleep 1", nil},
	} {
		req, err := parseWith(t, c.line, "#!/bin/sh\n", nil)
		if err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		s := req.Spec
		if s.ScriptPath != c.path || s.SubmitLine != c.submit || fmt.Sprint(s.ScriptArgs) != fmt.Sprint(c.args) {
			t.Errorf("%s: path %q args %q line %q; want %q %q %q", c.line, s.ScriptPath, s.ScriptArgs, s.SubmitLine, c.path, c.args, c.submit)
		}
	}
}

// TestDOSLineBreaks: a script with DOS line breaks is refused, as Slurm's
// sbatch refuses it, from a file or standard input, after the checks
// Slurm makes before it; a --wrap command is not a script file, and is
// not checked, as in Slurm.
func TestDOSLineBreaks(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		script string
		want   error
	}{
		{[]string{"job.sh"}, "#!/bin/bash\r\n#SBATCH -t 5\r\necho hi\r\n", ErrDOSLineBreaks},
		{nil, "#!/bin/bash\r\necho hi\r\n", ErrDOSLineBreaks},
		{[]string{"job.sh"}, "#!/bin/bash\necho hi\r\n", ErrDOSLineBreaks},
		{[]string{"job.sh"}, "echo hi\r\n", ErrNotBatchScript},
		{[]string{"job.sh"}, " \r\n", ErrWhitespaceScript},
		{[]string{"job.sh"}, "#!/bin/bash\necho 'a\rb'\n", nil}, // a lone \r is not a line break
		{[]string{"--wrap", "echo hi\r\necho there"}, "", nil},
	} {
		env := Env{
			User: "alice", UID: 1000, GID: 100, Cwd: "/home/alice/run",
			ReadFile:  func(string) ([]byte, error) { return []byte(tc.script), nil },
			ReadStdin: func() ([]byte, error) { return []byte(tc.script), nil },
		}
		_, err := Parse(tc.args, env)
		if err != tc.want {
			t.Errorf("sbatch %q, script %q: error %v, want %v", tc.args, tc.script, err, tc.want)
		}
	}
}

// A job name with a NUL byte, which no task could be started with (it
// failed at launch: "exec: environment variable contains NUL"), with a
// line break, or past cluster.MaxJobName, is refused before the submit,
// from -J or from a #SBATCH line; scontrol update refused the last two
// already.
func TestParseRefusesBadJobNames(t *testing.T) {
	for _, tc := range []struct{ args, script, want string }{
		{"-J a\x00b", "#!/bin/sh\n", `job name "a\x00b" holds a NUL byte, which no process environment can (SLURM_JOB_NAME): give one line of text`},
		{"-J a\nb", "#!/bin/sh\n", `job name "a\nb" holds a line break: give one line of text`},
		{"", "#!/bin/sh\n#SBATCH -J a\x00b\n", "job.sh: line 2 holds a NUL byte"}, // the script's NUL, first
		{"-J " + strings.Repeat("x", 257), "#!/bin/sh\n", "job name of 257 bytes: at most 256"},
	} {
		args := []string{"job.sh"}
		if tc.args != "" {
			args = append(strings.SplitN(tc.args, " ", 2), args...)
		}
		env := Env{User: "alice", Cwd: "/home/alice", ReadFile: func(string) ([]byte, error) { return []byte(tc.script), nil }}
		if _, err := Parse(args, env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sbatch %q with %q: %v; want an error saying %q", args, tc.script, err, tc.want)
		}
	}
	if _, err := Parse([]string{"-J", strings.Repeat("x", 256), "job.sh"}, Env{User: "alice", Cwd: "/", ReadFile: func(string) ([]byte, error) { return []byte("#!/bin/sh\n"), nil }}); err != nil {
		t.Errorf("a name of 256 bytes: %v", err)
	}
}
