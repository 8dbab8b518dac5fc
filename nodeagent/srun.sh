#!/bin/sh
# srun inside a Phalanx job. The batch script already runs once on every
# node of the job; srun starts this node's share of the step's tasks here,
# each with its own SLURM_PROCID, SLURM_LOCALID and GPUs, and exits with
# the highest exit status of its tasks. Every node's srun decides alone,
# from the same command line and job, so the nodes agree on the step: its
# nodes, its tasks on each, and whether Slurm would have refused it.
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
shortopts=A:B:C:D:EF:G:HI::J:K::L:M:N:OQS:T:VW:XZb:c:d:e:hi:k::lm:n:o:p:q:r:st:uvw:x:
longopts='accel-bind: account: acctg-freq:
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
# finds it, in $name and its kind ("", ":" or "::") in $kind: the option
# of that name, else the only one BODY begins; else BODY is unknown or
# ambiguous (as getopt_long says, WHOLE: the word after --).
long() {
	name='' kind='' same='' amb=''
	for e in $longopts; do
		n=${e%%[:=]*} r=${e#"${e%%[:=]*}"}
		case $n in
		"$1") name=$n kind=${r%%=*}; return ;;
		"$1"*) ;;
		*) continue ;;
		esac
		a=$n
		case $r in *=*) a=${r#*=} ;; esac
		if [ -z "$name" ]; then
			name=$n kind=${r%%=*} same=$a list=" '--$n'"
		elif [ "${r%%=*}" != "$kind" ] || [ "$a" != "$same" ]; then
			amb=1 list="$list '--$n'"
		fi
	done
	[ -n "$name" ] || bad "unrecognized option '--$2'"
	[ -z "$amb" ] || bad "option '--$2' is ambiguous; possibilities:$list"
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

nodes='' ntasks='' pernode='' cpt='' nodelist='' label='' gpt='' out='' err=''
killbad='' overcommit='' exports='' mpi=''
count() { # OPTION VALUE: a positive count, MIN[-MAX] (MIN is used)
	case "${2%%-*}" in ''|*[!0-9]*|0) die "$1=$2: give a positive count" ;; esac
	echo "${2%%-*}"
}
# opt NAME VALUE [GIVEN]: what srun does with option NAME (-X or --long),
# its VALUE (GIVEN: an optional value was given). The others are ignored.
opt() {
	case $1 in
	-N|--nodes) nodes=$(count "$1" "$2") || exit 1 ;;
	-n|--ntasks) ntasks=$(count "$1" "$2") || exit 1 ;;
	--ntasks-per-node|--tasks-per-node) pernode=$(count "$1" "$2") || exit 1 ;;
	-c|--cpus-per-task) cpt=$(count "$1" "$2") || exit 1 ;;
	--gpus-per-task) gpt=$(count "$1" "${2##*:}") || exit 1 ;;
	-w|--nodelist) nodelist=$2 ;;
	-l|--label) label=1 ;;
	-O|--overcommit) overcommit=1 ;;
	-o|--output) out=$2 ;;
	-e|--error) err=$2 ;;
	--export) exports=$2 ;;
	-K|--kill-on-bad-exit)
		killbad=1
		[ -n "$3" ] || return 0
		case $2 in ''|*[!0-9]*) die "Invalid numeric value \"$2\" for --kill-on-bad-exit." ;; esac
		[ "$2" -ne 0 ] || killbad='' ;;
	--mpi)
		case $2 in
		list) printf 'MPI plugin types are...\n\tnone\n'; exit 0 ;;
		none) mpi='' ;;
		pmi2|pmix|pmix_v*) mpi=$2 ;;
		*) die "Invalid MPI type '$2', --mpi=list for acceptable types" ;;
		esac ;;
	-h|--help) help; exit 0 ;;
	--usage) usage; exit 0 ;;
	-V|--version) echo "slurm 22.05 (Phalanx's srun inside a job)"; exit 0 ;;
	--container) die "$1 is not supported inside a Phalanx job: submit the job in its image with sbatch --image" ;;
	esac
}
while [ $# -gt 0 ]; do
	case $1 in
	--) shift; break ;;
	--?*)
		b=${1#--} v='' given=''
		case $b in *=*) v=${b#*=} given=1 ;; esac
		case ${b%%=*} in container-*|no-container-*) # Pyxis's
			die "--${b%%=*} is not supported inside a Phalanx job: submit the job in its image with sbatch --image" ;;
		esac
		long "${b%%=*}" "$b"
		case $kind in
		:) if [ -z "$given" ]; then
			[ $# -ge 2 ] || bad "option '--$name' requires an argument"
			v=$2 given=1
			shift
		fi ;;
		::) ;;
		*) [ -z "$given" ] || bad "option '--$name' doesn't allow an argument" ;;
		esac
		opt "--$name" "$v" "$given" ;;
	-?*) # short options, grouped: the one that takes a value ends the group
		g=${1#-}
		while [ -n "$g" ]; do
			ch=${g%"${g#?}"} g=${g#?} v='' given=''
			case $ch in :) bad "invalid option -- ':'" ;; esac
			case $shortopts in
			*"$ch::"*) v=$g given=${g:+1} g='' ;;
			*"$ch:"*)
				if [ -n "$g" ]; then
					v=$g g=''
				else
					[ $# -ge 2 ] || bad "option requires an argument -- '$ch'"
					v=$2
					shift
				fi
				given=1 ;;
			*"$ch"*) ;;
			*) bad "invalid option -- '$ch'" ;;
			esac
			opt "-$ch" "$v" "$given"
		done ;;
	*) break ;; # the command: srun stops at the first word not an option
	esac
	shift
