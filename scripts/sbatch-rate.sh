#!/usr/bin/env bash
# `phx sbatch` submit rate and start-up on a `phx dev` cluster, the way users
# and scripts submit (issue 7, §5 and §8); scripts/slurm-sbatch-rate.sh
# measures Slurm's `sbatch` the same way, for the ratio.
#
# Starts `bin/phx dev --controllers C --nodes 64` (its own free ports, state
# in a temporary directory), waits until every node is idle, then times:
#   startup  `phx sbatch --help` (the CLI's own start-up: no controller
#            contact), `phx sbatch --test-only` (a round trip: the controller
#            validates the job and answers its expected start, no job is
#            created) and single `phx sbatch` submits on an empty queue;
#   seq      N `phx sbatch --parsable job.sh` from one sequential shell loop;
#   par      N submits split over SHELLS concurrent shell loops;
#   ceiling  (only when asked for) N `phx sbatch --help` split over SHELLS
#            shells: served by the CLI server with no controller call, the
#            rate that no `phx sbatch` from that many shells can pass on
#            this host, whatever the controllers cost.
# phx hands each command to the CLI server of phx dev (as it would to a
# node agent's on a cluster host); with PHX_CLI_SOCKET=none in the
# environment it runs phx-full instead, the path of a host without a
# Phalanx daemon.
# job.sh is a GPU-training-like batch script (#SBATCH -N 1
# --gpus-per-node=8 -t 4:00:00) that sleeps an hour: the first 64 jobs run
# (one per node), the rest queue, as on a full cluster. Between phases every
# job is cancelled, so each phase starts on an empty queue (-K keeps them).
#
# Usage: scripts/sbatch-rate.sh [-c C] [-s SHELLS] [-r RUNS] [-m PHASES]
#                               [-n NODES] [-b] [-k] [-K] [N]
#   N          submits per phase (default 2000)
#   -c C       controller replicas: 1, 3 or 5 (default 3)
#   -s SHELLS  concurrent shells of the par phase (default 8)
#   -r RUNS    runs of `phx sbatch --help` (default 200; --test-only and
#              single submits take RUNS/4 and RUNS/10)
#   -m PHASES  comma-separated subset of startup,seq,par,ceiling (default
#              startup,seq,par)
#   -n NODES   nodes (default 64)
#   -b         run `make build` even if bin/phx, bin/phx-full,
#              bin/phalanx-controller, bin/phalanx-agent and bin/phalanx-shim
#              exist (otherwise only when one is missing)
#   -k         keep the temporary directory (phx dev's state and logs)
#   -K         do not cancel the jobs between phases
# At exit, Ctrl-C and errors included: cancels every job, stops phx dev
# (SIGINT, then SIGKILL to whatever of its session is left) and removes the
# temporary directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=lib/sbatch-rate.sh
. "$here/lib/sbatch-rate.sh"

controllers=3 shells=8 runs=200 phases=startup,seq,par nodes=64 build=0 keep=0 keepjobs=0
while getopts 'c:s:r:m:n:bkKh' o; do
	case $o in
	c) controllers=$OPTARG ;;
	s) shells=$OPTARG ;;
	r) runs=$OPTARG ;;
	m) phases=$OPTARG ;;
	n) nodes=$OPTARG ;;
	b) build=1 ;;
	k) keep=1 ;;
	K) keepjobs=1 ;;
	*) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
n=${1:-2000}
has() { [[ ,$phases, == *,$1,* ]]; }

phx=$root/bin/phx
if ((build)) || ! [ -x "$phx" ] || ! [ -x "$root/bin/phx-full" ] || ! [ -x "$root/bin/phalanx-controller" ] || ! [ -x "$root/bin/phalanx-agent" ] || ! [ -x "$root/bin/phalanx-shim" ]; then
	rate_log "make build"
	make -C "$root" build >&2
fi

RATE_WORK=$(mktemp -d /tmp/phx-sbatch-rate.XXXXXX)
w=$RATE_WORK
mkdir -p "$w/out"
dev_pid=''
cleanup() {
	local rc=$? p left
	trap - EXIT INT TERM HUP
	set +eu
	stop_loops
	if [ -n "$dev_pid" ] && kill -0 "$dev_pid" 2>/dev/null; then
		rate_log "cancelling every job and stopping phx dev"
		[ -z "${PHX_SERVER:-}" ] || timeout 30 "$phx" scancel --me >/dev/null 2>&1
		stop_pids 60 INT "$dev_pid"
		# Whatever phx dev started and left behind (controllers, agents,
		# jobs' processes) is in its session.
		left=$(ps -o pid=,stat= -s "$dev_pid" 2>/dev/null | awk -v d="$dev_pid" '$1 != d && $2 !~ /^Z/ {print $1}')
		if [ -n "$left" ]; then
			rate_log "killing what phx dev left: ${left//$'\n'/ }"
			for p in $left; do kill -KILL "$p" 2>/dev/null; done
		fi
	fi
	rate_finish "$rc" "$keep"
}
rate_traps cleanup

