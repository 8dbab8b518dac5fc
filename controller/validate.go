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
		return fmt.Errorf("%w: --switches=%d: the leaf switch count must not be negative", cluster.ErrInvalid, j.Switches)
	case j.SwitchesWait < 0:
		return fmt.Errorf("%w: --switches wait time must not be negative", cluster.ErrInvalid)
	case j.Segment < 0:
		return fmt.Errorf("%w: --segment=%d must be a positive node count", cluster.ErrInvalid, j.Segment)
	case j.Segment > 0 && j.Nodes%j.Segment != 0:
		return fmt.Errorf("%w: --segment=%d must divide the node count %d", cluster.ErrInvalid, j.Segment, j.Nodes)
	case j.Nice < -maxNice || j.Nice > maxNice:
		return fmt.Errorf("%w: --nice=%d is out of range (%d to %d)", cluster.ErrInvalid, j.Nice, -maxNice, maxNice)
	case j.Nice < 0 && j.UID != 0:
		return fmt.Errorf("%w: --nice=%d: only root may raise a job's priority with a negative nice", cluster.ErrInvalid, j.Nice)
	case len(j.NodeList) > j.Nodes:
		return fmt.Errorf("%w: --nodelist names %d nodes but the job asks for %d (-N): ask for at least as many nodes as you list",
			cluster.ErrInvalid, len(j.NodeList), j.Nodes)
	}
	j.QoS = strings.ToLower(j.QoS)
	switch j.QoS {
	case "", qosHigh, qosNormal, qosLow:
	default:
		return fmt.Errorf("%w: invalid qos specification %q: use high, normal or low", cluster.ErrInvalid, j.QoS)
	}
	if err := checkNodeNames(j); err != nil {
		return err
	}
	return checkConstraintSyntax(j.Constraint)
}

// checkNodeNames refuses duplicates and a node both required and excluded.
func checkNodeNames(j *cluster.Job) error {
	seen := map[string]bool{}
	for _, n := range j.NodeList {
		if n == "" || seen[n] {
			return fmt.Errorf("%w: --nodelist lists %q twice or empty: list each node once", cluster.ErrInvalid, n)
		}
		seen[n] = true
	}
	for _, n := range j.Exclude {
		if seen[n] {
			return fmt.Errorf("%w: node %s is both in --nodelist and in --exclude", cluster.ErrInvalid, n)
		}
	}
	return nil
}

// checkConstraintSyntax accepts "f", "a&b&c" or "a|b|c": features joined by
// one kind of operator.
func checkConstraintSyntax(c string) error {
	if c == "" {
		return nil
	}
	if strings.Contains(c, "&") && strings.Contains(c, "|") {
		return fmt.Errorf("%w: --constraint=%s: mix of & and | is not supported: use a&b (all) or a|b (any)", cluster.ErrInvalid, c)
	}
	for _, f := range constraintFeatures(c) {
		if f == "" || strings.ContainsAny(f, "[]()*,! ") {
			return fmt.Errorf("%w: --constraint=%s: invalid feature specification: write a feature name, a&b or a|b", cluster.ErrInvalid, c)
		}
	}
	return nil
}

// constraintFeatures lists the feature names in a constraint.
func constraintFeatures(c string) []string {
	return strings.FieldsFunc(c, func(r rune) bool { return r == '&' || r == '|' }) // "" yields none
}

// checkAgainstPartition validates the job's node names and features against
// its partition: --nodelist and --exclude name registered nodes of the
// partition, and every feature in --constraint exists on one of them.
func checkAgainstPartition(j *cluster.Job, part *cluster.Partition, nodes []*cluster.Node) error {
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
				return fmt.Errorf("%w: %s: node %s is not in partition %s (or has not registered)",
					cluster.ErrInvalid, list.opt, name, part.Name)
			}
		}
	}
	for _, f := range constraintFeatures(j.Constraint) {
		if !features[f] {
			return fmt.Errorf("%w: invalid feature specification: no node of partition %s has feature %q",
				cluster.ErrInvalid, part.Name, f)
		}
	}
	if avail := len(known) - len(j.Exclude); avail < j.Nodes {
		return fmt.Errorf("%w: partition %s has %d nodes left after --exclude; the job asks for %d",
			cluster.ErrUnsatisfiable, part.Name, avail, j.Nodes)
	}
	return nil
}
