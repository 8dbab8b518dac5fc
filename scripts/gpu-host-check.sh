#!/usr/bin/env bash
# gpu-host-check.sh: check a GPU host on its real NVIDIA driver, as root.
#
# Installs a one-host cluster the way README's "Running a real cluster"
# does (cluster key, CA, controller and node certificates, TLS and
# authentication on), with the agent on the host's real NVML, and checks:
#   1. the real-NVML tests of nodeagent/gpu (gpu.test, if built: see below);
#   2. the node registers every GPU nvidia-smi lists (count, model, UUIDs);
#   3. no health check drains a healthy node (1 s polls, 10 s);
#   4. a job of an unprivileged user runs as that user on the GPU it was
#      given (CUDA_VISIBLE_DEVICES, nvidia-smi and PyTorch inside the job);
#   5. a job asking more GPUs than the cluster has is refused at submit;
#   6. a GPU job survives kill -9 of its agent: the restarted agent takes
#      it over and it completes in its first attempt with all its output;
#   7. phx srun --gpus=1 runs on the GPU from outside a job and prints what
#      its task saw; phx logs reads a job's output through the agent;
#   8. phx srun --jobid runs a step beside a running GPU job, through the
#      agent with a step credential: as the job's user, on the job's GPU.
#
# Usage: scripts/gpu-host-check.sh [REPORT_DIR]
#   PHX_BIN   directory with phx, phx-full, phalanx-controller, phalanx-agent,
#             phalanx-shim and, optionally, gpu.test (default: bin/ of this checkout; `make
#             build`, and `go test -c -o bin/gpu.test ./nodeagent/gpu`)
#   PHX_CHECK_FAKE_GPUS=N  run on go-nvml's mock instead (to try the
#             script on a host without GPUs: the driver's own checks skip)
# Exit status: 0 when every check passed, 1 when one failed, 2 when it
# could not run. REPORT_DIR gets report.txt and logs.tar.gz.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PHX_BIN:-$root/bin}
# Absolute: the real-NVML tests run from nodeagent/gpu (a relative PHX_BIN
# made them fail to start).
[ -d "$bin" ] && bin=$(cd "$bin" && pwd)
report_dir=${1:-}
fake=${PHX_CHECK_FAKE_GPUS:-0}
user=phxgpucheck

[ "$(id -u)" = 0 ] || { echo "gpu-host-check: run as root (it creates a user and runs an agent)"; exit 2; }
for b in phx phx-full phalanx-controller phalanx-agent phalanx-shim; do
	[ -x "$bin/$b" ] || { echo "gpu-host-check: no $bin/$b: run make build, or set PHX_BIN"; exit 2; }
done
if [ "$fake" = 0 ] && ! command -v nvidia-smi >/dev/null; then
	echo "gpu-host-check: no nvidia-smi: this host has no NVIDIA driver (PHX_CHECK_FAKE_GPUS=8 tries the script without one)"
	exit 2
fi

w=$(mktemp -d /tmp/phx-gpucheck.XXXXXX)
chmod 755 "$w"
mkdir -p "$w/bin" "$w/etc/tls" "$w/jobs"
cp "$bin"/phx "$bin"/phx-full "$bin"/phalanx-controller "$bin"/phalanx-agent "$bin"/phalanx-shim "$w/bin/"
report=$w/report.txt
fails=0
pids=()
say() { echo "$*" | tee -a "$report"; }
pass() { say "PASS $*"; }
fail() { say "FAIL $*"; fails=$((fails + 1)); }
finish() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	if [ -n "$report_dir" ]; then
		mkdir -p "$report_dir"
		cp "$report" "$report_dir/"
		tar -C "$w" -czf "$report_dir/logs.tar.gz" --exclude=bin --exclude=ctl --exclude='*.key' . 2>/dev/null
	fi
	userdel "$user" 2>/dev/null
	say "$fails check(s) failed; logs in $w"
}
trap finish EXIT

ctl="$w/bin/phalanx-controller"
phx="$w/bin/phx"
node=$(hostname -s)

