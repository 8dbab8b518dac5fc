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
		{[]string{"-l", "-o", "%i"}, "%i"},
	} {
		q, err := parseSqueue(tc.args)
		if err != nil || q.view.Format != tc.want {
			t.Errorf("squeue %q: format %q, %v; want %q", tc.args, q.view.Format, err, tc.want)
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
