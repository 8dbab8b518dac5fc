package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// ReasonNotResponding is the reason the controller gives a node it declares
// DOWN for missing heartbeats; such a node comes back UP when it registers.
const ReasonNotResponding = "Not responding"

// RegisterNode records what an agent reported about its host: hardware,
// address, leaf switch and registration time replace what was stored. A new
// node is UP; a node DOWN because it was not responding comes back UP; a
// DRAIN node, or one an admin set DOWN, keeps its state.
func (s *Store) RegisterNode(idx uint64, n *cluster.Node) error {
	return s.update(idx, func(tx *bolt.Tx) error {
		if n == nil || n.Name == "" {
			return fmt.Errorf("register node: a name is required: %w", cluster.ErrInvalid)
		}
		old, err := getNode(tx, n.Name)
		if err != nil {
			return err
		}
		c := n.Clone()
		switch {
		case old == nil:
			c.State, c.Reason, c.StateTime = cluster.NodeUp, "", n.Registered
		case old.State == cluster.NodeDown && old.Reason == ReasonNotResponding:
			c.State, c.Reason, c.StateTime = cluster.NodeUp, "", n.Registered
		default:
			c.State, c.Reason, c.StateTime = old.State, old.Reason, old.StateTime
		}
		return putJSON(tx.Bucket(bucketNodes), []byte(c.Name), c)
	})
}

// SetNodeState sets a node's stored state (UP, DOWN or DRAIN) and reason.
// DOWN ends the node's part of every live job in the same transaction
// (cluster.NodeLost): its tasks there are LOST and the jobs NODE_FAIL.
func (s *Store) SetNodeState(idx uint64, name string, st cluster.NodeState, reason string, t time.Time) error {
	return s.update(idx, func(tx *bolt.Tx) error {
		switch st {
		case cluster.NodeUp, cluster.NodeDown, cluster.NodeDrain:
		default:
			return fmt.Errorf("node %s: state %q: use UP, DOWN or DRAIN: %w", name, st, cluster.ErrInvalid)
		}
		n, err := getNode(tx, name)
		if err != nil {
			return err
		}
		if n == nil {
			return fmt.Errorf("node %q: %w", name, cluster.ErrNotFound)
		}
		n.State, n.Reason, n.StateTime = st, reason, t
		if err := putJSON(tx.Bucket(bucketNodes), []byte(name), n); err != nil {
			return err
		}
		if st != cluster.NodeDown {
			return nil
		}
		return loseNodes(tx, []string{name}, t, reason)
	})
}

// SetNodesDown marks several nodes DOWN at once (a rack or a switch that
// went silent together) in one transaction that reads the active jobs once.
// Unknown names and nodes already DOWN are skipped.
func (s *Store) SetNodesDown(idx uint64, names []string, reason string, t time.Time) error {
	return s.update(idx, func(tx *bolt.Tx) error {
		var lost []string
		for _, name := range names {
			n, err := getNode(tx, name)
			if err != nil {
				return err
			}
			if n == nil || n.State == cluster.NodeDown {
				continue
			}
			n.State, n.Reason, n.StateTime = cluster.NodeDown, reason, t
			if err := putJSON(tx.Bucket(bucketNodes), []byte(name), n); err != nil {
				return err
			}
			lost = append(lost, name)
		}
		return loseNodes(tx, lost, t, reason)
	})
}

// loseNodes ends the lost nodes' part of every live job (cluster.NodeLost).
func loseNodes(tx *bolt.Tx, names []string, t time.Time, reason string) error {
	if len(names) == 0 {
		return nil
	}
	active, err := activeJobs(tx)
	if err != nil {
		return err
	}
	for _, j := range active {
		changed := false
		for _, name := range names {
			if cluster.NodeLost(j, name, t, reason) {
				changed = true
			}
		}
		if !changed {
			continue
		}
		if err := putJob(tx, j); err != nil {
			return err
		}
	}
	return nil
}

// SetPartitions replaces every partition; their order is kept. Names must
// be non-empty and distinct.
func (s *Store) SetPartitions(idx uint64, ps []*cluster.Partition) error {
	return s.update(idx, func(tx *bolt.Tx) error {
		seen := map[string]bool{}
		for _, p := range ps {
			if p == nil || p.Name == "" || seen[p.Name] {
				return fmt.Errorf("set partitions: every partition needs a distinct name: %w", cluster.ErrInvalid)
			}
			seen[p.Name] = true
		}
		if err := tx.DeleteBucket(bucketPartitions); err != nil {
			return err
		}
		b, err := tx.CreateBucket(bucketPartitions)
		if err != nil {
			return err
		}
		for i, p := range ps {
			key := make([]byte, 4)
			binary.BigEndian.PutUint32(key, uint32(i))
			if err := putJSON(b, key, p); err != nil {
				return err
			}
		}
		return nil
	})
}

// Node returns one node; ErrNotFound if there is none.
func (s *Store) Node(name string) (*cluster.Node, error) {
	var n *cluster.Node
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		n, err = getNode(tx, name)
		return err
	})
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, fmt.Errorf("node %q: %w", name, cluster.ErrNotFound)
	}
	return n, nil
}

// Nodes returns every node, by name.
func (s *Store) Nodes() ([]*cluster.Node, error) {
	var out []*cluster.Node
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		out, err = allNodes(tx)
		return err
	})
	return out, err
}

// Partitions returns every partition, in configuration order.
func (s *Store) Partitions() ([]*cluster.Partition, error) {
	var out []*cluster.Partition
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		out, err = allPartitions(tx)
		return err
	})
	return out, err
}

func getNode(tx *bolt.Tx, name string) (*cluster.Node, error) {
	data := tx.Bucket(bucketNodes).Get([]byte(name))
	if data == nil {
		return nil, nil
	}
	var n cluster.Node
	if err := json.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("decode node %q: %w", name, err)
	}
	return &n, nil
}

func allNodes(tx *bolt.Tx) ([]*cluster.Node, error) {
	var out []*cluster.Node
	err := tx.Bucket(bucketNodes).ForEach(func(k, v []byte) error {
		var n cluster.Node
		if err := json.Unmarshal(v, &n); err != nil {
			return fmt.Errorf("decode node %q: %w", k, err)
		}
		out = append(out, &n)
		return nil
	})
	return out, err
}

func allPartitions(tx *bolt.Tx) ([]*cluster.Partition, error) {
	var out []*cluster.Partition
	err := tx.Bucket(bucketPartitions).ForEach(func(k, v []byte) error {
		var p cluster.Partition
		if err := json.Unmarshal(v, &p); err != nil {
			return fmt.Errorf("decode partition %x: %w", k, err)
		}
		out = append(out, &p)
		return nil
	})
	return out, err
}
