package main

import (
	"log/slog"
	"os"

	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cli"
	"github.com/phalanx-hpc/phalanx/controller"
	"github.com/phalanx-hpc/phalanx/pki"
)

// serveLocal serves this host's local users, as a node agent does on
// its host: their credentials on authSocket ("": none) and, beside it,
// the CLI server that runs phx's common commands for them against the
// controllers (this replica first, then its peers), so that phx on a
// controller host needs no phx-full for them. Either may be held by
// another daemon of the host, and is taken over when that one stops.
func serveLocal(authSocket, tlsDir string, srv *controller.Server, cfg controller.Config, log *slog.Logger) (stop func()) {
	if authSocket == "" {
		return nil
	}
	stopAuth, err := auth.ServeSocket(authSocket, cfg.AuthKeys, log)
	if err != nil {
		log.Warn("not serving local credentials", "err", err)
		return nil
	}
	// The controllers as phx on this host finds them (the host's config),
	// so that the server takes its users' commands; without that file,
	// this replica and its peers.
	addrs := append([]string{srv.APIAddr()}, cfg.PeerAPIs...)
	if conf, err := os.ReadFile(cli.DefaultConfigPath); err == nil {
		addrs = cli.ResolveAddrs("", "", conf)
	}
	stopCLI := cli.ServeBeside(authSocket, addrs, pki.DirFiles(tlsDir, pki.KindController).CA, false, cfg.AuthKeys, log)
	return func() {
		if stopCLI != nil {
			stopCLI()
		}
		stopAuth()
	}
}
