// Command phalanx-controller runs one replica of the Phalanx controller: Raft,
// the replicated state, the gRPC API and (on the leader) the scheduler.
//
// A replica finds its place in the cluster from phalanx.conf: the
// ControllerHost=NAME(ADDR) lines (Slurm's SlurmctldHost syntax) list the
// replicas; this one is the line whose NAME is --node-id, or this host's
// name, and a replica no line names refuses to start. Its Raft address is
// ADDR:RaftPort; its API listens on every interface at ControllerPort and
// is advertised as ADDR:ControllerPort (ADDR may carry its own API port,
// ctl1(10.0.0.1:7817); the Raft port is RaftPort for every replica, so
// replicas sharing a host need their own addresses, e.g. 127.0.0.x).
//
// Every listed replica is a voter of a new cluster. A replica with no
// state forms it once every other one has answered that it has no cluster
// either, and waits (asking again) while any is silent, so that one whose
// data was lost rejoins its cluster instead of founding a second one; later
// starts resume from disk. Flags override each of these; --peers (with
// --peer-apis) replaces the ControllerHost lines altogether.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // served only with --debug-addr
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	metrics "github.com/hashicorp/go-metrics"

	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/config"
	"github.com/phalanx-hpc/phalanx/controller"
	"github.com/phalanx-hpc/phalanx/pki"
	"github.com/phalanx-hpc/phalanx/topology"
)

func main() {
	if os.Getenv("GOGC") == "" {
		// The live heap is small next to what a scheduling pass and a burst
		// of submits allocate; collecting at twice it, not once, halves the
		// GC's share of a busy leader's CPU for a few more MB of memory.
		debug.SetGCPercent(200)
	}
	os.Exit(run(os.Args[1:]))
}

type flags struct {
	dataDir, listen, apiAdvertise, raftAddr, raftAdvertise string
	nodeID, peers, peerAPIs, confPath, topoPath, ports     string
	debugAddr                                              string
	authKey, authSocket, admins, operators, tlsDir         string
	bootstrap, debug, insecure, noRootJobs                 bool
	nodeTTL, heartbeat, killGrace, preGrace, minJobAge     time.Duration
	snapInterval, hangTimeout, minHang                     time.Duration
	snapThreshold, trailingLogs                            uint64
	set                                                    map[string]bool // flags given on the command line
}

