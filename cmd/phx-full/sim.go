package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"runtime/debug"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/scheduler"
	"github.com/phalanx-hpc/phalanx/sim"
	"github.com/phalanx-hpc/phalanx/topology"
)

// simGCPercent is the garbage collector's target for `phx sim`.
const simGCPercent = 400

// simCommand is `phx sim`: the real scheduler on a virtual clock; see
// package sim and docs/sim.md.
func simCommand() *cli.Command {
	return &cli.Command{
		Name:  "sim",
		Usage: "simulate a workload on a simulated cluster with the real scheduler",
		Description: "Runs the scheduler on a virtual clock over simulated nodes. The cluster comes from " +
			"--topology or is generated (--nodes, --leaf-size, ...); the workload from --workload or is " +
			"generated (--jobs, --seed). The last line on stdout is a JSON summary; see docs/sim.md.",
		Flags:       simFlags(),
		Subcommands: []*cli.Command{simETTRCommand()},
		Action: func(c *cli.Context) error {
			start := time.Now()
			// A batch run of many short passes over a small live heap: let
			// the heap grow 4x between collections instead of 2x (the
			// collector took a fifth of the CPU). GOGC, when set, wins.
			if os.Getenv("GOGC") == "" {
				defer debug.SetGCPercent(debug.SetGCPercent(simGCPercent))
			}
			cfg, specs, err := simSetup(c)
			if err != nil {
				return err
			}
			res, err := sim.Run(c.Context, cfg, specs)
			if err != nil {
				return err
			}
			if err := writeJobsCSV(c.String("jobs-csv"), res.Jobs); err != nil {
				return err
			}
			fmt.Fprintf(c.App.ErrWriter, "phx sim: %d nodes, %d jobs, %d passes in %.1fs of wall time\n",
				res.Summary.Nodes, res.Summary.Jobs, res.Summary.Passes, time.Since(start).Seconds())
			line, err := json.Marshal(res.Summary)
			if err != nil {
				return err
			}
			fmt.Fprintln(c.App.Writer, string(line))
			return nil
		},
	}
}

func simFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "topology", Usage: "topology.conf `FILE` (default: generate one)"},
		&cli.IntFlag{Name: "nodes", Value: 64, Usage: "generated fabric: number of nodes"},
		&cli.IntFlag{Name: "gpus-per-node", Value: 8, Usage: "GPUs of each node"},
		&cli.IntFlag{Name: "leaf-size", Value: 32, Usage: "generated fabric: nodes per leaf switch"},
		&cli.IntFlag{Name: "spine-size", Value: 16, Usage: "generated fabric: leaves per spine"},
		&cli.IntFlag{Name: "block-size", Usage: "generated fabric: nodes per block (0: no blocks)"},
		&cli.StringFlag{Name: "workload", Usage: "workload `FILE.json` (default: generate one)"},
		&cli.IntFlag{Name: "jobs", Value: 1000, Usage: "generated workload: number of jobs"},
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the generated workload and of node failures"},
		&cli.Float64Flag{Name: "load", Value: sim.DefaultLoad, Usage: "generated workload: offered load (work / capacity)"},
		&cli.Float64Flag{Name: "preemptible", Usage: "generated workload: fraction of small jobs in the preemptible partition " + sim.PreemptPartition},
		&cli.StringSliceFlag{Name: "partition", Usage: "add or replace a partition; `SPEC` is NAME[:tier=N][:preempt=requeue|off][:maxtime=MIN][:state=S] (repeatable)"},
		&cli.DurationFlag{Name: "pass-interval", Value: sim.DefaultPassInterval, Usage: "virtual time between periodic passes while jobs wait"},
		&cli.IntFlag{Name: "reserve-depth", Usage: "scheduler: blocked jobs that get a reservation (0: the scheduler's default; -1: none)"},
		&cli.BoolFlag{Name: "idle-passes", Usage: "also pass every --pass-interval while jobs wait when nothing changed"},
		&cli.DurationFlag{Name: "preempt-grace", Value: sim.DefaultPreemptGrace, Usage: "virtual time a preempted job keeps running before it is requeued"},
		&cli.Float64Flag{Name: "fail-rate", Usage: "node failures per node-hour (0: none)"},
		&cli.DurationFlag{Name: "repair", Value: sim.DefaultRepair, Usage: "virtual time a failed node stays DOWN"},
		&cli.StringFlag{Name: "jobs-csv", Usage: "write one row per job to `FILE`"},
		&cli.BoolFlag{Name: "progress", Usage: "print progress lines on stderr"},
	}
}

