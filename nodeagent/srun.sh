#!/bin/sh
# srun inside a Phalanx job. The batch script already runs once on every
# node of the job; srun starts this node's share of the step's tasks here,
# each with its own SLURM_PROCID, SLURM_LOCALID and GPUs, and exits with
# the highest exit status of its tasks. Every node's srun decides alone,
# from the same command line and job, so the nodes agree on the step: its
# nodes, its tasks on each, and whether Slurm would have refused it.
# Its own variables' names begin with _srun_, which no job uses: its tasks
# inherit its environment, and see what the job's script exported (n, out,
# label) as the script set it, as under Slurm's srun, a program that
# changes only the step's SLURM_* and launch variables and what --export
# sets.
warn() { echo "srun: warning: $*" >&2; }
die() { echo "srun: error: $*" >&2; exit 1; }
# bad MESSAGE: a command line getopt_long refuses, as srun says so.
bad() { printf 'srun: %s\nTry "srun --help" for more information\n' "$*" >&2; exit 1; }
# refuse REASON: a step Slurm's controller would not create.
refuse() { die "Unable to create step for job ${SLURM_JOB_ID:-0}: $*"; }

# Slurm 22.05's srun options, as its getopt_long takes them: the short
# ones in getopt's notation; the long ones in the order of the table
# slurm_option_table_create (src/common/slurm_opt.c) builds for srun, the
# order getopt_long lists an ambiguous prefix's possibilities in. Read off
# srun 22.05.8 itself: its answer to --NAME and --NAME=1 for every name in
# its binary, and its possibilities for --a, --b, ... --z. NAME: takes a
# value (--NAME=V, or the next word), NAME:: an optional one (--NAME=V
# only), NAME a flag. NAME:=OTHER is OTHER under another name (one option
# to getopt_long, so a prefix of both is not ambiguous).
_srun_shortopts=A:B:C:D:EF:G:HI::J:K::L:M:N:OQS:T:VW:XZb:c:d:e:hi:k::lm:n:o:p:q:r:st:uvw:x:
_srun_longopts='accel-bind: account: acctg-freq:
bcast:: bcast-exclude: begin: bb: bbf:
cluster-constraint: chdir: cluster: clusters: comment: compress:: container: context:
contiguous constraint: core-spec: cores-per-socket: cpu-bind: cpu_bind:=cpu-bind cpu-freq:
cpus-per-gpu: cpus-per-task:
deadline: debugger-test delay-boot: dependency: disable-status distribution:
epilog: error: exact exclude: exclusive:: export: extra-node-info:
gid: gpu-bind: gpu-freq: gpus: gpus-per-node: gpus-per-socket: gpus-per-task: gres: gres-flags:
help het-group: hint: hold
immediate:: input: interactive
jobid: job-name:
kill-on-bad-exit::
label licenses:
mail-type: mail-user: mcs-label: mem: mem-bind: mem-per-cpu: mem-per-gpu: mincpus: mpi:
msg-timeout: multi-prog
network: nice:: no-allocate no-kill:: nodefile: nodelist: nodes: ntasks: ntasks-per-core:
ntasks-per-gpu: ntasks-per-node: ntasks-per-socket: ntasks-per-tres:
open-mode: output: overcommit overlap:: oversubscribe
pack-group: partition: power: prefer: preserve-env priority: profile: prolog: propagate:: pty
qos: quiet quit-on-interrupt
reboot relative: reservation: resv-ports::
send-libs:: signal: slurmd-debug: sockets-per-node: spread-job switches:
threads: task-epilog: task-prolog: tasks-per-node: test-only thread-spec: threads-per-core:
time: time-min: tmp:
uid: unbuffered use-min-nodes usage
verbose version
wait: wckey: whole
x11::'

# long BODY: the option --BODY (BODY without its =VALUE) as getopt_long
# finds it, in $_srun_name and its kind ("", ":" or "::") in $_srun_kind:
# the option of that name, else the only one BODY begins; else BODY is
# unknown or ambiguous (as getopt_long says, WHOLE: the word after --).
long() {
	_srun_name='' _srun_kind='' _srun_same='' _srun_amb=''
	for _srun_e in $_srun_longopts; do
		_srun_n=${_srun_e%%[:=]*} _srun_r=${_srun_e#"${_srun_e%%[:=]*}"}
		case $_srun_n in
		"$1") _srun_name=$_srun_n _srun_kind=${_srun_r%%=*}; return ;;
		"$1"*) ;;
		*) continue ;;
		esac
		_srun_a=$_srun_n
		case $_srun_r in *=*) _srun_a=${_srun_r#*=} ;; esac
		if [ -z "$_srun_name" ]; then
			_srun_name=$_srun_n _srun_kind=${_srun_r%%=*} _srun_same=$_srun_a _srun_list=" '--$_srun_n'"
		elif [ "${_srun_r%%=*}" != "$_srun_kind" ] || [ "$_srun_a" != "$_srun_same" ]; then
			_srun_amb=1 _srun_list="$_srun_list '--$_srun_n'"
		fi
	done
	[ -n "$_srun_name" ] || bad "unrecognized option '--$2'"
	[ -z "$_srun_amb" ] || bad "option '--$2' is ambiguous; possibilities:$_srun_list"
}

