package nodeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// srunShim is the `srun` a task finds first on its PATH. Phalanx runs the
// batch script once on every allocated node, one task per node, so `srun
// CMD` inside it runs CMD right here: what Slurm's srun does for a job with
// one task per node. It parses srun's options as srun does (getopt: an
// option that takes a value takes the next word, -K takes one only when
// attached, the first word that is not an option is the command):
//
//   - -N/--nodes K, or -n/--ntasks K with K below the job's node count, run
//     CMD on the first K nodes only (SLURM_NODEID < K); the others skip it
//     and succeed, so that `srun -N1 cmd` runs cmd once, as in Slurm;
//   - -w/--nodelist LIST runs CMD on the nodes it names (expanded by the
//     `scontrol show hostnames` beside it);
//   - asking for more than one task per node gets a warning;
//   - --container-image and the other Pyxis options are refused: the job
//     is in its image already (sbatch --image), or is not in one;
//   - -l/--label begins every line of the command's output (stdout and
//     stderr, merged) with the task's number, "0: ...";
//   - -K/--kill-on-bad-exit, --mpi and the rest are accepted.
const srunShim = `#!/bin/sh
# srun inside a Phalanx job: the batch script already runs on every node
# (one task per node), so srun runs its command here, on the nodes its
# -N, -n and -w options select.
warn() { echo "srun: warning: $*" >&2; }
die() { echo "srun: error: $*" >&2; exit 1; }
nodes='' ntasks='' nodelist='' label=''
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
	-w|--nodelist) nodelist=$v ;;
	-l|--label) label=1 ;;
	--ntasks-per-node) case "$v" in 1|'') ;; *) warn "Phalanx runs one task per node; $o=$v is ignored (start per-GPU processes with torchrun --nproc-per-node or mpirun)" ;; esac ;;
	esac
	shift
done
[ $# -gt 0 ] || die "no command to run"
all=${SLURM_NNODES:-1} me=${SLURM_NODEID:-0}
if [ -n "$ntasks" ] && [ "$ntasks" -gt "${nodes:-$all}" ]; then
	warn "Phalanx runs one task per node; -n $ntasks over ${nodes:-$all} nodes runs one per node"
	ntasks=''
fi
k=${nodes:-${ntasks:-$all}}
[ -n "$nodes" ] && [ -n "$ntasks" ] && [ "$ntasks" -lt "$nodes" ] && k=$ntasks
if [ -n "$nodelist" ]; then
	if names=$(scontrol show hostnames "$nodelist" 2>/dev/null); then
		printf '%s\n' "$names" | grep -qx "${SLURMD_NODENAME:-$(hostname)}" || exit 0
	else
		warn "cannot expand -w $nodelist here (no scontrol on PATH): running on this node"
	fi
elif [ "$me" -ge "$k" ]; then
	exit 0 # not one of the first $k nodes: srun runs nothing here
fi
[ -n "$label" ] || exec "$@"
# -l: every line of the command's output begins with this task's number,
# as "0: ..."; the exit status is the command's.
rc=$( { { "$@"; echo $? >&3; } 2>&1 | while IFS= read -r line || [ -n "$line" ]; do printf '%s: %s\n' "$me" "$line"; done >&4; } 3>&1 ) 4>&1
exit "$rc"
`

// slurmCommands are the Slurm commands a job finds on its PATH, as links
// to the phx client (which acts as the command its name says), and phx
// itself (phx ckpt commit).
var slurmCommands = []string{"scontrol", "squeue", "sbatch", "scancel", "sinfo", "sacct", "phx"}

// writeJobBin puts the srun shim in <jobDir>/bin, with links to client
// (the phx binary; "": none) named as Slurm's commands, and returns that
// directory.
func writeJobBin(jobDir, client string) (string, error) {
	bin := filepath.Join(jobDir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", fmt.Errorf("job bin directory: %w", err)
	}
	if err := writeExecutable(filepath.Join(bin, "srun"), srunShim); err != nil {
		return "", fmt.Errorf("srun: %w", err)
	}
	if client == "" {
		return bin, nil
	}
	for _, name := range slurmCommands {
		if err := os.Symlink(client, filepath.Join(bin, name)); err != nil && !os.IsExist(err) {
			return "", fmt.Errorf("%s: %w", name, err)
		}
	}
	return bin, nil
}

// prependPath puts dir first on the environment's PATH. Without a PATH (a
// container keeping its image's), the environment is left alone.
func prependPath(env []string, dir string) []string {
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + dir + ":" + v
		}
	}
	return env
}
