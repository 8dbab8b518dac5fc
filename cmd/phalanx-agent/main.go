// Command phalanx-agent runs the Phalanx node agent on one host: it
// discovers the host's GPUs, CPUs and memory, registers with a controller,
// and runs the tasks the controller assigns, as plain processes or in
// containerd.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/auth"
	"github.com/phalanx-hpc/phalanx/cli"
	"github.com/phalanx-hpc/phalanx/internal/fakesysfs"
	"github.com/phalanx-hpc/phalanx/nodeagent"
	"github.com/phalanx-hpc/phalanx/nodeagent/gpu"
	"github.com/phalanx-hpc/phalanx/nodeagent/rdma"
	"github.com/phalanx-hpc/phalanx/pki"
	"github.com/phalanx-hpc/phalanx/runtime"
	"github.com/phalanx-hpc/phalanx/runtime/containerd"
	"github.com/phalanx-hpc/phalanx/runtime/process"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

func main() {
	// Plain-process tasks run under a supervisor: this binary again, under
	// the name phalanx-shim (runtime/process). A container's output and
	// fence are kept by this binary too, started by its shim
	// (runtime/containerd).
	process.RunShimIfAsked()
	containerd.RunTaskIOIfAsked()
	os.Exit(run(os.Args[1:]))
}

// flags are the command line, parsed.
type flags struct {
	name, addr, controller, stateDir          string
	runtime, ctrdAddress, ctrdNS, shim        string
	fakeGPUs, fakeNICs                        int
	fakeGPUModel, features, clusterID, client string
	sysfsRoot, fakeLinkLayer, rdmaDevs        string
	fakeGPUFaults                             string
	gpuPoll                                   time.Duration
	minFreeMB, minShmMB                       int64
	checkMemlock                              string
	cpus                                      int
	memoryMB                                  int64
	heartbeat, killGrace                      time.Duration
	ckptLocal                                 string
	ckptRate                                  int64
	authKey, authSocket, tlsDir               string
	insecure, nameSet                         bool
	debug, stopTasksOnExit                    bool
}