func parseFlags(args []string) (*flags, error) {
	f := &flags{set: map[string]bool{}}
	fs := flag.NewFlagSet("phalanx-controller", flag.ContinueOnError)
	fs.StringVar(&f.dataDir, "data-dir", "/var/lib/phalanx/controller", "directory for the Raft log, snapshots and state")
	fs.StringVar(&f.confPath, "config", "", "phalanx.conf (slurm.conf syntax); default /etc/phalanx/phalanx.conf when it exists")
	fs.StringVar(&f.topoPath, "topology", "", "topology.conf (Slurm syntax); default: TopologyFile from the config")
	fs.StringVar(&f.nodeID, "node-id", "", "this replica's ID: its ControllerHost name (default: this host's name when the config lists it, else the Raft address)")
	fs.StringVar(&f.listen, "listen", "", "gRPC API address (default :ControllerPort, 7817)")
	fs.StringVar(&f.apiAdvertise, "api-advertise", "", "API address others are told (default: ADDR:ControllerPort from the config, else --listen)")
	fs.StringVar(&f.raftAddr, "raft-addr", "", "Raft address to bind (default: ADDR:RaftPort from the config, else 127.0.0.1:7819)")
	fs.StringVar(&f.raftAdvertise, "raft-advertise", "", "Raft address other replicas dial (default: --raft-addr)")
	fs.BoolVar(&f.bootstrap, "bootstrap", false, "form a new cluster on first start (default: on when the config lists the controllers)")
	fs.StringVar(&f.peers, "peers", "", "voters of a new cluster, as id=host:raftport,... (default: the config's ControllerHost lines)")
	fs.StringVar(&f.peerAPIs, "peer-apis", "", "with --peers: the other voters' API addresses, host:port,..., asked before bootstrapping whether a cluster already exists")
	fs.DurationVar(&f.nodeTTL, "node-ttl", 30*time.Second, "declare a node DOWN after this long without a heartbeat")
	fs.DurationVar(&f.hangTimeout, "default-hang-timeout", 0, "hang timeout of jobs that give no --hang-timeout (10m to 12h; 0: no hang detection)")
	fs.DurationVar(&f.minHang, "min-hang-timeout", cluster.MinHangTimeout, "shortest --hang-timeout a job may give (shorter than 10m for test and dev clusters only)")
	fs.DurationVar(&f.heartbeat, "heartbeat-interval", 5*time.Second, "heartbeat interval asked of the agents")
	fs.DurationVar(&f.killGrace, "kill-grace", 0, "time between SIGTERM and SIGKILL when a job is cancelled, requeued or reaches its time limit (default: KillWait from the config, else 10s)")
	fs.DurationVar(&f.preGrace, "preempt-grace", 0, "time between SIGTERM and SIGKILL for a preempted job, to checkpoint (default: --kill-grace)")
	fs.DurationVar(&f.minJobAge, "min-job-age", 0, "how long scontrol show job and squeue still show a finished job (default: MinJobAge from the config, else 300s)")
	fs.StringVar(&f.ports, "master-ports", "29500-29999", "range for MASTER_PORT")
	fs.Uint64Var(&f.snapThreshold, "snapshot-threshold", 0, "snapshot the state once this many Raft entries were written since the last snapshot (default 8192)")
	fs.DurationVar(&f.snapInterval, "snapshot-interval", 0, "how often to check --snapshot-threshold (default 2m)")
	fs.Uint64Var(&f.trailingLogs, "trailing-logs", 0, "Raft entries kept after a snapshot, so that a replica a little behind catches up from the log rather than a snapshot (default 10240)")
	fs.StringVar(&f.authKey, "auth-key", auth.DefaultKeyFile, "the cluster key (phalanx-controller keygen FILE makes one; the same file on every host, mode 0400)")
	fs.StringVar(&f.authSocket, "auth-socket", auth.DefaultSocket, "serve local users their credentials on this Unix socket (\"\": none; skipped when another daemon serves it)")
	fs.StringVar(&f.tlsDir, "tls-dir", pki.DefaultDir, "the cluster CA (ca.crt, ca.crl) and this replica's certificate (controller.crt, controller.key): phalanx-controller ca makes them")
	fs.BoolVar(&f.insecure, "insecure", false, "INSECURE, for debugging only: no TLS and no authentication, anyone who reaches the API acts as whoever they claim")
	fs.StringVar(&f.admins, "admin-users", "", "users who may change anything (root and this process's user always may), comma-separated (default: AdminUsers of the config)")
	fs.StringVar(&f.operators, "operator-users", "", "users who may change any job, comma-separated (default: OperatorUsers of the config)")
	fs.BoolVar(&f.noRootJobs, "disable-root-jobs", false, "refuse jobs that would run as root (also DisableRootJobs=YES in the config)")
	fs.BoolVar(&f.debug, "debug", false, "log at debug level")
	fs.StringVar(&f.debugAddr, "debug-addr", "", "serve Go's profiler (/debug/pprof/) on this address (off by default; never expose it)")
	// A bad flag is one line, run's; the flags are for --help, on stdout.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fs.Usage()
			return nil, err
		}
		return nil, fmt.Errorf("%v (phalanx-controller --help lists the flags)", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	return f, nil
}

func run(args []string) int {
	if len(args) > 0 && args[0] == "keygen" {
		return keygen(args[1:])
	}
	if len(args) > 0 && args[0] == "ca" {
		return caCommand(args[1:], os.Stdout, os.Stderr)
	}
	f, err := parseFlags(args)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "phalanx-controller: %v\n", err)
		}
		return 2
	}
	level := slog.LevelInfo
	if f.debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	cfg, err := configure(f, log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "phalanx-controller: %v\n", err)
		return 2
	}
	cfg.Fatal = func(err error) {
		fmt.Fprintf(os.Stderr, "phalanx-controller: %v\n", err)
		os.Exit(1)
	}
	srv, err := controller.New(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "phalanx-controller: %v\n", err)
		return 1
	}
	if cfg.AuthKeys != nil {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		cfg.AuthKeys.ReloadOn(hup, log) // a key change
	}
	if cfg.TLS != nil {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		cfg.TLS.ReloadOn(hup, log) // a renewed certificate, a new CA bundle or revocation list
		cfg.TLS.LogLoaded(log)
		if name := cfg.TLS.Self().Name; name != srv.ID() {
			log.Warn("this replica's certificate names another controller (any controller's certificate works; issue one for this replica to tell them apart in logs)",
				"replica", srv.ID(), "certificate", name)
		}
	}
	if cfg.Insecure {
		log.Warn("INSECURE: --insecure is set: no TLS, and the API authenticates no one: anyone who reaches it can run jobs as any user, root included; use it for debugging only")
	} else if stop := serveLocal(f.authSocket, f.tlsDir, srv, cfg, log); stop != nil {
		defer stop()
	}
	if f.debugAddr != "" {
		serveDebug(f.debugAddr, log)
	}
	if cfg.Reload != nil {
		go reloadOnHangup(srv, log)
	}
	log.Info("controller started", "id", srv.ID(), "api", srv.APIAddr(), "raft", srv.RaftAddr(), "data_dir", cfg.DataDir)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	if err := srv.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "phalanx-controller: shutdown: %v\n", err)
		return 1
	}
	return 0
}

