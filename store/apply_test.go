package store

import (
	"errors"
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// A command's refusal is applied (its index recorded); a local failure is
// not, so the replica cannot go on as if it had applied the entry.
func TestUpdateRecordsRejectionsButNotFailures(t *testing.T) {
	s := openTest(t, "")
	reject := fmt.Errorf("job 9: %w", cluster.ErrNotFound)
	if err := s.update(5, func(*bolt.Tx) error { return reject }); !errors.Is(err, cluster.ErrNotFound) {
		t.Fatalf("rejection: %v", err)
	}
	if got := s.AppliedIndex(); got != 5 {
		t.Errorf("after a rejection the applied index is %d; want 5", got)
	}
	disk := errors.New("no space left on device")
	if err := s.update(6, func(*bolt.Tx) error { return disk }); !errors.Is(err, disk) || IsRejection(err) {
		t.Fatalf("failure: %v", err)
	}
	if got := s.AppliedIndex(); got != 5 {
		t.Errorf("after a local failure the applied index is %d; want 5 (entry 6 not applied)", got)
	}
}
