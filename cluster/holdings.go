package cluster

import "fmt"

// Holdings is what live jobs hold on each node, and the check a placement
// must pass before a job starts: the store applies it to the scheduler's
// placements and the simulator to its own, so the two cannot disagree on
// what fits. What a node holds is loaded the first time the node is asked
// about (see NewHoldings) and then kept up to date with Take and Release.
type Holdings struct {
	node func(name string) *Node
	load func(node string, hold func(na NodeAlloc, exclusive bool))
	held map[string]*held
}

// held is what one node's live jobs hold.
type held struct {
	gpus      map[int]bool
	cpus      int
	mem       int64
	jobs      int // allocations on the node
	exclusive int // of those, exclusive jobs'
}

// NewHoldings checks placements against the nodes node returns (nil for a
// name it does not know). load, when not nil, tells what live jobs hold on
// a node the first time it is needed, by calling hold once per allocation
// on it; without it every node starts free.
func NewHoldings(node func(name string) *Node, load func(node string, hold func(na NodeAlloc, exclusive bool))) *Holdings {
	return &Holdings{node: node, load: load, held: map[string]*held{}}
}

func (h *Holdings) of(node string) *held {
	if u := h.held[node]; u != nil {
		return u
	}
	u := &held{gpus: map[int]bool{}}
	if h.load != nil {
		h.load(node, u.add)
	}
	h.held[node] = u
	return u
}

func (u *held) add(na NodeAlloc, exclusive bool) {
	for _, g := range na.GPUs {
		u.gpus[g] = true
	}
	u.cpus += na.CPUs
	u.mem += na.MemoryMB
	u.jobs++
	if exclusive {
		u.exclusive++
	}
}

func (u *held) remove(na NodeAlloc, exclusive bool) {
	for _, g := range na.GPUs {
		delete(u.gpus, g)
	}
	u.cpus -= na.CPUs
	u.mem -= na.MemoryMB
	u.jobs--
	if exclusive {
		u.exclusive--
	}
}

// Check says why j cannot start on a, or nil. Every node exists, is UP and
// appears once; it is not shared with an exclusive job, nor, for an
// exclusive job, with any; its GPU indices are below the node's GPU count,
// distinct and free, and as many as the job asks per node (all of the
// node's for an exclusive job, which takes it whole); its CPUs and memory
// fit what is free. The gang's size is Place's to check.
func (h *Holdings) Check(j *Job, a Allocation) error {
	seen := make(map[string]bool, len(a.Nodes))
	for _, na := range a.Nodes {
		n := h.node(na.Node)
		switch {
		case n == nil:
			return fmt.Errorf("node %q: %w", na.Node, ErrNotFound)
		case n.State != NodeUp:
			return fmt.Errorf("node %s is %s: %w", n.Name, n.State, ErrConflict)
		case seen[na.Node]:
			return fmt.Errorf("node %s allocated twice: %w", n.Name, ErrInvalid)
		}
		seen[na.Node] = true
		u := h.of(na.Node)
		if u.exclusive > 0 || (j.Exclusive && u.jobs > 0) {
			return fmt.Errorf("node %s is not shared with an exclusive job: %w", n.Name, ErrConflict)
		}
		if err := u.fits(n, j, na); err != nil {
			return err
		}
	}
	return nil
}

func (u *held) fits(n *Node, j *Job, na NodeAlloc) error {
	want := j.GPUsPerNode
	if j.Exclusive {
		want = n.GPUs
	}
	if len(na.GPUs) != want {
		return fmt.Errorf("node %s: %d GPUs given, the job takes %d: %w", n.Name, len(na.GPUs), want, ErrInvalid)
	}
	mine := make(map[int]bool, len(na.GPUs))
	for _, g := range na.GPUs {
		if g < 0 || g >= n.GPUs || u.gpus[g] || mine[g] {
			return fmt.Errorf("node %s: GPU %d is not free: %w", n.Name, g, ErrConflict)
		}
		mine[g] = true
	}
	if na.CPUs < 0 || u.cpus+na.CPUs > n.CPUs {
		return fmt.Errorf("node %s: %d CPUs do not fit (%d of %d used): %w", n.Name, na.CPUs, u.cpus, n.CPUs, ErrConflict)
	}
	if na.MemoryMB < 0 || u.mem+na.MemoryMB > n.MemoryMB {
		return fmt.Errorf("node %s: %d MB do not fit (%d of %d used): %w", n.Name, na.MemoryMB, u.mem, n.MemoryMB, ErrConflict)
	}
	return nil
}

// Take records that a job (exclusive or not) now holds a.
func (h *Holdings) Take(a Allocation, exclusive bool) {
	for _, na := range a.Nodes {
		h.of(na.Node).add(na, exclusive)
	}
}

// Release records that the job holding a has given it back.
func (h *Holdings) Release(a Allocation, exclusive bool) {
	for _, na := range a.Nodes {
		h.of(na.Node).remove(na, exclusive)
	}
}
