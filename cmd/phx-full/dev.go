package main

import (
	"fmt"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/phalanx-hpc/phalanx/devcluster"
)

// devCommand is `phx dev`: a local cluster for trying Phalanx out.
func devCommand() *cli.Command {
	return &cli.Command{
		Name:  "dev",
		Usage: "run a local cluster (controllers + agents with fake GPUs) until interrupted",
		Description: "Starts 1, 3 or 5 phalanx-controller processes (a Raft group) and one phalanx-agent process per node, " +
			"with go-nvml's mock GPUs, state in --dir (a temporary directory by default). Prints the export lines for PHX_SERVER, PHX_AUTH_SOCKET, PHX_CA_CERT and PHX_DEV_DIR. " +
			"Started again on the same --dir, the cluster resumes with its jobs and its shape: flags that ask for another " +
			"(--controllers, --nodes, --gpus-per-node, --gpu-model, --leaf-size, --cpus-per-node, --memory-per-node, --listen) are refused.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "controllers", Value: 1, Usage: "controller replicas: 1, 3 or 5 (kill -9 one to watch a failover)"},
			&cli.IntFlag{Name: "nodes", Value: 4, Usage: "number of nodes"},
			&cli.IntFlag{Name: "gpus-per-node", Value: 8, Usage: "fake GPUs per node"},
			&cli.StringFlag{Name: "gpu-model", Value: "NVIDIA A100-SXM4-80GB", Usage: "fake GPU model"},
			&cli.IntFlag{Name: "leaf-size", Usage: "nodes per leaf switch (default: half the nodes, two leaves)"},
			&cli.IntFlag{Name: "cpus-per-node", Value: 128, Usage: "CPUs each fake node registers"},
			&cli.Int64Flag{Name: "memory-per-node", Value: 1 << 20, Usage: "memory (MB) each fake node registers"},
			&cli.StringFlag{Name: "runtime", Value: "process", Usage: "task runtime: process or containerd"},
			&cli.StringFlag{Name: "containerd-address", Usage: "containerd socket for --runtime containerd"},
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7817", Usage: "first controller's API address; the others take the next ports by tens (port 0 picks free ones)"},
			&cli.StringFlag{Name: "dir", Usage: "state directory, created if needed; an existing cluster there is resumed (default: a new temporary directory, removed at exit)"},
			&cli.BoolFlag{Name: "verbose", Usage: "show the components' logs"},
			&cli.StringFlag{Name: "config", Usage: "make the cluster from a real phalanx.conf or slurm.conf: one fake node per NodeName line (CPUs, RealMemory, Gres=gpu:TYPE:N, Feature), its partitions and keys as written"},
			&cli.StringFlag{Name: "topology", Usage: "with --config: its topology.conf (default: the config's TopologyFile, or, with TopologyPlugin=topology/tree or topology/block, topology.conf beside it)"},
		},
		Subcommands: []*cli.Command{faultCommand(), startCommand()},
		Action: func(c *cli.Context) error {
			if rt := c.String("runtime"); rt != "process" && rt != "containerd" {
				return fmt.Errorf("--runtime %q: use process or containerd", rt)
			}
			switch n := c.Int("controllers"); n {
			case 1, 3, 5:
			default:
				return fmt.Errorf("--controllers %d: use 1, 3 or 5 (a Raft group needs an odd number to keep a majority)", n)
			}
			if err := checkDevSizes(c); err != nil {
				return err
			}
			if c.IsSet("config") {
				for _, f := range []string{"nodes", "gpus-per-node", "leaf-size"} {
					if c.IsSet(f) {
						return fmt.Errorf("--%s with --config: the config's NodeName lines and topology say that; leave --%s out", f, f)
					}
				}
			} else if c.IsSet("topology") {
				return fmt.Errorf("--topology goes with --config (phx dev writes its own topology otherwise)")
			}
			o := devOptions(c)
			o.Notices = c.App.Writer
			if c.Bool("verbose") {
				o.Log = os.Stderr
			}
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			cl, err := devcluster.Start(ctx, o)
			if err != nil {
				return err
			}
			shape := fmt.Sprintf("%s × %d GPUs", counted(len(cl.Layout.Nodes), "node"), cl.Layout.GPUsPerNode)
			if cl.Layout.Config != "" {
				shape = fmt.Sprintf("%s from %s", counted(len(cl.Layout.Nodes), "node"), cl.Layout.Config)
			}
			for _, w := range cl.Warnings {
				fmt.Fprintf(c.App.ErrWriter, "phx dev: warning: %s\n", w)
			}
			fmt.Fprintf(c.App.Writer, "phx dev: %s, %s, state and logs in %s\n", counted(len(cl.Layout.Controllers), "controller"), shape, cl.Dir)
			fmt.Fprintf(c.App.Writer, "export PHX_AUTH_SOCKET=%s\n", cl.AuthSocket())
			fmt.Fprintf(c.App.Writer, "export PHX_CA_CERT=%s\n", cl.CACert())
			fmt.Fprintf(c.App.Writer, "export PHX_SERVER=%s\n", strings.Join(cl.APIAddrs(), ","))
			fmt.Fprintf(c.App.Writer, "export PHX_DEV_DIR=%s\n", cl.Dir)
			<-ctx.Done()
			fmt.Fprintln(c.App.Writer, "phx dev: stopping")
			return cl.Close()
		},
	}
}

