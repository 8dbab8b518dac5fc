// Command phalanx-controller runs one replica of the Phalanx controller: Raft,
// the replicated state, the gRPC API and (on the leader) the scheduler.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/phalanx-hpc/phalanx/config"
	"github.com/phalanx-hpc/phalanx/controller"
	"github.com/phalanx-hpc/phalanx/topology"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("phalanx-controller", flag.ContinueOnError)
	var (
		dataDir   = fs.String("data-dir", "/var/lib/phalanx/controller", "directory for the Raft log, snapshots and state")
		listen    = fs.String("listen", ":7817", "gRPC API address")
		raftAddr  = fs.String("raft-addr", "127.0.0.1:7819", "Raft address (bind and advertise; must be reachable by the other replicas)")
		nodeID    = fs.String("node-id", "", "this replica's Raft ID (default: the Raft address)")
		bootstrap = fs.Bool("bootstrap", false, "form a new cluster when the data dir is empty")
		peers     = fs.String("peers", "", "other voters for --bootstrap, as id=host:port,id=host:port")
		confPath  = fs.String("config", "", "phalanx.conf (slurm.conf syntax); default /etc/phalanx/phalanx.conf when it exists")
		topoPath  = fs.String("topology", "", "topology.conf (Slurm syntax); default: TopologyFile from the config")
		nodeTTL   = fs.Duration("node-ttl", 30*time.Second, "declare a node DOWN after this long without a heartbeat")
		killGrace = fs.Duration("kill-grace", 10*time.Second, "time between SIGTERM and SIGKILL when a job is cancelled")
		preGrace  = fs.Duration("preempt-grace", 0, "time between SIGTERM and SIGKILL for a preempted job, to checkpoint (default: --kill-grace)")
		ports     = fs.String("master-ports", "29500-29999", "range for MASTER_PORT")
		debug     = fs.Bool("debug", false, "log at debug level")
	)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	cfg := controller.Config{
		NodeID: *nodeID, DataDir: *dataDir, RaftAddr: *raftAddr, APIAddr: *listen,
		Bootstrap: *bootstrap, NodeTTL: *nodeTTL, KillGrace: *killGrace, PreemptGrace: *preGrace, Logger: log,
	}
	if *peers != "" {
		cfg.Peers = strings.Split(*peers, ",")
	}
	if _, err := fmt.Sscanf(*ports, "%d-%d", &cfg.MasterPortMin, &cfg.MasterPortMax); err != nil {
		fmt.Fprintf(os.Stderr, "phalanx-controller: --master-ports %q: want MIN-MAX, e.g. 29500-29999\n", *ports)
		return 2
	}
	if err := loadConfig(&cfg, *confPath, *topoPath); err != nil {
		fmt.Fprintf(os.Stderr, "phalanx-controller: %v\n", err)
		return 1
	}
	srv, err := controller.New(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "phalanx-controller: %v\n", err)
		return 1
	}
	log.Info("controller started", "api", srv.APIAddr(), "raft", srv.RaftAddr(), "data_dir", *dataDir)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	if err := srv.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "phalanx-controller: shutdown: %v\n", err)
		return 1
	}
	return 0
}

// loadConfig reads phalanx.conf and topology.conf into cfg. A missing
// default config is fine: the controller then has one partition of all nodes.
func loadConfig(cfg *controller.Config, confPath, topoPath string) error {
	if confPath == "" {
		if _, err := os.Stat("/etc/phalanx/phalanx.conf"); err == nil {
			confPath = "/etc/phalanx/phalanx.conf"
		}
	}
	if confPath != "" {
		c, err := config.Load(confPath)
		if err != nil {
			return err
		}
		for _, w := range c.Warnings {
			cfg.Logger.Warn("config", "warning", w)
		}
		if len(c.Partitions) > 0 {
			cfg.Partitions = c.Partitions
		}
		cfg.Nodes = c.Nodes
		if topoPath == "" && c.TopologyFile != "" {
			topoPath = c.TopologyFile
			if !filepath.IsAbs(topoPath) {
				topoPath = filepath.Join(filepath.Dir(confPath), topoPath)
			}
		}
	}
	if topoPath != "" {
		t, err := topology.Load(topoPath)
		if err != nil {
			return err
		}
		cfg.Topology = t
	}
	return nil
}
