package nodeagent

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// srunShim is the `srun` a task finds first on its PATH (srun.sh, a POSIX
// shell script, so that it runs in any image). Phalanx runs the batch
// script once on every allocated node, so `srun CMD` inside it starts
// this node's share of the step's tasks, as Slurm's srun would have placed
// them, here. It parses its command line as Slurm 22.05's srun does
// (getopt_long over srun's whole option table: grouped short flags,
// unambiguous prefixes of long options, unknown and ambiguous options
// refused with getopt's messages; the first word that is not an option is
// the command):
//
//   - the counts, as Slurm 22.05's srun takes them: -N, -n and
//     --ntasks-per-node, else its input variables, the job's
//     (SLURM_NNODES, SLURM_NTASKS, SLURM_NTASKS_PER_NODE: sbatch sets the
//     last two only after -n or --ntasks-per-node); fewer tasks than
//     nodes take fewer nodes, and --ntasks-per-node that does not give the
//     task count is dropped, each with srun's warning;
//   - the step's nodes: -w/--nodelist LIST names them (each one of the
//     job's, else the step is refused), made up to the node count by the
//     job's first others; else the job's first nodes. The others run
//     nothing, successfully, so that `srun -N1 cmd` runs cmd once, as in
//     Slurm;
//   - tasks per node: spread evenly over the step's nodes, the first
//     taking one more (Slurm's block distribution). A step that needs more
//     CPUs on a node than the job has there is refused, unless
//     -O/--overcommit;
//   - each task gets SLURM_PROCID (numbered node by node), SLURM_LOCALID,
//     RANK, LOCAL_RANK, the step's SLURM_STEP_* variables, SLURM_NNODES,
//     SLURM_NODEID, SLURM_NTASKS and SLURM_TASKS_PER_NODE of the step
//     (SLURM_NODELIST stays the job's, as in Slurm), SLURM_GTIDS,
//     SLURM_DISTRIBUTION, SLURM_UMASK, and with SLURM_GPUS_PER_TASK its own
//     GPUs out of CUDA_VISIBLE_DEVICES (SLURM_STEP_GPUS by host index);
//     --export chooses the rest of its environment;
//   - the tasks run in the background: srun passes SIGTERM, SIGINT and
//     SIGHUP on to them, outlives SIGUSR1 and SIGUSR2 (scancel --signal
//     sends those to the tasks), and says, as Slurm's srun, how each task
//     that failed ended ("srun: error: gpu001: tasks 0-1: Exited with
//     exit code 3");
//   - --container-image and the other Pyxis options are refused: the job
//     is in its image already (sbatch --image), or is not in one;
//   - -l/--label begins every line of a task's output (stdout and stderr,
//     merged) with its number, "0: ...";
//   - --mpi=pmix or pmi2 says once that no PMI server runs; srun's other
//     options are accepted and ignored.
//
//go:embed srun.sh
var srunShim string

// stepDir makes <jobDir>/steps, the task's own directory where srun
// numbers its steps (PHX_STEP_DIR), owned by the job's user, with the
// file nodes: the job's nodes, one a line, by rank (SLURM_NODEID), the
// order srun numbers the nodes of a step in (SLURM_STEP_NODELIST, -w).
func stepDir(jobDir string, job jobInfo) (string, error) {
	dir := filepath.Join(jobDir, "steps")
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("srun step directory: %w", err)
	}
	nodes := strings.Join(job.nodeNames(), "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "nodes"), []byte(nodes), 0o644); err != nil {
		return "", fmt.Errorf("srun step directory: %w", err)
	}
	if uid := idOrKeep(job.uid); uid >= 0 && os.Geteuid() == 0 {
		if err := os.Lchown(dir, uid, max(idOrKeep(job.gid), 0)); err != nil {
			return "", fmt.Errorf("srun step directory: %w", err)
		}
	}
	return dir, nil
}

// slurmCommands are the Slurm commands a job finds on its PATH, as links
// to the phx client (which acts as the command its name says), and phx
// itself (phx ckpt commit).
var slurmCommands = []string{"scontrol", "squeue", "sbatch", "scancel", "sinfo", "sacct", "phx"}

// writeJobBin puts the srun shim in <jobDir>/bin, with links to client
// (the phx binary; "": none) named as Slurm's commands, and returns that
// directory.
func writeJobBin(jobDir, client string, container bool) (string, error) {
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
		target := client
		if container { // the client is mounted over bin/phx (containerClient)
			if name == "phx" {
				if err := writeExecutable(filepath.Join(bin, name), ""); err != nil {
					return "", fmt.Errorf("%s: %w", name, err)
				}
				continue
			}
			target = "phx"
		}
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil && !os.IsExist(err) {
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

// markStepSignal leaves in the task's step directory the mark of a signal
// sent to one step (scancel [--signal] JOBID.STEP): an empty file
// signal.STEP.SEQ.SIG. srun looks for its step's marks before it starts
// the step's tasks here: a step cancelled on another node first (srun -K
// there) starts none here. The directory is the job's user's: the mark is
// made without following a link, and once (a mark already there is this
// request's, from before a restart of the agent).
func (a *Agent) markStepSignal(key taskKey, r cluster.SignalRequest) error {
	path := filepath.Join(a.jobDir(key), "steps", fmt.Sprintf("signal.%d.%d.%d", r.Step, r.Seq, r.Signal))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}