// counted says n of noun, in the plural unless there is one.
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// checkDevSizes refuses a size flag given out of range (devcluster would
// take one below it for "not given" and use its default; one above it
// started an agent process per node, or agents that all failed).
func checkDevSizes(c *cli.Context) error {
	for _, f := range []struct {
		name, want string
		min, max   int64
	}{
		{"nodes", fmt.Sprintf("1 to %d (an agent process each; phx sim takes thousands)", devcluster.MaxConfigNodes), 1, devcluster.MaxConfigNodes},
		{"gpus-per-node", fmt.Sprintf("0 (a CPU-only cluster) to %d", devcluster.MaxGPUsPerNode), 0, devcluster.MaxGPUsPerNode},
		{"leaf-size", "1 or more", 1, math.MaxInt32},
		{"cpus-per-node", "1 or more", 1, math.MaxInt32},
		{"memory-per-node", "1 or more (MB)", 1, math.MaxInt64},
	} {
		if v := c.Int64(f.name); c.IsSet(f.name) && (v < f.min || v > f.max) {
			return fmt.Errorf("--%s %d: give %s", f.name, v, f.want)
		}
	}
	return nil
}

// devOptions maps the flags to devcluster's options. A flag that shapes the
// cluster is passed only when given, so that a resumed cluster keeps what
// its directory holds and refuses what differs.
func devOptions(c *cli.Context) devcluster.Options {
	o := devcluster.Options{
		GPUsPerNode:       -1,
		Runtime:           c.String("runtime"),
		ContainerdAddress: c.String("containerd-address"),
		Dir:               c.String("dir"),
		Config:            c.String("config"),
		Topology:          c.String("topology"),
	}
	for name, dst := range map[string]*int{"controllers": &o.Controllers, "nodes": &o.Nodes, "gpus-per-node": &o.GPUsPerNode,
		"leaf-size": &o.LeafSize, "cpus-per-node": &o.CPUs} {
		if c.IsSet(name) {
			*dst = c.Int(name)
		}
	}
	if c.IsSet("memory-per-node") {
		o.MemoryMB = c.Int64("memory-per-node")
	}
	if c.IsSet("gpu-model") {
		o.GPUModel = c.String("gpu-model")
	}
	if c.IsSet("listen") {
		o.APIAddr = c.String("listen")
	}
	return o
}

// devDirFlag is the --dir of the subcommands that act on a running phx dev.
func devDirFlag() cli.Flag {
	return &cli.StringFlag{Name: "dir", EnvVars: []string{"PHX_DEV_DIR"}, Usage: "the dev cluster's --dir (phx dev prints export PHX_DEV_DIR=...)"}
}