// simSetup turns the flags into the simulated cluster and the workload.
func simSetup(c *cli.Context) (sim.Config, []sim.JobSpec, error) {
	if err := simCheckFlags(c); err != nil {
		return sim.Config{}, nil, err
	}
	tree, err := simTopology(c)
	if err != nil {
		return sim.Config{}, nil, err
	}
	gpus := c.Int("gpus-per-node")
	if gpus < 0 {
		return sim.Config{}, nil, fmt.Errorf("--gpus-per-node %d: want 0 or more: %w", gpus, cluster.ErrInvalid)
	}
	shape := sim.NodeShape{GPUs: gpus, CPUs: 16 * max(gpus, 1), MemoryMB: 128 * 1024 * int64(max(gpus, 1))}
	cfg := sim.Config{
		Tree: tree, Nodes: sim.MakeNodes(tree, shape),
		PassInterval: c.Duration("pass-interval"), PreemptGrace: simGrace(c.Duration("preempt-grace")),
		FailRate: c.Float64("fail-rate"), Repair: c.Duration("repair"), Seed: c.Uint64("seed"),
		IdlePasses: c.Bool("idle-passes"), Clock: time.Now,
		Options: scheduler.Options{ReserveDepth: c.Int("reserve-depth")},
	}
	if len(cfg.Nodes) == 0 {
		return sim.Config{}, nil, fmt.Errorf("the topology has no nodes: %w", cluster.ErrInvalid)
	}
	if c.Bool("progress") {
		cfg.Progress = c.App.ErrWriter
	}
	var extra []*cluster.Partition
	for _, spec := range c.StringSlice("partition") {
		p, err := sim.ParsePartition(spec)
		if err != nil {
			return sim.Config{}, nil, fmt.Errorf("--partition: %w", err)
		}
		extra = append(extra, p)
	}
	cfg.Partitions = sim.MergePartitions(sim.DefaultPartitions(), extra)
	specs, err := simWorkload(c, len(cfg.Nodes), gpus)
	return cfg, specs, err
}

// simCheckFlags refuses the numeric flags' values outside their range,
// which sim.Config and GenOptions would otherwise replace by a default or
// clamp: "--load 0: want more than 0".
func simCheckFlags(c *cli.Context) error {
	for _, f := range []struct {
		name   string
		bad    bool
		wanted string
	}{
		{"load", !(c.Float64("load") > 0 && c.Float64("load") <= math.MaxFloat64), "more than 0"},
		{"preemptible", !(c.Float64("preemptible") >= 0 && c.Float64("preemptible") <= 1), "a fraction from 0 to 1"},
		{"fail-rate", !(c.Float64("fail-rate") >= 0 && c.Float64("fail-rate") <= math.MaxFloat64), "0 or more failures per node-hour"},
		{"reserve-depth", c.Int("reserve-depth") < -1, "0 or more, or -1 (none)"},
		{"pass-interval", c.Duration("pass-interval") <= 0, "a duration of more than 0"},
		{"preempt-grace", c.Duration("preempt-grace") < 0, "a duration of 0 or more"},
		{"repair", c.Duration("repair") <= 0, "a duration of more than 0"},
	} {
		if f.bad {
			return fmt.Errorf("--%s %v: want %s: %w", f.name, c.Value(f.name), f.wanted, cluster.ErrInvalid)
		}
	}
	return nil
}

// simGrace is --preempt-grace as sim.Config takes it: there zero is the
// default grace and a negative one none, so --preempt-grace 0s, no grace,
// becomes negative.
func simGrace(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

func simTopology(c *cli.Context) (*topology.Tree, error) {
	if path := c.String("topology"); path != "" {
		tree, err := topology.Load(path)
		if err != nil {
			return nil, fileFlagError("topology", path, err)
		}
		return tree, nil
	}
	return sim.GenerateTopology(sim.FabricOptions{Nodes: c.Int("nodes"), LeafSize: c.Int("leaf-size"),
		SpineSize: c.Int("spine-size"), BlockSize: c.Int("block-size")})
}

func simWorkload(c *cli.Context, nodes, gpus int) ([]sim.JobSpec, error) {
	if path := c.String("workload"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fileFlagError("workload", path, err)
		}
		defer f.Close()
		specs, err := sim.ParseWorkload(f)
		if err != nil {
			return nil, fmt.Errorf("--workload %s: %w", path, err)
		}
		return specs, nil
	}
	if n := c.Int("jobs"); n < 0 {
		return nil, fmt.Errorf("--jobs %d: want 0 or more: %w", n, cluster.ErrInvalid)
	}
	return sim.GenerateWorkload(sim.GenOptions{Jobs: c.Int("jobs"), Seed: c.Uint64("seed"), Nodes: nodes,
		GPUsPerNode: gpus, LeafSize: c.Int("leaf-size"), BlockSize: c.Int("block-size"),
		Load: c.Float64("load"), Preemptible: c.Float64("preemptible")}), nil
}

func writeJobsCSV(path string, jobs []sim.JobRecord) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fileFlagError("jobs-csv", path, err)
	}
	if err := sim.WriteCSV(io.Writer(f), jobs); err != nil {
		f.Close()
		return fmt.Errorf("--jobs-csv %s: %w", path, err)
	}
	return f.Close()
}

// fileFlagError names the flag whose file could not be opened or read:
// "--topology t.conf: no such file or directory".
func fileFlagError(flag, path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return fmt.Errorf("--%s %s: %w", flag, path, pe.Err)
	}
	return fmt.Errorf("--%s: %w", flag, err)
}