done
[ $# -gt 0 ] || die "no command to run"

# The step's number: each node counts the sruns its script runs, taking
# part or not, so that the numbers agree on every node.
# The agent gives each task a directory to count in (PHX_STEP_DIR).
s=0
steps=${PHX_STEP_DIR:-${TMPDIR:-/tmp}/phx-steps.${SLURM_JOB_ID:-0}.${PHX_ATTEMPT:-0}.${SLURM_NODEID:-0}}
if mkdir -p "$steps" 2>/dev/null && [ -w "$steps" ]; then
	while ! mkdir "$steps/$s" 2>/dev/null && [ "$s" -lt 100000 ]; do s=$((s + 1)); done
fi

# The job: its nodes, this node's place and name, its tasks per node and
# their CPUs and GPUs.
all=${SLURM_NNODES:-1} me=${SLURM_NODEID:-0} here=${SLURMD_NODENAME:-$(uname -n)}
jobper=${SLURM_NTASKS_PER_NODE:-1} jobcpt=${SLURM_CPUS_PER_TASK:-1}
p=${pernode:-$jobper} gpt=${gpt:-${SLURM_GPUS_PER_TASK:-0}}

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
	if [ -s "$steps/nodes" ]; then
		cat "$steps/nodes"
	else
		[ -n "${SLURM_JOB_NODELIST:-}" ] && hostnames "$SLURM_JOB_NODELIST"
	fi
}

