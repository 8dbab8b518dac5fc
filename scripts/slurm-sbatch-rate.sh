#!/usr/bin/env bash
# Slurm's `sbatch` submit rate on this machine, the baseline for Phalanx's
# scripts/sbatch-rate.sh (issue 7, §8: `phx sbatch` from 8 shells at least 3×
# Slurm's `sbatch` on the same machine).
#
# Runs a private Slurm 22.05 (Debian's slurmctld) with its own slurm.conf,
# munged key and socket, state and logs in a temporary directory: no system
# /etc/slurm or /etc/munge file is read or written, no slurmd runs. 64 nodes
# (gpu[001-064], 128 CPUs, 8 GPUs each) in one partition; see -S for their
# state. Then times:
#   startup  `sbatch --help` (no controller contact), `sbatch --test-only`
#            (a round trip to slurmctld that creates no job) and single
#            `sbatch` submits, one after another;
#   seq      N `sbatch --parsable job.sh` from one sequential shell loop;
#   par      N submits split over SHELLS concurrent shell loops.
# Between phases every job is cancelled, so each phase starts on an empty
# queue (-K keeps them). job.sh is a GPU-training-like batch script
# (#SBATCH -N 1 --gpus-per-node=8 -t 4:00:00).
#
# Usage: scripts/slurm-sbatch-rate.sh [-s SHELLS] [-r RUNS] [-S STATE]
#                                    [-m PHASES] [-B BUNDLE] [-k] [-K] [N]
#   N          submits per phase (default 2000)
#   -s SHELLS  concurrent shells of the par phase (default 8)
#   -r RUNS    runs of `sbatch --help` (default 200; --test-only and single
#              submits take RUNS/4 and RUNS/10)
#   -S STATE   the nodes' State= in slurm.conf (default UNKNOWN: nodes that
#              never answer, jobs stay pending; CLOUD: the first 64 jobs are
#              allocated and wait in CONFIGURING for nodes that never boot,
#              the rest pend on Resources, the queue shape of `phx dev`)
#   -m PHASES  comma-separated subset of startup,seq,par (default all)
#   -k         keep the temporary directory (config, logs) and print its path
#   -K         do not cancel the jobs between phases
#   -n NODES   nodes (default 64)
#   -B BUNDLE  where sbatch, slurmctld or munged is missing, unpack them
#              from BUNDLE (made by scripts/slurm-bundle.sh) at / instead
#              of installing them with apt-get (root)
# Installs slurmctld, slurm-client and munge with apt-get if sbatch or
# slurmctld is missing (root); the packages stay, nothing else does: their
# services are kept from starting during the install. Stops slurmctld and
# munged and removes the directory at exit, Ctrl-C and errors included.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/sbatch-rate.sh
. "$here/lib/sbatch-rate.sh"

shells=8 runs=200 state=UNKNOWN phases=startup,seq,par keep=0 keepjobs=0 nodes=64 bundle=''
while getopts 's:r:S:m:kKn:B:h' o; do
	case $o in
	s) shells=$OPTARG ;;
	r) runs=$OPTARG ;;
	S) state=${OPTARG^^} ;;
	m) phases=$OPTARG ;;
	k) keep=1 ;;
	K) keepjobs=1 ;;
	n) nodes=$OPTARG ;;
	B) bundle=$OPTARG ;;
	*) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
n=${1:-2000}
has() { [[ ,$phases, == *,$1,* ]]; }

# --- packages -------------------------------------------------------------
missing() { ! command -v sbatch >/dev/null || ! [ -x /usr/sbin/slurmctld ] || ! [ -x /usr/sbin/munged ]; }
if [ -n "$bundle" ] && missing; then
	[ "$(id -u)" = 0 ] || rate_die "Slurm is not installed: run as root to unpack $bundle at /"
	[ -r "$bundle" ] || rate_die "-B $bundle: no such file (scripts/slurm-bundle.sh makes it)"
	rate_log "unpacking Slurm and munge from $bundle at /"
	tar -C / -xJf "$bundle" || rate_die "unpacking $bundle failed"
	# Debian reaches slurmctld-wlm through its alternatives link.
	[ -e /usr/sbin/slurmctld ] || ln -s slurmctld-wlm /usr/sbin/slurmctld
	missing && rate_die "$bundle has no sbatch, slurmctld-wlm or munged: make it again with scripts/slurm-bundle.sh"
