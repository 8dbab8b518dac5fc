package cluster

import "testing"

func TestExpandOutput(t *testing.T) {
	v := OutputVars{JobID: 42, Name: "train", User: "alice", Node: "gpu007.cluster.local", Rank: 3}
	for _, tc := range []struct{ in, want string }{
		{"slurm-%j.out", "slurm-42.out"},
		{"%x-%j.log", "train-42.log"},
		{"%u/%x/%j/%N-%n-%t.out", "alice/train/42/gpu007-3-3.out"},
		{"%4j", "0042"},
		{"%08j", "00000042"},
		{"%1j", "42"},
		{"%3t-%2n", "003-03"},
		{"%5N %5x %5u", "gpu007 train alice"}, // width ignored for names
		{"100%%", "100%"},
		{"%%j", "%j"},
		{"%A", "42"},
		{"%A_%a", "42_4294967294"}, // outside an array %a is Slurm's NO_VAL
		{"%b", "4"},                // and %b that modulo 10
		{"%J-%s", "42.batch-batch"},
		{"%6J", "000042.batch"},
		{"%q %Z", "%q %Z"},
		{"%3q", "%3q"},
		{"trailing %", "trailing %"},
		{"trailing %12", "trailing %12"},
		{"", ""},
		{"plain", "plain"},
	} {
		if got := ExpandOutput(tc.in, v); got != tc.want {
			t.Errorf("ExpandOutput(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// A job not placed has no host: %N stays as written.
	if got := ExpandOutput("%N-%j", OutputVars{JobID: 7}); got != "%N-7" {
		t.Errorf("%%N without a node: %q", got)
	}
}

// A task of a job array names its files by the array's ID and its index;
// without -o, Slurm's slurm-%A_%a.out.
func TestArrayOutputPatterns(t *testing.T) {
	v := OutputVars{JobID: 45, Name: "sweep", Array: &ArrayTask{JobID: 42, TaskID: 13}}
	if got := ExpandOutput("%A_%a-%j.%3a-%b", v); got != "42_13-45.013-3" {
		t.Errorf("ExpandOutput = %q", got)
	}
	if out, _ := OutputPaths("", "", "/w", v); out != "/w/slurm-42_13.out" {
		t.Errorf("default output of an array task = %q", out)
	}
}

func TestOutputPaths(t *testing.T) {
	v := OutputVars{JobID: 7, Name: "job", User: "bob", Node: "n1", Rank: 1}
	for _, tc := range []struct {
		name, out, err, wantOut, wantErr string
	}{
		{"defaults", "", "", "/w/slurm-7.out", "/w/slurm-7.out"},
		{"relative -o, no -e", "logs/%x.%j.out", "", "/w/logs/job.7.out", "/w/logs/job.7.out"},
		{"absolute -o and -e", "/scratch/%u/%j.out", "/scratch/%u/%j.err", "/scratch/bob/7.out", "/scratch/bob/7.err"},
		{"-e only", "", "err-%t.txt", "/w/slurm-7.out", "/w/err-1.txt"},
		{"cleaned", "/a//b/../%j.out", "./%N.err", "/a/7.out", "/w/n1.err"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := OutputPaths(tc.out, tc.err, "/w", v)
			if out != tc.wantOut || err != tc.wantErr {
				t.Errorf("OutputPaths(%q, %q) = %q, %q; want %q, %q", tc.out, tc.err, out, err, tc.wantOut, tc.wantErr)
			}
		})
	}
}