# The step's nodes (m of them, their names in $stepnodes where known) and
# this node's place among them (j, empty if none): -w names them, in the
# job's order, and each must be one of the job's; -N counts them; -n alone
# takes as many as its tasks fill, $p on each (all the job's nodes at
# most); else all the job's nodes.
spread='' stepnodes='' # spread: tasks spread evenly over the nodes (-n with -N or -w)
if [ -n "$nodelist" ]; then
	names=$(hostnames "$nodelist") || die "-w $nodelist: not a host list"
	if jn=$(jobnodes); then
		names=$(printf '%s\n' "$jn" | W=$names awk '
			BEGIN { n = split(ENVIRON["W"], w, "\n"); for (i = 1; i <= n; i++) if (w[i] != "") want[w[i]] = 1 }
			$0 in want { print; delete want[$0] }
			END { for (x in want) exit 1 }') || refuse "Requested node configuration is not available"
	fi
	stepnodes=$names
	m=$(printf '%s\n' "$names" | grep -c .)
	j=$(printf '%s\n' "$names" | H=$here awk '$0 == ENVIRON["H"] { print NR - 1; exit }')
	[ -z "$ntasks" ] || spread=1
elif [ -n "$nodes" ]; then
	[ "$nodes" -le "$all" ] || die "-N $nodes: the job has $all node(s)"
	m=$nodes j=$me
	[ -z "$ntasks" ] || spread=1
elif [ -n "$ntasks" ]; then
	m=$(( (ntasks + p - 1) / p )) j=$me
	[ "$m" -le "$all" ] || m=$all spread=1
else
	m=$all j=$me
fi
if [ -n "$ntasks" ] && [ "$ntasks" -lt "$m" ]; then
	m=$ntasks # as Slurm: fewer tasks than nodes uses fewer nodes
	stepnodes=$(printf '%s\n' "$stepnodes" | head -n "$m")
fi
n=${ntasks:-$((m * p))}

# runs V K...: K nodes of V tasks each, ..., as Slurm writes them: 2(x3), 3,2.
runs() {
	rs=''
	while [ $# -ge 2 ]; do
		if [ "$2" -gt 0 ]; then
			rs="$rs${rs:+,}$1"
			[ "$2" -eq 1 ] || rs="$rs(x$2)"
		fi
		shift 2
	done
	echo "$rs"
}
# The tasks on each node: spread, the first nodes one more; else $p on
# each, the last what is left. most: the most on one node; this node's:
# c of them, the first numbered first.
if [ -n "$spread" ]; then
	base=$((n / m)) extra=$((n % m))
	most=$((base + (extra > 0)))
	tpn=$(runs $((base + 1)) "$extra" "$base" $((m - extra)))
	[ -z "$j" ] || { c=$((base + (j < extra))) first=$((j * base + (j < extra ? j : extra))); }
else
	last=$((n - (m - 1) * p)) most=$p
	[ "$m" -gt 1 ] || most=$last
	tpn=$(runs "$p" $((m - 1)) "$last" 1)
	[ "$last" -ne "$p" ] || tpn=$(runs "$p" "$m")
	[ -z "$j" ] || { c=$p first=$((j * p)); [ "$j" -ne $((m - 1)) ] || c=$last; }
fi
# As Slurm's controller: a node's tasks need their CPUs among the job's
# there, unless -O.
# SLURM_CPUS_ON_NODE is what the job holds there (all the node's CPUs for
# an exclusive job); without it, its tasks times their CPUs.
stepcpt=${cpt:-$jobcpt} jobcpus=${SLURM_CPUS_ON_NODE:-$((jobper * jobcpt))}
if [ -z "$overcommit" ] && [ $((most * stepcpt)) -gt "$jobcpus" ]; then
	echo "srun: error: Unable to create step for job ${SLURM_JOB_ID:-0}: More processors requested than permitted" >&2
	die "the step puts $most task(s) of $stepcpt CPU(s) on a node where the job holds $jobcpus CPU(s): ask for fewer, submit the job with more (sbatch --ntasks-per-node, -c, --exclusive), or overcommit (-O)"
fi
[ -n "$j" ] && [ "$j" -lt "$m" ] || exit 0 # not one of the step's nodes

# Each task's GPUs: its share of the node's, with a GPU count per task.
if [ "$gpt" -gt 0 ]; then
	have=$(printf '%s' "${CUDA_VISIBLE_DEVICES:-}" | tr ',' '\n' | grep -c .)
	[ $((c * gpt)) -le "$have" ] || die "$c task(s) of $gpt GPU(s) on this node, which has $have for the job"
fi
if [ -n "$mpi" ] && [ "$j" -eq 0 ]; then
	warn "--mpi=$mpi: Phalanx starts no PMI server, so MPI programs that use PMIx or PMI2 start as singletons: use torchrun or NCCL, or mpirun with its own launcher"
fi

# The step's variables, for all its tasks: its nodes and tasks, in
# SLURM_STEP_* and over the job's in SLURM_NNODES, SLURM_NODEID (this
# node's place in the step), SLURM_NTASKS, SLURM_TASKS_PER_NODE and
# SLURM_NODELIST; SLURM_JOB_* stay the job's.
if [ "$m" -eq "$all" ] && [ -z "$nodelist" ]; then
	steplist=${SLURM_JOB_NODELIST:-}
else
	[ -n "$stepnodes" ] || [ ! -s "$steps/nodes" ] || stepnodes=$(head -n "$m" "$steps/nodes")
	[ -n "$stepnodes" ] || [ "$m" -ne 1 ] || stepnodes=$here
	# As one expression (scontrol's), else the names, commas between.
	steplist=$(printf '%s\n' "$stepnodes" | paste -sd, -)
	if [ -n "$steplist" ] && l=$(scontrol show hostlistsorted "$steplist" 2>/dev/null); then steplist=$l; fi
fi
export SLURM_STEP_ID=$s SLURM_STEPID=$s SLURM_STEP_NUM_NODES=$m SLURM_STEP_NUM_TASKS=$n \
	SLURM_STEP_TASKS_PER_NODE=$tpn SLURM_NNODES=$m SLURM_NODEID=$j SLURM_NTASKS=$n SLURM_NPROCS=$n \
	SLURM_TASKS_PER_NODE=$tpn WORLD_SIZE=$n
[ -z "$steplist" ] || export SLURM_STEP_NODELIST="$steplist" SLURM_NODELIST="$steplist"
[ -z "$pernode" ] || export SLURM_NTASKS_PER_NODE="$pernode"
[ -z "$cpt" ] || export SLURM_CPUS_PER_TASK="$cpt"

# --export (Slurm's launch plugin): ALL, the default, passes the whole
# environment; a list without ALL only the SLURM* variables, Phalanx's
# (PHX_*, CUDA_VISIBLE_DEVICES and the launch variables of the tasks
# table in docs/cli.md) and those it names; NONE ends the list. VAR=value
# sets VAR, unless the environment passes VAR on anyway (ALL, SLURM*).
exportall=1 keep=''
case ${exports:-ALL} in [Aa][Ll][Ll]) ;; *)
	exportall='' l=$exports,
	while [ -n "$l" ]; do
		t=${l%%,*} l=${l#*,}
		case $t in [Aa][Ll][Ll]) exportall=1 ;; [Nn][Oo][Nn][Ee]) break ;; esac
	done
	envnames=$(awk 'BEGIN { for (k in ENVIRON) print k }' </dev/null)
	l=$exports,
	while [ -n "$l" ]; do
		t=${l%%,*} l=${l#*,} k=${t%%=*}
		case $t in [Aa][Ll][Ll]|'') continue ;; [Nn][Oo][Nn][Ee]) break ;; esac
		case $k in [!A-Za-z_]*|*[!A-Za-z0-9_]*) warn "--export: $k is not a variable name: ignored"; continue ;; esac
		keep="$keep $k"
		[ "$k" != "$t" ] || continue
		if printf '%s\n' "$envnames" | grep -Fxq "$k"; then
			case $k in SLURM*) continue ;; esac # the step's own stay
		fi
		export "$k=${t#*=}" # a value given wins over the one inherited (ALL,OMP_NUM_THREADS=4)
	done ;;
