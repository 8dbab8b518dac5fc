package nodeagent

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestSrunShimRunsItsCommandHere(t *testing.T) {
	bin, err := writeJobBin(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	srun := filepath.Join(bin, "srun")
	if fi, err := os.Stat(srun); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("srun: %v %v", fi, err)
	}
	for _, tc := range []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{[]string{"echo", "hi"}, "hi\n", "", 0},
		{[]string{"-N", "2", "--ntasks-per-node=1", "--mpi=pmix", "-l", "echo", "a", "-n", "b"}, "a -n b\n", "", 0},
		{[]string{"-N2", "--gpus-per-node", "8", "--", "echo", "x"}, "x\n", "", 0},
		{[]string{"--ntasks-per-node=8", "echo", "y"}, "y\n", "srun: warning: Phalanx runs one task per node; --ntasks-per-node=8 is ignored", 0},
		{[]string{"-n", "4", "echo", "z"}, "z\n", "srun: warning: Phalanx runs one task per node; -n=4 is ignored", 0},
		{[]string{"sh", "-c", "exit 3"}, "", "", 3},
		{[]string{"-N", "2"}, "", "srun: error: no command to run", 1},
	} {
		cmd := exec.Command("/bin/sh", append([]string{srun}, tc.args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("srun %v: %v", tc.args, err)
		}
		if out.String() != tc.stdout || code != tc.code || !strings.HasPrefix(errb.String(), tc.stderr) || (tc.stderr == "" && errb.Len() > 0) {
			t.Errorf("srun %q: stdout %q stderr %q exit %d; want %q, %q..., %d", tc.args, out.String(), errb.String(), code, tc.stdout, tc.stderr, tc.code)
		}
	}
}

func TestPrependPath(t *testing.T) {
	env := prependPath([]string{"A=1", "PATH=/usr/bin:/bin"}, "/job/bin")
	if env[1] != "PATH=/job/bin:/usr/bin:/bin" {
		t.Errorf("PATH = %q", env[1])
	}
	if env := prependPath([]string{"A=1"}, "/job/bin"); len(env) != 1 || env[0] != "A=1" {
		t.Errorf("without a PATH the environment changed: %v", env)
	}
}
