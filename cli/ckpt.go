package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	ucli "github.com/urfave/cli/v2"

	"github.com/phalanx-hpc/phalanx/checkpoint"
)

// Checkpoints, inside a job that names a store (sbatch --checkpoint-dir):
//
//	phx ckpt commit N   marks step N, written under $PHX_CKPT_DIR/N/,
//	                    complete: the node's agent copies it to the store
//
// It only creates the marker file $PHX_CKPT_DIR/N/.phx-complete (a program
// that cannot run a command creates it itself); it needs no controller.

const ckptUsage = `usage: phx ckpt commit STEP

Marks checkpoint step STEP complete: every file of it must be written under
$PHX_CKPT_DIR/STEP/ first. The node's agent then copies the step to the job's
--checkpoint-dir in the background; a restart resumes from the newest step
that every rank committed ($PHX_RESUME_FROM, $PHX_RESUME_STEP).
Without phx, create the file $PHX_CKPT_DIR/STEP/` + checkpoint.Marker + ` instead.
`

func (k *commands) ckpt() *ucli.Command {
	return slurmCommand("ckpt", "inside a job: mark a checkpoint step complete (phx ckpt commit STEP)", k.runCkpt)
}

func (k *commands) runCkpt(_ *ucli.Context, args []string) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(k.sys.Stdout, ckptUsage)
		return nil
	}
	if len(args) != 2 || args[0] != "commit" {
		return fmt.Errorf("give: phx ckpt commit STEP")
	}
	step, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil || step < 0 || strconv.FormatInt(step, 10) != args[1] {
		return fmt.Errorf("step %q: give a whole number, 0 or more, without leading zeros (the name of its directory under $PHX_CKPT_DIR)", args[1])
	}
	local := k.sys.Getenv("PHX_CKPT_DIR")
	if local == "" {
		return fmt.Errorf("PHX_CKPT_DIR is not set: run it inside a job submitted with --checkpoint-dir")
	}
	dir := filepath.Join(local, args[1])
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("no directory %s: write step %d's files there first", dir, step)
	}
	f, err := os.OpenFile(filepath.Join(dir, checkpoint.Marker), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}