esac

# pattern P: srun's file name pattern P for the task of $id.
pattern() {
	printf '%s' "$1" | sed -e 's/%%/@PHX_PCT@/g' -e "s/%t/$id/g" -e "s/%n/$j/g" -e "s/%[jJ]/${SLURM_JOB_ID:-0}/g" \
		-e "s/%s/$s/g" -e "s/%N/$here/g" -e "s/%u/$(id -un)/g" -e 's/@PHX_PCT@/%/g'
}

# task L CMD...: runs CMD as this node's task L.
task() {
	tl=$1
	shift
	id=$((first + tl))
	export SLURM_PROCID=$id SLURM_LOCALID=$tl RANK=$id LOCAL_RANK=$tl
	if [ "$gpt" -gt 0 ]; then
		CUDA_VISIBLE_DEVICES=$(printf '%s\n' "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' |
			sed -n "$((tl * gpt + 1)),$((tl * gpt + gpt))p" | paste -sd, -)
		export CUDA_VISIBLE_DEVICES
	fi
	# --export without ALL: CMD runs as env -i VAR=value... CMD.
	if [ -z "$exportall" ]; then
		nc=$#
		for k in $(awk 'BEGIN { for (k in ENVIRON) if (k ~ /^[A-Za-z_][A-Za-z0-9_]*$/) print k }' </dev/null); do
			case " $keep " in *" $k "*) ;; *)
				case $k in
				SLURM*|PHX_*|CUDA_VISIBLE_DEVICES|RANK|LOCAL_RANK|WORLD_SIZE|NODE_RANK|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT|PET_*) ;;
				*) continue ;;
				esac ;;
			esac
			eval "set -- \"\$@\" \"\$k=\${$k}\""
		done
		while [ "$nc" -gt 0 ]; do set -- "$@" "$1"; shift; nc=$((nc - 1)); done
		set -- env -i "$@"
	fi
	# -o, -e: the task's output and errors to its own file, appended (%t
	# the task, %n the node, %j the job, %s the step, %N the host, %u the
	# user, %% a percent sign).
	if [ -n "$out" ]; then exec >>"$(pattern "$out")" || exit 1; fi
	if [ -n "$err" ]; then exec 2>>"$(pattern "$err")" || exit 1; elif [ -n "$out" ]; then exec 2>&1; fi
	[ -n "$label" ] || exec "$@"
	# -l: every line of the command's output (stdout and stderr, merged)
	# begins with the task's number, as "0: ..."; the status is the command's.
	rc=$( { { "$@"; echo $? >&3; } 2>&1 | while IFS= read -r line || [ -n "$line" ]; do printf '%s: %s\n' "$id" "$line"; done >&4; } 3>&1 ) 4>&1
	exit "$rc"
}
[ "$c" -gt 0 ] || exit 0
[ "$c" -gt 1 ] || [ -n "$killbad" ] || task 0 "$@"
# -K: once a task exits non-zero, the step's other tasks get SIGTERM: this
# node's from here, the other nodes' through scancel --signal (which spares
# the batch scripts). srun and the tasks' watchers outlive that SIGTERM
# (a trap: the tasks themselves get the default action back), to exit with
# the tasks' statuses.
# The first bad exit on a node stops the step (mkdir: one of them); tasks
# that die of that SIGTERM stop nothing more.
trapped=''
if [ -n "$killbad" ]; then
	trap 'trapped=1' TERM
	trap 'trapped=1; for p in $pids; do pkill -TERM -P "$p" 2>/dev/null; done' USR1
