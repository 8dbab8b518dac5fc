package cli

import (
	"fmt"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/phalanx-hpc/phalanx/cli/getopt"
	"github.com/phalanx-hpc/phalanx/cli/sbatch"
)

// Shell completion: phx completion bash|zsh prints a script that completes
// phx's commands and the Slurm names it answers to: subcommands, options
// (from the same tables the commands parse with), and, asking the
// controllers as the user types, job IDs (the user's), partitions and
// nodes where an option or scontrol word takes one; file names elsewhere.

// completionOptions are the options of each command, by its name.
func completionOptions() map[string][]getopt.Option {
	return map[string][]getopt.Option{
		"sbatch": sbatch.Options, "squeue": squeueOptions, "sinfo": sinfoOptions, "scancel": scancelOptions,
		"sacct": sacctOptions, "events": eventsOptions, "logs": logsOptions, "srun": srunOptions(),
	}
}

// optionWords lists every spelling of opts: --long and -s.
func optionWords(opts []getopt.Option) string {
	var w []string
	for _, o := range opts {
		w = append(w, "--"+o.Long)
		if o.Short != 0 {
			w = append(w, "-"+string(o.Short))
		}
	}
	sort.Strings(w)
	return strings.Join(w, " ")
}

func (k *commands) completion() *ucli.Command {
	return &ucli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: source <(phx completion bash), or zsh",
		ArgsUsage: "bash|zsh",
		Action: func(c *ucli.Context) error {
			shell := c.Args().First()
			if c.NArg() != 1 || (shell != "bash" && shell != "zsh") {
				return &cmdError{cmd: "completion", err: fmt.Errorf("name the shell: phx completion bash, or phx completion zsh")}
			}
			exe, err := k.sys.Executable()
			if err != nil {
				exe = "phx"
			}
			var cmds []string
			for _, cmd := range c.App.Commands {
				if !cmd.Hidden {
					cmds = append(cmds, cmd.Name)
				}
			}
			if shell == "zsh" {
				fmt.Fprint(k.sys.Stdout, "autoload -U +X bashcompinit && bashcompinit\n")
			}
			_, err = fmt.Fprint(k.sys.Stdout, completionScript(exe, cmds))
			return err
		},
	}
}

// completionScript is the bash script (zsh runs it through bashcompinit).
func completionScript(exe string, cmds []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# phx completion for bash and zsh: source <(phx completion bash)\n")
	fmt.Fprintf(&b, "_phx_bin=%s\n", shellQuote(exe))
	fmt.Fprintf(&b, "_phx_cmds='%s'\n", strings.Join(cmds, " "))
	opts := completionOptions()
	names := make([]string, 0, len(opts))
	for name := range opts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&b, "_phx_opts_%s='%s'\n", name, optionWords(opts[name]))
	}
	b.WriteString(completionFuncs)
	fmt.Fprintf(&b, "complete -o default -F _phx_complete phx %s\n", strings.Join(slurmNames, " "))
	return b.String()
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// completionFuncs completes one word: COMP_WORDS, COMP_CWORD as bash
// sets them.
const completionFuncs = `_phx() {
	if [ -x "$_phx_bin" ]; then "$_phx_bin" "$@" 2>/dev/null; else command phx "$@" 2>/dev/null; fi
}
_phx_jobs() { _phx squeue --me -h -o %i; }
_phx_parts() { _phx sinfo -h -o %R | sort -u; }
_phx_nodes() { _phx sinfo -N -h -o %N | sort -u; }
_phx_update_keys() { # $1: the word after update, naming what is updated
	case "$1" in
	[Jj]ob[Ii]d|[Jj]ob[Ii]d=*) echo 'JobName= TimeLimit= Partition= NumNodes= Dependency= Nice= QOS= Priority=' ;;
	[Nn]ode[Nn]ame|[Nn]ode[Nn]ame=*) echo 'State= Reason=' ;;
	[Pp]artition[Nn]ame|[Pp]artition[Nn]ame=*) echo 'State= MaxTime= DefaultTime= MaxNodes= PriorityTier= Default=' ;;
	*) echo 'JobId= NodeName= PartitionName= JobName= TimeLimit= Partition= NumNodes= Dependency= Nice= QOS= Priority= State= Reason= MaxTime= DefaultTime= MaxNodes= PriorityTier= Default=' ;;
	esac
}
_phx_complete() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=
	[ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD-1]}
	local cmd=${COMP_WORDS[0]##*/} at=1 words=
	if [ "$cmd" = phx ]; then
		if [ "$COMP_CWORD" -le 1 ]; then
			COMPREPLY=($(compgen -W "$_phx_cmds" -- "$cur"))
			return
		fi
		cmd=${COMP_WORDS[1]} at=2
	fi
	case "$cmd:$prev" in
	*:-p|*:--partition|sacct:-r) words=$(_phx_parts) ;;
	*:-w|*:--nodelist|*:-x|*:--exclude|events:-n|events:--node) words=$(_phx_nodes) ;;
	*:-j|*:--jobs|*:--job) words=$(_phx_jobs) ;;
	scontrol:*)
		local sub=${COMP_WORDS[at]}
		if [ "$COMP_CWORD" -eq "$at" ]; then
			words='show ping raft backup restore token update hold uhold release requeue top reconfigure'
		else
			case "$sub:$prev" in
			show:show) words='job node partition controllers hostnames hostlist hostlistsorted' ;;
			show:job) words=$(_phx_jobs) ;;
			show:node) words=$(_phx_nodes) ;;
			show:partition) words=$(_phx_parts) ;;
			hold:*|uhold:*|release:*|requeue:*|top:*) words=$(_phx_jobs) ;;
			update:*)
				local first=
				[ "$COMP_CWORD" -gt $((at + 1)) ] && first=${COMP_WORDS[at+1]}
				words=$(_phx_update_keys "$first") ;;
			raft:raft) words='add remove transfer' ;;
			esac
		fi ;;
	*)
		local v=_phx_opts_$cmd
		if [ "${cur#-}" != "$cur" ]; then
			words=${!v}
		elif [ "$cmd" = scancel ] || [ "$cmd" = logs ]; then
			words=$(_phx_jobs)
		fi ;;
	esac
	[ -n "$words" ] && COMPREPLY=($(compgen -W "$words" -- "$cur"))
	return 0
}
`
