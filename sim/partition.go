package sim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// ParsePartition reads a partition spec for --partition:
//
//	NAME[:tier=N][:preempt=requeue|off][:maxtime=T][:state=up|down|drain|inactive]
//
// The partition covers every node. Errors wrap cluster.ErrInvalid.
func ParsePartition(spec string) (*cluster.Partition, error) {
	fields := strings.Split(spec, ":")
	p := &cluster.Partition{Name: fields[0], AllNodes: true, State: cluster.PartitionUp, PreemptMode: cluster.PreemptOff}
	if p.Name == "" || strings.Contains(p.Name, "=") {
		return nil, cluster.Errorf(cluster.ErrInvalid, "partition %q: want NAME[:tier=N][:preempt=requeue][:maxtime=T][:state=S]", spec)
	}
	prev := ""
	for _, f := range fields[1:] {
		key, val, ok := strings.Cut(f, "=")
		var err error
		switch key = strings.ToLower(key); {
		case !ok && prev == "maxtime": // maxtime=1:00:00: the time went on past a ':'
			err = fmt.Errorf("maxtime must not contain ':' (it separates the keys): give minutes or D-H, e.g. maxtime=90 or maxtime=1-12")
		case !ok:
			err = fmt.Errorf("%q is not KEY=VALUE (keys: tier, preempt, maxtime, state)", f)
		default:
			err = setPartitionKey(p, key, val)
		}
		if err != nil {
			return nil, cluster.Errorf(cluster.ErrInvalid, "partition %q: %s", spec, err)
		}
		prev = key
	}
	return p, nil
}

func setPartitionKey(p *cluster.Partition, key, val string) error {
	switch key {
	case "tier":
		n, err := strconv.Atoi(val)
		if err != nil {
			return fmt.Errorf("tier %q is not a number", val)
		}
		p.PriorityTier = n
	case "preempt":
		m, err := cluster.ParsePreemptMode(val)
		if err != nil || val == "" {
			return fmt.Errorf("preempt %q: use requeue or off", val)
		}
		p.PreemptMode = m
	case "maxtime":
		d, err := cluster.ParseDuration(val)
		if err != nil {
			return err
		}
		p.MaxTime = d
	case "state":
		st := cluster.PartitionState(strings.ToUpper(val))
		switch st {
		case cluster.PartitionUp, cluster.PartitionDown, cluster.PartitionDrain, cluster.PartitionInactive:
			p.State = st
		default:
			return fmt.Errorf("state %q: use up, down, drain or inactive", val)
		}
	default:
		return fmt.Errorf("unknown key %q (use tier, preempt, maxtime, state)", key)
	}
	return nil
}

// MergePartitions returns base with each of extra replacing the partition
// of the same name or, if none, appended.
func MergePartitions(base, extra []*cluster.Partition) []*cluster.Partition {
	out := append([]*cluster.Partition(nil), base...)
	for _, e := range extra {
		replaced := false
		for i, b := range out {
			if b.Name == e.Name {
				out[i], replaced = e, true
			}
		}
		if !replaced {
			out = append(out, e)
		}
	}
	return out
}
