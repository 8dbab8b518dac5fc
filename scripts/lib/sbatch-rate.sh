# shellcheck shell=bash
# Shared by scripts/sbatch-rate.sh (Phalanx) and scripts/slurm-sbatch-rate.sh
# (Slurm): submit-rate measurement with bash and coreutils (plus awk for the
# arithmetic). Sourced, not run.
#
# Timing: wall time of a phase from `date +%s%N`; each call's own time from
# bash's $EPOCHREALTIME (a builtin: no fork, so the timing adds nothing to the
# loop); client CPU from the loop shell's cutime+cstime in /proc (the CPU of
# the sbatch processes it waited for); server CPU from /proc/PID/stat of the
# daemons before and after.

export LC_ALL=C
[[ -n ${EPOCHREALTIME:-} ]] || { echo "needs bash 5 or later (\$EPOCHREALTIME)" >&2; exit 2; }
CLK_TCK=$(getconf CLK_TCK)

rate_log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
rate_die() { rate_log "error: $*"; exit 1; }

# rate_finish RC KEEP: the end of a cleanup: keep or remove $RATE_WORK, then
# exit with RC.
rate_finish() {
	if (($2)); then
		rate_log "kept $RATE_WORK"
	else
		rm -rf "$RATE_WORK"
	fi
	exit "$1"
}

# rate_traps CLEANUP: run CLEANUP at exit, and exit on Ctrl-C and SIGTERM.
rate_traps() {
	trap "$1" EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM HUP
}

