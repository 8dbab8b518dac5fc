package fsm

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	statev1 "github.com/phalanx-hpc/phalanx/api/phalanx/state/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/store"
	"github.com/phalanx-hpc/phalanx/store/codec"
)

var update = flag.Bool("update", false, "write the golden encodings of new command types to testdata/commands (existing files must not change)")

var t0 = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)

func fullJob() *cluster.Job {
	return &cluster.Job{
		ID: 7, Name: "train", User: "alice", UID: 1000, GID: 1000, Account: "ml", Partition: "gpu", Priority: 3,
		SubmitTime: t0, TimeLimit: 2 * time.Hour, Script: "#!/bin/bash\nsrun torchrun train.py\n",
		Env: map[string]string{"PATH": "/usr/bin", "HOME": "/home/alice"}, WorkDir: "/home/alice", Output: "out-%j", Error: "err-%j",
		Image: "registry/train:1", Nodes: 2, GPUsPerNode: 8, GPUType: "a100", CPUsPerNode: 32, MemoryMB: 65536,
		Constraint: "ib", NodeList: []string{"gpu001"}, Exclude: []string{"gpu009"}, Exclusive: true, Switches: 1,
		SwitchesWait: time.Minute, Segment: 2, QoS: "high", Nice: 5, State: cluster.JobPending, Reason: "None",
	}
}

func twoNodes() cluster.Allocation {
	return cluster.Allocation{Nodes: []cluster.NodeAlloc{
		{Node: "gpu001", GPUs: []int{0, 1}, CPUs: 8, MemoryMB: 1024},
		{Node: "gpu002", GPUs: []int{2, 3}, CPUs: 8, MemoryMB: 1024},
	}}
}

