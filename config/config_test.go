package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// TestParse runs the scenarios in testdata/: "parse" parses the input as
// phalanx.conf and prints the result, or the errors; "parse defaults" also
// prints the global settings left at their defaults. Rewrite the expected
// output with: go test ./config -rewrite
func TestParse(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.HasPrefix(path, "testdata/fuzz/") {
			return // the corpora of the fuzz targets
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "parse" {
				t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
			}
			cfg, err := Parse(strings.NewReader(d.Input), "phalanx.conf")
			if err != nil {
				if !errors.Is(err, cluster.ErrInvalid) {
					t.Errorf("%s: error does not wrap ErrInvalid: %v", d.Pos, err)
				}
				return "error:\n" + err.Error() + "\n"
			}
			return render(cfg, d.HasArg("defaults"))
		})
	})
}

// render prints a config one fact per line, leaving out zero values and,
// unless all, the global settings that have their defaults.
func render(c *Config, all bool) string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	if c.ClusterName != "" {
		line("cluster %s", c.ClusterName)
	}
	for _, ctl := range c.Controllers {
		line("controller %s addr=%s", ctl.Name, ctl.Addr)
	}
	if c.TopologyPlugin != "" || c.TopologyFile != "" {
		line("topology plugin=%s file=%s", c.TopologyPlugin, c.TopologyFile)
	}
	if all || c.ControllerPort != DefaultControllerPort || c.RaftPort != DefaultRaftPort {
		line("ports controller=%d raft=%d", c.ControllerPort, c.RaftPort)
	}
	if all || c.MinJobAge != DefaultMinJobAge || c.PurgeJobAfter != DefaultPurgeJobAfter || c.MaxJobHistory != 0 {
		line("finished jobs min-age=%s purge-after=%s max-history=%d", c.MinJobAge, c.PurgeJobAfter, c.MaxJobHistory)
	}
	if all || c.PriorityWeightFairshare != DefaultPriorityWeightFairshare || c.PriorityDecayHalfLife != cluster.DefaultDecayHalfLife {
		line("fair share weight=%d half-life=%s", c.PriorityWeightFairshare, c.PriorityDecayHalfLife)
	}
	if all || c.PurgeEventAfter != DefaultPurgeEventAfter {
		line("node events purge-after=%s", c.PurgeEventAfter)
	}
	if all || c.MaxJobCount != 0 {
		line("max jobs not finished=%d", c.MaxJobCount)
	}
	if all || c.MaxScriptSize != cluster.DefaultMaxScriptSize {
		line("max script size=%d", c.MaxScriptSize)
	}
	if rl := c.RateLimit; rl.Bucket > 0 {
		line("rate limit bucket=%d refill=%d/%s table=%d", rl.Bucket, rl.Refill, rl.Period, rl.Table)
	}
	if all || c.DisableRootJobs || len(c.AdminUsers) > 0 || len(c.OperatorUsers) > 0 || c.PrivateJobs {
		line("access disable-root-jobs=%v admins=%s operators=%s private-jobs=%v", c.DisableRootJobs, strings.Join(c.AdminUsers, ","), strings.Join(c.OperatorUsers, ","), c.PrivateJobs)
	}
	if h := c.HealthCheck; all || h.Program != "" || h.Interval != 0 || h.States != cluster.HealthCheckAny {
		line("health check program=%s interval=%s states=%s", h.Program, h.Interval, h.States)
	}
	if pr := c.Prolog; all || len(pr.Programs) > 0 || pr.Timeout != 0 {
		line("prolog programs=%s timeout=%s", strings.Join(pr.Programs, ","), pr.TimeoutOrDefault())
	}
	if u := c.Unkillable; all || u != (cluster.Unkillable{}) {
		line("unkillable timeout=%s program=%s", u.WaitAfterKill(), u.Program)
	}
	if all || c.KillWait != 0 {
		line("kill wait=%s", c.KillWait)
	}
	for _, n := range c.Nodes {
		line("node %s%s", n.Name, kvs(
			"addr", n.Addr, "cpus", n.CPUs, "mem", n.MemoryMB, "gpus", n.GPUs, "type", n.GPUType,
			"features", strings.Join(n.Features, ","), "weight", n.Weight))
	}
	for _, p := range c.Partitions {
		nodes := strings.Join(p.Nodes, ",")
		if p.AllNodes {
			nodes = "ALL"
		}
		line("partition %s state=%s%s", p.Name, p.State, kvs(
			"nodes", nodes, "default", p.Default, "maxtime", limit(p.MaxTime), "defaulttime", limit(p.DefaultTime),
			"maxnodes", p.MaxNodes, "minnodes", p.MinNodes, "tier", p.PriorityTier, "preempt", string(p.PreemptMode),
			"allow", strings.Join(p.AllowAccounts, ","), "deny", strings.Join(p.DenyAccounts, ","), "exclusive", p.Exclusive, "groups", strings.Join(p.AllowGroups, ",")))
	}
	for _, w := range c.Warnings {
		line("warning: %s", w)
	}
	return b.String()
}