usage() {
	echo 'Usage: srun [-N nodes] [-n tasks] [--ntasks-per-node=n] [-w hosts] [-l] [-K] [-O]'
	echo '            [-o out] [-e err] [--export=ALL|NONE|vars] [--mpi=type] executable [args...]'
}
help() {
	usage
	cat <<'EOF'

srun inside a Phalanx job: the batch script runs on every node of the job,
and srun starts this node's share of the step's tasks.

  -N, --nodes=N               the job's first N nodes
  -n, --ntasks=N              N tasks in all
      --ntasks-per-node=N     N tasks on each node (default: the job's)
  -w, --nodelist=hosts        these nodes of the job's
  -c, --cpus-per-task=N       N CPUs for each task, of the job's on the node
  -O, --overcommit            allow more tasks than the job's CPUs
      --gpus-per-task=N       N of the node's GPUs for each task
  -l, --label                 each output line after its task's number
  -o, --output=out            each task's output to a file of its own
  -e, --error=err             each task's errors to a file of its own
  -K, --kill-on-bad-exit      a task exiting non-zero stops the others
      --export=ALL|NONE|[ALL,]VAR[=value],...  the tasks' environment
      --mpi=list|none|pmix|pmi2  (Phalanx starts no PMI server)

srun's other options are accepted and ignored.
EOF
}

_srun_nodes='' _srun_ntasks='' _srun_pernode='' _srun_cpt='' _srun_nodelist='' _srun_label='' _srun_gpt='' _srun_out='' _srun_err=''
_srun_killbad='' _srun_overcommit='' _srun_exports='' _srun_mpi='' _srun_dist=''
count() { # OPTION VALUE: a positive count, MIN[-MAX] (MIN is used)
	case "${2%%-*}" in ''|*[!0-9]*|0) die "$1=$2: give a positive count" ;; esac
	echo "${2%%-*}"
}
# opt NAME VALUE [GIVEN]: what srun does with option NAME (-X or --long),
# its VALUE (GIVEN: an optional value was given). The others are ignored.
opt() {
	case $1 in
	-N|--nodes) _srun_nodes=$(count "$1" "$2") || exit 1 ;;
	-n|--ntasks) _srun_ntasks=$(count "$1" "$2") || exit 1 ;;
	--ntasks-per-node|--tasks-per-node) _srun_pernode=$(count "$1" "$2") || exit 1 ;;
	-c|--cpus-per-task) _srun_cpt=$(count "$1" "$2") || exit 1 ;;
	--gpus-per-task) _srun_gpt=$(count "$1" "${2##*:}") || exit 1 ;;
	-w|--nodelist) _srun_nodelist=$2 ;;
	-l|--label) _srun_label=1 ;;
	-O|--overcommit) _srun_overcommit=1 ;;
	-o|--output) _srun_out=$2 ;;
	-e|--error) _srun_err=$2 ;;
	-m|--distribution) _srun_dist=$2 ;;
	--export) _srun_exports=$2 ;;
	-K|--kill-on-bad-exit)
		_srun_killbad=1
		[ -n "$3" ] || return 0
		case $2 in ''|*[!0-9]*) die "Invalid numeric value \"$2\" for --kill-on-bad-exit." ;; esac
		[ "$2" -ne 0 ] || _srun_killbad='' ;;
	--mpi)
		case $2 in
		list) printf 'MPI plugin types are...\n\tnone\n'; exit 0 ;;
		none) _srun_mpi='' ;;
		pmi2|pmix|pmix_v*) _srun_mpi=$2 ;;
		*) die "Invalid MPI type '$2', --mpi=list for acceptable types" ;;
		esac ;;
	-h|--help) help; exit 0 ;;
	--usage) usage; exit 0 ;;
	# Slurm's line alone on stdout, for the scripts that parse it.
	-V|--version) echo "slurm 22.05.8"; echo "srun: Phalanx's srun inside a job" >&2; exit 0 ;;
	--container) die "$1 is not supported inside a Phalanx job: submit the job in its image with sbatch --image" ;;
	esac
}
# Slurm's input variables, which srun reads before its options (these
# win): SLURM_LABELIO (-l), SLURM_KILL_BAD_EXIT (-K), SLURM_OVERCOMMIT
# (-O), SLURM_DISTRIBUTION (-m), SLURM_MPI_TYPE (--mpi), SRUN_EXPORT_ENV,
# else SLURM_EXPORT_ENV (--export), SRUN_CPUS_PER_TASK (-c; 22.05's srun no
# longer reads SLURM_CPUS_PER_TASK, the job's); the counts (SLURM_NNODES,
# SLURM_NTASKS, SLURM_NTASKS_PER_NODE) below.
case ${SLURM_LABELIO:-0} in 0) ;; *) _srun_label=1 ;; esac
case ${SLURM_KILL_BAD_EXIT:-0} in 0) ;; *) _srun_killbad=1 ;; esac
[ -z "${SLURM_OVERCOMMIT:-}" ] || _srun_overcommit=1
_srun_dist=${SLURM_DISTRIBUTION:-}
[ -z "${SLURM_MPI_TYPE:-}" ] || opt --mpi "$SLURM_MPI_TYPE" 1
_srun_exports=${SRUN_EXPORT_ENV:-${SLURM_EXPORT_ENV:-}}
[ -z "${SRUN_CPUS_PER_TASK:-}" ] || opt -c "$SRUN_CPUS_PER_TASK" 1
while [ $# -gt 0 ]; do
	case $1 in
	--) shift; break ;;
	--?*)
		_srun_b=${1#--} _srun_v='' _srun_given=''
		case $_srun_b in *=*) _srun_v=${_srun_b#*=} _srun_given=1 ;; esac
		case ${_srun_b%%=*} in container-*|no-container-*) # Pyxis's
			die "--${_srun_b%%=*} is not supported inside a Phalanx job: submit the job in its image with sbatch --image" ;;
		esac
		long "${_srun_b%%=*}" "$_srun_b"
		case $_srun_kind in
		:) if [ -z "$_srun_given" ]; then
			[ $# -ge 2 ] || bad "option '--$_srun_name' requires an argument"
			_srun_v=$2 _srun_given=1
			shift
		fi ;;
		::) ;;
		*) [ -z "$_srun_given" ] || bad "option '--$_srun_name' doesn't allow an argument" ;;
		esac
		opt "--$_srun_name" "$_srun_v" "$_srun_given" ;;
	-?*) # short options, grouped: the one that takes a value ends the group
		_srun_g=${1#-}
		while [ -n "$_srun_g" ]; do
			_srun_ch=${_srun_g%"${_srun_g#?}"} _srun_g=${_srun_g#?} _srun_v='' _srun_given=''
			case $_srun_ch in :) bad "invalid option -- ':'" ;; esac
			case $_srun_shortopts in
			*"$_srun_ch::"*) _srun_v=$_srun_g _srun_given=${_srun_g:+1} _srun_g='' ;;
			*"$_srun_ch:"*)
				if [ -n "$_srun_g" ]; then
					_srun_v=$_srun_g _srun_g=''
				else
					[ $# -ge 2 ] || bad "option requires an argument -- '$_srun_ch'"
					_srun_v=$2
					shift
				fi
				_srun_given=1 ;;
			*"$_srun_ch"*) ;;
			*) bad "invalid option -- '$_srun_ch'" ;;
			esac
			opt "-$_srun_ch" "$_srun_v" "$_srun_given"
		done ;;
	*) break ;; # the command: srun stops at the first word not an option
	esac
	shift
