package cli

import (
	"fmt"
	"testing"
)

func TestParseLogs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the request, or the error
	}{
		{[]string{"42"}, "job=42 task=0 follow=false err=false offset=0"},
		{[]string{"-f", "42", "--task", "9", "-e"}, "job=42 task=9 follow=true err=true offset=0"},
		{[]string{"--tail=2K", "42"}, "job=42 task=0 follow=false err=false offset=-2048"},
		{[]string{"--tail", "1", "42"}, "job=42 task=0 follow=false err=false offset=-1"},
		{[]string{}, "give one job ID: phx logs [-f] JOBID [--task N] [--err]"},
		{[]string{"1", "2"}, "give one job ID: phx logs [-f] JOBID [--task N] [--err]"},
		{[]string{"x"}, `invalid job id "x": write JOBID or ARRAYID_INDEX`},
		{[]string{"40_x"}, `invalid job id "40_x": write JOBID or ARRAYID_INDEX`},
		{[]string{"42", "--task=-1"}, "--task=-1: give a task number, 0 or more"},
		{[]string{"42", "--tail=0"}, "--tail=0: want a positive size such as 4096, 64K or 1M"},
		{[]string{"42", "--tail=9999999999G"}, "--tail=9999999999G: want a positive size such as 4096, 64K or 1M"},
		{[]string{"42", "--bogus"}, "unrecognized option '--bogus'"},
	} {
		q, err := parseLogs(tc.args)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			r := q.req
			got = fmt.Sprintf("job=%d task=%d follow=%v err=%v offset=%d", r.JobId, q.task, r.Follow, r.Stderr, r.Offset)
		}
		if got != tc.want {
			t.Errorf("phx logs %q: %s, want %s", tc.args, got, tc.want)
		}
	}
}

func TestParseLogsArrayTask(t *testing.T) {
	q, err := parseLogs([]string{"40_3", "-f"})
	if err != nil || q.req.JobId != 40 || !q.arrayTask || q.arrayIndex != 3 || !q.req.Follow {
		t.Errorf("40_3: %+v, %v", q, err)
	}
}