func limit(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return fmt.Sprint(d)
}

// kvs prints " key=value" for each non-zero value of key, value pairs.
func kvs(kv ...any) string {
	var b strings.Builder
	for i := 0; i < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case string:
			if v == "" {
				continue
			}
		case int:
			if v == 0 {
				continue
			}
		case int64:
			if v == 0 {
				continue
			}
		case bool:
			if !v {
				continue
			}
		}
		fmt.Fprintf(&b, " %s=%v", kv[i], kv[i+1])
	}
	return b.String()
}

func TestLoadWithInclude(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("nodes.conf", "NodeName=gpu[01-02] CPUs=8 Gres=gpu:2\n")
	main := write("phalanx.conf", "ClusterName=c1\nGresTypes=gpu\nInclude nodes.conf\nPartitionName=gpu Nodes=ALL Default=YES\n")
	cfg, err := Load(main)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Nodes) != 2 || cfg.Nodes[1].Name != "gpu02" || cfg.Nodes[1].GPUs != 2 || cfg.ClusterName != "c1" {
		t.Errorf("Load = %+v", cfg)
	}

	write("ports.conf", "RaftPort=9000\n")
	twice := write("twice.conf", "Include ports.conf\nRaftPort=9001\n")
	if _, err := Load(twice); err == nil || !strings.Contains(err.Error(), "RaftPort is already set at "+filepath.Join(dir, "ports.conf")+":1: keep one") {
		t.Errorf("RaftPort in an included file and again: %v; want an error naming where it was first set", err)
	}

	// A file that includes itself is one error that says so: it was read
	// again 8 deep, its every line a duplicate, and the 20 problems shown
	// were those, the depth's own message cut off.
	loop := write("loop.conf", "NodeName=n1 CPUs=8\nPartitionName=p Nodes=ALL Default=YES\nInclude loop.conf\n")
	if _, err := Load(loop); err == nil || err.Error() != loop+":3: Include "+loop+": it includes itself ("+loop+" includes "+loop+"): remove this Include" {
		t.Errorf("self-include: %v; want one error saying it includes itself", err)
	}
	a, b := filepath.Join(dir, "a.conf"), write("b.conf", "Include a.conf\n")
	write("a.conf", "RaftPort=9000\nInclude b.conf\n")
	if _, err := Load(a); err == nil || err.Error() != b+":1: Include "+a+": it includes itself ("+a+" includes "+b+" includes "+a+"): remove this Include" {
		t.Errorf("a includes b includes a: %v; want one error naming the loop", err)
	}
	deep := "deep0.conf"
	for i := 0; i < 9; i++ {
		write(fmt.Sprintf("deep%d.conf", i), fmt.Sprintf("Include deep%d.conf\n", i+1))
	}
	write("deep9.conf", "RaftPort=9000\n")
	if _, err := Load(filepath.Join(dir, deep)); err == nil || !strings.Contains(err.Error(), "more than 8 nested includes") {
		t.Errorf("9 nested includes: %v; want a nested includes error", err)
	}
	write("missing.conf", "Include nope.conf\n")
	if _, err := Load(filepath.Join(dir, "missing.conf")); err == nil || !strings.Contains(err.Error(), "missing.conf:1:") {
		t.Errorf("missing include: %v; want an error naming missing.conf:1", err)
	}
	if _, err := Load(filepath.Join(dir, "absent.conf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v; want ErrNotExist", err)
	}

	// Slurm's include modifier: %c is the ClusterName set before the line.
	write("prod_nodes.conf", "NodeName=n[1-3] CPUs=4\n")
	withName := write("modifier.conf", "ClusterName=prod\nInclude %c_nodes.conf\nPartitionName=p Nodes=ALL\n")
	if cfg, err := Load(withName); err != nil || len(cfg.Nodes) != 3 {
		t.Errorf("Include %%c_nodes.conf with ClusterName=prod: %v, %+v", err, cfg)
	}
	for text, want := range map[string]string{
		"Include %c_nodes.conf\nClusterName=prod\n": "badmod.conf:1: Include %c_nodes.conf: %c is the cluster name: set ClusterName before this line",
		"ClusterName=prod\nInclude %h_nodes.conf\n": `badmod.conf:2: Include %h_nodes.conf: "%h" is not an include modifier: Slurm's only one is %c, the cluster name`,
		"ClusterName=prod\nInclude nodes%\n":        `badmod.conf:2: Include nodes%: "%" is not an include modifier`,
	} {
		if _, err := Load(write("badmod.conf", text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", text, err, want)
		}
	}
}