fi
if missing; then
	[ "$(id -u)" = 0 ] || rate_die "Slurm is not installed: run as root to apt-get install slurmctld slurm-client munge"
	rate_log "installing slurmctld slurm-client munge (Debian's Slurm 22.05)"
	# Keep the packages' services (munge, slurmctld) from starting: on a
	# systemd host the install would start them with the system config.
	policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		policy=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 755 "$policy"
	fi
	rc=0
	install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurmctld slurm-client munge >&2; }
	install || { apt-get update -q >&2 && install; } || rc=$?
	[ -z "$policy" ] || rm -f "$policy"
	((rc == 0)) || rate_die "apt-get install slurmctld slurm-client munge failed"
fi
slurmctld=/usr/sbin/slurmctld munged=/usr/sbin/munged
rate_log "$("$slurmctld" -V), $("$munged" -V 2>&1 | head -1)"

# --- private cluster --------------------------------------------------------
RATE_WORK=$(mktemp -d /tmp/slurm-sbatch-rate.XXXXXX)
chmod 700 "$RATE_WORK"
ctld_pid='' munge_pid=''
cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	set +eu
	stop_loops
	[ -z "$ctld_pid" ] || rate_log "stopping slurmctld and munged"
	stop_pids 30 TERM $ctld_pid
	stop_pids 10 TERM $munge_pid
	rate_finish "$rc" "$keep"
}
rate_traps cleanup

free_port() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port=16817
until free_port "$port" && free_port $((port + 1)); do port=$((port + 2)); done

w=$RATE_WORK
mkdir -p "$w/state" "$w/spool" "$w/out" "$w/munge"
chmod 700 "$w/munge"
# A private munge key (munged insists the key is not readable by others).
if command -v mungekey >/dev/null; then
	mungekey --create --keyfile="$w/munge/munge.key" 2>/dev/null
else
	dd if=/dev/urandom of="$w/munge/munge.key" bs=1024 count=1 status=none
fi
chmod 400 "$w/munge/munge.key"

maxjobs=10000 # Slurm's default MaxJobCount, raised only if the run needs more.
((2 * n + runs + 1000 <= maxjobs)) || maxjobs=$((2 * n + runs + 1000))
last=$(printf '%03d' "$nodes")
cat >"$w/slurm.conf" <<EOF
# Private config of scripts/slurm-sbatch-rate.sh: Slurm's defaults except
# what a controller without any slurmd, on this machine, needs.
ClusterName=phxbench
SlurmctldHost=localhost
SlurmctldPort=$port
# No slurmd listens here: the controller's pings of the nodes are refused
# (it retries them in the background) and the nodes never come up.
SlurmdPort=$((port + 1))
SlurmUser=$(id -un)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$w/munge/munge.socket
StateSaveLocation=$w/state
SlurmdSpoolDir=$w/spool
SlurmctldPidFile=$w/slurmctld.pid
SlurmctldLogFile=$w/slurmctld.log
PlugStackConfig=$w/plugstack.conf
MailProg=/bin/true
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
# --gpus-per-node needs the cons_tres selector.
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
MaxJobCount=$maxjobs
# CLOUD nodes "boot" for ever instead of failing the job after 60 s.
ResumeTimeout=65533
NodeName=gpu[001-$last] NodeAddr=127.0.0.1 CPUs=128 RealMemory=1000000 Gres=gpu:8 State=$state
PartitionName=gpu Nodes=gpu[001-$last] Default=YES MaxTime=INFINITE State=UP
EOF
# gres.conf beside slurm.conf: counts only (no device files without slurmd).
echo "NodeName=gpu[001-$last] Name=gpu Count=8" >"$w/gres.conf"
: >"$w/plugstack.conf"
export SLURM_CONF=$w/slurm.conf
unset SLURM_JOB_ID SBATCH_PARTITION SBATCH_ACCOUNT SLURM_CLUSTERS 2>/dev/null || true

# munged: --num-threads 10 as Slurm's high-throughput guide advises.
# Both in their own session (setsid): a Ctrl-C reaches this script only,
# which ends the submit loops before it stops the daemons.
setsid "$munged" --foreground --force --num-threads=10 --socket="$w/munge/munge.socket" \
	--key-file="$w/munge/munge.key" --pid-file="$w/munge/munged.pid" \
	--seed-file="$w/munge/munged.seed" --log-file="$w/munge/munged.log" >"$w/munged.out" 2>&1 &
