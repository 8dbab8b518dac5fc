#!/usr/bin/env bash
# Measures submit-to-RUNNING latency of a 2-node × 8-GPU job on a `phx dev`
# cluster: submits N jobs one after another and, for each, polls squeue
# until the job is RUNNING (R). Prints each latency and the median.
# Usage: scripts/submit-latency.sh [N]   (after `make build`)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
phx="$root/bin/phx"
n=${1:-10}
work=$(mktemp -d /tmp/phx-latency.XXXXXX)
"$phx" dev --listen 127.0.0.1:0 >"$work/dev.log" 2>&1 &
dev=$!
trap 'kill -INT $dev 2>/dev/null; wait $dev 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do grep -q '^export PHX_SERVER=' "$work/dev.log" && break; sleep 0.1; done
eval "$(grep '^export PHX_' "$work/dev.log")"
cd "$work"
lat=()
for i in $(seq 1 "$n"); do
	t0=$(date +%s%N)
	id=$("$phx" sbatch --parsable -N 2 --gpus-per-node=8 -t 1 -o /dev/null --wrap 'sleep 2')
	until [ "$("$phx" squeue -h -j "$id" -o %t)" = R ]; do :; done
	t1=$(date +%s%N)
	ms=$(( (t1 - t0) / 1000000 ))
	lat+=("$ms")
	echo "job $id: submit to RUNNING ${ms} ms"
	"$phx" scancel "$id"
	until [ -z "$("$phx" squeue -h -j "$id" -t PD,CF,R,CG -o %t 2>/dev/null)" ]; do :; done
done
printf '%s\n' "${lat[@]}" | sort -n | awk '{a[NR]=$1} END {printf "median %d ms (min %d, max %d) over %d jobs\n", a[int((NR+1)/2)], a[1], a[NR], NR}'
