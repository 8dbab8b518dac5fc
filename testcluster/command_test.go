package testcluster_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/testcluster"
)

// sbatch script [args...]: the arguments reach the batch script as $1...,
// and the command is shown as Slurm shows it (scontrol's Command, squeue's
// COMMAND, sacct's SubmitLine and Cluster), with its --comment.
func TestScriptArgumentsReachTheScript(t *testing.T) {
	alice := localUser(t, "phxargs")
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Runtime: "process"})
	dir := userDir(t, alice)
	script := "#!/bin/sh\n#SBATCH -N 1 -o args-%j.out\nprintf '%s|' \"$#\" \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "args.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	// -N 3 after the script is the script's, not sbatch's.
	id, jobID := sbatchAs(t, c, alice, dir, "--comment", "nightly eval", "args.sh", "one", "two words", "-N", "3")
	if job := c.WaitJob(jobID, 20*time.Second, "COMPLETED", "FAILED"); job.State != "COMPLETED" {
		t.Fatalf("job ended %s", job.State)
	}
	got, err := os.ReadFile(filepath.Join(dir, "args-"+id+".out"))
	if want := "4|one|two words|-N|3|"; err != nil || string(got) != want {
		t.Errorf("the script printed %q (%v); want %q", got, err, want)
	}
	command := filepath.Join(dir, "args.sh") + " one two words -N 3"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"scontrol", "show", "job", id}, "   Command=" + command + "\n"},
		{[]string{"squeue", "-h", "-t", "all", "-j", id, "-o", "%o"}, command + "\n"},
		{[]string{"sacct", "-n", "-P", "-j", id, "-o", "submitline,cluster,comment"}, "sbatch --parsable --comment nightly eval args.sh one two words -N 3|phalanx|nightly eval\n"},
		{[]string{"squeue", "-h", "-t", "all", "-j", id, "-o", "%k"}, "nightly eval\n"},
	} {
		code, out, errOut := phxAs(t, c, alice, dir, nil, tc.args...)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("phx %q: exit %d, stdout %q, stderr %q; want %q", tc.args, code, out, errOut, tc.want)
		}
	}
}
