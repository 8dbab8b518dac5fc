package controller

import (
	"fmt"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// QoS names a job may ask for with --qos; empty means normal.
const (
	qosHigh   = "high"
	qosNormal = "normal"
	qosLow    = "low"
)

// Partition preemption modes (PreemptMode= in phalanx.conf).
const (
	preemptOff     = "OFF"
	preemptRequeue = "REQUEUE"
)

// maxNice bounds --nice as Slurm does.
const maxNice = 2147483645

// checkConstraints validates what a job asks for that does not depend on
// the cluster: switches, segment, QoS, nice and the shape of its node lists
// and constraint. It normalises QoS to lower case.
func checkConstraints(j *cluster.Job) error {
	switch {
	case j.Switches < 0:
		return cluster.Errorf(cluster.ErrInvalid, "--switches=%d: the leaf switch count must not be negative", j.Switches)
	case j.SwitchesWait < 0:
		return cluster.Errorf(cluster.ErrInvalid, "--switches wait time must not be negative")
	case j.Segment < 0:
		return cluster.Errorf(cluster.ErrInvalid, "--segment=%d must be a positive node count", j.Segment)
	case j.Segment > 0 && j.Nodes%j.Segment != 0:
		return cluster.Errorf(cluster.ErrInvalid, "--segment=%d must divide the node count %d", j.Segment, j.Nodes)
	case j.Nice < -maxNice || j.Nice > maxNice:
		return cluster.Errorf(cluster.ErrInvalid, "--nice=%d is out of range (%d to %d)", j.Nice, -maxNice, maxNice)
	case j.Nice < 0 && j.UID != 0:
		return cluster.Errorf(cluster.ErrInvalid, "--nice=%d: only root may raise a job's priority with a negative nice", j.Nice)
	case len(j.NodeList) > j.Nodes:
		return cluster.Errorf(cluster.ErrInvalid, "--nodelist names %d nodes but the job asks for %d (-N): ask for at least as many nodes as you list", len(j.NodeList), j.Nodes)
	}
	j.QoS = strings.ToLower(j.QoS)
	switch j.QoS {
	case "", qosHigh, qosNormal, qosLow:
	default:
		return cluster.Errorf(cluster.ErrInvalid, "invalid qos specification %q: use high, normal or low", j.QoS)
	}
	if err := checkNodeNames(j); err != nil {
		return err
	}
	if err := j.CheckTasks(); err != nil {
		return err
	}
	_, err := cluster.ParseConstraint(j.Constraint)
	return err
}

// checkNodeNames refuses duplicates and a node both required and excluded.
func checkNodeNames(j *cluster.Job) error {
	seen := map[string]bool{}
	for _, n := range j.NodeList {
		if n == "" || seen[n] {
			return cluster.Errorf(cluster.ErrInvalid, "--nodelist lists %q twice or empty: list each node once", n)
		}
		seen[n] = true
	}
	for _, n := range j.Exclude {
		if seen[n] {
			return cluster.Errorf(cluster.ErrInvalid, "node %s is both in --nodelist and in --exclude", n)
		}
	}
	return nil
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
