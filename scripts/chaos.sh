#!/usr/bin/env bash
# Issue 10's chaos table: faults injected under a running 2-node job on a
# `phx dev` cluster of real controller and agent processes, with phx dev's
# intervals (heartbeat 1 s, node TTL 15 s, so a lease of 13 s; kill grace
# 5 s). Each job commits a checkpoint step every second through
# `phx ckpt commit`, to a store in the work directory. Scenarios:
#   kill-agent  kill -9 the agent of the job's second node (not restarted)
#   xid         an XID 48 (double bit ECC: reset class) on its GPU 2
#   link        its RDMA port mlx5_1 goes down
#   hang        the job stops writing and committing (--hang-timeout=1,
#               one minute, the shortest a Slurm time gives; phx dev allows
#               hang timeouts under 10 minutes; --restart-on=node,hang)
#   user        the job exits 3 every time (--restart-on=exit): three
#               attempts in a row, then FAILED
# For each: detect_s, the time from the fault to the first attempt's end
# (for hang: from its last progress); recover_s, from the fault to the next
# attempt RUNNING; the step it resumed from (PHX_RESUME_STEP) against the
# newest complete step the controller had recorded; and the outcome.
#
# Usage: scripts/chaos.sh [-k] [-s "SCENARIO ..."]
#   -k keeps the work directory; -s runs only the scenarios named
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "$0")/.." && pwd)
keep=0 scenarios="kill-agent xid link hang user"
while getopts 'ks:h' o; do
	case $o in
	k) keep=1 ;;
	s) scenarios=$OPTARG ;;
	*) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
phx=$root/bin/phx
[ -x "$phx" ] && [ -x "$root/bin/phalanx-agent" ] && [ -x "$root/bin/phalanx-shim" ] && [ -x "$root/bin/phalanx-controller" ] || make -C "$root" build >&2
work=$(mktemp -d /tmp/phx-chaos.XXXXXX)
dev_pid=''
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "$dev_pid" ]; then
		timeout 20 "$phx" scancel --me >/dev/null 2>&1 || true
		kill -INT "$dev_pid" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$dev_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$dev_pid" 2>/dev/null || true
	fi
	if ((keep)); then echo "kept $work" >&2; else rm -rf "$work"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

nodes=8
setsid "$phx" dev --nodes "$nodes" --listen 127.0.0.1:0 --dir "$work/dev" >"$work/dev.log" 2>&1 &
dev_pid=$!
for _ in $(seq 1200); do grep -q '^export PHX_DEV_DIR=' "$work/dev.log" && break; sleep 0.1; done
grep -q '^export PHX_DEV_DIR=' "$work/dev.log" || { cat "$work/dev.log" >&2; exit 1; }
eval "$(grep '^export ' "$work/dev.log")"
idle_nodes() { "$phx" sinfo -N -h | awk '$4 == "idle"' | wc -l; }
for _ in $(seq 600); do [ "$(idle_nodes)" = "$nodes" ] && break; sleep 0.2; done

now() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
field() { "$phx" scontrol show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1; }
# reason ID: the job's Reason (it may hold spaces; Dependency= follows it).
reason() { "$phx" scontrol show job "$1" | sed -n 's/.*JobState=[A-Z_]* Reason=\(.*\) Dependency=.*/\1/p' | head -1; }

# job SCENARIO: submits the scenario's job, prints its ID.
job() {
	local s=$1 extra=() body
	mkdir -p "$work/store-$s" "$work/out"
	case $s in
	user)
		extra=(--restart-on=exit --max-restarts=5)
		body='sleep 2; exit 3' ;;
	hang)
		extra=(--restart-on=node,hang --hang-timeout=1)
		body='step=$(( ${PHX_RESUME_STEP:--1} + 1 ))
if [ "$PHX_ATTEMPT" = 0 ]; then last=3; else last=1000000; fi
while [ $step -le $last ]; do
	mkdir -p "$PHX_CKPT_DIR/$step"; echo "$SLURM_PROCID $step" > "$PHX_CKPT_DIR/$step/state"
	phx ckpt commit $step; echo "step $step"; step=$((step + 1)); sleep 1
done
date +%s%N > '"$work"'/hang-last-$SLURM_PROCID
exec sleep 3600' ;;
	*)
		extra=(--restart-on=node)
		body='step=$(( ${PHX_RESUME_STEP:--1} + 1 ))
while true; do
	mkdir -p "$PHX_CKPT_DIR/$step"; echo "$SLURM_PROCID $step" > "$PHX_CKPT_DIR/$step/state"
	phx ckpt commit $step; echo "step $step"; step=$((step + 1)); sleep 1
