package main

import (
	"log/slog"
	"path/filepath"

	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cli"
	"github.com/phalanx-hpc/phalanx/internal/cliwire"
)

// serveCLI runs the CLI server on cli.sock beside the auth socket: phx on
// this host hands it sbatch, squeue, sinfo, scancel and sacct, which it runs for
// the caller on one connection to the controllers (TLS trusting caCert, or
// plaintext when insecure). When it cannot, phx runs them itself: the
// agent says so and runs on.
func serveCLI(authSocket string, controllers []string, caCert string, insecure bool, keys *auth.Keyring, log *slog.Logger) (stop func()) {
	srv, err := cli.NewServer(controllers, caCert, insecure, keys, log)
	if err != nil {
		log.Warn("not serving phx's commands", "err", err)
		return nil
	}
	path := filepath.Join(filepath.Dir(authSocket), cliwire.SocketName)
	stop, err = cli.ServeCLI(path, srv)
	if err != nil {
		srv.Conn.Close()
		log.Warn("not serving phx's commands", "err", err)
		return nil
	}
	return stop
}
