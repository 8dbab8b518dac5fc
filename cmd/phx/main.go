// Command phx is Phalanx's command line: sbatch, squeue, sinfo, scancel and
// scontrol with Slurm's options and output; see package cli. Extra commands
// (such as "phx dev") are passed to cli.Main.
package main

import (
	"os"

	"github.com/phalanx-hpc/phalanx/cli"
)

func main() {
	os.Exit(cli.Main(os.Args, devCommand(), simCommand()))
}
