package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	ucli "github.com/urfave/cli/v2"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// backup writes a consistent copy of the whole state (a state database)
// to FILE: scontrol backup FILE. The file is written beside, then renamed,
// so a failed backup never leaves a torn one under the name.
func (k *commands) backup(c *ucli.Context, args []string) error {
	if len(args) != 1 || args[0] == "" {
		return errors.New("write scontrol backup FILE")
	}
	if fi, err := os.Stat(args[0]); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory: give the backup's file name, e.g. %s", args[0], filepath.Join(args[0], "phalanx-"+k.sys.Now().In(k.loc()).Format("2006-01-02")+".db"))
	}
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	tmp := args[0] + ".partial"
	// The state holds every job's script and environment: owner only.
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("cannot write the backup beside %s: %w", args[0], err)
	}
	defer os.Remove(tmp)
	defer f.Close()
	var n int64
	err = cn.callStream(c.Context, func(ctx context.Context) error {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if err := f.Truncate(0); err != nil {
			return err
		}
		n = 0
		stream, err := cn.api.Backup(ctx, &phalanxv1.BackupRequest{})
		if err != nil {
			return err
		}
		for {
			chunk, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			m, err := f.Write(chunk.Data)
			n += int64(m)
			if err != nil {
				return fmt.Errorf("write %s: %w", tmp, err)
			}
		}
	})
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, args[0]); err != nil {
		return fmt.Errorf("cannot move the backup into place: %w", err)
	}
	fmt.Fprintf(k.sys.Stdout, "Backup of %d bytes written to %s\n", n, args[0])
	return nil
}

// restore replaces the cluster's state with a backup: scontrol restore
// FILE [force]. It is for disaster recovery into a new cluster; the
// controller refuses a cluster that holds jobs unless forced.
func (k *commands) restore(c *ucli.Context, args []string) error {
	if len(args) < 1 || len(args) > 2 || (len(args) == 2 && args[1] != "force") {
		return errors.New("write scontrol restore FILE [force] (force: replace a state that already holds jobs)")
	}
	force := len(args) == 2
	f, err := os.Open(args[0])
	if err != nil {
		return fmt.Errorf("cannot read the backup: %w", err)
	}
	defer f.Close()
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	var resp *phalanxv1.RestoreResponse
	err = cn.callStream(c.Context, func(ctx context.Context) error {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		stream, err := cn.api.Restore(ctx)
		if err != nil {
			return err
		}
		r := bufio.NewReaderSize(f, 1<<20)
		buf := make([]byte, 1<<20)
		for first := true; ; first = false {
			n, rerr := io.ReadFull(r, buf)
			if n > 0 || first {
				if err := stream.Send(&phalanxv1.RestoreRequest{Data: buf[:n], Force: first && force}); err != nil {
					break // the server's answer says why
				}
			}
			if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
				break
			}
			if rerr != nil {
				return fmt.Errorf("read %s: %w", args[0], rerr)
			}
		}
		resp, err = stream.CloseAndRecv()
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(k.sys.Stdout, "State restored from %s: %d jobs, %d nodes\n", args[0], resp.Jobs, resp.Nodes)
	return nil
}
