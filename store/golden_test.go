package store

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ (review the diff: existing encodings must not change)")

// stateDump is everything a store holds, in a stable form for golden files.
type stateDump struct {
	Applied     uint64
	NextJob     cluster.JobID
	Jobs        []*cluster.Job // active and finished, whole, by ID
	Nodes       []*cluster.Node
	Partitions  []*cluster.Partition
	Requests    map[string]cluster.JobID // request ID (hex) -> job
	Controllers []Controller
	Events      []cluster.Event `json:",omitempty"`
}

func dumpJSON(t *testing.T, s *Store) []byte {
	t.Helper()
	d := stateDump{Applied: s.AppliedIndex(), NextJob: s.NextJobID(), Nodes: s.Nodes(), Partitions: s.Partitions(),
		Requests: map[string]cluster.JobID{}, Controllers: s.Controllers()}
	s.mu.RLock()
	var ids []cluster.JobID
	for id := range s.st.jobs {
		ids = append(ids, id)
	}
	for id := range s.st.finished {
		ids = append(ids, id)
	}
	for k, r := range s.st.requests {
		d.Requests[hexKey(k)] = r.job
	}
	s.mu.RUnlock()
	sort.Slice(ids, func(i, k int) bool { return ids[i] < ids[k] })
	for _, id := range ids {
		d.Jobs = append(d.Jobs, mustJob(t, s, id))
	}
	var err error
	if d.Events, err = s.Events(EventQuery{}); err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

func hexKey(k string) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(k))
	for i := 0; i < len(k); i++ {
		out = append(out, digits[k[i]>>4], digits[k[i]&15])
	}
	return string(out)
}

// golden compares got with the file, or rewrites it under -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the store reads now:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateVersion1 opens a database written by version 1 (the first
// release: JSON records, one jobs bucket with an active index), as an
// upgraded controller would, and checks what it reads after the migration.
func TestMigrateVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	copyFile(t, "testdata/v1/state.db", path)
	s := openTest(t, path)
	golden(t, "testdata/v1/migrated.json", dumpJSON(t, s))
	active, finished, _ := s.Counts()
	if active != 3 || finished != 3 {
		t.Errorf("after migration %d active and %d finished jobs; want 3 and 3 (running, pending, requeued; completed, cancelled, failed)", active, finished)
	}
	// The migrated store takes new commands where version 1 left off.
	if got := s.AppliedIndex(); got != 24 {
		t.Fatalf("applied index %d; want 24", got)
	}
	if _, err := s.SubmitJob(25, pendingJob(s.NextJobID(), 1, 8), nil, nil); err != nil {
		t.Fatal(err)
	}
	// Reopening does not migrate again.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, path)
	if _, err := s.Job(7); err != nil {
		t.Errorf("job submitted after the migration: %v", err)
	}
}

// TestSnapshotFormat restores a snapshot written by this schema version
// (every kind of record) and checks what it reads: a change to the
// persisted format that would misread existing data fails here.
func TestSnapshotFormat(t *testing.T) {
	const fixture = "testdata/v3/snapshot.db"
	if *update {
		writeSnapshotFixture(t, fixture)
	}
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	s := openTest(t, "")
	if err := s.Restore(bytes.NewReader(data), 0); err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/v3/snapshot.json", dumpJSON(t, s))
	// The oldest events were forgotten; numbers go on from the last.
	if err := s.SetNodeState(s.AppliedIndex()+1, "n1", cluster.NodeDrain, "after", "root", at(100)); err != nil {
		t.Fatal(err)
	}
	if evs, err := s.Events(EventQuery{Since: at(100)}); err != nil || len(evs) != 1 || evs[0].Seq != 9 {
		t.Errorf("the event after the snapshot's: %+v, %v; want number 9", evs, err)
	}
}

// TestMigrateVersion2 opens a database written by version 2 (no node
// events), as an upgraded controller would, and restores a snapshot of
// it, as a replica gets one from a leader not yet upgraded: both read the
// same records, no events, and record events from 1.
func TestMigrateVersion2(t *testing.T) {
	const fixture = "testdata/v2/snapshot.db"
	path := filepath.Join(t.TempDir(), "state.db")
	copyFile(t, fixture, path)
	s := openTest(t, path)
	got := dumpJSON(t, s)
	golden(t, "testdata/v2/snapshot.json", got)
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	r := openTest(t, "")
	if err := r.Restore(bytes.NewReader(data), 0); err != nil {
		t.Fatal(err)
	}
	if restored := dumpJSON(t, r); !bytes.Equal(restored, got) {
		t.Errorf("restoring a version 2 snapshot reads\n%s\nopening it reads\n%s", restored, got)
	}
	for _, st := range []*Store{s, r} {
		if err := st.SetNodeState(st.AppliedIndex()+1, "n1", cluster.NodeDrain, "upgraded", "root", at(100)); err != nil {
			t.Fatal(err)
		}
		if evs, err := st.Events(EventQuery{}); err != nil || len(evs) != 1 || evs[0].Seq != 1 || evs[0].Message != "upgraded" {
			t.Errorf("events after the migration: %+v, %v; want the drain, number 1", evs, err)
		}
	}
}

