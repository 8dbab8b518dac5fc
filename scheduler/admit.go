package scheduler

import (
	"fmt"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Admit is the one admission check: whether job could ever run on the
// cluster snap describes. A submit, sbatch --test-only, scontrol update and
// phx sim all ask it, so they cannot disagree. It resolves the job's
// partition (the default when it names none) and its time limit (the
// partition's DefaultTime, else MaxTime, when it gives none), and refuses,
// one line saying why: an unknown partition; an account the partition
// does not take (AllowAccounts, DenyAccounts); a time limit over MaxTime,
// more nodes than MaxNodes or fewer than MinNodes; --nodelist or --exclude
// naming nodes outside the partition, a --constraint feature no node of it
// has; and a request
// no placement can fit (Feasible, or feasible: a memo of it, since only
// the nodes and partitions decide it). The job must be well formed
// already (its constraint parsed by cluster.ParseConstraint).
func Admit(snap *Snapshot, job *cluster.Job, feasible func(*Snapshot, *cluster.Job) error) error {
	var part *cluster.Partition
	for _, p := range snap.Partitions {
		if (job.Partition == "" && p.Default) || p.Name == job.Partition {
			part = p
			break
		}
	}
	if part == nil {
		if job.Partition == "" {
			return cluster.Errorf(cluster.ErrInvalid, "no default partition: name one with -p")
		}
		return cluster.Errorf(cluster.ErrNotFound, "Invalid partition name specified: %s (phx sinfo lists the partitions)", job.Partition)
	}
	job.Partition = part.Name
	if part.Exclusive { // OverSubscribe=EXCLUSIVE
		job.Exclusive = true
	}
	if !part.Admits(job.Account) {
		return cluster.Errorf(cluster.ErrPermission, "Invalid account or account/partition combination specified: partition %s does not take jobs of account %q (AllowAccounts, DenyAccounts)", part.Name, job.Account)
	}
	if job.TimeLimit == 0 {
		job.TimeLimit = part.DefaultTime
		if job.TimeLimit == 0 {
			job.TimeLimit = part.MaxTime
		}
	}
	if part.MaxTime > 0 && job.TimeLimit > part.MaxTime {
		return cluster.Errorf(cluster.ErrInvalid, "requested time limit %s exceeds partition %s's MaxTime %s: ask for at most %[3]s, or use another partition",
			cluster.FormatDuration(job.TimeLimit), part.Name, cluster.FormatDuration(part.MaxTime))
	}
	if part.MaxNodes > 0 && job.Nodes > part.MaxNodes {
		return cluster.Errorf(cluster.ErrInvalid, "%d nodes exceed partition %s's MaxNodes %d: ask for at most %[3]d, or use another partition", job.Nodes, part.Name, part.MaxNodes)
	}
	if job.Nodes < part.MinNodes {
		return cluster.Errorf(cluster.ErrInvalid, "node count %d is below partition %s's MinNodes %d: ask for at least %[3]d, or use another partition", job.Nodes, part.Name, part.MinNodes)
	}
	if err := checkAgainstPartition(job, part, snap.Nodes); err != nil {
		return err
	}
	if feasible == nil {
		feasible = Feasible
	}
	return feasible(snap, job)
}

// checkAgainstPartition validates the job's node names and features against
// its partition: --nodelist and --exclude name registered nodes of the
// partition, and every feature in --constraint exists on one of them.
func checkAgainstPartition(j *cluster.Job, part *cluster.Partition, nodes []*cluster.Node) error {
	if len(j.NodeList) == 0 && len(j.Exclude) == 0 && j.Constraint == "" {
		return nil // nothing to check: no need to walk every node
	}
	known := map[string]*cluster.Node{}
	features := map[string]bool{}
	for _, n := range nodes {
		if part.Contains(n.Name) {
			known[n.Name] = n
			for _, f := range n.Features {
				features[f] = true
			}
		}
	}
	for _, list := range []struct {
		opt   string
		names []string
	}{{"--nodelist", j.NodeList}, {"--exclude", j.Exclude}} {
		for _, name := range list.names {
			if known[name] == nil {
				return cluster.Errorf(cluster.ErrInvalid, "%s: node %s is not in partition %s (or has not registered)", list.opt, name, part.Name)
			}
		}
	}
	c, _ := cluster.ParseConstraint(j.Constraint) // checkConstraints has parsed it
	for _, f := range c.Features() {
		if !features[f] {
			return cluster.Errorf(cluster.ErrInvalid, "invalid feature specification: no node of partition %s has feature %q", part.Name, f)
		}
	}
	if avail := len(known) - len(j.Exclude); len(j.Exclude) > 0 && avail < j.Nodes {
		return fmt.Errorf("%w: partition %s has %d nodes left after --exclude; the job asks for %d",
			cluster.ErrUnsatisfiable, part.Name, avail, j.Nodes)
	}
	return nil
}