done
[ $# -gt 0 ] || die "no command to run"

# The step's number: each node counts the sruns its script runs, taking
# part or not, so that the numbers agree on every node.
# The agent gives each task a directory to count in (PHX_STEP_DIR).
_srun_s=0
_srun_steps=${PHX_STEP_DIR:-${TMPDIR:-/tmp}/phx-steps.${SLURM_JOB_ID:-0}.${PHX_ATTEMPT:-0}.${SLURM_NODEID:-0}}
if mkdir -p "$_srun_steps" 2>/dev/null && [ -w "$_srun_steps" ]; then
	while ! mkdir "$_srun_steps/$_srun_s" 2>/dev/null && [ "$_srun_s" -lt 100000 ]; do _srun_s=$((_srun_s + 1)); done
fi

# The job: its nodes, this node's place and name, its tasks per node (the
# first count of SLURM_TASKS_PER_NODE) and their CPUs and GPUs.
_srun_all=${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-1}} _srun_me=${SLURM_NODEID:-0} _srun_here=${SLURMD_NODENAME:-$(uname -n)}
_srun_jobper=${SLURM_TASKS_PER_NODE%%[!0-9]*} _srun_jobcpt=${SLURM_CPUS_PER_TASK:-1}
_srun_gpt_job=${SLURM_GPUS_PER_TASK:-0} # N, or TYPE:N as Slurm writes a typed request
_srun_jobper=${_srun_jobper:-${SLURM_NTASKS_PER_NODE:-1}} _srun_gpt=${_srun_gpt:-${_srun_gpt_job##*:}}
# envcount VALUE: a count srun takes from its input variables (a range's
# first), or nothing.
envcount() {
	case ${1%%-*} in ''|*[!0-9]*|0) ;; *) echo "${1%%-*}" ;; esac
}
# srun's counts as Slurm 22.05's srun takes them: its options, else its
# input variables, the job's: SLURM_NNODES as -N, SLURM_NTASKS (or
# SLURM_NPROCS) as -n, SLURM_NTASKS_PER_NODE as --ntasks-per-node (sbatch
# sets the last two only when -n or --ntasks-per-node was given).
_srun_N=${_srun_nodes:-$(envcount "${SLURM_NNODES:-$_srun_all}")}
_srun_n=${_srun_ntasks:-$(envcount "${SLURM_NTASKS:-${SLURM_NPROCS:-}}")}
_srun_pn=${_srun_pernode:-$(envcount "${SLURM_NTASKS_PER_NODE:-}")}
_srun_N=${_srun_N:-1}

