package cli

import (
	"fmt"

	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// Host lists, as Slurm's scontrol shows them, without the controller:
//
//	scontrol show hostnames [LIST]   each host of LIST (default: the job's
//	                                 $SLURM_JOB_NODELIST), one per line
//	scontrol show hostlist LIST      LIST (names or expressions, commas
//	                                 between) as one expression, in order
//	scontrol show hostlistsorted LIST  the same, sorted
//
// so that MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" |
// head -n1) works in a job script.

// showHostnames prints every host of list, or of the job's node list.
func (k *commands) showHostnames(list string) error {
	if list == "" {
		list = k.sys.Getenv("SLURM_JOB_NODELIST")
	}
	if list == "" {
		return &rawError{msg: "scontrol: error: no host list: give one (scontrol show hostnames gpu[001-004]), or run inside a job, where SLURM_JOB_NODELIST names its nodes"}
	}
	names, err := hostlist.Expand(list)
	if err != nil {
		return fmt.Errorf("host list %q: %w", list, err)
	}
	for _, n := range names {
		fmt.Fprintln(k.sys.Stdout, n)
	}
	return nil
}

// showHostlist prints list as one hostlist expression, sorted or in the
// order given.
func (k *commands) showHostlist(list string, sorted bool) error {
	if list == "" {
		return &rawError{msg: "scontrol: error: give a host list, e.g. scontrol show hostlist gpu001,gpu002,gpu003"}
	}
	names, err := hostlist.Expand(list)
	if err != nil {
		return fmt.Errorf("host list %q: %w", list, err)
	}
	if sorted {
		fmt.Fprintln(k.sys.Stdout, hostlist.Compress(names))
	} else {
		fmt.Fprintln(k.sys.Stdout, hostlist.CompressInOrder(names))
	}
	return nil
}
