package cli

import (
	"cmp"
	"fmt"
	"strings"
	"unicode"

	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// Host lists, as Slurm's scontrol shows them, without the controller:
//
//	scontrol show hostnames [LIST]   each host of LIST (default: the job's
//	                                 or step's $SLURM_NODELIST, as Slurm's,
//	                                 else $SLURM_JOB_NODELIST), one per line
//	scontrol show hostlist LIST      LIST (names or expressions, commas
//	                                 between) as one expression, in order
//	scontrol show hostlistsorted LIST  the same, sorted
//
// A LIST that begins with / is a file of host names (whitespace or commas
// between), as Slurm's scontrol reads it; so that MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" |
// head -n1) works in a job script.

// showHostnames prints every host of list, or of the job's node list.
func (k *commands) showHostnames(list string) error {
	if list == "" { // in a step, its nodes: srun sets SLURM_NODELIST
		list = cmp.Or(k.sys.Getenv("SLURM_NODELIST"), k.sys.Getenv("SLURM_JOB_NODELIST"))
	}
	list, err := k.hostFile(list)
	if err != nil {
		return err
	}
	if list == "" {
		return &rawError{msg: "scontrol: error: no host list: give one (scontrol show hostnames gpu[001-004]), or run inside a job, where SLURM_JOB_NODELIST names its nodes"}
	}
	names, err := hostlist.Expand(list)
	if err != nil {
		return hostlistError(err) // it names the list
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
	list, err := k.hostFile(list)
	if err != nil {
		return err
	}
	names, err := hostlist.Expand(list)
	if err != nil {
		return hostlistError(err) // it names the list
	}
	if sorted {
		fmt.Fprintln(k.sys.Stdout, hostlist.Compress(names))
	} else {
		fmt.Fprintln(k.sys.Stdout, hostlist.CompressInOrder(names))
	}
	return nil
}

// hostFile reads a host list given as a file's absolute path (one that
// begins with /): its names, joined by commas; any other list as it is.
func (k *commands) hostFile(list string) (string, error) {
	if !strings.HasPrefix(list, "/") {
		return list, nil
	}
	data, err := k.sys.ReadFile(list)
	if err != nil {
		return "", fmt.Errorf("host list file: %w", err)
	}
	names := strings.FieldsFunc(string(data), func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if len(names) == 0 {
		return "", fmt.Errorf("host list file %s names no host", list)
	}
	return strings.Join(names, ","), nil
}

// hostlistError says how to write the node names a hostlist error is about.
func hostlistError(err error) error {
	return fmt.Errorf("%w: write a node name or a hostlist such as gpu[001-004],gpu010", err)
}