func parseFlags(args []string) (*flags, error) {
	host, _ := os.Hostname()
	f := &flags{}
	fs := flag.NewFlagSet("phalanx-agent", flag.ContinueOnError)
	fs.StringVar(&f.name, "name", host, "node name, as phalanx.conf names it")
	fs.StringVar(&f.addr, "addr", "", "address peers reach this node at (MASTER_ADDR); default: first non-loopback IPv4, else the hostname")
	fs.StringVar(&f.controller, "controller", "localhost:7817", "controllers' API addresses, host:port[,host:port...]: the agent follows whichever leads")
	fs.StringVar(&f.stateDir, "state-dir", "/var/lib/phalanx/agent", "directory for job scripts and agent state")
	fs.StringVar(&f.runtime, "runtime", "process", "how tasks run: process or containerd")
	fs.StringVar(&f.shim, "shim", "", "the supervisor of each plain-process task, with --runtime process (default: phalanx-shim beside phalanx-agent, else phalanx-agent itself)")
	fs.StringVar(&f.ctrdAddress, "containerd-address", "/run/containerd/containerd.sock", "containerd socket (--runtime containerd)")
	fs.StringVar(&f.ctrdNS, "containerd-namespace", "phalanx", "containerd namespace for task containers")
	fs.IntVar(&f.fakeGPUs, "fake-gpus", 0, "report N fake GPUs (go-nvml's mock) instead of the host's")
	fs.StringVar(&f.fakeGPUModel, "fake-gpu-model", "NVIDIA A100-SXM4-80GB", "model name of the fake GPUs")
	fs.StringVar(&f.fakeGPUFaults, "fake-gpu-faults", "", "with --fake-gpus: play the faults appended to this file (what phx dev fault writes) into the fake GPUs")
	fs.DurationVar(&f.gpuPoll, "gpu-poll-interval", gpu.DefaultPollInterval, "how often the GPUs' ECC counters, row remaps, presence and temperature are read (XIDs are seen as they come)")
	fs.Int64Var(&f.minFreeMB, "min-free-mb", 1024, "the node fails check disk when --state-dir has less free space (MiB; 0: not checked)")
	fs.Int64Var(&f.minShmMB, "min-shm-mb", 1024, "the node fails check shm when /dev/shm is smaller (MiB; 0: not checked)")
	fs.StringVar(&f.checkMemlock, "check-memlock", "auto", "fail check memlock unless the locked-memory limit is unlimited, as RDMA needs: yes, no, or auto (yes when the host has RDMA ports)")
	fs.StringVar(&f.sysfsRoot, "sysfs-root", "/sys", "where sysfs is: RDMA NICs and their PCI places are read, and their links watched, under it")
	fs.IntVar(&f.fakeNICs, "fake-nics", 0, "report N fake RDMA NICs: writes a fake sysfs tree at --sysfs-root (which must then not be /sys) unless one is there")
	fs.StringVar(&f.fakeLinkLayer, "fake-nic-link-layer", "InfiniBand", "link layer of the fake NICs: InfiniBand or Ethernet (RoCE)")
	fs.StringVar(&f.rdmaDevs, "rdma-devices", "", "comma-separated RDMA devices or device/port to register and watch (default: all; leave out ports with no cable, or their link-down drains the node)")
	fs.StringVar(&f.features, "features", "", "comma-separated node features (constraints)")
	fs.StringVar(&f.clusterID, "cluster-name", "", "exported to tasks as SLURM_CLUSTER_NAME")
	fs.StringVar(&f.client, "phx", "", "the phx client, which jobs find on their PATH as scontrol, squeue, sbatch, scancel, sinfo and sacct (default: phx beside this agent's binary, else on PATH)")
	fs.IntVar(&f.cpus, "cpus", 0, "CPUs to register (default: all)")
	fs.Int64Var(&f.memoryMB, "memory-mb", 0, "memory to register in MB (default: MemTotal from /proc/meminfo)")
	fs.DurationVar(&f.heartbeat, "heartbeat", nodeagent.DefaultHeartbeatInterval, "longest time between heartbeats")
	fs.DurationVar(&f.killGrace, "kill-grace", nodeagent.DefaultKillGrace, "time between SIGTERM and SIGKILL when stopping a task")
	fs.StringVar(&f.ckptLocal, "checkpoint-local", "", "fast node-local directory for the tasks' checkpoints ($PHX_CKPT_DIR of jobs with --checkpoint-dir; default STATE_DIR/ckpt)")
	fs.Int64Var(&f.ckptRate, "checkpoint-rate", 0, "bytes per second at most for copying one checkpoint step to a job's store (0: unlimited)")
	fs.BoolVar(&f.stopTasksOnExit, "stop-tasks-on-exit", false, "stop the tasks when the agent exits; by default plain-process tasks keep running under their supervisors and the agent's next start takes them over")
	fs.StringVar(&f.authKey, "auth-key", auth.DefaultKeyFile, "the cluster key, as the controllers have it: it signs this node's calls and local users' credentials")
	fs.StringVar(&f.authSocket, "auth-socket", auth.DefaultSocket, "serve local users (phx on this node, in jobs too) their credentials on this Unix socket (\"\": none)")
	fs.StringVar(&f.tlsDir, "tls-dir", pki.DefaultDir, "the cluster CA (ca.crt, ca.crl) and this node's certificate (node.crt, node.key, from phalanx-controller ca issue node NAME)")
	fs.BoolVar(&f.insecure, "insecure", false, "INSECURE, for debugging only: talk to the controllers in plaintext (for controllers run with --insecure)")
	fs.BoolVar(&f.debug, "debug", false, "log at debug level")
	// A bad flag is one line, run's; the flags are for --help, on stdout.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fs.Usage()
			return nil, err
		}
		return nil, fmt.Errorf("%v (phalanx-agent --help lists the flags)", err)
	}
	fs.Visit(func(fl *flag.Flag) { f.nameSet = f.nameSet || fl.Name == "name" })
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	case f.fakeGPUs < 0 || f.fakeNICs < 0:
		return nil, fmt.Errorf("--fake-gpus and --fake-nics take 0 (the host's own) or more")
	case f.fakeGPUFaults != "" && f.fakeGPUs == 0:
		return nil, fmt.Errorf("--fake-gpu-faults plays faults into fake GPUs: give --fake-gpus N too")
	case f.shim != "" && f.runtime != "process":
		return nil, fmt.Errorf("--shim supervises plain-process tasks: it goes with --runtime process, not %s", f.runtime)
	case f.gpuPoll < 100*time.Millisecond:
		return nil, fmt.Errorf("--gpu-poll-interval %v: give at least 100ms", f.gpuPoll)
	case f.minFreeMB < 0 || f.minShmMB < 0:
		return nil, fmt.Errorf("--min-free-mb and --min-shm-mb take 0 (not checked) or more MiB")
	case f.checkMemlock != "auto" && f.checkMemlock != "yes" && f.checkMemlock != "no":
		return nil, fmt.Errorf("--check-memlock %q: give yes, no or auto", f.checkMemlock)
	}
	return f, nil
}

