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
// one task per node. srun's options are accepted; those that ask for more
// than one task per node get a warning, since the rest of the job (RANK,
// WORLD_SIZE) is laid out one task per node.
const srunShim = `#!/bin/sh
# srun inside a Phalanx job: the batch script already runs on every node
# (one task per node), so srun runs its command here.
warn() { echo "srun: warning: $*" >&2; }
tasks() {
	case "$2" in ''|*[!0-9]*|1) ;; *) warn "Phalanx runs one task per node; $1=$2 is ignored (start per-GPU processes with torchrun --nproc-per-node or mpirun)" ;; esac
}
while [ $# -gt 0 ]; do
	case "$1" in
	--) shift; break ;;
	--ntasks-per-node=*|--ntasks=*) tasks "${1%%=*}" "${1#*=}"; shift ;;
	--ntasks-per-node|--ntasks|-n) tasks "$1" "$2"; shift 2 ;;
	-n*) tasks -n "${1#-n}"; shift ;;
	--*=*) shift ;;
	-N|-c|-t|-p|-J|-o|-e|-i|-w|-x|-G|-A|-q|-D|-C|-m|-d|-W|-K|\
	--nodes|--cpus-per-task|--gpus|--gpus-per-node|--gpus-per-task|--gres|--time|--partition|\
	--job-name|--output|--error|--input|--nodelist|--exclude|--chdir|--export|--mem|--mem-per-cpu|\
	--mem-per-gpu|--cpu-bind|--gpu-bind|--mpi|--distribution|--constraint|--account|--qos|\
	--dependency|--wait|--kill-on-bad-exit|--signal|--container-image|--container-mounts)
		shift 2 ;;
	-*) shift ;;
	*) break ;;
	esac
done
if [ $# -eq 0 ]; then
	echo "srun: error: no command to run" >&2
	exit 1
fi
exec "$@"
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