say "== host"
uname -srm | tee -a "$report"
say "hostname $node; /dev/shm $(df -h --output=size /dev/shm | tail -1); ulimit -l $(ulimit -l)"
if [ "$fake" = 0 ]; then
	nvidia-smi --query-gpu=index,uuid,name,memory.total,driver_version --format=csv,noheader | tee "$w/smi.csv" | tee -a "$report"
else
	say "PHX_CHECK_FAKE_GPUS=$fake: go-nvml's mock, not the driver"
fi

if [ -x "$bin/gpu.test" ]; then
	say "== 1. real-NVML tests (nodeagent/gpu)"
	if (cd "$root/nodeagent/gpu" && "$bin/gpu.test" -test.v -test.run 'Real' -test.timeout 120s) >"$w/gpu-test.log" 2>&1; then
		pass "gpu.test -test.run Real"
	else
		fail "gpu.test -test.run Real"
	fi
	grep -E '^(=== RUN|--- |    real_test)' "$w/gpu-test.log" | tee -a "$report"
fi

say "== 2. one-host cluster on this host's GPUs"
"$ctl" keygen "$w/etc/auth.key" >/dev/null &&
	"$ctl" ca init --dir "$w/etc/tls" >/dev/null &&
	"$ctl" ca issue controller ctl1 --dir "$w/etc/tls" --out "$w/etc/tls" >/dev/null &&
	"$ctl" ca issue node "$node" --dir "$w/etc/tls" --out "$w/etc/node-tls" >/dev/null ||
	{ fail "keys and certificates"; exit 1; }
cat >"$w/etc/phalanx.conf" <<EOF
ControllerHost=ctl1(127.0.0.1)
ControllerPort=17817
RaftPort=17819
EOF
"$ctl" --config "$w/etc/phalanx.conf" --node-id ctl1 --data-dir "$w/ctl" --auth-key "$w/etc/auth.key" \
	--auth-socket "" --tls-dir "$w/etc/tls" >"$w/controller.log" 2>&1 &
pids+=($!)
agent_args=(--controller 127.0.0.1:17817 --addr 127.0.0.1 --state-dir "$w/agent" --auth-key "$w/etc/auth.key"
	--auth-socket "$w/auth.sock" --tls-dir "$w/etc/node-tls" --gpu-poll-interval 1s --min-free-mb 0 --min-shm-mb 0)
[ "$fake" = 0 ] || agent_args+=(--fake-gpus "$fake")
start_agent() {
	"$w/bin/phalanx-agent" "${agent_args[@]}" >>"$w/agent.log" 2>&1 &
	agent_pid=$!
	pids+=("$agent_pid")
}
start_agent
export PHX_SERVER=127.0.0.1:17817 PHX_CA_CERT=$w/etc/tls/ca.crt PHX_AUTH_SOCKET=$w/auth.sock

