// Package cli implements phx, Phalanx's command line: sbatch, squeue, sinfo,
// scancel, scontrol and sacct with Slurm's options and output, and phx
// events (what happened to nodes), over the v1 gRPC ControllerService and
// nothing else.
//
// Run through a symbolic link named after a Slurm command (sbatch, squeue,
// ...), phx behaves as that command; "phx install-links DIR" creates the
// links. The controller is found through --server, $PHX_SERVER, the first
// SlurmctldHost= (or ControllerHost=, ControllerAddr=) line of
// /etc/phalanx/phalanx.conf, or localhost:7817, in that order.
//
// Options of the Slurm commands are parsed by package getopt so that every
// spelling Slurm accepts (-N2, --nodes=2, --part=gpu) works; urfave/cli only
// dispatches subcommands and reads phx's own global flags. Output formatting
// is done by pure functions (FormatSqueue, FormatSinfo, FormatJob,
// FormatSacct, FormatEvents, ...) that take wire objects and a time, so it is tested with
// golden files.
//
// Listings follow the controller's page tokens to the end (see listJobs):
// a page is bounded by count and by size, so squeue, sacct and scontrol
// show job work whatever the number of jobs.
//
// Errors print as one line, "CMD: error: MESSAGE", and exit with status 1.
package cli