// reloadOnHangup reads the config file again at each SIGHUP, as Slurm's
// controller does: the leader applies it (phx scontrol reconfigure), a
// follower keeps it for when it leads.
func reloadOnHangup(srv *controller.Server, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	for range hup {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		changes, err := srv.Reload(ctx)
		cancel()
		if err != nil {
			log.Error("SIGHUP: config not applied", "err", err)
			continue
		}
		log.Info("SIGHUP: config read again", "changes", changes)
	}
}

// configure builds the replica's configuration from the config files and
// the flags (which win).
func configure(f *flags, log *slog.Logger) (controller.Config, error) {
	cfg := controller.Config{
		DataDir: f.dataDir, NodeTTL: f.nodeTTL, HeartbeatInterval: f.heartbeat, DefaultHangTimeout: f.hangTimeout, MinHangTimeout: f.minHang,
		KillGrace: f.killGrace, PreemptGrace: f.preGrace, Logger: log,
		SnapshotThreshold: f.snapThreshold, SnapshotInterval: f.snapInterval, TrailingLogs: f.trailingLogs,
	}
	if _, err := fmt.Sscanf(f.ports, "%d-%d", &cfg.MasterPortMin, &cfg.MasterPortMax); err != nil {
		return cfg, fmt.Errorf("--master-ports %q: want MIN-MAX, e.g. 29500-29999", f.ports)
	}
	conf, err := loadConfig(&cfg, f.confPath, f.topoPath, log)
	if err != nil {
		return cfg, err
	}
	if conf != nil { // phx scontrol reconfigure and SIGHUP read it again
		cfg.Reload = func() (controller.Config, error) { return configure(f, log) }
	}
	if err := placeReplica(&cfg, f, conf); err != nil {
		return cfg, err
	}
	if f.set["min-job-age"] {
		cfg.MinJobAge = minJobAge(f.minJobAge)
	}
	if conf != nil && conf.KillWait > 0 && !f.set["kill-grace"] {
		cfg.KillGrace = conf.KillWait
	}
	return cfg, configureAuth(&cfg, f)
}

// configureAuth loads the cluster key (unless --insecure) and the
// permission settings.
func configureAuth(cfg *controller.Config, f *flags) error {
	cfg.Insecure = f.insecure
	if f.set["admin-users"] {
		cfg.AdminUsers = apiclient.SplitAddrs(f.admins)
	}
	if f.set["operator-users"] {
		cfg.OperatorUsers = apiclient.SplitAddrs(f.operators)
	}
	cfg.DisableRootJobs = cfg.DisableRootJobs || f.noRootJobs
	if f.insecure {
		return nil
	}
	var err error
	if cfg.AuthKeys, err = auth.LoadKeyring(f.authKey); err != nil {
		return err
	}
	cfg.TLS, err = loadTLS(f.tlsDir, pki.KindController, cfg.NodeID)
	return err
}

// keygen writes a new cluster key: phalanx-controller keygen [FILE].
func keygen(args []string) int {
	path := auth.DefaultKeyFile
	switch len(args) {
	case 0:
	case 1:
		path = args[0]
	default:
		fmt.Fprintln(os.Stderr, "phalanx-controller: write phalanx-controller keygen [FILE] (default "+auth.DefaultKeyFile+")")
		return 2
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "phalanx-controller: %v\n", err)
		return 1
	}
	if _, err := auth.WriteNewKey(path); err != nil {
		fmt.Fprintf(os.Stderr, "phalanx-controller: %v\n", err)
		return 1
	}
	fmt.Printf("wrote a new cluster key to %s (mode 0400): copy it to every controller and node, with the same mode\n", path)
	return 0
}