func run(args []string) int {
	if len(args) > 0 && args[0] == "authd" {
		return authd(args[1:])
	}
	f, err := parseFlags(args)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "phalanx-agent: %v\n", err)
		}
		return 2
	}
	level := slog.LevelInfo
	if f.debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := runAgent(ctx, f, log); err != nil {
		log.Error("agent failed", "err", err)
		return 1
	}
	return 0
}

// runAgent discovers the host, wires the agent and runs it until ctx ends.
func runAgent(ctx context.Context, f *flags, log *slog.Logger) error {
	lib, gpus, err := discoverGPUs(f, log)
	if err != nil {
		return err
	}
	nics, err := discoverNICs(f, gpus, log)
	if err != nil {
		return err
	}
	creds, certs, err := nodeTLS(f, log)
	if err != nil {
		return err
	}
	rdmaDevices, cdiDirs := rdmaCDI(f, nics, log)
	rt, closeRT, err := openRuntime(ctx, f, cdiDirs, log)
	if err != nil {
		return err
	}
	defer closeRT()
	cfg := nodeagent.Config{
		Name: f.name, Addr: f.addr, Controllers: apiclient.SplitAddrs(f.controller), StateDir: f.stateDir, Runtime: rt,
		GPUs: gpus, NICs: nics, NICWatcher: &rdma.Watcher{Root: f.sysfsRoot, Netlink: f.sysfsRoot == "/sys", Log: log},
		RDMADevices: rdmaDevices, ClientBinary: clientBinary(f.client, log), CPUs: f.cpus, MemoryMB: f.memoryMB, ClusterName: f.clusterID,
		HeartbeatInterval: f.heartbeat, KillGrace: f.killGrace, StopTasksOnExit: f.stopTasksOnExit, Logger: log,
		CheckpointRoot: f.ckptLocal, CheckpointRate: f.ckptRate, TLS: certs, AuthSocket: f.authSocket,
	}
	if certs != nil { // the bundle the client in a container job checks the controllers with
		cfg.CACert = pki.DirFiles(f.tlsDir, pki.KindNode).CA
	}
	if lib != nil {
		gw := &gpu.Watcher{Lib: lib, Devices: gpus, Interval: f.gpuPoll, Log: log}
		cfg.GPUWatcher, cfg.GPUBusy = gw, gw.Busy
	}
	cfg.NodeChecks = &nodeagent.NodeChecks{Dirs: []string{f.stateDir}, MinFreeMB: f.minFreeMB, ShmPath: "/dev/shm", MinShmMB: f.minShmMB,
		Memlock: f.checkMemlock == "yes" || f.checkMemlock == "auto" && len(nics) > 0 && f.fakeNICs == 0}
	if f.features != "" {
		cfg.Features = strings.Split(f.features, ",")
	}
	if cfg.Addr == "" {
		cfg.Addr = nodeagent.HostAddr(f.name)
	}
	if cfg.CPUs == 0 {
		cfg.CPUs = goruntime.NumCPU()
	}
	if cfg.MemoryMB == 0 {
		if cfg.MemoryMB, err = nodeagent.MemTotalMB("/proc/meminfo"); err != nil {
			return fmt.Errorf("memory size (set --memory-mb): %w", err)
		}
	}
	keys, err := auth.LoadKeyring(f.authKey)
	if err != nil {
		return err // the node API takes no call without a node credential
	}
	keys.ReloadOn(hangups(), log)
	if creds != nil {
		// The node's certificate says who it is; the cluster key signs
		// only local users' credentials.
		cfg.DialOptions = append(cfg.DialOptions, creds)
	} else {
		cfg.DialOptions = append(cfg.DialOptions, grpc.WithPerRPCCredentials(auth.Issuer(keys, auth.NodeIdentity(cfg.Name), auth.LocalLifespan)))
	}
	a, err := nodeagent.New(cfg)
	if err != nil {
		return err
	}
	if certs != nil {
		certs.OnReload(a.Reconnect) // new connections present the renewed certificate
	}
	if stop := serveAuth(f, keys, log); stop != nil {
		defer stop()
		if stop := cli.ServeBeside(f.authSocket, cfg.Controllers, pki.DirFiles(f.tlsDir, pki.KindNode).CA, f.insecure, keys, log); stop != nil {
			defer stop()
		}
	}
	return a.Run(ctx)
}