# cpu_ticks PID...: user+system CPU of those processes so far, in clock ticks
# (processes that are gone count 0).
cpu_ticks() {
	local pid s f sum=0
	for pid in "$@"; do
		s=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
		s=${s##*) }
		read -r -a f <<<"$s"
		sum=$((sum + f[11] + f[12]))
	done
	echo "$sum"
}

# submit_loop COUNT PREFIX CMD...: runs CMD COUNT times one after another.
# Appends "rc start_us end_us" per call to PREFIX.lat, CMD's stdout to
# PREFIX.out and its stderr to PREFIX.err; at the end writes the CPU ticks
# (user+sys) of all the CMD processes to PREFIX.cpu. Run it in a subshell.
submit_loop() {
	local count=$1 prefix=$2 i rc a b s f
	shift 2
	# Stop after the current call on Ctrl-C or when the script's cleanup
	# kills the loop: a Go CLI that exits on SIGINT with a status of its
	# own would otherwise make bash carry on with the next call.
	trap 'exit 130' INT
	trap 'exit 143' TERM
	exec >>"$prefix.out" 2>>"$prefix.err"
	for ((i = 0; i < count; i++)); do
		a=$EPOCHREALTIME
		rc=0
		"$@" || rc=$?
		b=$EPOCHREALTIME
		printf '%d %s %s\n' "$rc" "${a/./}" "${b/./}" >>"$prefix.lat"
	done
	read -r s <"/proc/$BASHPID/stat"
	s=${s##*) }
	read -r -a f <<<"$s"
	echo $((f[13] + f[14])) >"$prefix.cpu"
}

# lat_stats FILE...: "calls fails mean p50 p90 p99 max" (ms) of the .lat files.
lat_stats() {
	cat "$@" | awk '{print $1, ($3 - $2) / 1000}' | sort -k2,2g | awk '
		{ rc[NR] = $1; d[NR] = $2; s += $2; if ($1 != 0) f++ }
		function q(p,  i) { i = int(p * NR + 0.999999); if (i < 1) i = 1; return d[i] }
		END { if (NR == 0) { print "0 0 0 0 0 0 0"; exit }
		      printf "%d %d %.2f %.2f %.2f %.2f %.2f\n", NR, f + 0, s / NR, q(0.5), q(0.9), q(0.99), d[NR] }'
}

# The server processes whose CPU a phase reports: set by the caller, as
# "label:PID PID ..." words, e.g. SERVER_PIDS=("slurmctld:123" "munged:456").
SERVER_PIDS=()

RESULTS=()
RATE_LOOP_PIDS=() # the running phase's loops, for the scripts' cleanup
RESULT_HEAD=$(printf '%-22s %6s %6s %5s %8s %8s %8s %8s %8s %8s %8s %10s  %s' \
	phase shells calls fail wall_s jobs/s mean_ms p50_ms p90_ms p99_ms max_ms client_cpu "server_cpu ms/call")

# stop_pids SECONDS SIGNAL PID...: sends SIGNAL to the PIDs, polls up to
# SECONDS for them to go, then SIGKILLs those left and their children. Never
# `wait`s: from a trap, bash can miss a child it already reaped and wait for
# ever; bash reaps its children itself, and a zombie left does no harm.
stop_pids() {
	local secs=$1 sig=$2 p i alive
	shift 2
	(($# > 0)) || return 0
	for p in "$@"; do kill "-$sig" "$p" 2>/dev/null || true; done
	for ((i = 0; i < secs * 10; i++)); do
		alive=0
		for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
		((alive)) || return 0
		sleep 0.1
	done
	for p in "$@"; do
		# shellcheck disable=SC2046
		kill -0 "$p" 2>/dev/null && kill -KILL $(ps -o pid= --ppid "$p" 2>/dev/null) "$p" 2>/dev/null
	done
	return 0
}

# stop_loops: ends the running phase's loops (each after its current call;
# after 20 s they and their calls are killed).
stop_loops() {
	stop_pids 20 TERM "${RATE_LOOP_PIDS[@]}"
	RATE_LOOP_PIDS=()
}

# time_wait: TCP sockets in TIME-WAIT on this host (IPv4 and IPv6).
time_wait() {
	cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$4 == "06" {n++} END {print n + 0}'
}

# settle_time_wait: waits (up to 70 s: Linux keeps a closed connection in
# TIME-WAIT for 60 s) until at most TIME_WAIT_LIMIT (default 200) sockets are
# in TIME-WAIT. Slurm opens a TCP connection per RPC and each leaves one;
# with thousands left by the previous phase or run, slurmctld spends 1.6 ms
# per submit instead of 1.1 (3,800 left) and 2.1 (6,600 left) on the 2-CPU
# dev VM, so back-to-back runs would measure a Slurm slower than a user's
# first burst sees. Every phase of both scripts starts settled.
settle_time_wait() {
	local limit=${TIME_WAIT_LIMIT:-200} n i
	n=$(time_wait)
	((n > limit)) || return 0
	rate_log "waiting for $n TCP sockets in TIME-WAIT to clear (at most $limit, up to 70 s)"
	for ((i = 0; i < 140; i++)); do
		sleep 0.5
		n=$(time_wait)
		((n > limit)) || { rate_log "TIME-WAIT down to $n after $(((i + 1) / 2)) s"; return 0; }
	done
	rate_log "warning: still $n sockets in TIME-WAIT after 70 s; measuring anyway"
}

# measure LABEL SHELLS N CMD...: N calls of CMD split over SHELLS concurrent
# shells (each a sequential loop). With MEASURE_ANY_RC=1 a non-zero exit
# status is not counted as a failure. Prints one result row and keeps it in
# RESULTS; job IDs printed by CMD are left in $RATE_WORK/LABEL/*.out. The
# phase starts once TIME-WAIT sockets have cleared (settle_time_wait).
measure() {
	local label=$1 shells=$2 n=$3 s cnt t0 t1 d before=() after i wall srv="" spec name
	shift 3
	d=$RATE_WORK/${label// /_}
	rm -rf "$d"
	mkdir -p "$d"
	settle_time_wait
	for spec in "${SERVER_PIDS[@]}"; do
		# shellcheck disable=SC2086
		before+=("$(cpu_ticks ${spec#*:})")
	done
	t0=$(date +%s%N)
	for ((s = 0; s < shells; s++)); do
		cnt=$((n / shells + (s < n % shells ? 1 : 0)))
		((cnt > 0)) || continue
		(submit_loop "$cnt" "$d/$s" "$@") &
		RATE_LOOP_PIDS+=($!)
	done
	wait "${RATE_LOOP_PIDS[@]}"
	RATE_LOOP_PIDS=()
	t1=$(date +%s%N)
	i=0
	for spec in "${SERVER_PIDS[@]}"; do
		# shellcheck disable=SC2086
		after=$(cpu_ticks ${spec#*:})
		name=${spec%%:*}
		srv+="$name $(awk -v a="${before[i]}" -v b="$after" -v n="$n" -v t="$CLK_TCK" 'BEGIN{printf "%.1f", (b - a) * 1000 / t / n}') "
		i=$((i + 1))
	done
	local st calls fails mean p50 p90 p99 max cpu ok row
	st=$(lat_stats "$d"/*.lat)
	read -r calls fails mean p50 p90 p99 max <<<"$st"
	[ "${MEASURE_ANY_RC:-0}" = 0 ] || fails=0
	cpu=$(cat "$d"/*.cpu | awk -v n="$calls" -v t="$CLK_TCK" '{s += $1} END {printf "%.1f", n ? s * 1000 / t / n : 0}')
	ok=$((calls - fails))
	wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", (b - a) / 1e9}')
	row=$(printf '%-22s %6d %6d %5d %8s %8s %8s %8s %8s %8s %8s %10s  %s' \
		"$label" "$shells" "$calls" "$fails" "$wall" "$(awk -v o="$ok" -v w="$wall" 'BEGIN{printf "%.1f", (w > 0 ? o / w : 0)}')" \
		"$mean" "$p50" "$p90" "$p99" "$max" "$cpu" "${srv% }")
	RESULTS+=("$row")
	((${#RESULTS[@]} > 1)) || printf '%s\n' "$RESULT_HEAD"
	printf '%s\n' "$row"
	if ((fails > 0)); then
		rate_log "$fails of $calls calls failed; first errors:"
		cat "$d"/*.err | sort | uniq -c | sort -rn | head -5 >&2
	fi
}

# ids_of LABEL: the job IDs the calls of that phase printed, one a line.
ids_of() {
	local d=$RATE_WORK/${1// /_}
	cat "$d"/*.out 2>/dev/null | cut -d';' -f1 | grep -E '^[0-9]+$' || true
}

# check_ids LABEL EXPECTED: the phase printed EXPECTED distinct job IDs.
check_ids() {
	local got uniq
	got=$(ids_of "$1" | wc -l)
	uniq=$(ids_of "$1" | sort -u | wc -l)
	if ((got != $2 || uniq != $2)); then
		rate_log "warning: $1: expected $2 job IDs, got $got ($uniq distinct)"
		return 1
	fi
}

print_results() {
	echo
	echo "== summary ($*)"
	echo "$RESULT_HEAD"
	printf '%s\n' "${RESULTS[@]}"
	cat <<'EOF'
  jobs/s: successful calls / wall time of the phase; *_ms: each call's own time as its shell saw it
  (fork+exec+run, as a user's script sees it); client_cpu: ms of CPU (user+sys) of the command's
  processes per call; server_cpu: ms of CPU of each daemon per call over the phase (wall-clock phases
  include the daemons' background work).
EOF
}