// placeReplica sets this replica's identity, addresses and bootstrap peers
// from the ControllerHost lines, then from the flags.
func placeReplica(cfg *controller.Config, f *flags, conf *config.Config) error {
	cfg.NodeID = f.nodeID
	cfg.APIAddr, cfg.RaftAddr = ":"+strconv.Itoa(config.DefaultControllerPort), "127.0.0.1:"+strconv.Itoa(config.DefaultRaftPort)
	if conf != nil {
		cfg.APIAddr = ":" + strconv.Itoa(conf.ControllerPort)
		cfg.RaftAddr = "127.0.0.1:" + strconv.Itoa(conf.RaftPort)
		if len(conf.Controllers) > 0 && !f.set["peers"] {
			if err := fromControllerLines(cfg, conf); err != nil {
				return err
			}
		}
	}
	return applyFlags(cfg, f)
}

// fromControllerLines places this replica as the config's ControllerHost
// lines say: it is the line named by --node-id (default: this host's
// name); every line is a voter of a new cluster, at ADDR:RaftPort, and
// answers the API at ADDR:ControllerPort (or at ADDR's own port).
func fromControllerLines(cfg *controller.Config, conf *config.Config) error {
	if cfg.NodeID == "" {
		cfg.NodeID = hostInList(conf.Controllers)
	}
	self := slices.IndexFunc(conf.Controllers, func(c config.Controller) bool { return c.Name == cfg.NodeID })
	if self < 0 {
		return notListed(cfg.NodeID, conf.Controllers)
	}
	raftAddrs := map[string]string{}
	for i, c := range conf.Controllers {
		host, api := hostOnly(c.Addr), c.Addr
		if _, _, err := net.SplitHostPort(api); err != nil {
			api = net.JoinHostPort(host, strconv.Itoa(conf.ControllerPort))
		}
		raft := net.JoinHostPort(host, strconv.Itoa(conf.RaftPort))
		if other, dup := raftAddrs[raft]; dup {
			return fmt.Errorf("ControllerHost lines %s and %s share the Raft address %s (RaftPort is the same for every controller): give each its own address", other, c.Name, raft)
		}
		raftAddrs[raft] = c.Name
		cfg.Peers = append(cfg.Peers, c.Name+"="+raft)
		if i == self {
			cfg.RaftAddr, cfg.APIAdvertise = raft, api
		} else {
			cfg.PeerAPIs = append(cfg.PeerAPIs, api)
		}
	}
	cfg.Bootstrap = true
	return nil
}

// notListed is the error for a replica the ControllerHost lines do not
// name: it would otherwise bootstrap a cluster the listed replicas do not
// know.
func notListed(id string, ctls []config.Controller) error {
	names := make([]string, len(ctls))
	for i, c := range ctls {
		names[i] = c.Name
	}
	if id == "" {
		id, _ = os.Hostname()
		return fmt.Errorf("this host (%s) is not among the ControllerHost lines of the config (%s): give --node-id NAME of one of them", id, strings.Join(names, ", "))
	}
	return fmt.Errorf("--node-id %s is not among the ControllerHost lines of the config (%s): add a ControllerHost=%s(ADDR) line to every replica's config, or give the name of one of them", id, strings.Join(names, ", "), id)
}

// applyFlags lets the flags given on the command line override what the
// config said.
func applyFlags(cfg *controller.Config, f *flags) error {
	if f.set["listen"] {
		cfg.APIAddr = f.listen
	}
	if f.set["api-advertise"] {
		cfg.APIAdvertise = f.apiAdvertise
	}
	if f.set["raft-addr"] {
		cfg.RaftAddr = f.raftAddr
	}
	if f.set["raft-advertise"] {
		cfg.RaftAdvertise = f.raftAdvertise
	}
	if f.set["bootstrap"] {
		cfg.Bootstrap = f.bootstrap
	}
	if f.set["peer-apis"] && !f.set["peers"] {
		return fmt.Errorf("--peer-apis goes with --peers: give both, or neither to take the peers from the ControllerHost lines")
	}
	if f.set["peers"] {
		cfg.Peers, cfg.PeerAPIs = apiclient.SplitAddrs(f.peers), apiclient.SplitAddrs(f.peerAPIs)
	}
	return nil
}

