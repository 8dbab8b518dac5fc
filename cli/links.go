package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	ucli "github.com/urfave/cli/v2"
)

// slurmNames are the command names phx answers to through a symbolic link.
var slurmNames = []string{"sbatch", "squeue", "sinfo", "scancel", "scontrol", "srun", "sacct", "sshare"}

func (k *commands) installLinks() *ucli.Command {
	return &ucli.Command{
		Name:      "install-links",
		Usage:     "create sbatch, squeue, ... symbolic links to phx in DIR",
		ArgsUsage: "DIR",
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return &cmdError{cmd: "install-links", err: fmt.Errorf("name one directory, e.g. phx install-links /usr/local/bin")}
			}
			exe, err := k.sys.Executable()
			if err != nil {
				return &cmdError{cmd: "install-links", err: fmt.Errorf("cannot find the phx executable: %w", err)}
			}
			var names []string
			for _, n := range slurmNames {
				if hasCommand(c.App, n) {
					names = append(names, n)
				}
			}
			if err := InstallLinks(c.Args().First(), exe, names); err != nil {
				return &cmdError{cmd: "install-links", err: err}
			}
			for _, n := range names {
				fmt.Fprintf(k.sys.Stdout, "%s -> %s\n", filepath.Join(c.Args().First(), n), exe)
			}
			return nil
		},
	}
}

// InstallLinks makes DIR/NAME a symbolic link to target for every name. An
// existing link is replaced; any other file is left alone and reported, and
// then nothing is changed.
func InstallLinks(dir, target string, names []string) error {
	switch fi, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("directory %s does not exist: create it first (mkdir -p %s)", dir, dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory: name the directory the links go in, e.g. /usr/local/bin", dir)
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink == 0:
			return fmt.Errorf("refusing to replace %s: it is not a symbolic link (remove it first)", p)
		}
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		if cur, err := os.Readlink(p); err == nil && cur == target {
			continue
		}
		tmp := p + ".phx-new"
		_ = os.Remove(tmp)
		if err := os.Symlink(target, tmp); err != nil {
			return linkError(p, err)
		}
		if err := os.Rename(tmp, p); err != nil {
			_ = os.Remove(tmp)
			return linkError(p, err)
		}
	}
	return nil
}

// linkError says which link could not be made, and why, without the name
// of the temporary link it goes through.
func linkError(p string, err error) error {
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("cannot create %s: permission denied (run it as a user who may write %s)", p, filepath.Dir(p))
	}
	return fmt.Errorf("cannot create %s: %w", p, err)
}