// commandFixtures has one command of every type, by the name of its golden
// file. A new command type adds a line here and a file (go test -update).
var commandFixtures = map[string]Command{
	"01-submit-job": SubmitJob{Job: fullJob(), RequestID: []byte{0x5e, 0x1f, 0, 0xff}},
	"01b-submit-job-dependency": SubmitJob{Job: func() *cluster.Job {
		j := fullJob()
		j.ID, j.KillOnInvalidDep = 8, true
		j.Dependency = cluster.Dependency{Any: true, Conds: []cluster.DepCond{
			{Type: cluster.DepAfterOK, Job: 7}, {Type: cluster.DepAfter, Job: 6, Delay: 10 * time.Minute}, {Type: cluster.DepSingleton}}}
		return j
	}()},
	"01c-submit-array": SubmitJob{Job: func() *cluster.Job { j := fullJob(); j.ID = 20; return j }(), RequestID: []byte("a1"),
		Array: cluster.ArraySpec{Tasks: []int{0, 4, 8, 12}, Throttle: 2}},
	"01d-submit-job-tasks": SubmitJob{Job: func() *cluster.Job {
		j := fullJob()
		j.ID, j.TasksPerNode, j.GPUsPerTask, j.CPUsPerTask, j.SubmitHost = 21, 8, 1, 4, "login1"
		return j
	}()},
	"01e-submit-job-open-mode": SubmitJob{Job: func() *cluster.Job { j := fullJob(); j.ID, j.OpenMode = 22, cluster.OpenAppend; return j }()},
	"02-place-jobs":            PlaceJobs{Placements: []store.Placement{{Job: 7, Alloc: twoNodes(), MasterPort: 29500, Time: t0.Add(time.Minute)}}},
	"02b-place-jobs-placed-by": PlaceJobs{Placements: []store.Placement{
		{Job: 7, Alloc: twoNodes(), MasterPort: 29500, Time: t0.Add(time.Minute), By: cluster.PlacedMain},
		{Job: 8, Alloc: cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "gpu003", GPUs: []int{4}, CPUs: 2, MemoryMB: 512}}},
			MasterPort: 29501, Time: t0.Add(time.Minute), By: cluster.PlacedBackfill},
	}},
	"03-report-task": ReportTask{Report: cluster.TaskReport{JobID: 7, Attempt: 2, Rank: 1, Node: "gpu002", State: cluster.TaskExited,
		ExitCode: 1, ExitSignal: 9, Message: "exit status 1", Time: t0.Add(time.Hour)}},
	"03b-report-task-checkpoint-corrupt": ReportTask{Report: cluster.TaskReport{JobID: 7, Attempt: 3, Rank: 2, Node: "gpu003",
		State: cluster.TaskFailed, Message: "checkpoint step 1200 rank 2: file w.bin: corrupt", Time: t0.Add(time.Hour), CheckpointCorrupt: true}},
	"03c-report-task-agent-shutdown": ReportTask{Report: cluster.TaskReport{JobID: 7, Attempt: 1, Rank: 0, Node: "gpu001",
		State: cluster.TaskLost, Message: "node agent shut down", Time: t0.Add(time.Hour), AgentShutdown: true}},
	"03d-report-task-fenced": ReportTask{Report: cluster.TaskReport{JobID: 7, Attempt: 1, Rank: 1, Node: "gpu002",
		State: cluster.TaskLost, Message: `task "phx-7-1-1": killed when the node's lease ended (no controller answered its agent in time)`,
		Time: t0.Add(time.Hour), Fenced: true}},
	"04-cancel-jobs": CancelJobs{IDs: []cluster.JobID{7, 8}, Time: t0.Add(2 * time.Hour), Reason: "Cancelled by user"},
	"04b-cancel-jobs-request": CancelJobs{IDs: []cluster.JobID{9}, Time: t0.Add(2 * time.Hour), Reason: "Cancelled by user",
		RequestID: []byte("5e1f00ff")},
	"05-register-node":  RegisterNode{Node: fullNode()},
	"06-set-node-state": SetNodeState{Name: "gpu001", State: cluster.NodeDrain, Reason: "bad ECC", Time: t0.Add(3 * time.Hour)},
	"07-set-partitions": SetPartitions{Partitions: []*cluster.Partition{
		{Name: "gpu", AllNodes: true, Default: true, State: cluster.PartitionUp, MaxTime: 48 * time.Hour, DefaultTime: time.Hour,
			MaxNodes: 64, PriorityTier: 2, PreemptMode: "REQUEUE"},
		{Name: "debug", Nodes: []string{"gpu001", "gpu002"}, State: cluster.PartitionDrain},
	}},
	"07b-set-partitions-config": SetPartitions{Partitions: []*cluster.Partition{
		{Name: "gpu", AllNodes: true, Default: true, State: cluster.PartitionUp},
	}, ConfigDigest: "sha256:5e1f00ff"},
	"08-preempt-jobs":      PreemptJobs{IDs: []cluster.JobID{7}, For: []cluster.JobID{9}, Time: t0.Add(4 * time.Hour)},
	"09-set-nodes-down":    SetNodesDown{Names: []string{"gpu001", "gpu002"}, Reason: "Not responding", Time: t0.Add(5 * time.Hour)},
	"10-set-controller":    SetController{Controller: store.Controller{ID: "ctl2", APIAddr: "10.0.0.2:7817", RaftAddr: "10.0.0.2:7819"}},
	"11-remove-controller": RemoveController{ID: "ctl3"},
	"13-update-job":        UpdateJob{ID: 7, JobUpdate: store.JobUpdate{Name: ptr("renamed"), TimeLimit: ptr(90 * time.Minute)}},
	"13b-update-job-hold":  UpdateJob{ID: 7, JobUpdate: store.JobUpdate{Hold: ptr(cluster.HoldAdmin)}},
	"13c-update-job-request": UpdateJob{ID: 7, JobUpdate: store.JobUpdate{Partition: ptr("debug"), Nodes: ptr(2), Nice: ptr(50),
		QoS: ptr(cluster.QoSLow), Priority: ptr(int64(900)), Dependency: &cluster.Dependency{Conds: []cluster.DepCond{{Type: cluster.DepAfterAny, Job: 5}}}}},
	"13d-update-job-once": UpdateJob{ID: 7, JobUpdate: store.JobUpdate{TimeLimit: ptr(30 * time.Minute)}, RequestID: []byte("0123456789abcdef"),
		Time: t0.Add(6 * time.Hour)},
	"13e-update-job-throttle": UpdateJob{ID: 7, JobUpdate: store.JobUpdate{ArrayThrottle: ptr(3)}},
	"13f-update-job-gpus":     UpdateJob{ID: 7, JobUpdate: store.JobUpdate{Nodes: ptr(4), GPUsPerNode: ptr(2), MemoryMB: ptr(int64(2048))}},
	"12-expire":               Expire{Retention: store.Retention{RequestsBefore: t0, MaxRequests: 100000, HistoryBefore: t0.Add(-time.Hour), MaxHistory: 50000}},
	"12b-expire-events": Expire{Retention: store.Retention{RequestsBefore: t0, MaxRequests: 100000, HistoryBefore: t0.Add(-time.Hour), MaxHistory: 50000,
		EventsBefore: t0.Add(-2 * time.Hour), MaxEvents: 100000}},
	"14-set-node-health":   SetNodeHealth{Name: "gpu001", Problems: "rdma-link: mlx5_1/1 DOWN (Disabled); gpu-xid: GPU 2 XID 79", Time: t0.Add(6 * time.Hour)},
	"15-commit-checkpoint": CommitCheckpoint{ID: 7, Attempt: 1, Rank: 3, Step: 1200, Time: t0.Add(7 * time.Hour)},
	"17-requeue-jobs":      RequeueJobs{IDs: []cluster.JobID{7, 9}, Time: t0.Add(9 * time.Hour)},
	"18-signal-jobs":       SignalJobs{IDs: []cluster.JobID{7}, Signal: 10, Scope: cluster.SignalBatch, RequestID: []byte("5e1f/0"), Time: t0.Add(10 * time.Hour)},
	"18b-signal-step":      SignalJobs{IDs: []cluster.JobID{7}, Signal: 15, Scope: cluster.SignalStep, Step: 2, RequestID: []byte("5e20/0"), Time: t0.Add(11 * time.Hour)},
	"19-miss-deadlines":    MissDeadlines{IDs: []cluster.JobID{8}, Time: t0.Add(11 * time.Hour)},
	"20-set-feature-level": SetFeatureLevel{Level: 1},
	"16-record-event": RecordEvent{Event: cluster.Event{Time: t0.Add(8 * time.Hour), Node: "gpu001", Job: 7, Kind: cluster.EventHang,
		User: cluster.SystemUser, Message: "rank 1: no output, no checkpoint and idle GPUs for 30m0s"}},
}