// serveDebug serves Go's profiler (/debug/pprof/) and Raft's internal
// timings (/debug/metrics: the last minute, in 10s intervals) on addr.
func serveDebug(addr string, log *slog.Logger) {
	inm := metrics.NewInmemSink(10*time.Second, time.Minute)
	conf := metrics.DefaultConfig("phalanx")
	conf.EnableHostname, conf.EnableRuntimeMetrics = false, true
	if _, err := metrics.NewGlobal(conf, inm); err != nil {
		log.Error("debug metrics", "err", err)
	}
	http.HandleFunc("/debug/metrics", func(w http.ResponseWriter, r *http.Request) {
		data, err := inm.DisplayMetrics(w, r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(data)
	})
	go func() { log.Error("debug server", "err", http.ListenAndServe(addr, nil)) }()
}

// minJobAge maps a MinJobAge of zero (finished jobs leave the controller's
// view at once) to controller.Config's way of saying it.
func minJobAge(d time.Duration) time.Duration {
	if d == 0 {
		return controller.NoMinJobAge
	}
	return d
}

// hostInList returns the ControllerHost name matching this host's name
// (full or short), or "".
func hostInList(ctls []config.Controller) string {
	host, err := os.Hostname()
	if err != nil {
		return ""
	}
	short, _, _ := strings.Cut(host, ".")
	for _, c := range ctls {
		if c.Name == host || c.Name == short {
			return c.Name
		}
	}
	return ""
}

func hostOnly(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return strings.Trim(addr, "[]")
}

// loadConfig reads phalanx.conf and topology.conf into cfg and returns the
// config (nil when there is none). A missing default config is fine: the
// controller then has one partition of all nodes.
func loadConfig(cfg *controller.Config, confPath, topoPath string, log *slog.Logger) (*config.Config, error) {
	if confPath == "" {
		if _, err := os.Stat("/etc/phalanx/phalanx.conf"); err == nil {
			confPath = "/etc/phalanx/phalanx.conf"
		}
	}
	if confPath == "" {
		if topoPath != "" {
			t, err := topology.Load(topoPath)
			if err != nil {
				return nil, err
			}
			cfg.Topology = t
		}
		return nil, nil
	}
	// The config, its gres.conf and its topology.conf (TopologyFile, else
	// topology.conf beside it, unless --topology names one), with all
	// their problems in one error.
	c, tree, err := config.LoadWithTopology(confPath, topoPath)
	if err != nil {
		return nil, err
	}
	for _, w := range c.Warnings {
		log.Warn("config", "warning", w)
	}
	cfg.ConfigWarnings = c.Warnings
	if len(c.Partitions) > 0 {
		cfg.Partitions = c.Partitions
	}
	cfg.Nodes = c.Nodes
	cfg.MinJobAge, cfg.PurgeJobAfter, cfg.PurgeEventAfter = minJobAge(c.MinJobAge), c.PurgeJobAfter, c.PurgeEventAfter
	cfg.MaxJobHistory, cfg.MaxJobCount, cfg.MaxArraySize = c.MaxJobHistory, c.MaxJobCount, c.MaxArraySize
	cfg.MaxScriptSize, cfg.ClusterName = c.MaxScriptSize, c.ClusterName
	cfg.DisableRootJobs, cfg.AdminUsers, cfg.OperatorUsers = c.DisableRootJobs, c.AdminUsers, c.OperatorUsers
	cfg.PrivateJobs = c.PrivateJobs
	cfg.FairShareWeight, cfg.DecayHalfLife = c.PriorityWeightFairshare, c.PriorityDecayHalfLife
	if cfg.FairShareWeight == 0 {
		cfg.FairShareWeight = -1 // the file's 0: none (the controller's 0 is its default)
	}
	if cfg.DecayHalfLife == 0 {
		cfg.DecayHalfLife = -1 // no decay
	}
	cfg.HealthCheck, cfg.Prolog, cfg.Unkillable = c.HealthCheck, c.Prolog, c.Unkillable
	rl := c.RateLimit
	cfg.RateLimit = controller.RateLimit{Bucket: rl.Bucket, Refill: rl.Refill, Period: rl.Period, Table: rl.Table}
	if tree != nil {
		cfg.Topology = tree
	}
	return c, nil
}
