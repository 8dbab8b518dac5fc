package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Feature levels. Replicas of different releases apply the same log while
// an upgrade rolls, and must reach the same state from it: a release that
// makes applying a command do more than its predecessor did (record an
// event, whose number every later event then follows) does so only from a
// feature level of the replicated state, which the leader raises
// (SetFeatureLevel) once every voter's release knows it. A replica that
// meets a level above its own stops, as for a command it does not know;
// one that opens a state at a level above its own refuses it.
//
// A level may also gate what a leader proposes: a command's new field,
// which a replica of an earlier release would ignore and so apply the
// command otherwise. The leader sets such a field only from its level.
const (
	// FeatureRequeueEvents: a job's requeue or restart records a
	// requeued event (requeued).
	FeatureRequeueEvents uint64 = 1
	// FeatureFencedTasks: a task report may say its task was fenced
	// (cluster.TaskReport.Fenced), which blames no node.
	FeatureFencedTasks uint64 = 1
	// FeatureUpdateGPUs: a job update may set its GPUs per node and
	// memory (JobUpdate: NumNodes= of a job whose -G total is split).
	FeatureUpdateGPUs uint64 = 1

	// FeatureLevel is the highest level this release knows.
	FeatureLevel uint64 = 1
)

// keyFeatures holds the state's feature level (0 when absent).
var keyFeatures = []byte("features")

// FeatureLevel is the state's feature level (0 before any was set).
func (s *Store) FeatureLevel() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.features
}

// SetFeatureLevel raises the state's feature level to level; a lower or
// equal level changes nothing. A level above FeatureLevel is refused: the
// caller (the FSM) must stop this replica rather than go on without what
// the level turns on.
func (s *Store) SetFeatureLevel(idx uint64, level uint64) error {
	if err := checkFeatureLevel(level); err != nil {
		return err
	}
	return s.apply(idx, func(c *change) error {
		if level > c.st.features {
			c.st.features = level
			c.ops = append(c.ops, featuresOp{level: level})
		}
		return nil
	})
}

// checkFeatureLevel refuses a level this release does not know.
func checkFeatureLevel(level uint64) error {
	if level > FeatureLevel {
		return fmt.Errorf("the state's feature level is %d, this release knows up to %d: upgrade phalanx-controller", level, FeatureLevel)
	}
	return nil
}

// has reports whether the state is at feature level f or above.
func (st *state) has(f uint64) bool { return st.features >= f }

type featuresOp struct{ level uint64 }

func (o featuresOp) write(tx *bolt.Tx) error {
	return putUint64(tx.Bucket(bucketMeta), keyFeatures, o.level)
}

// loadFeatures reads the state's feature level, refusing one above this
// release's.
func loadFeatures(tx *bolt.Tx, st *state) error {
	st.features = getUint64(tx.Bucket(bucketMeta), keyFeatures)
	return checkFeatureLevel(st.features)
}
