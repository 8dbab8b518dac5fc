package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/phalanx-hpc/phalanx/internal/cliwire"
)

// DefaultTimeout bounds every call to the controller unless --timeout says
// otherwise.
const DefaultTimeout = 10 * time.Second

// DefaultConfigPath is where phx looks for the controller's address.
const DefaultConfigPath = "/etc/phalanx/phalanx.conf"

// System is everything phx takes from the process: I/O, environment, clock,
// files and identity. OSSystem returns the real one; tests build their own.
type System struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	Environ        func() []string
	Now            func() time.Time
	Getwd          func() (string, error)
	CurrentUser    func() (*user.User, error)
	// LookupUser finds a user by name (squeue -u checks names with it, as
	// Slurm's squeue does).
	LookupUser func(string) (*user.User, error)
	ReadFile   func(string) ([]byte, error)
	Executable func() (string, error)
	// Hostname names this host (sbatch records it as the job's
	// SLURM_SUBMIT_HOST); nil: none is recorded.
	Hostname   func() (string, error)
	ConfigPath string
	// CacheDir is where phx keeps what it learned for its next run (the
	// controller that leads); nil: nothing is kept.
	CacheDir func() (string, error)
	// Location is the time zone times are read and shown in; nil: the
	// process's (time.Local).
	Location *time.Location
	// Shared, when set, is the connection a CLI server runs this command
	// on, with the caller's credential; the command then reads neither
	// the controllers' addresses nor a credential itself.
	Shared *Shared
}

// OSSystem is the System of the running process.
func OSSystem() *System {
	return &System{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv: os.Getenv, Environ: os.Environ, Now: time.Now, Getwd: os.Getwd,
		CurrentUser: user.Current, LookupUser: user.Lookup, ReadFile: os.ReadFile, Executable: frontExecutable,
		Hostname:   os.Hostname,
		ConfigPath: DefaultConfigPath, CacheDir: os.UserCacheDir,
	}
}

// frontExecutable is the phx users run: when this process is phx-full,
// the phx front end installed with it (links and completions must name
// the front end, or they would bypass the CLI server).
func frontExecutable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return frontOf(exe), nil
}

// frontOf is phx beside phx-full at exe (bin/), or in ../../bin/ (a
// package's /usr/libexec/phalanx/phx-full and /usr/bin/phx); else exe.
func frontOf(exe string) string {
	if filepath.Base(exe) != "phx-full" {
		return exe
	}
	for _, p := range cliwire.FrontCandidates(exe) {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return exe
}

// Main runs phx with the process's System and returns the exit status.
// extra commands (such as "dev") are added to the built-in ones.
func Main(args []string, extra ...*ucli.Command) int {
	return Run(context.Background(), OSSystem(), args, extra...)
}

// Run runs phx: args[0] is the program name; when its base name is one of
// the commands (sbatch, squeue, ...) that command runs directly. Errors are
// printed on sys.Stderr as one line; the result is the exit status.
func Run(ctx context.Context, sys *System, args []string, extra ...*ucli.Command) int {
	if len(args) == 0 {
		args = []string{"phx"}
	}
	app := NewApp(sys, extra...)
	if name := filepath.Base(args[0]); name != app.Name && hasCommand(app, name) {
		args = append([]string{args[0], name}, args[1:]...)
	}
	if err := app.RunContext(ctx, args); err != nil {
		if line := errorLine(err); line != "" { // "": said on standard output already
			fmt.Fprintln(sys.Stderr, line)
		}
		var st *exitStatus
		if errors.As(err, &st) {
			return st.code
		}
		return 1
	}
	return 0
}

// exitStatus is an error that sets phx's exit status (sbatch --wait exits
// as its job did); its message is printed as it is, and none is printed
// when it is empty (the command said why on standard output, as Slurm's
// scontrol says "Node X not found").
type exitStatus struct {
	code int
	msg  string
}

func (e *exitStatus) Error() string { return e.msg }

func hasCommand(app *ucli.App, name string) bool {
	for _, c := range app.Commands {
		if c.Name == name {
			return true
		}
	}
	return false
}

// NewApp builds the phx application writing to sys; extra commands are
// appended to the built-in ones.
func NewApp(sys *System, extra ...*ucli.Command) *ucli.App {
	k := &commands{sys: sys}
	app := &ucli.App{
		Name:      "phx",
		Usage:     "submit and inspect jobs on a Phalanx cluster (Slurm-compatible)",
		Writer:    sys.Stdout,
		ErrWriter: sys.Stderr,
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "server", Usage: "controller addresses HOST:PORT[,HOST:PORT...], tried in turn (default: $PHX_SERVER, " + DefaultConfigPath + ", localhost:7817)"},
			&ucli.DurationFlag{Name: "timeout", Value: DefaultTimeout, Usage: "deadline for each call to the controllers, failover included"},
			&ucli.BoolFlag{Name: "stale", Usage: "let the first controller reached answer reads from its own state, which may lag the leader's"},
		},
		Commands: []*ucli.Command{
			k.sbatch(), k.srun(), k.squeue(), k.sinfo(), k.scancel(), k.scontrol(), k.sacct(), k.sshare(), k.events(), k.logs(), k.ckpt(), k.installLinks(), k.completion(),
		},
		Version:        Version(),
		ExitErrHandler: func(*ucli.Context, error) {}, // Run prints errors and picks the status
		OnUsageError: func(c *ucli.Context, err error, _ bool) error {
			return &cmdError{cmd: "phx", err: flagError("phx", c.App.Flags, err)}
		},
		Action: func(c *ucli.Context) error {
			if c.Args().Present() {
				return &cmdError{cmd: "phx", err: fmt.Errorf("unknown command %q: run phx --help", c.Args().First())}
			}
			return ucli.ShowAppHelp(c)
		},
	}
	app.Commands = append(app.Commands, extra...)
	onUsageErrors(app.Name, app.Commands)
	nameErrors(app.Name, extra)
	return app
}

// commands builds the built-in commands around one System.
type commands struct {
	sys *System
}

// loc is the time zone of the user's times (System.Location).
func (k *commands) loc() *time.Location {
	if k.sys.Location != nil {
		return k.sys.Location
	}
	return time.Local
}

// cmdError is an error of one command, printed as "CMD: error: MESSAGE".
type cmdError struct {
	cmd string
	err error
}

func (e *cmdError) Error() string { return e.cmd + ": error: " + e.err.Error() }
func (e *cmdError) Unwrap() error { return e.err }

// rawError is printed as it is, for messages Slurm prints without a prefix.
type rawError struct{ msg string }

func (e *rawError) Error() string { return e.msg }

func errorLine(err error) string {
	var ce *cmdError
	var re *rawError
	var st *exitStatus
	switch {
	case errors.As(err, &st):
		return st.msg
	case errors.As(err, &re):
		return re.msg
	case errors.As(err, &ce):
		return ce.Error()
	}
	return "phx: error: " + err.Error()
}

// slurmCommand makes a command whose options getopt parses: run receives
// the raw arguments; its errors are prefixed with the command's name.
func slurmCommand(name, usage string, run func(c *ucli.Context, args []string) error) *ucli.Command {
	return &ucli.Command{
		Name:            name,
		Usage:           usage,
		SkipFlagParsing: true,
		HideHelp:        true,
		Action: func(c *ucli.Context) error {
			err := run(c, c.Args().Slice())
			var re *rawError
			var st *exitStatus
			if err == nil || errors.As(err, &re) || errors.As(err, &st) {
				return err
			}
			return &cmdError{cmd: name, err: err}
		},
	}
}