func TestParseErrorLimit(t *testing.T) {
	_, err := Parse(strings.NewReader(strings.Repeat("bogus\n", 50)), "x.conf")
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	if n := strings.Count(msg, "is not Key=Value"); n != maxErrors {
		t.Errorf("reported %d problems; want %d", n, maxErrors)
	}
	if !strings.Contains(msg, "30 more problems") {
		t.Errorf("error does not say how many were left out: %s", msg)
	}
}

// A DEFAULT line's bad value is one problem, at its line: many lines after
// it do not fill the cap and hide a later line's problem. Its good values
// still reach those lines.
func TestDefaultLineErrorOnce(t *testing.T) {
	conf := "NodeName=DEFAULT CPUs=abc RealMemory=1000\n"
	for i := 1; i <= maxErrors+5; i++ {
		conf += fmt.Sprintf("NodeName=n%d\nPartitionName=p%d Nodes=n%d\n", i, i, i)
	}
	conf = "PartitionName=DEFAULT MaxNodes=lots MaxTime=1:00:00\n" + conf + "ClusterName=\n"
	_, err := Parse(strings.NewReader(conf), "x.conf")
	if err == nil {
		t.Fatal("want an error")
	}
	want := "x.conf:1: MaxNodes=lots: want a whole number or UNLIMITED, e.g. MaxNodes=64\n" +
		"x.conf:2: CPUs=abc: want a whole number, e.g. CPUs=64\n" +
		"x.conf:53: ClusterName is empty: give it a value or remove the line"
	if err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
	p := parseAll(strings.NewReader(conf), "x.conf")
	if n, part := p.cfg.Nodes[0], p.cfg.Partitions[0]; n.MemoryMB != 1000 || part.MaxTime != time.Hour {
		t.Errorf("node n1 RealMemory %d, partition p1 MaxTime %s; want the DEFAULT lines' good values, 1000 and 1h", n.MemoryMB, part.MaxTime)
	}
}

func TestMaxArraySize(t *testing.T) {
	cfg, err := Parse(strings.NewReader("MaxArraySize=10001\n"), "phalanx.conf")
	if err != nil || cfg.MaxArraySize != 10001 {
		t.Errorf("MaxArraySize=10001: %d, %v", cfg.MaxArraySize, err)
	}
	for _, bad := range []string{"MaxArraySize=0\n", "MaxArraySize=4000002\n", "MaxArraySize=many\n"} {
		if _, err := Parse(strings.NewReader(bad), "phalanx.conf"); err == nil || !strings.Contains(err.Error(), "phalanx.conf:1: MaxArraySize=") {
			t.Errorf("%q: %v, want an error naming the line", bad, err)
		}
	}
}

// The global PreemptMode is the default of partitions that set none (as
// in Slurm); PreemptType=preempt/none (also the default) turns preemption
// off, with a warning for a partition that asked for it.
func TestGlobalPreemption(t *testing.T) {
	cfg, err := Parse(strings.NewReader("PartitionName=a Nodes=ALL\nPartitionName=b Nodes=ALL PreemptMode=OFF\nPreemptMode=requeue\nPreemptType=preempt/qos\n"), "phalanx.conf")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := cfg.Partitions[0].PreemptMode, cfg.Partitions[1].PreemptMode; a != "REQUEUE" || b != "OFF" {
		t.Errorf("PreemptMode of a, b = %q, %q; want REQUEUE (inherited), OFF (its own)", a, b)
	}
	cfg, err = Parse(strings.NewReader("PartitionName=a Nodes=ALL PreemptMode=REQUEUE\nPreemptType=preempt/none\n"), "phalanx.conf")
	want := "phalanx.conf:1: partition a: PreemptMode=REQUEUE, but PreemptType=preempt/none (phalanx.conf:2) turns preemption off"
	if err != nil || cfg.Partitions[0].PreemptMode != "OFF" || len(cfg.Warnings) != 1 || cfg.Warnings[0] != want {
		t.Errorf("preempt/none: %v, mode %q, warnings %q", err, cfg.Partitions[0].PreemptMode, cfg.Warnings)
	}
	for _, bad := range []string{"PreemptMode=SUSPEND\n", "PreemptType=preempt/magic\n"} {
		if _, err := Parse(strings.NewReader(bad), "phalanx.conf"); err == nil || !strings.Contains(err.Error(), "phalanx.conf:1: Preempt") {
			t.Errorf("%q: %v, want an error naming the line", bad, err)
		}
	}
}
