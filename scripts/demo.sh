#!/usr/bin/env bash
# `make demo`: start a local 4-node × 8-GPU cluster with `phx dev`, run
# examples/hello-ddp.sbatch on 2 nodes, show squeue, sinfo and the output,
# then stop the cluster.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
phx="$root/bin/phx"
work=$(mktemp -d /tmp/phx-demo.XXXXXX)
log="$work/dev.log"
dev_pid=""
cleanup() {
	if [ -n "$dev_pid" ]; then
		kill -INT "$dev_pid" 2>/dev/null || true
		wait "$dev_pid" 2>/dev/null || true
	fi
}
trap cleanup EXIT

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

step "phx dev: a controller and 4 agents with 8 fake GPUs each, in 2 leaf switches"
"$phx" dev --listen 127.0.0.1:0 >"$log" 2>&1 &
dev_pid=$!
for _ in $(seq 1 300); do
	grep -q '^export PHX_SERVER=' "$log" 2>/dev/null && break
	kill -0 "$dev_pid" 2>/dev/null || { cat "$log"; echo "demo: phx dev exited"; exit 1; }
	sleep 0.1
done
grep -q '^export PHX_SERVER=' "$log" || { cat "$log"; echo "demo: phx dev did not start in 30s"; exit 1; }
lines=$(grep '^export PHX_' "$log")
echo "$lines"
eval "$lines"

step "phx sinfo"
"$phx" sinfo

cp "$root/examples/hello-ddp.sbatch" "$work/"
cd "$work"
step "phx sbatch hello-ddp.sbatch   (in $work)"
out=$("$phx" sbatch hello-ddp.sbatch)
echo "$out"
id=${out##* }

step "phx squeue"
"$phx" squeue

state=""
for _ in $(seq 1 600); do
	state=$("$phx" scontrol show job "$id" | tr ' ' '\n' | sed -n 's/^JobState=//p')
	case "$state" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL) break ;; esac
	sleep 0.1
done

step "phx scontrol show job $id"
"$phx" scontrol show job "$id"

step "phx squeue -t all"
"$phx" squeue -t all

step "phx sinfo -N"
"$phx" sinfo -N

step "output files"
for f in hello-ddp-"$id"-rank*.out; do
	echo "--- $f"
	cat "$f"
done

[ "$state" = COMPLETED ] || { echo "demo: job $id ended $state"; exit 1; }
step "demo finished: job $id COMPLETED"
