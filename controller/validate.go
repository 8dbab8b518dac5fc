package controller

import (
	"github.com/phalanx-hpc/phalanx/cluster"
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
	if j.QoS != "" {
		q, err := cluster.ParseQoS(string(j.QoS))
		if err != nil {
			return cluster.Errorf(cluster.ErrInvalid, "invalid qos specification %q: use high, normal or low", j.QoS)
		}
		j.QoS = q
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