# hostnames LIST: each host of a hostlist (gpu[001-003,007],cpu1), one a
# line: scontrol's; without it (a container), expanded here.
hostnames() {
	scontrol show hostnames "$1" 2>/dev/null && return
	printf '%s\n' "$1" | awk '
	function expand(h,    i, j, pre, post, n, k, part, r, lo, hi, x) {
		if (!(i = index(h, "["))) { print h; return }
		if (!(j = index(substr(h, i), "]"))) exit 1
		pre = substr(h, 1, i - 1); post = substr(h, i + j)
		n = split(substr(h, i + 1, j - 2), part, ",")
		for (k = 1; k <= n; k++) {
			if (split(part[k], r, "-") == 1) r[2] = r[1]
			if (r[1] !~ /^[0-9]+$/ || r[2] !~ /^[0-9]+$/) exit 1
			for (x = r[1] + 0; x <= r[2] + 0; x++) expand(pre sprintf("%0" length(r[1]) "d", x) post)
		}
	}
	{
		for (i = 1; i <= length($0); i++) {
			ch = substr($0, i, 1)
			if (ch == "[") depth++
			if (ch == "]") depth--
			if (ch != "," || depth) { h = h ch; continue }
			if (h != "") expand(h)
			h = ""
		}
		if (h != "") expand(h)
	}'
}
# jobnodes: the job's nodes, one a line: by SLURM_NODEID, as the agent
# lists them beside the step counters; else SLURM_JOB_NODELIST's, sorted.
jobnodes() {
	if [ -s "$_srun_steps/nodes" ]; then
		cat "$_srun_steps/nodes"
	else
		[ -n "${SLURM_JOB_NODELIST:-}" ] && hostnames "$SLURM_JOB_NODELIST"
	fi
}