munge_pid=$!
for ((i = 0; i < 100; i++)); do [ -S "$w/munge/munge.socket" ] && break; sleep 0.1; done
[ -S "$w/munge/munge.socket" ] || { cat "$w/munged.out" >&2; rate_die "munged did not start"; }

setsid "$slurmctld" -D -i -f "$w/slurm.conf" >"$w/slurmctld.out" 2>&1 &
ctld_pid=$!
for ((i = 0; i < 300; i++)); do
	kill -0 "$ctld_pid" 2>/dev/null || { tail -20 "$w/slurmctld.out" >&2; rate_die "slurmctld exited"; }
	scontrol ping 2>/dev/null | grep -q 'is UP' && sinfo -h >/dev/null 2>&1 && break
	sleep 0.2
done
scontrol ping 2>/dev/null | grep -q 'is UP' || { tail -20 "$w/slurmctld.out" >&2; rate_die "slurmctld does not answer"; }
rate_log "slurmctld up (port $port, $nodes nodes State=$state, state and logs in $w)"
# shellcheck disable=SC2034 # read by measure
SERVER_PIDS=("slurmctld:$ctld_pid" "munged:$munge_pid")

cat >"$w/job.sh" <<EOF
#!/bin/bash
#SBATCH --job-name=train
#SBATCH -N 1
#SBATCH --gpus-per-node=8
#SBATCH -t 4:00:00
#SBATCH -o $w/out/%x-%j.out
# Stand-in for a training run (the same script as scripts/sbatch-rate.sh's);
# without slurmd nothing runs here: every job stays queued.
exec sleep 3600
EOF
cd "$w/out"

active() { squeue -h -t PD,CF,R,CG -o %i | wc -l; }
nodestates() { sinfo -h -o '%D %T' | tr '\n' ' '; }
# ctld_usec FROM: mean time slurmctld logged for its submit RPCs (usec=) from
# line FROM of its log on.
ctld_usec() {
	tail -n +"$1" "$w/slurmctld.log" | grep -o '_slurm_rpc_submit_batch_job: .* usec=[0-9]*' |
		awk -F'usec=' '{s += $2} END {if (NR) printf "%.2f ms over %d submits", s / NR / 1000, NR}'
}
loglines() { wc -l <"$w/slurmctld.log"; }
cancel_all() {
	((keepjobs)) && return
	scancel -u "$(id -un)" || true
	local i
	for ((i = 0; i < 600; i++)); do [ "$(squeue -h -t PD,CF,R -o %i | wc -l)" = 0 ] && return; sleep 0.1; done
	rate_log "warning: jobs still active after scancel: $(active)"
}

echo "== Slurm $("$slurmctld" -V | cut -d' ' -f2): $nodes nodes, State=$state, one slurmctld, $(nproc) CPUs, N=$n"
if has startup; then
	measure "true (fork+exec)" 1 "$runs" /bin/true
	measure "sbatch --help" 1 "$runs" sbatch --help
	# Exits 1 when the nodes are not usable (State=UNKNOWN): a round trip all the same.
	MEASURE_ANY_RC=1 measure "sbatch --test-only" 1 $((runs / 4)) sbatch --test-only "$w/job.sh"
	measure "single sbatch" 1 $((runs / 10)) sbatch --parsable "$w/job.sh"
	cancel_all
fi
if has seq; then
	from=$(($(loglines) + 1))
	measure "sbatch sequential" 1 "$n" sbatch --parsable "$w/job.sh"
	check_ids "sbatch sequential" "$n" || true
	rate_log "after the phase: $(active) jobs active; nodes: $(nodestates)"
	rate_log "slurmctld's own time per submit RPC (its log): $(ctld_usec "$from")"
	cancel_all
fi
if has par; then
	from=$(($(loglines) + 1))
	measure "sbatch $shells shells" "$shells" "$n" sbatch --parsable "$w/job.sh"
	check_ids "sbatch $shells shells" "$n" || true
	rate_log "after the phase: $(active) jobs active; nodes: $(nodestates)"
	rate_log "slurmctld's own time per submit RPC (its log): $(ctld_usec "$from")"
	cancel_all
fi
print_results "Slurm $("$slurmctld" -V | cut -d' ' -f2), $nodes nodes State=$state, N=$n, $(nproc) CPUs"
