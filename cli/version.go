package cli

import (
	"fmt"
	"runtime/debug"
	"slices"

	"github.com/phalanx-hpc/phalanx/cli/getopt"
)

// SlurmRelease is the release of Slurm whose commands phx's Slurm-named
// commands follow: their option tables were read off it, and their output
// checked against it. Their --version prints it as Slurm's print theirs.
const SlurmRelease = "22.05.8"

// versionOption is sbatch's -V, --version, which every Slurm-named command
// takes.
var versionOption = findOption("version")

// versionAsked reports whether a Slurm-named command's line asks for its
// version (and getopt takes the line): --version comes before the rest of
// the command, as in Slurm's, where it exits on the spot.
func versionAsked(opts []getopt.Option, args []string, mode getopt.Mode) bool {
	vals, _, err := getopt.Parse(opts, args, mode)
	return err == nil && slices.ContainsFunc(vals, func(v getopt.Value) bool { return v.Name == versionOption.Long })
}

// printVersion answers --version as Slurm's commands do, with "slurm
// 22.05.8" alone on stdout, which the scripts that parse it take (some
// want three numbers, some nothing after them); Phalanx's own version goes
// to stderr, as phx --version words it.
func (k *commands) printVersion() error {
	fmt.Fprintf(k.sys.Stdout, "slurm %s\n", SlurmRelease)
	fmt.Fprintf(k.sys.Stderr, "phx version %s\n", Version())
	return nil
}

// commit is the commit phx was built from, when the build says (make
// build sets it with -ldflags -X).
var commit string

// Version is what phx --version prints after "phx version": the module's
// version ("(devel)" for a build from a checkout) and the commit it was
// built from (the build's word, else what the Go toolchain recorded, with
// "+dirty" for uncommitted changes).
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if commit != "" {
		rev, dirty = commit, ""
	}
	if rev != "" {
		v += " " + rev + dirty
	}
	return v
}
