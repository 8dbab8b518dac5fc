// Command phx-full is Phalanx's whole command line: sbatch, squeue, sinfo,
// scancel and scontrol with Slurm's options and output (package cli), and
// phx dev and phx sim. Users run phx (cmd/phx), which runs the common
// commands through a daemon's CLI server when there is one, and becomes
// phx-full for the rest.
package main

import (
	"os"

	"github.com/phalanx-hpc/phalanx/cli"
)

func main() {
	os.Exit(cli.Main(os.Args, devCommand(), simCommand()))
}
