package sim

import (
	"errors"
	"strings"
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
)

func TestParseWorkload(t *testing.T) {
	specs, err := ParseWorkload(strings.NewReader(`[
		{"id": 7, "nodes": 2, "gpus_per_node": 8, "duration_s": 60, "submit_offset_s": 0},
		{"nodes": 1, "gpus_per_node": 1, "duration_s": 1.5, "submit_offset_s": 3, "time_limit_s": 120,
		 "partition": "debug", "priority": 5, "qos": "high", "switches": "2@1:00", "segment": 1},
		{"id": "x", "nodes": 4, "gpus_per_node": 8, "duration_s": 60, "submit_offset_s": 0, "switches": 1, "switches_wait_s": 30}
	]`))
	if err != nil {
		t.Fatal(err)
	}
	want := []JobSpec{
		{ID: "7", Nodes: 2, GPUsPerNode: 8, DurationS: 60},
		{ID: "2", Nodes: 1, GPUsPerNode: 1, DurationS: 1.5, SubmitOffset: 3, TimeLimitS: 120, Partition: "debug",
			Priority: 5, QoS: "high", Switches: 2, SwitchesWaitS: 60, Segment: 1},
		{ID: "x", Nodes: 4, GPUsPerNode: 8, DurationS: 60, Switches: 1, SwitchesWaitS: 30},
	}
	if len(specs) != len(want) {
		t.Fatalf("got %d specs, want %d", len(specs), len(want))
	}
	for i := range want {
		if specs[i] != want[i] {
			t.Errorf("spec %d = %+v, want %+v", i, specs[i], want[i])
		}
	}
}

func TestParseWorkloadErrors(t *testing.T) {
	const ok = `"nodes": 1, "gpus_per_node": 8, "duration_s": 10, "submit_offset_s": 0`
	for _, tc := range []struct{ in, want string }{
		{`{}`, "workload: want a JSON list of jobs"},
		{`[{` + ok + `}] [{` + ok + `}]`, "workload: want one JSON list of jobs: something follows the list"},
		{`[] x`, "workload: want one JSON list of jobs: something follows the list"},
		{`[] ]`, "workload: want one JSON list of jobs: something follows the list"},
		{`[{` + ok + `}, {"id": "b", "nodes": 0, "gpus_per_node": 8, "duration_s": 10, "submit_offset_s": 0}]`,
			`workload job 2 (id "b"): nodes is 0, want at least 1`},
		{`[{"id": "a", "nodes": 1, "gpus_per_node": -1, "duration_s": 10, "submit_offset_s": 0}]`,
			`workload job 1 (id "a"): gpus_per_node is -1`},
		{`[{"id": "a", "nodes": 1, "gpus_per_node": 8, "submit_offset_s": 0}]`,
			`workload job 1 (id "a"): duration_s is 0, want more than 0`},
		{`[{"id": "a", "nodes": 1, "gpus_per_node": 8, "duration_s": 5, "submit_offset_s": -1}]`,
			`submit_offset_s is -1`},
		{`[{"id": "a", ` + ok + `, "time_limit_s": -5}]`, `time_limit_s is -5`},
		{`[{"id": "a", "nodes": 3, "gpus_per_node": 8, "duration_s": 5, "submit_offset_s": 0, "segment": 2}]`,
			`nodes 3 is not a multiple of segment 2`},
		{`[{"id": "a", ` + ok + `, "qos": "urgent"}]`, `qos "urgent": use high, normal or low`},
		{`[{"id": "a", ` + ok + `, "switches": "x@1"}]`, `workload job 1 (id "a"): switches: "x@1": count "x" is not a number`},
		{`[{"id": "a", ` + ok + `, "switches": -1}]`, `switches is -1`},
		{`[{"id": "a", ` + ok + `, "switches": "2@5", "switches_wait_s": 60}]`, `switches: "2@5" and switches_wait_s 60 both give the wait: give one`},
		{`[{"id": "a", ` + ok + `, "gpus": 8}]`, `workload job 1: json: unknown field "gpus"`},
		{`[{"id": "a", "nodes": "two"}]`, `workload job 1: json: cannot unmarshal string`},
		{`[{"id": "", ` + ok + `}]`, `workload job 1: id: empty`},
		{`[{"id": "a", ` + ok + `}, {"id": "a", ` + ok + `}]`, `workload job 2 (id "a"): same id as job 1`},
		{`[{"id": "a", "nodes": 1, "duration_s": 10, "submit_offset_s": 0}]`,
			`workload job 1 (id "a"): gpus_per_node is missing: give 0 for a job without GPUs`},
		{`[{"nodes": 1, "gpus_per_node": 8, "duration_s": 10}]`,
			`workload job 1 (id "1"): submit_offset_s is missing: give 0 to submit it at the start`},
	} {
		_, err := ParseWorkload(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseWorkload(%s) = %v, want an error containing %q", tc.in, err, tc.want)
			continue
		}
		if !errors.Is(err, cluster.ErrInvalid) {
			t.Errorf("ParseWorkload(%s): %v does not wrap ErrInvalid", tc.in, err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseWorkload(%s): error is not one line: %q", tc.in, err)
		}
	}
}

func TestParsePartition(t *testing.T) {
	p, err := ParsePartition("debug:tier=3:preempt=requeue:maxtime=1:00:00")
	if err == nil {
		t.Fatalf("maxtime with colons parsed as %+v; want an error (':' separates keys)", p)
	}
	if want := `partition "debug:tier=3:preempt=requeue:maxtime=1:00:00": maxtime must not contain ':' (it separates the keys): ` +
		"give minutes or D-H, e.g. maxtime=90 or maxtime=1-12"; err.Error() != want {
		t.Errorf("maxtime with colons: %q, want %q", err, want)
	}
	p, err = ParsePartition("debug:tier=3:preempt=requeue:maxtime=90:state=drain")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "debug" || p.PriorityTier != 3 || p.PreemptMode != "REQUEUE" || p.MaxTime.Minutes() != 90 ||
		p.State != cluster.PartitionDrain || !p.AllNodes {
		t.Errorf("got %+v", p)
	}
	for _, bad := range []string{"", "tier=1", "x:tier=a", "x:preempt=suspend", "x:state=open", "x:color=red", "x:tier", "x:maxtime=1-12:00"} {
		if _, err := ParsePartition(bad); !errors.Is(err, cluster.ErrInvalid) {
			t.Errorf("ParsePartition(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	merged := MergePartitions(DefaultPartitions(), []*cluster.Partition{p, {Name: DefaultPartition, PriorityTier: 9}})
	if len(merged) != 3 || merged[0].PriorityTier != 9 || merged[2] != p {
		t.Errorf("MergePartitions: got %d partitions, first tier %d", len(merged), merged[0].PriorityTier)
	}
}