# Its own session (setsid): a Ctrl-C reaches this script, which cancels the
# jobs before it stops the cluster.
setsid "$phx" dev --controllers "$controllers" --nodes "$nodes" --listen 127.0.0.1:0 --dir "$w/dev" >"$w/dev.log" 2>&1 &
dev_pid=$!
for ((i = 0; i < 1200; i++)); do
	grep -q "^export PHX_SERVER=" "$w/dev.log" 2>/dev/null && break
	kill -0 "$dev_pid" 2>/dev/null || { cat "$w/dev.log" >&2; rate_die "phx dev exited"; }
	sleep 0.1
done
grep -q '^export PHX_SERVER=' "$w/dev.log" || { cat "$w/dev.log" >&2; rate_die "phx dev printed no PHX_SERVER within 120 s"; }
PHX_SERVER=$(sed -n 's/^export PHX_SERVER=//p' "$w/dev.log" | head -1)
PHX_AUTH_SOCKET=$(sed -n 's/^export PHX_AUTH_SOCKET=//p' "$w/dev.log" | head -1)
PHX_CA_CERT=$(sed -n 's/^export PHX_CA_CERT=//p' "$w/dev.log" | head -1)
export PHX_SERVER PHX_AUTH_SOCKET PHX_CA_CERT
idle=0
for ((i = 0; i < 600; i++)); do
	idle=$("$phx" sinfo -N -h 2>/dev/null | awk '$4 == "idle"' | wc -l) || idle=0
	((idle == nodes)) && break
	sleep 0.2
done
((idle == nodes)) || rate_die "only $idle of $nodes nodes idle after 120 s"
rate_log "phx dev up: PHX_SERVER=$PHX_SERVER, $idle nodes idle, state and logs in $w/dev"

ctl_pids=$(ps -o pid=,comm= --ppid "$dev_pid" | awk '$2 ~ /^phalanx-contr/ {print $1}' | tr '\n' ' ')
agent_pids=$(ps -o pid=,comm= --ppid "$dev_pid" | awk '$2 ~ /^phalanx-agent/ {print $1}' | tr '\n' ' ')
# shellcheck disable=SC2034 # read by measure
# phx dev itself runs the CLI server that phx hands sbatch to.
SERVER_PIDS=("controllers:$ctl_pids" "agents:$agent_pids" "phx-dev:$dev_pid")

cat >"$w/job.sh" <<EOF
#!/bin/bash
#SBATCH --job-name=train
#SBATCH -N 1
#SBATCH --gpus-per-node=8
#SBATCH -t 4:00:00
#SBATCH -o $w/out/%x-%j.out
# Stand-in for a training run: holds its node for an hour, so that once every
# node is busy the rest of the submits queue, as on a full cluster.
exec sleep 3600
EOF
cd "$w/out"

active() { "$phx" squeue -h -t PD,CF,R,CG -o %i | wc -l; }
running() { "$phx" squeue -h -t R -o %i | wc -l; }
cancel_all() {
	((keepjobs)) && return
	"$phx" scancel --me || true
	local i
	for ((i = 0; i < 1200; i++)); do [ "$(active)" = 0 ] && return; sleep 0.1; done
	rate_log "warning: jobs still active 120 s after scancel: $(active)"
}

via="phx dev's CLI server"
[ "${PHX_CLI_SOCKET:-}" != none ] || via="phx-full (PHX_CLI_SOCKET=none)"
echo "== Phalanx $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$root" diff --quiet HEAD -- 2>/dev/null || echo '+changes'): phx dev, $controllers controller(s), $nodes nodes, $(nproc) CPUs, N=$n, commands run by $via"
if has startup; then
	measure "true (fork+exec)" 1 "$runs" /bin/true
	measure "phx sbatch --help" 1 "$runs" "$phx" sbatch --help
	measure "phx sbatch --test-only" 1 $((runs / 4)) "$phx" sbatch --test-only "$w/job.sh"
	measure "single phx sbatch" 1 $((runs / 10)) "$phx" sbatch --parsable "$w/job.sh"
	cancel_all
fi
if has seq; then
	measure "phx sbatch sequential" 1 "$n" "$phx" sbatch --parsable "$w/job.sh"
	check_ids "phx sbatch sequential" "$n" || true
	rate_log "after the phase: $(active) jobs active, $(running) running"
	cancel_all
fi
if has ceiling; then
	measure "phx sbatch --help $shells shells" "$shells" "$n" "$phx" sbatch --help
fi
if has par; then
	measure "phx sbatch $shells shells" "$shells" "$n" "$phx" sbatch --parsable "$w/job.sh"
	check_ids "phx sbatch $shells shells" "$n" || true
	rate_log "after the phase: $(active) jobs active, $(running) running"
	cancel_all
fi
print_results "phx dev --controllers $controllers --nodes $nodes, N=$n, $(nproc) CPUs"