// nodeTLS loads the node's certificate and returns how to reach the
// controllers with it, and the loaded files (nil with --insecure). The node is the one its
// certificate names: --name, when given, must agree.
func nodeTLS(f *flags, log *slog.Logger) (grpc.DialOption, *pki.Material, error) {
	if f.insecure {
		log.Warn("INSECURE: --insecure is set: this agent talks to the controllers in plaintext, without a certificate; use it for debugging only")
		return nil, nil, nil
	}
	m, err := pki.Load(pki.DirFiles(f.tlsDir, pki.KindNode))
	if err != nil {
		return nil, nil, fmt.Errorf("TLS: %w (the node's certificate comes from `phalanx-controller ca issue node %s` on the CA's host, copied with ca.crt to %s; or --insecure, for debugging only)", err, f.name, f.tlsDir)
	}
	self := m.Self()
	switch {
	case self.Kind != pki.KindNode:
		return nil, nil, fmt.Errorf("TLS: %s holds a %s's certificate (%s): an agent needs a node's, from `phalanx-controller ca issue node %s`", f.tlsDir, self.Kind, self.Name, f.name)
	case f.nameSet && self.Name != f.name:
		return nil, nil, fmt.Errorf("TLS: the node certificate in %s is for %s, and this agent is --name %s: the controllers take a node's calls only from its own certificate; issue one for %s", f.tlsDir, self.Name, f.name, f.name)
	}
	f.name = self.Name
	m.ReloadOn(hangups(), log)
	m.LogLoaded(log)
	return grpc.WithTransportCredentials(credentials.NewTLS(m.ClientConfig())), m, nil
}

// serveAuth serves local credentials on --auth-socket, signed with the
// cluster key. When another daemon serves it already, the agent says so and
// runs on.
func serveAuth(f *flags, keys *auth.Keyring, log *slog.Logger) (stop func()) {
	if f.authSocket == "" {
		return nil
	}
	stop, err := auth.ServeSocket(f.authSocket, keys, log)
	if err != nil {
		log.Warn("not serving local credentials", "err", err)
		return nil
	}
	return stop
}