fi
pids='' l=0
while [ "$l" -lt "$c" ]; do
	if [ -n "$killbad" ]; then
		(
			stopped=''
			trap 'stopped=1' TERM
			(task "$l" "$@")
			r=$?
			if [ "$r" -ne 0 ] && [ -z "$stopped" ] && { mkdir "$steps/$s/killed" 2>/dev/null || ! [ -d "$steps/$s" ]; }; then
				echo "srun: error: task $((first + l)) exited with status $r: stopping the step's tasks (--kill-on-bad-exit)" >&2
				kill -USR1 $$ 2>/dev/null
				if command -v scancel >/dev/null 2>&1; then
					scancel --signal=TERM "${SLURM_JOB_ID:-0}" >/dev/null 2>&1 ||
						echo "srun: warning: scancel could not signal the step's tasks on the other nodes" >&2
				fi
			fi
			exit "$r"
		) &
	else
		(task "$l" "$@") &
	fi
	pids="$pids $!" l=$((l + 1))
done
rc=0
for pid in $pids; do
	while :; do
		trapped=''
		wait "$pid"
		r=$?
		# A trapped signal interrupts wait: the task is waited for again.
		[ "$r" -gt 128 ] && [ -n "$trapped" ] && continue
		break
	done
	[ "$r" -le "$rc" ] || rc=$r
done
exit "$rc"