// writeSnapshotFixture builds a store holding every kind of record and
// writes its snapshot. Run only with -update, when a new kind of record is
// added; the records already in the fixture must read the same afterwards.
func writeSnapshotFixture(t *testing.T, path string) {
	s := openTest(t, "")
	idx := uint64(0)
	next := func() uint64 { idx++; return idx }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.SetPartitions(next(), []*cluster.Partition{
		{Name: "gpu", AllNodes: true, Default: true, State: cluster.PartitionUp, MaxTime: 48 * time.Hour, DefaultTime: time.Hour, PriorityTier: 2, PreemptMode: "REQUEUE"},
		{Name: "debug", Nodes: []string{"n1"}, State: cluster.PartitionDrain, MaxNodes: 1},
	}, "sha256:5e1f"))
	for _, n := range []string{"n1", "n2", "n3"} {
		node := gpuNode(n)
		node.Features, node.Weight, node.Leaf = []string{"ib", "a100"}, 3, "leaf1"
		node.NICs = []cluster.NIC{{Device: "mlx5_0", Port: 1, State: "ACTIVE", PhysState: "LinkUp", Rate: "200 Gb/sec (4X HDR)",
			LinkLayer: "InfiniBand", PCIAddr: "0000:c0:00.0", NUMANode: 0, GPUs: []int{0, 1}, Affinity: "PIX"}}
		must(s.RegisterNode(next(), node))
	}
	must(s.SetController(next(), Controller{ID: "ctl1", APIAddr: "10.0.0.1:7817", RaftAddr: "10.0.0.1:7819"}))
	for id := cluster.JobID(1); id <= 4; id++ {
		j := pendingJob(id, 1, 2)
		j.UID, j.GID, j.Account, j.QoS, j.Nice, j.Priority = 1000, 100, "ml", "high", 5, 7
		j.TimeLimit, j.Image, j.WorkDir, j.Output, j.Error = 2*time.Hour, "busybox", "/home/alice", "o-%j", "e-%j"
		j.GPUType, j.Constraint, j.NodeList, j.Exclude = "a100", "ib&a100", []string{"n1"}, []string{"n3"}
		j.Exclusive, j.Switches, j.SwitchesWait, j.Segment = true, 1, time.Minute, 1
		_, err := s.SubmitJob(next(), j, nil, []byte{byte(id), 0xab, 0xcd})
		must(err)
	}
	placed := func(ids []cluster.JobID, err error) {
		t.Helper()
		must(err)
		if len(ids) != 1 {
			t.Fatalf("the fixture's placement was refused (placed %v): make the fixture's jobs fit what PlaceJobs checks now", ids)
		}
	}
	placed(s.PlaceJobs(next(), []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "n1"), MasterPort: 29500, Time: at(10)}}))
	must(s.ReportTask(next(), cluster.TaskReport{JobID: 1, Node: "n1", State: cluster.TaskRunning, Time: at(11)}))
	placed(s.PlaceJobs(next(), []Placement{{Job: 2, Alloc: alloc([]int{2, 3}, "n2"), MasterPort: 29501, Time: at(12)}}))
	must(s.ReportTask(next(), cluster.TaskReport{JobID: 2, Node: "n2", State: cluster.TaskExited, ExitCode: 3, Message: "exit status 3", Time: at(13)}))
	_, err := s.CancelJobs(next(), []cluster.JobID{3}, at(14), "Cancelled by user", nil)
	must(err)
	must(s.SetNodeState(next(), "n3", cluster.NodeDrain, "bad ECC", "root", at(15)))
	// Events 1-3 are the registrations, 4 the drain.
	must(s.SetNodeHealth(next(), "n2", "rdma-link: mlx5_0/1 DOWN (Disabled)", at(16)))
	must(s.SetNodeHealth(next(), "n3", "gpu-ecc: GPU 5 has 1 uncorrectable error", at(17)))
	must(s.SetNodeState(next(), "n2", cluster.NodeUp, "", "root", at(18)))
	must(s.SetNodesDown(next(), []string{"n2"}, ReasonNotResponding, at(19)))
	must(s.Expire(next(), Retention{EventsBefore: t0, MaxEvents: 6})) // forgets 1 and 2
	must(s.Flush())
	f, err := os.Create(path)
	must(err)
	must(s.Snapshot(f))
	must(f.Close())
}