func fullNode() *cluster.Node {
	return &cluster.Node{Name: "gpu001", Addr: "10.0.0.1", CPUs: 128, MemoryMB: 1 << 20, GPUs: 8, GPUModel: "NVIDIA A100-SXM4-80GB",
		Features: []string{"a100"}, Weight: 2, Leaf: "leaf1", Registered: t0}
}

// TestCommandFormat decodes the golden encoding of every command type and
// checks it against the value it was written from, and that encoding that
// value still gives the same bytes: a change to the persisted format that
// would misread an existing Raft log fails here.
func TestCommandFormat(t *testing.T) {
	for name, want := range commandFixtures {
		path := filepath.Join("testdata", "commands", name+".bin")
		enc, err := Encode(want)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := os.Stat(path); os.IsNotExist(err) && *update {
			if err := os.WriteFile(path, enc, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (go test -update writes the files of new command types)", name, err)
		}
		got, err := Decode(data)
		if err != nil {
			t.Errorf("%s: decode: %v", name, err)
			continue
		}
		if sub, ok := got.(SubmitJob); ok { // the payload stays encoded: decode it to compare
			full := *sub.Job
			if err := codec.DecodePayload(&full, sub.Payload); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got = SubmitJob{Job: &full, RequestID: sub.RequestID, Array: sub.Array}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s decodes to\n%+v\nwant\n%+v", name, got, want)
		}
		if !bytes.Equal(enc, data) {
			t.Errorf("%s: encoding the same command now gives other bytes:\n%x\nwant\n%x", name, enc, data)
		}
	}
	entries, _ := os.ReadDir(filepath.Join("testdata", "commands"))
	if len(entries) != len(commandFixtures) {
		t.Errorf("%d golden files for %d command types", len(entries), len(commandFixtures))
	}
}

// Every command type of the persisted format (each field of the Command
// oneof) has a golden fixture, so a new type cannot be added without one.
func TestEveryCommandTypeHasAFixture(t *testing.T) {
	covered := map[protoreflect.FieldNumber]bool{}
	for name, c := range commandFixtures {
		data, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		var m statev1.Command
		if err := proto.Unmarshal(data[1:], &m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		oneof := m.ProtoReflect().Descriptor().Oneofs().ByName("command")
		if f := m.ProtoReflect().WhichOneof(oneof); f != nil {
			covered[f.Number()] = true
		}
	}
	fields := (&statev1.Command{}).ProtoReflect().Descriptor().Oneofs().ByName("command").Fields()
	for i := 0; i < fields.Len(); i++ {
		if f := fields.Get(i); !covered[f.Number()] {
			t.Errorf("command type %s (field %d) has no golden fixture: add it to commandFixtures and run go test -update", f.Name(), f.Number())
		}
	}
}

// A submit written before payloads held the environment as a list (it was
// a map) decodes to the same job: a replica upgraded in place replays it.
func TestSubmitWithEnvironmentMap(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "v2-env-map", "01-submit-job.bin"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	sub := got.(SubmitJob)
	full := *sub.Job
	if err := codec.DecodePayload(&full, sub.Payload); err != nil {
		t.Fatal(err)
	}
	if want := commandFixtures["01-submit-job"].(SubmitJob); !reflect.DeepEqual(SubmitJob{Job: &full, RequestID: sub.RequestID}, want) {
		t.Errorf("decodes to\n%+v\nwant\n%+v", full, *want.Job)
	}
}

// TestFirstReleaseCommands decodes log entries written by the first release
// (a type byte and JSON), as a replica upgraded in place replays them.
func TestFirstReleaseCommands(t *testing.T) {
	job := fullJob()
	job.Image, job.Env = "", map[string]string{"PATH": "/usr/bin"}
	legacyNode := fullNode()
	want := map[string]Command{
		"01-submit-job":     SubmitJob{Job: job},
		"02-place-jobs":     commandFixtures["02-place-jobs"],
		"03-report-task":    ReportTask{Report: cluster.TaskReport{JobID: 7, Rank: 1, Node: "gpu002", State: cluster.TaskExited, ExitCode: 1, Message: "exit status 1", Time: t0.Add(time.Hour)}},
		"04-cancel-jobs":    commandFixtures["04-cancel-jobs"],
		"05-register-node":  RegisterNode{Node: legacyNode},
		"06-set-node-state": commandFixtures["06-set-node-state"],
		"07-set-partitions": commandFixtures["07-set-partitions"],
		"08-preempt-jobs":   commandFixtures["08-preempt-jobs"],
		"09-set-nodes-down": commandFixtures["09-set-nodes-down"],
	}
	for name, w := range want {
		data, err := os.ReadFile(filepath.Join("testdata", "v1", name+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s decodes to\n%+v\nwant\n%+v", name, got, w)
		}
	}
}

func TestDecodeRefusesWhatItDoesNotKnow(t *testing.T) {
	for _, data := range [][]byte{nil, {0x42, 1}, {200, '{', '}'}, {frameProto, 0xfa, 0x3e, 0}} {
		if c, err := Decode(data); err == nil {
			t.Errorf("Decode(%x) = %+v; want an error", data, c)
		}
	}
}

func ptr[T any](v T) *T { return &v }
