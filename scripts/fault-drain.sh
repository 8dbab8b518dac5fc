#!/usr/bin/env bash
# Issue 9's health figures on a `phx dev` cluster with its default
# intervals (agents read their RDMA ports every 1 s, their GPUs' counters
# every 5 s, and see XIDs as they come):
#   idle     CPU of each phalanx-agent over IDLE seconds with nothing to do
#            but watch its node, as % of one core;
#   drain    ROUNDS times each, on a node, the time from `phx dev fault` to
#            `phx sinfo -R` listing it (polled every 20 ms), and from the
#            repair to the node idle again:
#            link-down, then link-up;
#            xid=48 on GPU 2, then `phx scontrol update State=RESUME`;
#            ecc on GPU 5, then gpu-reset (seen by the next counter poll).
#
# Usage: scripts/fault-drain.sh [-n NODES] [-r ROUNDS] [-i IDLE] [-k]
#   -k keeps the temporary directory (phx dev's state and logs).
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "$0")/.." && pwd)
nodes=4 rounds=10 idle=30 keep=0
while getopts 'n:r:i:kh' o; do
	case $o in
	n) nodes=$OPTARG ;;
	r) rounds=$OPTARG ;;
	i) idle=$OPTARG ;;
	k) keep=1 ;;
	*) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
phx=$root/bin/phx
[ -x "$phx" ] && [ -x "$root/bin/phx-full" ] && [ -x "$root/bin/phalanx-agent" ] && [ -x "$root/bin/phalanx-shim" ] && [ -x "$root/bin/phalanx-controller" ] || make -C "$root" build >&2
work=$(mktemp -d /tmp/phx-fault-drain.XXXXXX)
dev_pid=''
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "$dev_pid" ]; then
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

setsid "$phx" dev --nodes "$nodes" --listen 127.0.0.1:0 --dir "$work/dev" >"$work/dev.log" 2>&1 &
dev_pid=$!
for _ in $(seq 1200); do grep -q '^export PHX_DEV_DIR=' "$work/dev.log" && break; sleep 0.1; done
grep -q '^export PHX_DEV_DIR=' "$work/dev.log" || { cat "$work/dev.log" >&2; exit 1; }
eval "$(grep '^export ' "$work/dev.log")"
ms() { echo $((($(date +%s%N) - $1) / 1000000)); }
idle_nodes() { "$phx" sinfo -N -h | awk '$4 == "idle"' | wc -l; }
for _ in $(seq 600); do [ "$(idle_nodes)" = "$nodes" ] && break; sleep 0.2; done

# Agent CPU at idle, from /proc/PID/stat (utime + stime, clock ticks).
tck=$(getconf CLK_TCK)
agents=$(ps -o pid=,comm= --ppid "$dev_pid" | awk '$2 ~ /^phalanx-agent/ {print $1}')
ticks() { for p in $agents; do awk '{print $14 + $15}' "/proc/$p/stat"; done | awk '{s += $1} END {print s + 0}'; }
t0=$(ticks)
sleep "$idle"
t1=$(ticks)
n=$(echo "$agents" | wc -w)
echo "== phx dev, $nodes nodes, $(nproc) CPUs, $(git -C "$root" rev-parse --short HEAD)"
awk -v d=$((t1 - t0)) -v tck="$tck" -v s="$idle" -v n="$n" \
	'BEGIN {printf "agent CPU at idle: %.3f%% of one core per agent (%d agents, %d s)\n", 100 * d / tck / s / n, n, s}'

down=() up=() xid=() resume=() ecc=() reset=()
# drill FAULT-ARGS REPAIR-COMMAND: time fault to DRAIN into $fault_ms and
# repair to idle into $repair_ms.
drill() {
	local t
	t=$(date +%s%N)
	"$phx" dev fault --node "$node" $1 >/dev/null
	until "$phx" sinfo -R -h | grep -q "$node"; do sleep 0.02; done
	fault_ms=$(ms "$t")
	t=$(date +%s%N)
	eval "$2" >/dev/null
	until [ "$(idle_nodes)" = "$nodes" ]; do sleep 0.02; done
	repair_ms=$(ms "$t")
}
for ((r = 0; r < rounds; r++)); do
	node=$(printf 'gpu%03d' $((r % nodes + 1)))
	drill "--nic mlx5_0 link-down" '"$phx" dev fault --node "$node" --nic mlx5_0 link-up'
	down+=("$fault_ms") up+=("$repair_ms")
	drill "--gpu 2 xid=48" '"$phx" scontrol update NodeName="$node" State=RESUME'
	xid+=("$fault_ms") resume+=("$repair_ms")
	drill "--gpu 5 ecc" '"$phx" dev fault --node "$node" --gpu 5 gpu-reset'
	ecc+=("$fault_ms") reset+=("$repair_ms")
done
stats() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {printf "median %d ms, max %d ms (%d rounds)", v[int((NR + 1) / 2)], v[NR], NR}'; }
echo "link-down to DRAIN in sinfo -R: $(stats "${down[@]}")"
echo "link-up to idle again:          $(stats "${up[@]}")"
echo "XID 48 to DRAIN in sinfo -R:    $(stats "${xid[@]}")"
echo "admin RESUME to idle again:     $(stats "${resume[@]}")"
echo "ECC error to DRAIN in sinfo -R: $(stats "${ecc[@]}")"
echo "gpu-reset to idle again:        $(stats "${reset[@]}")"
