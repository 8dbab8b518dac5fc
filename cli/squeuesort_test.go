package cli

import (
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// slurmQueue is the queue of a live Slurm 22.05 (priority/basic, CLOUD
// nodes, so started jobs stay CONFIGURING) at testNow, in the order its
// controller lists it: array 6's pending tasks are its record, which the
// controller moved to the end of its list when task 1 started (as job 13).
// Jobs 9 to 17 are held.
const slurmQueue = `
job id=1 name=first part=gpu state=CONFIGURING prio=4294901759 submit=-6m5s start=-6m4s limit=1:00:00 nodes=gpu001 cpus=8
job id=2 name=dbgrun part=debug state=CONFIGURING prio=4294901758 submit=-6m5s start=-6m4s limit=1:00:00 nodes=gpu002 cpus=8
job id=3 name=held part=gpu state=PENDING reason=JobHeldUser submit=-6m5s limit=1:00:00
job id=5 name=nice part=gpu state=PENDING reason=Priority prio=4294901656 submit=-6m5s expected=+3h53m40s limit=1:00:00 req-nodes=2
job id=13 array-job=6 array-task=1 throttle=2 name=arr part=gpu state=CONFIGURING prio=4294901755 submit=-6m5s start=-5m55s limit=1:00:00 nodes=gpu004 cpus=8
job id=7 name=dbgpd part=debug state=PENDING reason=Resources prio=4294901754 submit=-6m5s expected=+2h53m40s limit=1:00:00 req-nodes=4
job id=8 name=boost part=gpu state=CONFIGURING prio=4294901800 submit=-6m5s start=-5m55s limit=1:00:00 nodes=gpu003 cpus=8
job id=9 name=h1 part=gpu state=PENDING reason=JobHeldUser submit=-5m55s limit=1:00:00
job id=10 name=h2 part=gpu state=PENDING reason=JobHeldUser submit=-5m55s limit=30:00
job id=11 name=h3 part=gpu state=PENDING reason=JobHeldUser submit=-5m55s limit=1:30:00
job id=12 name=h4 part=debug state=PENDING reason=JobHeldUser submit=-5m55s limit=1:00:00
job id=62 array-job=6 array-task=2 throttle=2 name=arr part=gpu state=PENDING reason=Resources prio=4294901755 submit=-6m5s expected=+1h53m40s limit=1:00:00
job id=63 array-job=6 array-task=3 throttle=2 name=arr part=gpu state=PENDING reason=Resources prio=4294901755 submit=-6m5s expected=+1h53m40s limit=1:00:00
job id=64 array-job=6 array-task=4 throttle=2 name=arr part=gpu state=PENDING reason=Resources prio=4294901755 submit=-6m5s expected=+1h53m40s limit=1:00:00
job id=65 array-job=6 array-task=5 throttle=2 name=arr part=gpu state=PENDING reason=Resources prio=4294901755 submit=-6m5s expected=+1h53m40s limit=1:00:00
job id=66 array-job=6 array-task=6 throttle=2 name=arr part=gpu state=PENDING reason=Resources prio=4294901755 submit=-6m5s expected=+1h53m40s limit=1:00:00
job id=14 name=hx part=gpu state=PENDING reason=JobHeldUser submit=-4m44s limit=1:00:00
job id=15 name=hx part=gpu state=PENDING reason=JobHeldUser submit=-4m43s limit=1:00:00
job id=16 name=hx part=gpu state=PENDING reason=JobHeldUser submit=-4m43s limit=1:00:00
job id=17 name=hx part=gpu state=PENDING reason=JobHeldUser submit=-4m43s limit=1:00:00
`

// squeue's order is Slurm's: what `squeue -h -o %i [-S SPEC]` printed for
// slurmQueue, live, for each SPEC ("" for none: the default, P,t,-p).
// Held jobs (no start time) come in the reverse of the controller's order
// where nothing else tells them apart, and an array's folded pending tasks
// after its started ones by -S i.
func TestSqueueSortLikeSlurm(t *testing.T) {
	jobs := parseObjects(t, slurmQueue).jobs
	for _, tc := range []struct{ spec, want string }{
		{"", "2 7 12 8 1 6_1 6_[2-6%2] 5 17 16 15 14 11 10 9 3"},
		{"P", "7 2 12 5 6_[2-6%2] 6_1 8 1 17 16 15 14 11 10 9 3"},
		{"i", "1 2 3 5 6_1 6_[2-6%2] 7 8 9 10 11 12 14 15 16 17"},
		{"-i", "17 16 15 14 12 11 10 9 8 7 6_[2-6%2] 6_1 5 3 2 1"},
		{"t", "6_1 8 1 2 5 7 6_[2-6%2] 17 16 15 14 12 11 10 9 3"},
		{"-t", "5 7 6_[2-6%2] 17 16 15 14 12 11 10 9 3 6_1 8 1 2"},
		{"T", "6_1 8 1 2 5 7 6_[2-6%2] 17 16 15 14 12 11 10 9 3"},
		{"-T", "5 7 6_[2-6%2] 17 16 15 14 12 11 10 9 3 6_1 8 1 2"},
		{"p", "17 16 15 14 12 11 10 9 3 5 7 6_[2-6%2] 6_1 2 1 8"},
		{"-p", "8 1 2 6_[2-6%2] 6_1 7 5 17 16 15 14 12 11 10 9 3"},
		{"Q", "17 16 15 14 12 11 10 9 3 5 7 6_[2-6%2] 6_1 2 1 8"},
		{"u", "5 7 6_[2-6%2] 6_1 8 1 2 17 16 15 14 12 11 10 9 3"},
		{"j", "6_[2-6%2] 6_1 8 7 2 1 9 10 11 12 3 17 16 15 14 5"},
		{"-j", "5 17 16 15 14 3 12 11 10 9 1 2 7 8 6_[2-6%2] 6_1"},
		{"l", "10 5 7 6_[2-6%2] 6_1 8 1 2 17 16 15 14 12 9 3 11"},
		{"-l", "11 5 7 6_[2-6%2] 6_1 8 1 2 17 16 15 14 12 9 3 10"},
		{"D", "6_[2-6%2] 6_1 8 1 2 17 16 15 14 12 11 10 9 3 5 7"},
		{"-D", "7 5 6_[2-6%2] 6_1 8 1 2 17 16 15 14 12 11 10 9 3"},
		{"S", "1 2 6_1 8 6_[2-6%2] 7 5 3 9 10 11 12 14 15 16 17"},
		{"-S", "5 7 6_[2-6%2] 6_1 8 1 2 3 9 10 11 12 14 15 16 17"},
		{"e", "17 16 15 14 12 11 10 9 3 1 2 6_1 8 6_[2-6%2] 7 5"},
		{"-e", "5 7 6_[2-6%2] 6_1 8 1 2 17 16 15 14 12 11 10 9 3"},
		{"V", "5 7 6_[2-6%2] 6_1 8 1 2 3 12 11 10 9 14 17 16 15"},
		{"-V", "17 16 15 14 12 11 10 9 5 7 6_[2-6%2] 6_1 8 1 2 3"},
		{"M", "5 7 6_[2-6%2] 17 16 15 14 12 11 10 9 3 6_1 8 1 2"},
		{"-M", "1 2 6_1 8 5 7 6_[2-6%2] 17 16 15 14 12 11 10 9 3"},
		{"L", "10 1 2 6_1 8 5 7 6_[2-6%2] 17 16 15 14 12 9 3 11"},
		{"-L", "11 5 7 6_[2-6%2] 17 16 15 14 12 9 3 6_1 8 1 2 10"},
		{"N", "1 2 8 6_1 3 9 10 11 12 14 15 16 17 6_[2-6%2] 7 5"},
		{"-N", "5 7 6_[2-6%2] 17 16 15 14 12 11 10 9 3 6_1 8 2 1"},
		{"B", "5 7 6_[2-6%2] 17 16 15 14 12 11 10 9 3 1 2 8 6_1"},
		{"-B", "6_1 8 2 1 5 7 6_[2-6%2] 17 16 15 14 12 11 10 9 3"},
		{"C", "6_[2-6%2] 17 16 15 14 12 11 10 9 3 5 7 6_1 8 1 2"},
		{"m", "5 7 6_[2-6%2] 6_1 8 1 2 17 16 15 14 12 11 10 9 3"},
		{"P,-i", "12 7 2 17 16 15 14 11 10 9 8 6_[2-6%2] 6_1 5 3 1"},
		{"t,j", "6_1 8 2 1 6_[2-6%2] 7 9 10 11 12 3 17 16 15 14 5"},
		{",", "5 7 6_[2-6%2] 6_1 8 1 2 17 16 15 14 12 11 10 9 3"}, // -S "": no field
		{"b", "5 7 6_[2-6%2] 6_1 8 1 2 17 16 15 14 12 11 10 9 3"},
		{"i,b", "1 2 3 5 6_1 6_[2-6%2] 7 8 9 10 11 12 14 15 16 17"},
	} {
		out, err := FormatSqueue(jobs, SqueueView{Format: "%i", NoHeader: true, Sort: tc.spec, Now: testNow, Loc: time.UTC})
		if got := strings.Join(strings.Fields(out), " "); err != nil || got != tc.want {
			t.Errorf("squeue -S %q:\n got %s (%v)\nwant %s", tc.spec, got, err, tc.want)
		}
	}
}

// An array's pending tasks are one record, which -r prints a row each in
// task order wherever the sort puts it; --start sorts pending jobs by S.
// As Slurm 22.05 printed them for slurmQueue.
func TestSqueueSortArrayAndStartLikeSlurm(t *testing.T) {
	jobs := parseObjects(t, slurmQueue).jobs
	for _, tc := range []struct {
		name string
		jobs []*phalanxv1.Job
		view SqueueView
		want string
	}{
		{"-r", jobs, SqueueView{Array: true}, "2 7 12 8 1 6_1 6_2 6_3 6_4 6_5 6_6 5 17 16 15 14 11 10 9 3"},
		{"-r -S -i", jobs, SqueueView{Array: true, Sort: "-i"}, "17 16 15 14 12 11 10 9 8 7 6_2 6_3 6_4 6_5 6_6 6_1 5 3 2 1"},
		{"--start", pendingJobs(jobs), SqueueView{Sort: squeueStartSort}, "6_[2-6%2] 7 5 3 9 10 11 12 14 15 16 17"},
		{"--start -S -i", pendingJobs(jobs), SqueueView{Sort: "-i"}, "17 16 15 14 12 11 10 9 7 6_[2-6%2] 5 3"},
	} {
		v := tc.view
		v.Format, v.NoHeader, v.Now, v.Loc = "%i", true, testNow, time.UTC
		out, err := FormatSqueue(tc.jobs, v)
		if got := strings.Join(strings.Fields(out), " "); err != nil || got != tc.want {
			t.Errorf("squeue %s:\n got %s (%v)\nwant %s", tc.name, got, err, tc.want)
		}
	}
}

// -S is read as Slurm's squeue reads it, from the end: a "-" reverses the
// letter after it, commas and "+" are skipped, "cluster" is a field, b is
// a vestige Slurm notes and skips, and a letter it does not sort by is its
// error (the last such letter, after the notes it printed on the way).
func TestParseSqueueSort(t *testing.T) {
	for _, tc := range []struct {
		spec, keys string // keys: in the order they are sorted by, "-" for descending
		notes, err string
	}{
		{spec: "P,t,-p", keys: "-p t P"},
		{spec: "Pi", keys: "i P"},
		{spec: "--i,+j", keys: "j -i"},
		{spec: "i-", keys: "i"},
		{spec: "-cluster,Cluster,u", keys: "u"},
		{spec: "S,-S", keys: "-S S"},
		{spec: "c,d,f,h,n,v,z,H,I,J,O"},
		{spec: ","},
		{spec: "i,b", keys: "i", notes: "squeue: Invalid sort specification: b"},
		{spec: "X", err: "squeue: error: Invalid sort specification: X"},
		{spec: "X,Y", err: "squeue: error: Invalid sort specification: Y"},
		{spec: "a", err: "squeue: error: Invalid sort specification: a"},
		{spec: "b,X", err: "squeue: error: Invalid sort specification: X"},
		{spec: "X,b", err: "squeue: Invalid sort specification: b\nsqueue: error: Invalid sort specification: X"},
	} {
		notes, err := checkSqueueSort(tc.spec)
		keys, _, _ := parseSqueueSort(tc.spec)
		var got []string
		for _, k := range keys {
			got = append(got, map[bool]string{true: "-"}[k.desc]+string(k.field))
		}
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if strings.Join(got, " ") != tc.keys || strings.Join(notes, "\n") != tc.notes || gotErr != tc.err {
			t.Errorf("-S %q: keys %q, notes %q, error %q; want %q, %q, %q", tc.spec, got, notes, gotErr, tc.keys, tc.notes, tc.err)
		}
	}
	// -S "" sorts by nothing, not by the default; --start's default is S.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-S", ""}, ","},
		{[]string{"--sort=-i"}, "-i"},
		{nil, ""},
		{[]string{"--start"}, squeueStartSort},
		{[]string{"--start", "-S", "u"}, "u"},
	} {
		q, err := parseSqueue(tc.args)
		if err != nil || q.view.Sort != tc.want {
			t.Errorf("squeue %q: sort %q, %v; want %q", tc.args, q.view.Sort, err, tc.want)
		}
	}
}

// squeue -S prints Slurm's note for b on stderr and lists the jobs; a
// letter it does not sort by is its error, after the notes, and nothing is
// listed.
func TestSqueueSortNotesThroughPhx(t *testing.T) {
	_, addr := startFake(t)
	for _, tc := range []struct {
		args           []string
		code           int
		header, stderr string
	}{
		{[]string{"-S", "b,-i"}, 0, "JOBID\n", "squeue: Invalid sort specification: b\n"},
		{[]string{"-S", "X,b"}, 1, "", "squeue: Invalid sort specification: b\nsqueue: error: Invalid sort specification: X\n"},
		{[]string{"--sort=u"}, 0, "JOBID\n", ""},
	} {
		code, stdout, stderr := runOut(t, addr, append([]string{"squeue", "-o", "%i"}, tc.args...)...)
		if code != tc.code || !strings.HasPrefix(stdout, tc.header) || (tc.header == "") != (stdout == "") || stderr != tc.stderr {
			t.Errorf("squeue %q: code %d, stdout %q, stderr %q; want %d, %q..., %q", tc.args, code, stdout, stderr, tc.code, tc.header, tc.stderr)
		}
	}
}
