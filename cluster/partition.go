package cluster

import (
	"fmt"
	"slices"
	"time"
)

// PartitionState is a partition's state, as in slurm.conf.
type PartitionState string

// Partition states.
const (
	PartitionUp       PartitionState = "UP"
	PartitionDown     PartitionState = "DOWN"
	PartitionDrain    PartitionState = "DRAIN"
	PartitionInactive PartitionState = "INACTIVE"
)

// Partition is a named set of nodes with limits.
type Partition struct {
	Name         string
	Nodes        []string // node names; AllNodes means every registered node
	AllNodes     bool
	Default      bool
	State        PartitionState
	MaxTime      time.Duration // zero: unlimited
	DefaultTime  time.Duration // zero: MaxTime, else unlimited
	MaxNodes     int           // zero: unlimited
	MinNodes     int           // zero: no minimum
	PriorityTier int
	// PreemptMode: whether this partition's jobs may be preempted
	// (requeued) for jobs of a higher tier or QoS.
	PreemptMode PreemptMode
	// AllowAccounts, when set, are the only accounts whose jobs the
	// partition takes; else DenyAccounts are accounts whose jobs it
	// refuses (Slurm's keys; Slurm, too, ignores DenyAccounts then).
	AllowAccounts, DenyAccounts []string
	// AllowGroups, when set, are the only groups whose members' jobs the
	// partition takes (Slurm's key; the controller checks membership).
	AllowGroups []string
	// Exclusive is OverSubscribe=EXCLUSIVE: every job of the partition gets
	// whole nodes, as with --exclusive (scheduler.Admit sets it).
	Exclusive bool
}

// MaxPriorityTier is the most a PriorityTier may be (Slurm's).
const MaxPriorityTier = 65533

// LimitProblems lists the partition's limits that contradict each other,
// each with how to fix it; each limit's own bounds are its reader's to
// check. The config and scontrol update PartitionName= both check them.
func (p *Partition) LimitProblems() []string {
	var out []string
	if p.MaxTime > 0 && p.DefaultTime > p.MaxTime {
		out = append(out, fmt.Sprintf("partition %s: DefaultTime %s exceeds MaxTime %s: lower DefaultTime or raise MaxTime",
			p.Name, FormatDuration(p.DefaultTime), FormatDuration(p.MaxTime)))
	}
	if p.MaxNodes > 0 && p.MinNodes > p.MaxNodes {
		out = append(out, fmt.Sprintf("partition %s: MinNodes %d exceeds MaxNodes %d, so no job could run: lower MinNodes or raise MaxNodes",
			p.Name, p.MinNodes, p.MaxNodes))
	}
	return out
}

// TakesJobs refuses new jobs into a DRAIN or INACTIVE partition, as
// Slurm's submit does (their queued jobs stay: a DRAIN partition still
// runs them); DOWN and UP take them.
func (p *Partition) TakesJobs() error {
	if p.State == PartitionDrain || p.State == PartitionInactive {
		return Errorf(ErrConflict, "Required partition not available (inactive or drain): partition %s is %s", p.Name, p.State)
	}
	return nil
}

// Admits reports whether the partition takes jobs of account: one of its
// AllowAccounts when it has them, else any but its DenyAccounts. As in
// Slurm, DenyAccounts is not enforced when AllowAccounts is set.
func (p *Partition) Admits(account string) bool {
	if len(p.AllowAccounts) > 0 {
		return slices.Contains(p.AllowAccounts, account)
	}
	return !slices.Contains(p.DenyAccounts, account)
}

// Contains reports whether the partition includes the node.
func (p *Partition) Contains(node string) bool {
	if p.AllNodes {
		return true
	}
	for _, n := range p.Nodes {
		if n == node {
			return true
		}
	}
	return false
}

// Clone returns a deep copy.
func (p *Partition) Clone() *Partition {
	c := *p
	c.Nodes = append([]string(nil), p.Nodes...)
	return &c
}
