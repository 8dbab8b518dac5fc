#!/bin/sh
# srun inside a Phalanx job. The batch script already runs once on every
# node of the job; srun starts this node's share of the step's tasks here,
# each with its own SLURM_PROCID, SLURM_LOCALID and GPUs, and exits with
# the highest exit status of its tasks.
warn() { echo "srun: warning: $*" >&2; }
die() { echo "srun: error: $*" >&2; exit 1; }
nodes='' ntasks='' pernode='' nodelist='' label='' gpt='' out='' err='' killbad=''
count() { # OPTION VALUE: a positive count, MIN[-MAX] (MIN is used)
	case "${2%%-*}" in ''|*[!0-9]*|0) die "$1=$2: give a positive count" ;; esac
	echo "${2%%-*}"
}
while [ $# -gt 0 ]; do
	o=$1 v=''
	case "$o" in
	--) shift; break ;;
	--*=*) v=${o#*=}; o=${o%%=*} ;;
	esac
	case "$o" in
	--container-image|--container-mounts|--container-workdir|--container-name|--container-writable|--container-remap-root|--container-env|--no-container-mount-home|--container-mount-home)
		die "$o is not supported inside a Phalanx job: submit the job in its image with sbatch --image" ;;
	# Options that take a value: attached (--opt=v, -Nv) or the next word.
	-N|--nodes|-n|--ntasks|-w|--nodelist|\
	-c|-t|-p|-J|-o|-e|-i|-x|-G|-A|-q|-D|-C|-m|-d|-W|-r|-T|-s|-S|\
	--cpus-per-task|--gpus|--gpus-per-node|--gpus-per-task|--gres|--time|--partition|\
	--job-name|--output|--error|--input|--exclude|--chdir|--export|--mem|--mem-per-cpu|\
	--mem-per-gpu|--cpu-bind|--gpu-bind|--mpi|--distribution|--constraint|--account|--qos|\
	--dependency|--wait|--signal|--ntasks-per-node|--cpus-per-gpu|--threads-per-core|\
	--relative|--nodefile|--network|--propagate|--accel-bind|--hint|--time-min|--open-mode)
		if [ "${1#*=}" = "$1" ]; then # not --opt=v: the value is the next word
			[ $# -ge 2 ] || die "$o needs a value"
			v=$2; shift
		fi ;;
	-N*|-n*|-w*|-c*|-t*|-p*|-J*|-o*|-e*|-i*|-x*|-G*|-A*|-q*|-D*|-C*|-m*|-d*|-W*)
		v=${o#??}; o=${o%"$v"} ;;
	-*) ;; # a flag: -l, -u, -v, -K[0|1], --kill-on-bad-exit[=0|1], --label, ...
	*) break ;;
	esac
	case "$o" in
	-N|--nodes) nodes=$(count "$o" "$v") || exit 1 ;;
	-n|--ntasks) ntasks=$(count "$o" "$v") || exit 1 ;;
	--ntasks-per-node) pernode=$(count "$o" "$v") || exit 1 ;;
	--gpus-per-task) gpt=$(count "$o" "${v##*:}") || exit 1 ;;
	-w|--nodelist) nodelist=$v ;;
	-l|--label) label=1 ;;
	-K|-K1|--kill-on-bad-exit) [ "$v" = 0 ] && killbad='' || killbad=1 ;;
	-K0) killbad='' ;;
	-o|--output) out=$v ;;
	-e|--error) err=$v ;;
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

# The job: its nodes, this node's place, its tasks per node and GPUs.
all=${SLURM_NNODES:-1} me=${SLURM_NODEID:-0}
p=${pernode:-${SLURM_NTASKS_PER_NODE:-1}} gpt=${gpt:-${SLURM_GPUS_PER_TASK:-0}}

# The step's nodes (m of them) and this node's place among them (j): -w
# names them; -N counts them; -n alone takes as many as its tasks fill,
# $p on each (all the job's nodes at most); else all the job's nodes.
spread='' # tasks spread evenly over the nodes (-n with -N or -w)
if [ -n "$nodelist" ]; then
	if names=$(scontrol show hostnames "$nodelist" 2>/dev/null); then
		m=$(printf '%s\n' "$names" | grep -c .)
		j=$(printf '%s\n' "$names" | grep -nx "${SLURMD_NODENAME:-$(hostname)}" | cut -d: -f1)
		[ -n "$j" ] || exit 0 # not one of the named nodes: srun runs nothing here
		j=$((j - 1))
	else
		warn "cannot expand -w $nodelist here (no scontrol on PATH): running on this node"
		m=1 j=0
	fi
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
fi
[ "$j" -lt "$m" ] || exit 0 # not one of the step's nodes
n=${ntasks:-$((m * p))}
# This node's tasks: c of them, the first numbered first.
if [ -n "$spread" ]; then
	base=$((n / m)) extra=$((n % m))
	c=$base first=$((j * base + extra))
	if [ "$j" -lt "$extra" ]; then c=$((base + 1)) first=$((j * (base + 1))); fi
else
	first=$((j * p)) c=$p
	[ $((first + c)) -le "$n" ] || c=$((n - first))
fi

# Each task's GPUs: its share of the node's, with a GPU count per task.
if [ "$gpt" -gt 0 ]; then
	have=$(printf '%s' "${CUDA_VISIBLE_DEVICES:-}" | tr ',' '\n' | grep -c .)
	[ $((c * gpt)) -le "$have" ] || die "$c task(s) of $gpt GPU(s) on this node, which has $have for the job"
fi

# pattern P: srun's file name pattern P for the task of $id.
pattern() {
	printf '%s' "$1" | sed -e 's/%%/@PHX_PCT@/g' -e "s/%t/$id/g" -e "s/%n/$j/g" -e "s/%[jJ]/${SLURM_JOB_ID:-0}/g" \
		-e "s/%s/$s/g" -e "s/%N/${SLURMD_NODENAME:-$(hostname)}/g" -e "s/%u/$(id -un)/g" -e 's/@PHX_PCT@/%/g'
}

# task L CMD...: runs CMD as this node's task L.
task() {
	tl=$1
	shift
	id=$((first + tl))
	export SLURM_PROCID=$id SLURM_LOCALID=$tl SLURM_STEP_ID=$s SLURM_STEPID=$s \
		SLURM_STEP_NUM_TASKS=$n SLURM_STEP_NUM_NODES=$m SLURM_NTASKS=$n SLURM_NPROCS=$n \
		RANK=$id LOCAL_RANK=$tl WORLD_SIZE=$n
	if [ "$gpt" -gt 0 ]; then
		CUDA_VISIBLE_DEVICES=$(printf '%s\n' "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' |
			sed -n "$((tl * gpt + 1)),$((tl * gpt + gpt))p" | paste -sd, -)
		export CUDA_VISIBLE_DEVICES
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