# The step's nodes ($_srun_m of them, their names in $_srun_stepnodes where
# known) and this node's place among them ($_srun_j, empty if none), and
# its tasks ($_srun_n), as Slurm's srun finds them (_opt_verify): -w names
# some (a host list, or a file of them when it holds a /), each one of the
# job's, and raises the node count to as many; of more than the node
# count, the first are kept (srun says so). Without a task count, one a
# node (times --ntasks-per-node); fewer tasks than nodes take fewer nodes
# (srun says so), and --ntasks-per-node that does not give the task count
# on those nodes is dropped (said when the count is more than it). The
# job's first other nodes then make -w's up to the node count, in the
# job's order; without -w, the step is on the job's first nodes.
[ "$_srun_N" -le "$_srun_all" ] || die "Only allocated $_srun_all nodes asked for $_srun_N"
_srun_m=$_srun_N _srun_stepnodes=''
if [ -n "$_srun_nodelist" ]; then
	case $_srun_nodelist in */*)
		[ -f "$_srun_nodelist" ] && [ -r "$_srun_nodelist" ] || die "-w $_srun_nodelist: cannot read the file of host names"
		_srun_nodelist=$(tr -s ' \t\n' ',,,' <"$_srun_nodelist" | sed -e 's/^,//' -e 's/,$//') ;;
	esac
	_srun_names=$(hostnames "$_srun_nodelist") || die "-w $_srun_nodelist: not a host list"
	_srun_want=$(printf '%s\n' "$_srun_names" | sort -u | grep -c .)
	if [ "$_srun_want" -gt "$_srun_N" ]; then
		echo "srun: error: Required nodelist includes more nodes than permitted by max-node count ($_srun_want > $_srun_N). Eliminating nodes from the nodelist." >&2
	fi
	# Without the job's nodes to make them up, -w's alone.
	_srun_jn=$(jobnodes) || _srun_jn='' _srun_m=$_srun_want
fi
if [ -z "$_srun_n" ]; then
	_srun_n=$((_srun_m * ${_srun_pn:-1}))
else
	if [ "$_srun_n" -lt "$_srun_m" ]; then
		[ "$_srun_me" != 0 ] || echo "srun: Warning: can't run $_srun_n processes on $_srun_m nodes, setting nnodes to $_srun_n" >&2
		_srun_m=$_srun_n
	fi
	if [ -n "$_srun_pn" ] && [ "$_srun_pn" -ne $((_srun_n / _srun_m)) ]; then
		[ "$_srun_me" != 0 ] || [ "$_srun_n" -le "$_srun_pn" ] ||
			echo "srun: Warning: can't honor --ntasks-per-node set to $_srun_pn which doesn't match the requested tasks $_srun_n with the number of requested nodes $_srun_m. Ignoring --ntasks-per-node." >&2
		_srun_pn=''
	fi
fi
_srun_j=$_srun_me
if [ -n "$_srun_nodelist" ]; then
	if [ -n "$_srun_jn" ]; then
		_srun_names=$(printf '%s\n' "$_srun_jn" | W=$_srun_names N=$_srun_m awk '
			BEGIN {
				n = split(ENVIRON["W"], w, "\n")
				for (i = 1; i <= n; i++) if (w[i] != "" && !(w[i] in want)) { want[w[i]] = 1; k++ }
				most = ENVIRON["N"] + 0
				extra = most - k
			}
			{ line[NR] = $0 }
			$0 in want { keep[NR] = 1; delete want[$0]; next }
			extra > 0 { keep[NR] = 1; extra-- }
			END {
				for (x in want) exit 1
				for (i = 1; i <= NR && most > 0; i++) if (keep[i]) { print line[i]; most-- }
			}') || refuse "Requested node configuration is not available"
	fi
	_srun_stepnodes=$_srun_names
	_srun_m=$(printf '%s\n' "$_srun_names" | grep -c .)
	_srun_j=$(printf '%s\n' "$_srun_names" | H=$_srun_here awk '$0 == ENVIRON["H"] { print NR - 1; exit }')
fi

# runs V K...: K nodes of V tasks each, ..., as Slurm writes them: 2(x3), 3,2.
runs() {
	_srun_rs=''
	while [ $# -ge 2 ]; do
		if [ "$2" -gt 0 ]; then
			_srun_rs="$_srun_rs${_srun_rs:+,}$1"
			[ "$2" -eq 1 ] || _srun_rs="$_srun_rs(x$2)"
		fi
		shift 2
	done
	echo "$_srun_rs"
}
# The tasks on each node, block: spread evenly, the first nodes one more
# (4 on 3 nodes: 2,1,1). $_srun_most: the most on one node; this node's:
# $_srun_c of them, the first numbered $_srun_first.
_srun_base=$((_srun_n / _srun_m)) _srun_extra=$((_srun_n % _srun_m))
_srun_most=$((_srun_base + (_srun_extra > 0)))
_srun_tpn=$(runs $((_srun_base + 1)) "$_srun_extra" "$_srun_base" $((_srun_m - _srun_extra)))
[ -z "$_srun_j" ] || { _srun_c=$((_srun_base + (_srun_j < _srun_extra))) _srun_first=$((_srun_j * _srun_base + (_srun_j < _srun_extra ? _srun_j : _srun_extra))); }
# As Slurm's controller: a node's tasks need their CPUs among the job's
# there, unless -O.
# SLURM_CPUS_ON_NODE is what the job holds there (all the node's CPUs for
# an exclusive job); without it, its tasks times their CPUs.
_srun_stepcpt=${_srun_cpt:-1} _srun_jobcpus=${SLURM_CPUS_ON_NODE:-$((_srun_jobper * _srun_jobcpt))}
if [ -z "$_srun_overcommit" ] && [ $((_srun_most * _srun_stepcpt)) -gt "$_srun_jobcpus" ]; then
	echo "srun: error: Unable to create step for job ${SLURM_JOB_ID:-0}: More processors requested than permitted" >&2
	die "the step puts $_srun_most task(s) of $_srun_stepcpt CPU(s) on a node where the job holds $_srun_jobcpus CPU(s): ask for fewer, submit the job with more (sbatch --ntasks-per-node, -c, --exclusive), or overcommit (-O)"
fi
[ -n "$_srun_j" ] && [ "$_srun_j" -lt "$_srun_m" ] || exit 0 # not one of the step's nodes

# stepsignal: the signal the step was sent (scancel [--signal] JOBID.STEP,
# srun -K on another node), by the mark the agent leaves before it signals
# the step's tasks here; empty when none.
stepsignal() {
	for _srun_f in "$_srun_steps"/signal."$_srun_s".*; do
		[ -e "$_srun_f" ] && { echo "${_srun_f##*.}"; return; }
	done
}
# A step cancelled before its tasks start here (another node's srun -K
# came first) starts none.
_srun_sig=$(stepsignal)
case $_srun_sig in 1|2|9|15)
	echo "srun: error: step ${SLURM_JOB_ID:-0}.$_srun_s was cancelled (signal $_srun_sig): its tasks do not start on $_srun_here" >&2
	exit $((128 + _srun_sig)) ;;
esac

# Each task's GPUs: its share of the node's, with a GPU count per task.
if [ "$_srun_gpt" -gt 0 ]; then
	_srun_have=$(printf '%s' "${CUDA_VISIBLE_DEVICES:-}" | tr ',' '\n' | grep -c .)
	[ $((_srun_c * _srun_gpt)) -le "$_srun_have" ] || die "$_srun_c task(s) of $_srun_gpt GPU(s) on this node, which has $_srun_have for the job"
fi
if [ -n "$_srun_mpi" ] && [ "$_srun_j" -eq 0 ]; then
	warn "--mpi=$_srun_mpi: Phalanx starts no PMI server, so MPI programs that use PMIx or PMI2 start as singletons: use torchrun or NCCL, or mpirun with its own launcher"
fi

# The step's variables, for all its tasks, as Slurm's srun and slurmstepd
# set them: its nodes and tasks, in SLURM_STEP_* and over the job's in
# SLURM_NNODES, SLURM_NODEID (this node's place in the step), SLURM_NTASKS
# and SLURM_TASKS_PER_NODE; SLURM_NODELIST and SLURM_JOB_* stay the job's.
# SLURM_GTIDS: this node's tasks; SLURM_DISTRIBUTION: -m, else cyclic for
# no more tasks than nodes, else block; SLURM_UMASK: srun's umask;
# SLURM_LABELIO: -l.
if [ "$_srun_m" -eq "$_srun_all" ] && [ -z "$_srun_nodelist" ]; then
	_srun_steplist=${SLURM_JOB_NODELIST:-}
else
	[ -n "$_srun_stepnodes" ] || [ ! -s "$_srun_steps/nodes" ] || _srun_stepnodes=$(head -n "$_srun_m" "$_srun_steps/nodes")
	[ -n "$_srun_stepnodes" ] || [ "$_srun_m" -ne 1 ] || _srun_stepnodes=$_srun_here
	# As one expression (scontrol's), else the names, commas between.
	_srun_steplist=$(printf '%s\n' "$_srun_stepnodes" | paste -sd, -)
	if [ -n "$_srun_steplist" ] && _srun_l=$(scontrol show hostlistsorted "$_srun_steplist" 2>/dev/null); then _srun_steplist=$_srun_l; fi
fi
export SLURM_STEP_ID=$_srun_s SLURM_STEPID=$_srun_s SLURM_STEP_NUM_NODES=$_srun_m SLURM_STEP_NUM_TASKS=$_srun_n \
	SLURM_STEP_TASKS_PER_NODE=$_srun_tpn SLURM_NNODES=$_srun_m SLURM_NODEID=$_srun_j SLURM_NTASKS=$_srun_n SLURM_NPROCS=$_srun_n \
	SLURM_TASKS_PER_NODE=$_srun_tpn WORLD_SIZE=$_srun_n SLURM_UMASK="$(umask)"
_srun_g='' _srun_i=$_srun_first
while [ "$_srun_i" -lt $((_srun_first + _srun_c)) ]; do _srun_g=$_srun_g${_srun_g:+,}$_srun_i _srun_i=$((_srun_i + 1)); done
export SLURM_GTIDS="$_srun_g"
[ -z "$_srun_steplist" ] || export SLURM_STEP_NODELIST="$_srun_steplist"
[ -z "$_srun_pn" ] || export SLURM_NTASKS_PER_NODE="$_srun_pn"
[ -z "$_srun_cpt" ] || export SLURM_CPUS_PER_TASK="$_srun_cpt"
[ -z "$_srun_label" ] || export SLURM_LABELIO=1
if [ -n "$_srun_dist" ]; then export SLURM_DISTRIBUTION="$_srun_dist"
elif [ "$_srun_n" -le "$_srun_m" ]; then export SLURM_DISTRIBUTION=cyclic
else export SLURM_DISTRIBUTION=block
fi

# --export (Slurm's launch plugin): ALL, the default, passes the whole
# environment; a list without ALL only the SLURM* variables, Phalanx's
# (PHX_*, CUDA_VISIBLE_DEVICES and the launch variables of the tasks
# table in docs/cli.md) and those it names; NONE ends the list. VAR=value
# sets VAR, unless the environment passes VAR on anyway (ALL, SLURM*).
_srun_exportall=1 _srun_keep=''
case ${_srun_exports:-ALL} in [Aa][Ll][Ll]) ;; *)
	_srun_exportall='' _srun_l=$_srun_exports,
	while [ -n "$_srun_l" ]; do
		_srun_t=${_srun_l%%,*} _srun_l=${_srun_l#*,}
		case $_srun_t in [Aa][Ll][Ll]) _srun_exportall=1 ;; [Nn][Oo][Nn][Ee]) break ;; esac
	done
	_srun_envnames=$(awk 'BEGIN { for (k in ENVIRON) print k }' </dev/null)
	_srun_l=$_srun_exports,
	while [ -n "$_srun_l" ]; do
		_srun_t=${_srun_l%%,*} _srun_l=${_srun_l#*,} _srun_k=${_srun_t%%=*}
		case $_srun_t in [Aa][Ll][Ll]|'') continue ;; [Nn][Oo][Nn][Ee]) break ;; esac
		case $_srun_k in [!A-Za-z_]*|*[!A-Za-z0-9_]*) warn "--export: $_srun_k is not a variable name: ignored"; continue ;; esac
		_srun_keep="$_srun_keep $_srun_k"
		[ "$_srun_k" != "$_srun_t" ] || continue
		if printf '%s\n' "$_srun_envnames" | grep -Fxq "$_srun_k"; then
			case $_srun_k in SLURM*) continue ;; esac # the step's own stay
		fi
		export "$_srun_k=${_srun_t#*=}" # a value given wins over the one inherited (ALL,OMP_NUM_THREADS=4)
	done ;;
esac

# pattern P: srun's file name pattern P for the task of $_srun_id.
pattern() {
	printf '%s' "$1" | sed -e 's/%%/@PHX_PCT@/g' -e "s/%t/$_srun_id/g" -e "s/%n/$_srun_j/g" -e "s/%[jJ]/${SLURM_JOB_ID:-0}/g" \
		-e "s/%s/$_srun_s/g" -e "s/%N/$_srun_here/g" -e "s/%u/$(id -un)/g" -e 's/@PHX_PCT@/%/g'
}

# share LIST: task $_srun_tl's share of a comma-separated list of the
# node's GPUs, $_srun_gpt of them.
share() {
	printf '%s\n' "$1" | tr ',' '\n' | sed -n "$((_srun_tl * _srun_gpt + 1)),$((_srun_tl * _srun_gpt + _srun_gpt))p" | paste -sd, -
}

# task L CMD...: runs CMD as this node's task L.
task() {
	_srun_tl=$1
	shift
	_srun_id=$((_srun_first + _srun_tl)) _srun_last=$((_srun_n - 1)) # -l pads to the last task's width
	export SLURM_PROCID=$_srun_id SLURM_LOCALID=$_srun_tl RANK=$_srun_id LOCAL_RANK=$_srun_tl
	# Its GPUs: with a count per task, its own of the node's, in
	# CUDA_VISIBLE_DEVICES and by host index in SLURM_STEP_GPUS (all of
	# them without one), SLURM_GPUS_ON_NODE the step's on the node.
	[ -z "${SLURM_JOB_GPUS:-}" ] || export SLURM_STEP_GPUS="$SLURM_JOB_GPUS"
	if [ "$_srun_gpt" -gt 0 ]; then
		CUDA_VISIBLE_DEVICES=$(share "$CUDA_VISIBLE_DEVICES")
		export CUDA_VISIBLE_DEVICES SLURM_GPUS_ON_NODE=$((_srun_c * _srun_gpt))
		[ -z "${SLURM_JOB_GPUS:-}" ] || SLURM_STEP_GPUS=$(share "$SLURM_JOB_GPUS")
	fi
	# --export without ALL: CMD runs as env -i VAR=value... CMD.
	if [ -z "$_srun_exportall" ]; then
		_srun_nc=$#
		for _srun_k in $(awk 'BEGIN { for (k in ENVIRON) if (k ~ /^[A-Za-z_][A-Za-z0-9_]*$/) print k }' </dev/null); do
			case " $_srun_keep " in *" $_srun_k "*) ;; *)
				case $_srun_k in
				SLURM*|PHX_*|CUDA_VISIBLE_DEVICES|RANK|LOCAL_RANK|WORLD_SIZE|NODE_RANK|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT|PET_*) ;;
				*) continue ;;
				esac ;;
			esac
			eval "set -- \"\$@\" \"\$_srun_k=\${$_srun_k}\""
		done
		while [ "$_srun_nc" -gt 0 ]; do set -- "$@" "$1"; shift; _srun_nc=$((_srun_nc - 1)); done
		set -- env -i "$@"
	fi
	# -o, -e: the task's output and errors to its own file, appended (%t
	# the task, %n the node, %j the job, %s the step, %N the host, %u the
	# user, %% a percent sign).
	if [ -n "$_srun_out" ]; then exec >>"$(pattern "$_srun_out")" || exit 1; fi
	if [ -n "$_srun_err" ]; then exec 2>>"$(pattern "$_srun_err")" || exit 1; elif [ -n "$_srun_out" ]; then exec 2>&1; fi
	if [ -n "$_srun_exportall" ] && ! command -v "$1" >/dev/null 2>&1; then
		# As Slurm's task, on its errors (with -l, its output: the two
		# merged): status 2 (ENOENT).
		_srun_e="slurmstepd-$_srun_here: error: execve(): $1: No such file or directory"
		if [ -n "$_srun_label" ]; then printf "%${#_srun_last}d: %s\n" "$_srun_id" "$_srun_e"; else echo "$_srun_e" >&2; fi
		exit 2
	fi
	[ -n "$_srun_label" ] || exec "$@"
	# -l: every line of the command's output (stdout and stderr, merged)
	# begins with the task's number, as "0: ..."; the status is the command's.
	exec 6<&0 # its input, for a command started in the background
	_srun_rc=$( { { "$@" <&6 6<&- & wait $! 2>/dev/null; echo $? >&3; } 2>&1 | while IFS= read -r _srun_line || [ -n "$_srun_line" ]; do printf "%${#_srun_last}d: %s\n" "$_srun_id" "$_srun_line"; done >&4; } 3>&1 ) 4>&1
	exit "$_srun_rc"
}
[ "$_srun_c" -gt 0 ] || exit 0
# The tasks run in the background, srun waiting for them to report how
# each ended, as Slurm's srun does; a single task reads srun's input
# (fd 5 until then, closed for the tasks: a command started in the
# background would read /dev/null).
exec 5<&0
# -K: once a task exits non-zero, the step's other tasks get SIGTERM: this
# node's from here, the other nodes' through scancel JOBID.STEP (the
# agents signal the processes of this step alone, and mark it, so that a
# node where srun has not started the step's tasks yet starts none). srun
# and the tasks' watchers are not the step's; they outlive a SIGTERM to
# the whole job too (a trap: the tasks themselves get the default action
# back), to exit with the tasks' statuses.
# The first bad exit on a node stops the step (mkdir: one of them); tasks
# that die of that SIGTERM (the step marked, or the watcher signalled)
# stop nothing more.
# stopstep (USR1 from a task's watcher): SIGTERM to this node's tasks (the
# watchers' children) and, from here rather than from a watcher (whose
# children those SIGTERMs reach), scancel JOBID.STEP for the other nodes'.
# scancel runs outside the step, whose signal would stop it.
stopstep() {
	_srun_trapped=1
	for _srun_p in $_srun_pids; do pkill -TERM -P "$_srun_p" 2>/dev/null; done
	[ -z "$_srun_scancel" ] || return 0
	command -v scancel >/dev/null 2>&1 || return 0
	( (unset SLURM_STEP_ID SLURM_STEPID; exec scancel "${SLURM_JOB_ID:-0}.$_srun_s") >/dev/null 2>&1 ||
		echo "srun: warning: scancel could not stop the step's tasks on the other nodes" >&2 ) &
	_srun_scancel=$!
}
# Without -K, srun passes SIGTERM, SIGINT and SIGHUP on to its tasks, as
# Slurm's does (kill of srun's PID, timeout), and outlives SIGUSR1 and
# SIGUSR2: those come from scancel --signal, which sends them to the
# tasks themselves.
forward() {
	_srun_trapped=1
	for _srun_p in $_srun_pids; do kill "-$1" "$_srun_p" 2>/dev/null; done
}
_srun_trapped='' _srun_scancel=''
if [ -n "$_srun_killbad" ]; then
	trap '_srun_trapped=1' TERM USR2
	trap stopstep USR1
else
	trap 'forward TERM' TERM
	trap 'forward INT' INT
	trap 'forward HUP' HUP
	trap '_srun_trapped=1' USR1 USR2
fi
# waitfor PID: waits for PID and returns its status; a trapped signal
# interrupts wait, and PID is waited for again (the shell keeps the status
# of a child it has not reported yet).
waitfor() {
	while :; do
		_srun_trapped=''
		wait "$1" 2>/dev/null
		_srun_r=$?
		[ "$_srun_r" -gt 128 ] && [ -n "$_srun_trapped" ] && continue
		return "$_srun_r"
	done
}
if [ "$_srun_c" -gt 1 ]; then exec 5</dev/null; fi # the tasks' input: srun's for one task, else none
_srun_pids='' _srun_l=0
while [ "$_srun_l" -lt "$_srun_c" ]; do
	if [ -n "$_srun_killbad" ]; then
		(
			_srun_stopped=''
			trap '_srun_stopped=1 _srun_trapped=1' TERM
			(task "$_srun_l" "$@") <&5 5<&- &
			waitfor $!
			_srun_r=$?
			if [ "$_srun_r" -ne 0 ] && [ -z "$_srun_stopped" ] && [ -z "$(stepsignal)" ] &&
				{ mkdir "$_srun_steps/$_srun_s/killed" 2>/dev/null || ! [ -d "$_srun_steps/$_srun_s" ]; }; then
				echo "srun: error: task $((_srun_first + _srun_l)) exited with status $_srun_r: stopping the step's tasks (--kill-on-bad-exit)" >&2
				kill -USR1 $$ 2>/dev/null
			fi
			exit "$_srun_r"
		) <&5 &
	else
		(task "$_srun_l" "$@") <&5 5<&- &
	fi
	_srun_pids="$_srun_pids $!" _srun_l=$((_srun_l + 1))
done
_srun_rc=0 _srun_ends='' _srun_l=0
for _srun_pid in $_srun_pids; do
	waitfor "$_srun_pid"
	_srun_r=$?
	[ "$_srun_r" -le "$_srun_rc" ] || _srun_rc=$_srun_r
	_srun_ends="$_srun_ends$((_srun_first + _srun_l)) $_srun_r
" _srun_l=$((_srun_l + 1))
done
# As Slurm's srun, a line for the tasks of this node that did not exit 0,
# those that ended alike together: "srun: error: gpu001: tasks 0-1:
# Exited with exit code 3", "...: task 2: Killed" (128+N: signal N). Not
# one of the step's processes (no SLURM_STEP_ID), which its scancel stops.
printf '%s' "$_srun_ends" | (unset SLURM_STEP_ID SLURM_STEPID; H=$_srun_here exec awk '
	function words(rc) {
		if (rc <= 128) return "Exited with exit code " rc
		split("Hangup,Interrupt,Quit,Illegal instruction,Trace/breakpoint trap,Aborted,Bus error,Floating point exception,Killed,User defined signal 1,Segmentation fault,User defined signal 2,Broken pipe,Alarm clock,Terminated", sig, ",")
		return ((rc - 128) in sig) ? sig[rc - 128] : "Signal " (rc - 128)
	}
	$2 != 0 {
		if (!($2 in ids)) order[++n] = $2
		ids[$2] = ids[$2] (ids[$2] == "" ? "" : ",") $1; count[$2]++
	}
	END {
		for (i = 1; i <= n; i++) {
			rc = order[i]; k = split(ids[rc], id, ","); list = ""
			for (j = 1; j <= k; j = e + 1) {
				for (e = j; e < k && id[e + 1] == id[e] + 1; e++);
				list = list (list == "" ? "" : ",") id[j] (e > j ? "-" id[e] : "")
			}
			printf "srun: error: %s: task%s %s: %s\n", ENVIRON["H"], (count[rc] > 1 ? "s" : ""), list, words(rc)
		}
	}') >&2
if [ -n "$_srun_scancel" ]; then # its warning, before srun's end
	_srun_trapped=''
	wait "$_srun_scancel" 2>/dev/null
	[ -z "$_srun_trapped" ] || wait "$_srun_scancel" 2>/dev/null
fi
exit "$_srun_rc"
