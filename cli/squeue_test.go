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

// A field width past maxFieldWidth, or past int's range, is one line of
// error before any call: it would pad every line to it (a width of
// 999999999999 asked for a terabyte and killed phx dev, whose CLI server
// ran it, as it would the agent or controller serving phx on a host), or,
// overflowing, read as no width at all.
func TestFormatWidthBounded(t *testing.T) {
	dead := closedAddr(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"squeue", "-o", "%999999999999i"}, "squeue: error: --format: field width 999999999999 is over 4096: give a smaller width"},
		{[]string{"squeue", "-o", "%.99999999999999999999i"}, "squeue: error: --format: field width 99999999999999999999 is over 4096: give a smaller width"},
		{[]string{"squeue", "-O", "JobID:5000"}, `squeue: error: --Format: "JobID:5000": field width 5000 is over 4096: give a smaller width`},
		{[]string{"sinfo", "-o", "%4097N"}, "sinfo: error: --format: field width 4097 is over 4096: give a smaller width"},
		{[]string{"sinfo", "-O", "NodeList:.99999999999"}, `sinfo: error: --Format: "NodeList:.99999999999": field width 99999999999 is over 4096: give a smaller width`},
		{[]string{"sacct", "-o", "JobID%-99999999999"}, `sacct: error: --format: "JobID%-99999999999": field width -99999999999 is over 4096: give a smaller width`},
	} {
		code, stdout, stderr := runOut(t, dead, tc.args...)
		if code != 1 || stdout != "" || stderr != tc.want+"\n" {
			t.Errorf("%q: code %d, stdout %q\nstderr %q\nwant   %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
	if _, err := sacctColumns("JobID%4096,State%-4096,Elapsed%x"); err != nil {
		t.Errorf("widths up to 4096: %v", err)
	}
}