// discoverGPUs lists the GPUs to register, and returns the NVML they are
// watched through. A host without the NVIDIA driver has none: it runs CPU
// jobs, with a warning.
func discoverGPUs(f *flags, log *slog.Logger) (nvml.Interface, []gpu.Device, error) {
	lib, err := gpu.Open(f.fakeGPUs, f.fakeGPUModel, gpu.FaultFile(f.fakeGPUFaults), gpu.Logger(log))
	if errors.Is(err, gpu.ErrNoNVML) {
		log.Warn("no NVIDIA driver: registering zero GPUs", "err", err)
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	devs, err := gpu.Discover(lib)
	if err != nil {
		return nil, nil, fmt.Errorf("GPU discovery: %w", err)
	}
	for _, d := range devs {
		log.Info("GPU", "index", d.Index, "uuid", d.UUID, "model", d.Model, "memory_mb", d.MemoryMB, "pci", d.PCIBusID)
	}
	return lib, devs, nil
}

// discoverNICs lists the RDMA ports to register and watch, writing the
// fake tree first with --fake-nics, and relates them to the GPUs.
func discoverNICs(f *flags, gpus []gpu.Device, log *slog.Logger) ([]rdma.Port, error) {
	root := filepath.Clean(f.sysfsRoot)
	ids := make([]string, len(gpus))
	for i, g := range gpus {
		ids[i] = g.PCIBusID
	}
	var lister rdma.Lister = rdma.SysfsLister{Root: root}
	switch {
	case f.fakeNICs > 0 && root == "/sys":
		return nil, fmt.Errorf("--fake-nics writes a fake sysfs tree: give it a --sysfs-root of its own, not /sys")
	case f.fakeNICs > 0:
		if err := fakesysfs.Write(root, fakesysfs.Host{GPUs: ids, NICs: f.fakeNICs, LinkLayer: f.fakeLinkLayer}); err != nil {
			return nil, err
		}
	case root == "/sys":
		lister = rdma.HostLister(root)
	}
	ports, err := rdma.Discover(root, lister)
	if err != nil {
		return nil, fmt.Errorf("RDMA discovery under %s: %w", root, err)
	}
	if f.rdmaDevs != "" {
		want := strings.Split(f.rdmaDevs, ",")
		for _, w := range want {
			if !slices.ContainsFunc(ports, func(p rdma.Port) bool { return w == p.Device || w == p.Name() }) {
				return nil, fmt.Errorf("--rdma-devices names %q, which this host does not have (its ports: %s)", w, portNames(ports))
			}
		}
		ports = slices.DeleteFunc(ports, func(p rdma.Port) bool {
			return !slices.Contains(want, p.Device) && !slices.Contains(want, p.Name())
		})
	}
	rdma.Affinity(root, ports, ids)
	for _, p := range ports {
		log.Info("RDMA port", "port", p.Name(), "state", p.State, "phys_state", p.PhysState, "rate", p.Rate,
			"link_layer", p.LinkLayer, "netdev", p.Netdev, "pci", p.PCIAddr, "numa", p.NUMANode, "gpus", p.GPUs, "affinity", p.Affinity)
	}
	return ports, nil
}

// portNames lists ports' names, or "none".
func portNames(ports []rdma.Port) string {
	if len(ports) == 0 {
		return "none"
	}
	names := make([]string, len(ports))
	for i, p := range ports {
		names[i] = p.Name()
	}
	return strings.Join(names, ",")
}

// openRuntime returns the task runtime named by --runtime and how to close
// it.
// clientBinary is the phx binary jobs get under Slurm's command names:
// the flag's, else phx beside this binary, else phx on PATH, else none.
func clientBinary(flagValue string, log *slog.Logger) string {
	if flagValue != "" {
		return flagValue
	}
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), "phx"); isExecutable(p) {
			return p
		}
	}
	if p, err := exec.LookPath("phx"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	log.Warn("no phx client found: jobs get no scontrol, squeue, sbatch on their PATH (give --phx)")
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// rdmaCDI describes the node's RDMA devices in a CDI spec under
// --state-dir, for containers: it returns their CDI names and the spec
// directories the runtime reads (the defaults, then that one). A spec
// that cannot be made leaves containers without RDMA devices, with a
// warning.
func rdmaCDI(f *flags, nics []rdma.Port, log *slog.Logger) ([]string, []string) {
	if f.runtime != "containerd" || len(nics) == 0 {
		return nil, nil
	}
	spec, devs, err := rdma.CDISpec(filepath.Clean(f.sysfsRoot), nics)
	if err == nil {
		err = rdma.WriteCDISpec(filepath.Join(f.stateDir, "cdi"), spec)
	}
	if err != nil {
		log.Warn("containers get no RDMA devices", "err", err)
		return nil, nil
	}
	names := make([]string, len(devs))
	for i, d := range devs {
		names[i] = rdma.CDIDevice(d)
	}
	log.Info("containers get the RDMA devices through CDI", "devices", names, "spec_dir", filepath.Join(f.stateDir, "cdi"))
	return names, append(slices.Clone(containerd.DefaultCDISpecDirs), filepath.Join(f.stateDir, "cdi"))
}

func openRuntime(ctx context.Context, f *flags, cdiDirs []string, log *slog.Logger) (runtime.Runtime, func(), error) {
	switch f.runtime {
	case "process":
		shim, err := shimPath(f.shim, log)
		if err != nil {
			return nil, nil, err
		}
		return process.New(filepath.Join(f.stateDir, "process"), process.WithShim(shim)), func() {}, nil
	case "containerd":
		opts := []containerd.Option{containerd.WithLogger(log), containerd.WithNode(f.name),
			containerd.WithStateDir(filepath.Join(f.stateDir, "containerd"))}
		if cdiDirs != nil {
			opts = append(opts, containerd.WithCDISpecDirs(cdiDirs...))
		}
		rt, err := containerd.New(ctx, f.ctrdAddress, f.ctrdNS, opts...)
		if err != nil {
			return nil, nil, err
		}
		return rt, func() { rt.Close() }, nil
	}
	return nil, nil, fmt.Errorf("--runtime %q: want process or containerd", f.runtime)
}

// authd serves only the auth socket, for hosts that run no agent and no
// controller (login nodes), as munged does for Slurm, and with --controller
// the CLI server beside it:
// phalanx-agent authd [--auth-key FILE] [--auth-socket PATH]
// [--controller ADDRS [--tls-dir DIR | --insecure]].
func authd(args []string) int {
	fs := flag.NewFlagSet("phalanx-agent authd", flag.ContinueOnError)
	key := fs.String("auth-key", auth.DefaultKeyFile, "the cluster key")
	path := fs.String("auth-socket", auth.DefaultSocket, "the Unix socket to serve credentials on")
	controller := fs.String("controller", "", "controllers' API addresses, host:port[,host:port...]: also run phx's sbatch, squeue, sinfo, scancel and sacct for local users, on cli.sock beside the auth socket")
	tlsDir := fs.String("tls-dir", pki.DefaultDir, "with --controller: the cluster CA (ca.crt) the controllers are checked with")
	insecure := fs.Bool("insecure", false, "with --controller, INSECURE, for debugging only: talk to the controllers in plaintext")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	keys, err := auth.LoadKeyring(*key)
	if err != nil {
		fmt.Fprintf(os.Stderr, "phalanx-agent authd: %v\n", err)
		return 1
	}
	keys.ReloadOn(hangups(), log)
	stop, err := auth.ServeSocket(*path, keys, log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "phalanx-agent authd: %v\n", err)
		return 1
	}
	defer stop()
	if addrs := apiclient.SplitAddrs(*controller); len(addrs) > 0 {
		if stop := cli.ServeBeside(*path, addrs, pki.DirFiles(*tlsDir, pki.KindNode).CA, *insecure, keys, log); stop != nil {
			defer stop()
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	<-ctx.Done()
	return 0
}

// hangups delivers SIGHUP: the cluster keys are read again (a key change).
func hangups() <-chan os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	return ch
}
