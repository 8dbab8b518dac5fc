package nodeagent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
)

// A store the job's user cannot write fails the launch, as an output file
// it cannot open does: the agent copies the steps there as that user, and
// would otherwise fail every copy, silently to the user, for as long as
// the job runs. Probing leaves nothing in the store.
func TestCheckpointStoreWritableByTheUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the store is checked as another user")
	}
	const nobody = 65534
	root, stores := t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Dir(stores), stores} { // the user reaches it
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a := &Agent{cfg: Config{CheckpointRoot: filepath.Join(root, "ckpt")}, log: testLogger(t)}
	theirs, root0755 := filepath.Join(stores, "theirs"), filepath.Join(stores, "root")
	for _, d := range []string{theirs, root0755} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(theirs, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	job := jobInfo{uid: nobody, gid: nobody, ranks: make([]rankSlot, 1)}
	job.ckpt.dir = root0755
	if _, err := a.prepareCheckpoint(taskKey{job: 7}, job); err == nil || !strings.Contains(err.Error(), "cannot write") {
		t.Errorf("a store only root may write: %v; want the launch refused", err)
	}
	job.ckpt.dir = theirs
	env, err := a.prepareCheckpoint(taskKey{job: 8}, job)
	if err != nil || env["PHX_CKPT_STORE"] != theirs {
		t.Fatalf("the user's own store: %v, %v", env, err)
	}
	if left, _ := os.ReadDir(theirs); len(left) != 0 {
		t.Errorf("the probe left %v in the store", left)
	}
}

// Negative amounts in the agent's settings are refused by name: a
// negative --checkpoint-rate meant no bound at all, and negative --cpus
// or --memory-mb were registered as they were.
func TestNegativeAmountsRefused(t *testing.T) {
	for name, edit := range map[string]func(*Config){
		"checkpoint rate": func(c *Config) { c.CheckpointRate = -5 },
		"CPUs":            func(c *Config) { c.CPUs = -1 },
		"memory":          func(c *Config) { c.MemoryMB = -5 },
	} {
		c := Config{Name: node, Controllers: []string{"127.0.0.1:1"}, StateDir: t.TempDir(), Runtime: fake.New(), Logger: testLogger(t)}
		edit(&c)
		if _, err := New(c); !errors.Is(err, cluster.ErrInvalid) || !strings.Contains(err.Error(), name) {
			t.Errorf("negative %s: %v; want it refused by name", name, err)
		}
	}
}
