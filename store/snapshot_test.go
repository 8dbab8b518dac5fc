package store

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// populate writes a little of everything and returns the last index.
func populate(t *testing.T, s *Store) uint64 {
	t.Helper()
	mustRegister(t, s, 1, "n1", "n2")
	if err := s.SetPartitions(3, []*cluster.Partition{{Name: "gpu", AllNodes: true, Default: true, State: cluster.PartitionUp}}, ""); err != nil {
		t.Fatal(err)
	}
	mustSubmit(t, s, 4, 1)
	mustSubmit(t, s, 5, 2)
	mustSubmit(t, s, 6, 3)
	replay := s.AppliedIndex() >= 7
	if ids, err := s.PlaceJobs(7, []Placement{{Job: 1, Alloc: alloc([]int{0, 1}, "n1"), Time: at(1)}}); err != nil || (len(ids) != 1 && !replay) {
		t.Fatalf("PlaceJobs = %v, %v", ids, err)
	}
	if _, err := s.CancelJobs(8, []cluster.JobID{3}, at(2), "c", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.SetNodeState(9, "n2", cluster.NodeDrain, "maintenance", "alice", at(3)); err != nil {
		t.Fatal(err)
	}
	return 9
}

type dump struct {
	Applied    uint64
	Next       cluster.JobID
	Jobs       []*cluster.Job
	Active     []*cluster.Job
	Nodes      []*cluster.Node
	Partitions []*cluster.Partition
	Events     []cluster.Event
}

func dumpStore(t *testing.T, s *Store) dump {
	t.Helper()
	d := dump{Applied: s.AppliedIndex(), Next: s.NextJobID()}
	d.Jobs = collect(t, s, JobQuery{Finished: true})
	st, err := s.State()
	if err != nil {
		t.Fatal(err)
	}
	d.Active, d.Nodes, d.Partitions = st.Active, st.Nodes, st.Partitions
	if d.Events, err = s.Events(EventQuery{}); err != nil {
		t.Fatal(err)
	}
	for i, j := range d.Jobs { // listings leave finished jobs' payloads out
		if !isActive(j) {
			j = j.Clone()
			j.Script, j.Env = "", nil
			d.Jobs[i] = j
		}
	}
	return d
}

func TestRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	last := populate(t, s)
	before := dumpStore(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Job(1); err != ErrClosed {
		t.Errorf("Job on a closed store = %v; want ErrClosed", err)
	}
	s = openTest(t, path)
	after := dumpStore(t, s)
	if !reflect.DeepEqual(before, after) {
		t.Errorf("after reopen:\n%+v\nwant\n%+v", after, before)
	}
	if after.Applied != last || after.Next != 4 || len(after.Active) != 2 || len(after.Events) != 3 {
		t.Errorf("applied %d next %d active %d events %d; want %d, 4, 2, 3", after.Applied, after.Next, len(after.Active), len(after.Events), last)
	}
	// Raft replays the log after a restart: every entry is a no-op.
	populate(t, s)
	if again := dumpStore(t, s); !reflect.DeepEqual(again, before) {
		t.Errorf("replaying the log changed the state")
	}
}

// A backup restored as a Raft snapshot takes Raft's index, above the
// cluster's whole log, when its own is lower: the applied index never goes
// back, on disk either. A snapshot holding a higher index keeps its own.
func TestRestoreTakesRaftsIndex(t *testing.T) {
	src := openTest(t, "")
	populate(t, src)
	held := src.AppliedIndex()
	var buf bytes.Buffer
	if err := src.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state.db")
	dst := openTest(t, path)
	if err := dst.Restore(bytes.NewReader(buf.Bytes()), held+100); err != nil {
		t.Fatal(err)
	}
	if got := dst.AppliedIndex(); got != held+100 {
		t.Errorf("applied index %d after a restore at %d; want %d", got, held+100, held+100)
	}
	mustSubmit(t, dst, held+50, 40) // an index the restore stands for: skipped
	if _, err := dst.Job(40); err == nil {
		t.Error("a command at an index below the restore's was applied")
	}
	mustSubmit(t, dst, held+101, 41)
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(path, NoSync())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := again.AppliedIndex(); got != held+101 {
		t.Errorf("applied index %d after reopening; want %d", got, held+101)
	}

	lower := openTest(t, "")
	if err := lower.Restore(bytes.NewReader(buf.Bytes()), held-1); err != nil {
		t.Fatal(err)
	}
	if got := lower.AppliedIndex(); got != held {
		t.Errorf("applied index %d after a restore at %d of a snapshot holding %d; want %d", got, held-1, held, held)
	}
}

func TestSnapshotRestore(t *testing.T) {
	src := openTest(t, "")
	populate(t, src)
	var buf bytes.Buffer
	if err := src.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	dst := openTest(t, "")
	mustRegister(t, dst, 1, "stale") // replaced by the restore
	mustSubmit(t, dst, 50, 9)
	before := dst.Config().ConfigVersion
	if err := dst.Restore(bytes.NewReader(buf.Bytes()), 0); err != nil {
		t.Fatal(err)
	}
	// Answers cached against the old nodes and partitions (admission's
	// feasibility) must not match the restored ones.
	if after := dst.Config().ConfigVersion; after <= before {
		t.Errorf("config version %d after the restore; want above %d", after, before)
	}
	if got, want := dumpStore(t, dst), dumpStore(t, src); !reflect.DeepEqual(got, want) {
		t.Errorf("restored:\n%+v\nwant\n%+v", got, want)
	}
	// The restored store keeps working, and leaves no temporary files.
	mustSubmit(t, dst, 10, 4)
	entries, _ := os.ReadDir(filepath.Dir(dst.path))
	if len(entries) != 1 {
		t.Errorf("files beside the database after restore: %v", entries)
	}
}

func TestRestoreGarbageKeepsTheOldState(t *testing.T) {
	s := openTest(t, "")
	populate(t, s)
	before := dumpStore(t, s)
	if err := s.Restore(strings.NewReader(strings.Repeat("not a bolt file ", 1000)), 0); err == nil {
		t.Fatal("restoring garbage succeeded")
	}
	if after := dumpStore(t, s); !reflect.DeepEqual(after, before) {
		t.Errorf("a failed restore changed the state")
	}
}

func TestRestoreWithConcurrentReaders(t *testing.T) {
	src := openTest(t, "")
	populate(t, src)
	var snap bytes.Buffer
	if err := src.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	s := openTest(t, "")
	populate(t, s)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if st, err := s.State(); err != nil || len(st.Nodes) != 2 {
					t.Errorf("State during restore = %v, %v", st, err)
					return
				}
			}
		}()
	}
	for i := 0; i < 10; i++ {
		if err := s.Restore(bytes.NewReader(snap.Bytes()), 0); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	err = s.withDB(func(db *bolt.DB) error {
		return db.Update(func(tx *bolt.Tx) error { return putUint64(tx.Bucket(bucketMeta), keyVersion, SchemaVersion+1) })
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "upgrade") {
		t.Errorf("Open of a newer schema = %v; want an error saying to upgrade", err)
	}
}

func TestMigrationFromEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(db); err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *bolt.Tx) error {
		if v := version(tx); v != SchemaVersion {
			t.Errorf("version = %d", v)
		}
		for _, b := range append(v2Buckets, bucketEvents) {
			if tx.Bucket(b) == nil {
				t.Errorf("bucket %s missing", b)
			}
		}
		if n := getUint64(tx.Bucket(bucketMeta), keyNextJob); n != 1 {
			t.Errorf("next job = %d; want 1", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
}
