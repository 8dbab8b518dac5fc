package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/phalanx-hpc/phalanx/sim"
)

// simETTRCommand is `phx sim ettr`: what failures cost one long training
// job, by checkpoint interval (sim.ETTR; docs/sim.md).
func simETTRCommand() *cli.Command {
	return &cli.Command{
		Name:  "ettr",
		Usage: "effective training time ratio of one long job under Llama-3-like failure rates, by checkpoint interval",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "gpus", Value: 16384, Usage: "GPUs of the job"},
			&cli.IntFlag{Name: "gpus-per-node", Value: 8, Usage: "GPUs per node"},
			&cli.IntFlag{Name: "days", Value: 30, Usage: "wall time of the job, in days"},
			&cli.DurationFlag{Name: "ckpt-cost", Value: 30 * time.Second, Usage: "training stopped per checkpoint (the save to node-local disk)"},
			&cli.DurationFlag{Name: "job-startup", Value: 5 * time.Minute, Usage: "the job's own start-up after a restart (loading the checkpoint, NCCL's init)"},
			&cli.DurationFlag{Name: "restart", Value: time.Second, Usage: "the scheduler's restart once a failure is detected (make chaos measures 0.1-0.5 s)"},
			&cli.DurationFlag{Name: "node-ttl", Value: 30 * time.Second, Usage: "controllers' --node-ttl: how long a lost host takes to be detected"},
			&cli.DurationFlag{Name: "hang-timeout", Value: 10 * time.Minute, Usage: "the job's --hang-timeout: how long a hang takes to be detected"},
			&cli.StringFlag{Name: "intervals", Value: "5m,10m,15m,20m,30m,45m,1h,1h30m,2h,3h,4h", Usage: "checkpoint intervals to try, comma-separated"},
			&cli.IntFlag{Name: "runs", Value: 50, Usage: "Monte Carlo runs per interval"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed"},
		},
		Action: func(c *cli.Context) error {
			if err := ettrCheckDurations(c); err != nil {
				return err
			}
			cfg := sim.ETTRConfig{
				Nodes: c.Int("gpus") / max(c.Int("gpus-per-node"), 1), GPUsPerNode: c.Int("gpus-per-node"),
				Duration:       time.Duration(c.Int("days")) * 24 * time.Hour,
				Kinds:          sim.Llama3Failures(c.Duration("node-ttl"), c.Duration("hang-timeout"), c.Duration("restart")+c.Duration("job-startup")),
				CheckpointCost: c.Duration("ckpt-cost"), Runs: c.Int("runs"), Seed: c.Uint64("seed"),
			}
			if cfg.GPUsPerNode <= 0 || c.Int("gpus")%cfg.GPUsPerNode != 0 {
				return fmt.Errorf("--gpus=%d: give a multiple of --gpus-per-node=%d", c.Int("gpus"), cfg.GPUsPerNode)
			}
			var ivs []time.Duration
			for _, f := range strings.Split(c.String("intervals"), ",") {
				d, err := time.ParseDuration(strings.TrimSpace(f))
				if err != nil || d <= 0 {
					return fmt.Errorf("--intervals: %q is not a positive duration (e.g. 30m)", f)
				}
				ivs = append(ivs, d)
			}
			rs, best, err := sim.BestInterval(cfg, ivs)
			if err != nil {
				return err
			}
			printETTR(c, cfg, rs, best)
			return nil
		},
	}
}

// ettrCheckDurations refuses a negative time flag by its name; --restart
// and --job-startup are added into one recovery time, so a negative one
// would otherwise pass unseen.
func ettrCheckDurations(c *cli.Context) error {
	for _, name := range []string{"ckpt-cost", "job-startup", "restart", "node-ttl", "hang-timeout"} {
		if d := c.Duration(name); d < 0 {
			return fmt.Errorf("--%s %s: want a duration of 0 or more", name, d)
		}
	}
	return nil
}

func printETTR(c *cli.Context, cfg sim.ETTRConfig, rs []sim.ETTRResult, best int) {
	w := c.App.Writer
	fmt.Fprintf(w, "job: %d GPUs (%d nodes) for %s; checkpoint cost %s; restart %s after detection; %d runs, seed %d\n",
		cfg.Nodes*cfg.GPUsPerNode, cfg.Nodes, cfg.Duration, cfg.CheckpointCost, cfg.Kinds[0].Recover, cfg.Runs, cfg.Seed)
	fmt.Fprintln(w, "failures (Llama 3's rates), per run:")
	for _, k := range cfg.Kinds {
		fmt.Fprintf(w, "  %-9s %6.1f  (%.5f per node-day, detected in %s)\n", k.Name, rs[best].ByKind[k.Name], k.PerNodeDay, k.Detect)
	}
	fmt.Fprintf(w, "%-9s %7s %9s %7s %7s %7s %14s\n", "interval", "ETTR", "failures", "down", "redo", "ckpt", "lost GPU-h")
	for i, r := range rs {
		mark := ""
		if i == best {
			mark = "  <- best"
		}
		fmt.Fprintf(w, "%-9s %6.2f%% %9.1f %6.2f%% %6.2f%% %6.2f%% %14.0f%s\n", r.Interval, 100*r.ETTR, r.Failures,
			100*r.DownFraction, 100*r.RedoFraction, 100*r.CkptFraction, r.LostGPUHours, mark)
	}
	fmt.Fprintf(w, "best: a checkpoint every %s, ETTR %.2f%%, %.0f GPU-hours lost (Young-Daly's first-order optimum: %s)\n",
		rs[best].Interval, 100*rs[best].ETTR, rs[best].LostGPUHours, rs[best].YoungDalyHint.Round(time.Second))
}