// devDir is the running phx dev's directory a subcommand acts on.
func devDir(c *cli.Context) (string, error) {
	if c.String("dir") == "" {
		return "", fmt.Errorf("which dev cluster? give --dir, or set PHX_DEV_DIR as phx dev prints it")
	}
	return c.String("dir"), nil
}

// startCommand is `phx dev start`: bring back a component that was
// killed, on its state, without stopping the others.
func startCommand() *cli.Command {
	return &cli.Command{
		Name:      "start",
		Usage:     "start again a controller replica or a node's agent of a running phx dev that has exited (kill -9)",
		ArgsUsage: "NAME... (ctl1, ctl2, ... or a node: gpu001, ...)",
		Description: "The running phx dev starts the component with the command line it had, on its state: a replica rejoins " +
			"and catches up from the leader (watch its AppliedIndex in phx scontrol show controllers), an agent registers " +
			"again and takes over the tasks that ran on without it. A component still running is refused.",
		Flags: []cli.Flag{
			devDirFlag(),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return fmt.Errorf("give the components to start: ctl1, ctl2, ... or node names (phx dev printed which exited)")
			}
			dir, err := devDir(c)
			if err != nil {
				return err
			}
			for _, name := range c.Args().Slice() {
				pid, err := devcluster.StartComponent(dir, name)
				if err != nil {
					return fmt.Errorf("phx dev start %s: %w", name, err)
				}
				fmt.Fprintf(c.App.Writer, "phx dev start: %s started (pid %d)\n", name, pid)
			}
			return nil
		},
	}
}

// faultCommand is `phx dev fault`: break (or mend) a dev node's fake
// hardware under its running agent, to rehearse what the cluster does.
func faultCommand() *cli.Command {
	return &cli.Command{
		Name:      "fault",
		Usage:     "inject a hardware fault into a node of a running phx dev cluster",
		ArgsUsage: "KIND (link-down, link-up, xid=N, ecc, gpu-lost, temperature=C, gpu-reset, health-fail, health-pass)",
		Description: "Changes the node's fake hardware, which its agent watches as it watches a real host's. " +
			"link-down takes an RDMA port's link down (the node is drained within seconds, see phx sinfo -R), link-up brings it back " +
			"(the node is resumed, unless an administrator drained it). " +
			"xid=N raises XID N on a GPU: one the application causes (13, 31, 43, ...) is only logged; any other drains the node " +
			"until an administrator resumes it (phx scontrol update NodeName=NODE State=RESUME). " +
			"ecc gives a GPU an uncorrectable memory error, temperature=C heats it (at 90 °C it slows down): " +
			"each drains the node until gpu-reset (nvidia-smi -r) clears it. gpu-lost makes it fall off the bus (XID 79): " +
			"the node stays drained until gpu-reset brings the GPU back and an administrator resumes the node. " +
			"health-fail makes the node's health program (HealthCheckProgram, run every 2 s) fail, health-pass mends it.",
		Flags: []cli.Flag{
			devDirFlag(),
			&cli.StringFlag{Name: "node", Usage: "the node, e.g. gpu001 (required)"},
			&cli.StringFlag{Name: "nic", Usage: "the RDMA port of a link fault: DEVICE[/PORT] (default mlx5_0/1)"},
			&cli.IntFlag{Name: "gpu", Usage: "the GPU of a GPU fault (its index)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("give one fault KIND: link-down, link-up, xid=N, ecc, gpu-lost, temperature=C, gpu-reset, health-fail or health-pass")
			}
			if c.String("node") == "" { // checked here: urfave's Required prints the whole help first
				return fmt.Errorf("give the node with --node, e.g. --node gpu001")
			}
			dir, err := devDir(c)
			if err != nil {
				return err
			}
			if err := devcluster.InjectFault(dir, c.String("node"), c.Args().First(),
				devcluster.Where{NIC: c.String("nic"), GPU: c.Int("gpu")}); err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "phx dev fault: %s on %s\n", c.Args().First(), c.String("node"))
			return nil
		},
	}
}