# node_field NAME: the value of NAME= in scontrol show node.
node_field() { "$phx" scontrol show node "$node" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$1=//p" | head -1; }
for _ in $(seq 1 150); do
	[ "$(node_field State)" = IDLE ] && break
	sleep 0.2
done
"$phx" scontrol show node "$node" >"$w/node.txt" 2>&1
cat "$w/node.txt" >>"$report"
[ "$(node_field State)" = IDLE ] || { fail "node $node IDLE within 30 s (is $(node_field State))"; exit 1; }
gres=$(node_field Gres)
if [ "$fake" = 0 ]; then
	want=$(wc -l <"$w/smi.csv")
	model=$(head -1 "$w/smi.csv" | cut -d, -f3 | sed 's/^ *//; s/ /_/g')
	[ "$gres" = "gpu:$model:$want" ] && pass "node registers Gres=$gres (nvidia-smi lists $want)" ||
		fail "node registers Gres=$gres, nvidia-smi lists $want × $model"
	missing=0
	while IFS=, read -r _ uuid _; do
		grep -q "uuid=${uuid# }" "$w/agent.log" || missing=$((missing + 1))
	done <"$w/smi.csv"
	[ "$missing" = 0 ] && pass "the agent found every UUID nvidia-smi lists" || fail "$missing UUIDs of nvidia-smi not in the agent's discovery"
else
	[ "$gres" = "gpu:NVIDIA_A100-SXM4-80GB:$fake" ] && pass "node registers Gres=$gres" || fail "node registers Gres=$gres"
fi
ngpus=${gres##*:}

say "== 3. health checks leave a healthy node alone (10 s of 1 s polls)"
sleep 10
state=$(node_field State)
reason=$("$phx" scontrol show node "$node" | sed -n 's/.*Reason=//p')
[ "$state" = IDLE ] && pass "node still IDLE" || fail "node is $state after 10 s: $reason"
grep -E 'level=(WARN|ERROR)' "$w/agent.log" | tee -a "$report"

say "== 4. an unprivileged user's GPU job"
userdel "$user" 2>/dev/null
useradd -M -d "$w/jobs" -s /bin/bash "$user" || { fail "useradd $user"; exit 1; }
chown "$user" "$w/jobs"
uid=$(id -u "$user")
cat >"$w/jobs/gpu.sbatch" <<'EOF'
#!/bin/bash
#SBATCH -J gpucheck
#SBATCH -t 5
echo "uid=$(id -u) user=$(id -un)"
echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
if command -v nvidia-smi >/dev/null; then
	nvidia-smi --query-gpu=index,uuid,name --format=csv,noheader | sed 's/^/smi /'
fi
if python3 -c 'import torch' 2>/dev/null; then
	python3 - <<'PY'
import time, torch
print("torch devices", torch.cuda.device_count(), torch.cuda.get_device_name(0))
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = a @ a
torch.cuda.synchronize()
t, n = time.time(), 50
for _ in range(n):
    b = a @ a
torch.cuda.synchronize()
print("bf16 matmul %.0f TFLOP/s" % (2 * 8192**3 * n / (time.time() - t) / 1e12))
PY
fi
EOF
as_user() { runuser -u "$user" -- env PATH="$PATH" PHX_SERVER="$PHX_SERVER" PHX_CA_CERT="$PHX_CA_CERT" PHX_AUTH_SOCKET="$PHX_AUTH_SOCKET" "$@"; }
# wait_job ID: waits for the job to end (up to 120 s) and prints its state.
wait_job() {
	local st=""
	for _ in $(seq 1 600); do
		st=$("$phx" scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n 's/^JobState=//p')
		case "$st" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) break ;; esac
		sleep 0.2
	done
	echo "$st"
}
out=$(cd "$w/jobs" && as_user "$phx" sbatch --gpus=1 -o gpu-%j.out gpu.sbatch 2>&1)
say "$out"
id=${out##* }
st=$(wait_job "$id")
f="$w/jobs/gpu-$id.out"
sed 's/^/  | /' "$f" | tee -a "$report"
[ "$st" = COMPLETED ] && pass "job $id COMPLETED" || fail "job $id is $st"
grep -qx "uid=$uid user=$user" "$f" && pass "the job ran as $user (uid $uid)" || fail "the job did not run as $user"
[ "$(stat -c %U "$f")" = "$user" ] && pass "its output belongs to $user" || fail "its output belongs to $(stat -c %U "$f")"
grep -qx 'CUDA_VISIBLE_DEVICES=0' "$f" && pass "CUDA_VISIBLE_DEVICES=0" || fail "CUDA_VISIBLE_DEVICES is not 0"
if [ "$fake" = 0 ]; then
	[ "$(grep -c '^smi ' "$f")" = 1 ] && pass "nvidia-smi in the job sees one GPU" || fail "nvidia-smi in the job: $(grep -c '^smi ' "$f") GPUs"
	grep -q '^torch devices 1 ' "$f" && pass "PyTorch in the job sees one GPU" || fail "PyTorch in the job did not see exactly one GPU"
fi

say "== 5. more GPUs than the cluster has"
if out=$("$phx" sbatch --gpus=$((ngpus + 1)) --wrap true 2>&1); then
	fail "sbatch --gpus=$((ngpus + 1)) was accepted: $out"
else
	say "  $out"
	[[ "$out" == *"Requested node configuration is not available"* ]] && pass "refused at submit" || fail "refused, but not as Slurm says it"
fi

say "== 6. a GPU job survives kill -9 of its agent"
cat >"$w/jobs/long.sbatch" <<'EOF'
#!/bin/bash
#SBATCH -t 5
if python3 -c 'import torch' 2>/dev/null; then
	python3 -u - <<'PY'
import time, torch
a = torch.randn(4096, 4096, device="cuda")
for i in range(1, 16):
    print("step", i, int(time.time()))
    end = time.time() + 1
    while time.time() < end:
        (a @ a).sum().item()
PY
else
	for i in $(seq 1 15); do echo "step $i $(date +%s)"; sleep 1; done
fi
echo done
EOF
out=$(cd "$w/jobs" && as_user "$phx" sbatch --gpus=1 -o long-%j.out long.sbatch 2>&1)
say "$out"
id=${out##* }
for _ in $(seq 1 100); do grep -q '^step 3 ' "$w/jobs/long-$id.out" 2>/dev/null && break; sleep 0.2; done
kill -9 "$agent_pid"
say "  killed the agent at step $(grep -c '^step' "$w/jobs/long-$id.out")"
sleep 3
start_agent
st=$(wait_job "$id")
restarts=$("$phx" scontrol show job "$id" | tr ' ' '\n' | sed -n 's/^Restarts=//p')
[ "$st" = COMPLETED ] && pass "job $id COMPLETED after the agent's restart" || fail "job $id is $st"
[ "$restarts" = 0 ] && pass "in its first attempt" || fail "it restarted $restarts times"
[ "$(grep -c '^step' "$w/jobs/long-$id.out")" = 15 ] && grep -qx done "$w/jobs/long-$id.out" &&
	pass "all 15 steps and the end in its output" || fail "output incomplete: $(tr '\n' ' ' <"$w/jobs/long-$id.out")"

say "== 7. srun and phx logs of the user's GPU job"
if [ "$fake" = 0 ]; then
	out=$(cd "$w/jobs" && as_user "$phx" srun --gpus=1 -Q nvidia-smi --query-gpu=uuid --format=csv,noheader 2>&1)
	want=$(head -1 "$w/smi.csv" | cut -d, -f2 | sed 's/^ *//')
else
	out=$(cd "$w/jobs" && as_user "$phx" srun --gpus=1 -Q sh -c 'echo "$CUDA_VISIBLE_DEVICES"' 2>&1)
	want=0
fi
say "  srun: $out"
[ "$out" = "$want" ] && pass "phx srun --gpus=1 on this host printed the GPU its task saw" || fail "phx srun printed $out, want $want"
first=$(as_user "$phx" logs 1 2>&1 | head -1)
[ "$first" = "uid=$uid user=$user" ] && pass "phx logs 1 reads the job's output through the agent" || fail "phx logs 1: $first"
ls /tmp/phx-srun-"$user"-* >/dev/null 2>&1 && fail "srun's output files were left in /tmp" || pass "srun's output files were removed"

say "== 8. srun --jobid: a step beside a running GPU job"
id=$(cd "$w/jobs" && as_user "$phx" sbatch --parsable --gpus=1 -o step-%j.out --wrap 'sleep 120' 2>&1)
for _ in $(seq 1 100); do [ "$("$phx" squeue -h -j "$id" -o %T 2>/dev/null)" = RUNNING ] && break; sleep 0.2; done
if [ "$fake" = 0 ]; then
	out=$(cd "$w/jobs" && as_user "$phx" srun --jobid "$id" nvidia-smi --query-gpu=uuid --format=csv,noheader 2>&1)
	want=$(head -1 "$w/smi.csv" | cut -d, -f2 | sed 's/^ *//')
else
	out=$(cd "$w/jobs" && as_user "$phx" srun --jobid "$id" sh -c 'echo "$CUDA_VISIBLE_DEVICES"' 2>&1)
	want=0
fi
say "  srun --jobid $id: $out"
[ "$out" = "$want" ] && pass "srun --jobid $id ran beside the job on its GPU" || fail "srun --jobid $id printed $out, want $want"
out=$(cd "$w/jobs" && as_user "$phx" srun --jobid "$id" sh -c 'echo "$(id -un) $SLURM_STEP_ID"' 2>&1)
[ "$out" = "$user 100001" ] && pass "as $user, step 100001" || fail "srun --jobid $id: $out, want $user 100001"
"$phx" scancel "$id"

[ "$fails" = 0 ]
