package cli

import (
	"fmt"
	"strings"

	"github.com/phalanx-hpc/phalanx/cli/getopt"
)

// scontrolOptions are Slurm's scontrol options that Phalanx reads. As in
// Slurm (getopt_long, permuting), they may come before or after the
// command: "scontrol -o show job 4" and "scontrol show job 4 -o" are one.
var scontrolOptions = []getopt.Option{
	{Long: "all", Short: 'a', Usage: "every partition and node (Phalanx hides none: no effect)"},
	{Long: "details", Short: 'd', Usage: "show job: each node's memory and GPUs by index (JOB_GRES=, Nodes= ... GRES=gpu:N(IDX:...))"},
	{Long: "help", Short: 'h', Usage: "show this help"},
	{Long: "oneliner", Short: 'o', Usage: "one line per record"},
	{Long: "quiet", Short: 'Q', Usage: "no warnings, only errors"},
	{Long: "verbose", Short: 'v', Usage: "accepted; prints nothing more"},
	{Long: "clusters", Short: 'M', HasArg: true, Usage: "refused: a Phalanx controller serves one cluster"},
	{Long: "uid", Short: 'u', HasArg: true, Usage: "refused: the caller's identity is the one authenticated"},
	{Long: "json", Usage: "refused: not supported"},
	{Long: "yaml", Usage: "refused: not supported"},
	versionOption,
}

// scontrolFlags are the options of one scontrol command line.
type scontrolFlags struct {
	oneLiner, details, quiet, help bool
}

// parseScontrol splits an scontrol command line into its options and its
// command words.
func parseScontrol(args []string) (scontrolFlags, []string, error) {
	var f scontrolFlags
	vals, words, err := getopt.Parse(scontrolOptions, args, getopt.Permute)
	if err != nil {
		return f, nil, err
	}
	for _, v := range vals {
		switch v.Name {
		case "details":
			f.details = true
		case "help":
			f.help = true
		case "oneliner":
			f.oneLiner = true
		case "quiet":
			f.quiet = true
		case "clusters":
			return f, nil, fmt.Errorf("-M/--clusters %s: a Phalanx controller serves one cluster; leave the option out", v.Value)
		case "uid":
			return f, nil, fmt.Errorf("-u/--uid %s: Phalanx acts as the authenticated caller; leave the option out", v.Value)
		case "json", "yaml":
			return f, nil, fmt.Errorf("--%s is not supported: use scontrol's records, or squeue/sinfo -o for fixed fields", v.Name)
		}
	}
	return f, words, nil
}

// oneLine writes a record of "KEY=VALUE" lines (those after the first
// indented) as Slurm's -o does: one line, the lines joined by spaces. A
// record ending with an empty indented line, as a job's does, ends with a
// space, as in Slurm.
func oneLine(record string) string {
	lines := strings.Split(strings.TrimSuffix(record, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, " ")
	}
	return strings.Join(lines, " ") + "\n"
}