done' ;;
	esac
	cat >"$work/$s.sh" <<EOF
#!/bin/bash
#SBATCH -J $s -N 2 --gpus-per-node=8 -t 30:00
#SBATCH -o $work/out/%x-%j-%n.out
#SBATCH --checkpoint-dir=$work/store-$s
echo "attempt=\$PHX_ATTEMPT resume=\${PHX_RESUME_STEP:-none}"
$body
EOF
	"$phx" sbatch --parsable "${extra[@]}" "$work/$s.sh"
}

wait_for() { # SECONDS COMMAND...: polls every 50 ms until COMMAND succeeds
	local deadline=$(($(date +%s) + $1)); shift
	until "$@"; do
		(($(date +%s) < deadline)) || return 1
		sleep 0.05
	done
}
running() { [ "$(field "$1" JobState)" = RUNNING ] && [ "$(field "$1" Restarts)" = "$2" ]; }
# ended0 ID: whether the job's attempt 0 has ended; while it runs, keeps in
# recorded the newest checkpoint step the controller recorded for it (read
# after the end, it could already be one of attempt 1).
ended0() {
	local out restarts state
	out=$("$phx" scontrol show job "$1" | tr ' ' '\n')
	restarts=$(sed -n 's/^Restarts=//p' <<<"$out" | head -1)
	state=$(sed -n 's/^JobState=//p' <<<"$out" | head -1)
	if [ "$restarts" = 0 ] && [ "$state" = RUNNING ]; then
		recorded=$(sed -n 's/^CheckpointStep=//p' <<<"$out" | head -1)
		return 1
	fi
}
has_step() { local c; c=$(field "$1" CheckpointStep); [ "$c" != none ] && [ "$c" -ge "$2" ]; }
final() { case $(field "$1" JobState) in FAILED | COMPLETED | CANCELLED | NODE_FAIL | TIMEOUT) return 0 ;; esac; return 1; }

rows=()
row() { rows+=("$(printf '%-11s %-9s %9s %9s %8s %8s  %s' "$@")"); }
for s in $scenarios; do
	id=$(job "$s")
	if [ "$s" = user ]; then
		t0=$(now)
		wait_for 120 final "$id" || true
		row "$s" "$(field "$id" NodeList)" "-" "-" "-" "-" \
			"$(field "$id" JobState) after $(($(field "$id" Restarts) + 1)) attempts, $(secs "$t0" "$(now)") s: $(reason "$id")"
		continue
	fi
	wait_for 60 running "$id" 0
	wait_for 60 has_step "$id" 2
	node=$("$phx" scontrol show hostnames "$(field "$id" NodeList)" | sed -n 2p)
	recorded=$(field "$id" CheckpointStep)
	t0=$(now)
	case $s in
	kill-agent) pkill -KILL -f "phalanx-agent --name $node " ;;
	xid) "$phx" dev fault --node "$node" --gpu 2 xid=48 >/dev/null ;;
	link) "$phx" dev fault --node "$node" --nic mlx5_1 link-down >/dev/null ;;
	hang) wait_for 60 test -s "$work/hang-last-0"; t0=$(cat "$work/hang-last-0") ;;
	esac
	wait_for 120 ended0 "$id" || true
	t1=$(now)
	if wait_for 120 running "$id" 1; then
		t2=$(now)
		resumed=$(grep -h '^attempt=1' "$work"/out/"$s"-"$id"-*.out | sed -n 's/.*resume=//p' | sort -u | tr '\n' ' ')
		row "$s" "$node" "$(secs "$t0" "$t1")" "$(secs "$t0" "$t2")" "$recorded" "${resumed% }" \
			"RUNNING again on $(field "$id" NodeList); attempt 0: $("$phx" scontrol show job "$id" | grep -o 'Attempt=0 .*' | grep -o 'Cause=[a-z]*' || true)"
	else
		row "$s" "$node" "$(secs "$t0" "$t1")" "-" "$recorded" "-" "not running again: $(field "$id" JobState) $(field "$id" Reason)"
	fi
	"$phx" scancel "$id" >/dev/null 2>&1 || true
	# The XID's node stays drained (8 nodes are enough for every
	# scenario); the link comes back.
	[ "$s" != link ] || "$phx" dev fault --node "$node" --nic mlx5_1 link-up >/dev/null
done

echo "== Phalanx $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'): phx dev, $nodes nodes, node TTL 15 s (lease 13 s), heartbeat 1 s, kill grace 5 s, $(nproc) CPUs"
printf '%-11s %-9s %9s %9s %8s %8s  %s\n' scenario node detect_s recover_s recorded resumed outcome
printf '%s\n' "${rows[@]}"
