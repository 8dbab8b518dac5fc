package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scontrol show hostnames/hostlist need no controller: the address given
// here serves nothing.
func TestScontrolHostLists(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(file, []byte("h3\nh1 h2,h4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		env    string // SLURM_JOB_NODELIST, and after a |, SLURM_NODELIST (a step's)
		code   int
		stdout string
		stderr string
	}{
		{[]string{"show", "hostnames", "gpu[001-003],cpu7"}, "", 0, "gpu001\ngpu002\ngpu003\ncpu7\n", ""},
		{[]string{"show", "hostnames"}, "gpu[010-011]", 0, "gpu010\ngpu011\n", ""},
		{[]string{"show", "hostnames"}, "gpu[010-011]|gpu011", 0, "gpu011\n", ""}, // in a step: its nodes, as Slurm's
		{[]string{"show", "hostnames"}, "", 1, "", "no host list: give one"},
		{[]string{"show", "hostnames", "gpu[3-1]"}, "", 1, "", `hostlist "gpu[3-1]": reversed range "3-1"`},
		{[]string{"show", "hostlist", "gpu003,gpu001,gpu002"}, "", 0, "gpu[003,001-002]\n", ""},
		{[]string{"show", "hostlistsorted", "gpu003,gpu001,gpu002,gpu001"}, "", 0, "gpu[001-003]\n", ""},
		// As Slurm's scontrol: a prefix names the entity, a path a file of names.
		{[]string{"show", "hostn", "gpu[1-2]"}, "", 0, "gpu1\ngpu2\n", ""},
		{[]string{"show", "hostl", "n2,n1"}, "", 0, "n[2,1]\n", ""},
		{[]string{"show", "hostlists", "n2,n1"}, "", 0, "n[1-2]\n", ""},
		{[]string{"show", "host", "n1"}, "", 1, "", "invalid entity"},
		{[]string{"show", "hostlistsorted", file}, "", 0, "h[1-4]\n", ""},
		{[]string{"show", "hostnames", file}, "", 0, "h3\nh1\nh2\nh4\n", ""},
		{[]string{"show", "hostlist", file + ".none"}, "", 1, "", "host list file"},
	} {
		sys, stdout, stderr := testSystem(t, "127.0.0.1:1")
		getenv := sys.Getenv
		job, step, _ := strings.Cut(tc.env, "|")
		sys.Getenv = func(k string) string {
			switch k {
			case "SLURM_JOB_NODELIST":
				return job
			case "SLURM_NODELIST":
				return step
			}
			return getenv(k)
		}
		code := Run(context.Background(), sys, append([]string{"/x/scontrol"}, tc.args...))
		if code != tc.code || stdout.String() != tc.stdout || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("scontrol %v (SLURM_JOB_NODELIST=%q): code %d, stdout %q, stderr %q; want %d, %q, %q",
				tc.args, tc.env, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
}
