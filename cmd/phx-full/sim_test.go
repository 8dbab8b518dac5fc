package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func runSim(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	app := &cli.App{Name: "phx", Commands: []*cli.Command{simCommand()}, Writer: &out, ErrWriter: &errOut}
	err := app.Run(append([]string{"phx", "sim"}, args...))
	return out.String(), err
}

func TestSimCommand(t *testing.T) {
	dir := t.TempDir()
	workload := filepath.Join(dir, "w.json")
	csvPath := filepath.Join(dir, "jobs.csv")
	if err := os.WriteFile(workload, []byte(`[
		{"id": "a", "nodes": 2, "gpus_per_node": 8, "duration_s": 100, "submit_offset_s": 0, "time_limit_s": 200},
		{"id": "b", "nodes": 1, "gpus_per_node": 4, "duration_s": 50, "submit_offset_s": 10}
	]`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runSim(t, "--nodes", "4", "--leaf-size", "2", "--workload", workload, "--jobs-csv", csvPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var sum map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	if sum["jobs"] != 2.0 || sum["makespan_s"] != 100.0 || sum["gpus"] != 32.0 {
		t.Errorf("summary %v", sum)
	}
	csv, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(csv), "a,0,0,100,2,1,8,0,COMPLETED") || !strings.Contains(string(csv), "b,10,10,60,1,1,4,0,COMPLETED") {
		t.Errorf("jobs CSV:\n%s", csv)
	}
}

// --preempt-grace 0s is no grace: the victim is requeued at once and the
// preemptor starts when it arrives (not after the default 60 s).
func TestSimPreemptGraceZero(t *testing.T) {
	dir := t.TempDir()
	workload := filepath.Join(dir, "w.json")
	if err := os.WriteFile(workload, []byte(`[
		{"id": "lo", "nodes": 1, "gpus_per_node": 8, "duration_s": 1000, "submit_offset_s": 0, "partition": "scavenger"},
		{"id": "hi", "nodes": 1, "gpus_per_node": 8, "duration_s": 100, "submit_offset_s": 10}
	]`), 0o644); err != nil {
		t.Fatal(err)
	}
	for grace, want := range map[string]float64{"0s": 1110, "1s": 1111, "60s": 1170} {
		out, err := runSim(t, "--nodes", "1", "--leaf-size", "1", "--workload", workload, "--preempt-grace", grace)
		if err != nil {
			t.Fatal(err)
		}
		var sum map[string]any
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &sum); err != nil {
			t.Fatal(err)
		}
		if sum["preemptions"] != 1.0 || sum["makespan_s"] != want {
			t.Errorf("--preempt-grace %s: summary %v, want 1 preemption and makespan_s %v", grace, sum, want)
		}
	}
}

func TestSimCommandErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`[{"id": "x", "nodes": 0}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", bad}, `workload job 1 (id "x"): nodes is 0`},
		{[]string{"--nodes", "0"}, "sizes must be positive"},
		{[]string{"--partition", "x:tier=high"}, `--partition: partition "x:tier=high": tier "high" is not a number`},
		{[]string{"--topology", "/nonexistent/topology.conf"}, "no such file"},
		{[]string{"--topology", "/nonexistent/topology.conf"}, "--topology /nonexistent/topology.conf: no such file"},
		{[]string{"--workload", "/nonexistent/w.json"}, "--workload /nonexistent/w.json: no such file"},
		{[]string{"--workload", bad}, "--workload " + bad + ": "},
		{[]string{"--partition", "debug:maxtime=1:00:00"}, `maxtime must not contain ':' (it separates the keys): give minutes or D-H`},
		{[]string{"--load", "0"}, "--load 0: want more than 0"},
		{[]string{"--load", "NaN"}, "--load NaN: want more than 0"},
		{[]string{"--preemptible", "1.5"}, "--preemptible 1.5: want a fraction from 0 to 1"},
		{[]string{"--preemptible", "-0.1"}, "--preemptible -0.1: want a fraction from 0 to 1"},
		{[]string{"--fail-rate", "-1"}, "--fail-rate -1: want 0 or more failures per node-hour"},
		{[]string{"--reserve-depth", "-2"}, "--reserve-depth -2: want 0 or more, or -1 (none)"},
		{[]string{"--pass-interval", "0s"}, "--pass-interval 0s: want a duration of more than 0"},
		{[]string{"--preempt-grace", "-1s"}, "--preempt-grace -1s: want a duration of 0 or more"},
		{[]string{"--repair", "0s"}, "--repair 0s: want a duration of more than 0"},
	} {
		if _, err := runSim(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("phx sim %v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestSimCommandGenerated(t *testing.T) {
	out, err := runSim(t, "--nodes", "16", "--leaf-size", "4", "--jobs", "100", "--seed", "2")
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Jobs      int     `json:"jobs"`
		Completed int     `json:"completed"`
		Util      float64 `json:"gpu_utilization"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Jobs != 100 || sum.Completed != 100 || !(sum.Util > 0 && sum.Util <= 1) {
		t.Errorf("summary %+v", sum)
	}
}

// phx sim ettr prints the failures by kind, a row per interval and the
// best one; bad flags are one-line errors.
func TestSimETTR(t *testing.T) {
	out, err := runSim(t, "ettr", "--runs", "3", "--intervals", "10m,4h,1h")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"16384 GPUs (2048 nodes)", "  gpu ", "  hang ", "10m0s ", "4h0m0s ", "best: a checkpoint every "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "<- best") != 1 || !strings.Contains(out, "best: a checkpoint every 10m0s") {
		t.Errorf("want 10m marked best of 10m, 1h and 4h:\n%s", out)
	}
	for args, want := range map[string]string{
		"--gpus 100":         "give a multiple of --gpus-per-node=8",
		"--intervals 10m,xx": `--intervals: "xx" is not a positive duration`,
		"--restart -1s":      "--restart -1s: want a duration of 0 or more",
		"--job-startup -1s":  "--job-startup -1s: want a duration of 0 or more",
	} {
		if _, err := runSim(t, append([]string{"ettr"}, strings.Fields(args)...)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", args, err, want)
		}
	}
}

// phx sim --help shows --partition's grammar once, not in the flag's
// column too.
func TestSimHelpPartition(t *testing.T) {
	out, err := runSim(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "--partition") && strings.Count(line, "NAME[:tier=N]") != 1 {
			t.Errorf("--partition's help names the grammar %d times: %q", strings.Count(line, "NAME[:tier=N]"), line)
		}
	}
	if !strings.Contains(out, "--partition SPEC") {
		t.Errorf("phx sim --help lacks --partition SPEC:\n%s", out)
	}
}
