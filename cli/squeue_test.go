package cli

import (
	"strings"
	"testing"
)

// squeue -O names Slurm's fields and -l is Slurm's long format: both
// become the -o format that prints the same.
func TestSqueueFormatByName(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-O", "JobID:.10 ,username:8,ReasonList"}, "%.10A %8u%20R"}, // Slurm's JobID is %A
		{[]string{"-O", "JobArrayID,jobid:3"}, "%20i%3A"},
		{[]string{"--Format=State:,Dependency:5%"}, "%T%5E%%"},
		{[]string{"-l"}, SqueueLongFormat},
		{[]string{"-l", "-O", "JobID:5"}, "%5A"},       // -O goes with -l (its date line)
		{[]string{"--start", "-l"}, SqueueStartFormat}, // --start's columns, -l's date line
	} {
		q, err := parseSqueue(tc.args)
		if err != nil || q.view.Format != tc.want {
			t.Errorf("squeue %q: format %q, %v; want %q", tc.args, q.view.Format, err, tc.want)
		}
	}
	// As Slurm's squeue, -o and -l are mutually exclusive.
	for _, args := range [][]string{{"-l", "-o", "%i"}, {"-o", "%i", "--long"}} {
		if _, err := parseSqueue(args); err == nil || err.Error() != "squeue: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry." {
			t.Errorf("squeue %q: %v, want Slurm's fatal error", args, err)
		}
	}
	for args, want := range map[string]string{
		"JobID,Bogus": `invalid field "Bogus"`,
		"JobID:.":     "a right-aligned field needs a width",
		",":           "no fields",
	} {
		if _, err := parseSqueue([]string{"-O", args}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("squeue -O %q: %v, want an error saying %q", args, err, want)
		}
	}
}

// An unknown -o letter is one line that names the letters there are, as
// sinfo's does, before phx calls the controller (there is none here).
func TestSqueueFormatErrorNamesFields(t *testing.T) {
	code, stdout, stderr := runOut(t, closedAddr(t), "squeue", "-o", "%i %w")
	if code != 1 || stdout != "" || !strings.HasPrefix(stderr, "squeue: error: --format: invalid format field %w: the fields are %a %A %b %B ") ||
		!strings.HasSuffix(stderr, "; -O names them (squeue --help)\n") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("squeue -o '%%i %%w': code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
