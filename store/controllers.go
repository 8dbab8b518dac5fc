package store

import (
	"fmt"
	"sort"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// SetController records (or updates) a replica's addresses.
func (s *Store) SetController(idx uint64, ctl Controller) error {
	return s.apply(idx, func(c *change) error {
		if ctl.ID == "" {
			return fmt.Errorf("set controller: an ID is required: %w", cluster.ErrInvalid)
		}
		c.st.ctls[ctl.ID] = ctl
		c.ops = append(c.ops, putControllerOp{c: ctl})
		return nil
	})
}

// RemoveController forgets a replica's addresses; an unknown ID is a no-op.
func (s *Store) RemoveController(idx uint64, id string) error {
	return s.apply(idx, func(c *change) error {
		if _, ok := c.st.ctls[id]; !ok {
			return nil
		}
		delete(c.st.ctls, id)
		c.ops = append(c.ops, deleteOp{bucket: bucketControllers, key: []byte(id)})
		return nil
	})
}

// Controllers returns the replicas' recorded addresses, by ID.
func (s *Store) Controllers() []Controller {
	s.mu.RLock()
	out := make([]Controller, 0, len(s.st.ctls))
	for _, c := range s.st.ctls {
		out = append(out, c)
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, k int) bool { return out[i].ID < out[k].ID })
	return out
}

// Controller returns one replica's recorded addresses.
func (s *Store) Controller(id string) (Controller, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.st.ctls[id]
	return c, ok
}
