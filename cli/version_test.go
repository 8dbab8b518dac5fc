package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

// Every Slurm-named command answers -V and --version as Slurm's do, with
// "slurm 22.05.8" alone on stdout, the line scripts parse (law's
// get_slurm_version wants three numbers, pyslurm's build nothing after
// them); Phalanx's version is on stderr. They were refused as unknown
// options.
func TestSlurmCommandsVersion(t *testing.T) {
	slurmLine := regexp.MustCompile(`^slurm \d+\.\d+\.\d+\n$`)
	addr := closedAddr(t) // no controller is asked
	for _, cmd := range []string{"sbatch", "srun", "squeue", "sinfo", "scancel", "scontrol", "sacct", "sshare"} {
		for _, args := range [][]string{{"--version"}, {"-V"}, {"--vers"}} {
			if cmd == "scontrol" && args[0] == "--vers" {
				continue // ambiguous with --verbose, as in Slurm's scontrol
			}
			for _, argv0 := range []string{"phx", cmd} { // phx sbatch, and sbatch (a link)
				line := append([]string{argv0}, args...)
				if argv0 == "phx" {
					line = append([]string{"phx", cmd}, args...)
				}
				sys, out, errOut := testSystem(t, addr)
				code := Run(context.Background(), sys, line)
				if code != 0 || out.String() != "slurm "+SlurmRelease+"\n" || !slurmLine.MatchString(out.String()) ||
					errOut.String() != "phx version "+Version()+"\n" {
					t.Errorf("%q: code %d, stdout %q, stderr %q", line, code, out, errOut)
				}
			}
		}
	}
	for _, args := range []string{"scontrol version", "scontrol -o version", "sbatch -N 2 --version nowhere.sh", "squeue -t R -V", "srun -N2 --version hostname"} {
		code, stdout, stderr := runOut(t, addr, strings.Fields(args)...)
		if code != 0 || stdout != "slurm "+SlurmRelease+"\n" || !strings.HasPrefix(stderr, "phx version ") {
			t.Errorf("phx %s: code %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	// After the script, --version is the script's.
	if code, stdout, stderr := runOut(t, addr, "sbatch", "nowhere.sh", "--version"); code != 1 || stdout != "" || !strings.Contains(stderr, "unable to open file nowhere.sh") {
		t.Errorf("sbatch nowhere.sh --version: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := runOut(t, addr, "scontrol", "version", "x"); code != 1 || stderr != "scontrol: error: scontrol version takes no arguments\n" {
		t.Errorf("scontrol version x: code %d, stderr %q", code, stderr)
	}
}
