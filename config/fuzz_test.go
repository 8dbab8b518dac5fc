package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// FuzzParse parses phalanx.conf text. A parse gives a config or an error,
// never both; every problem is ErrInvalid, on one line, and there are at
// most maxErrors of them (and a count of the rest); a config defines each
// node and partition once, has at most one default partition, and no
// partition whose DefaultTime passes its MaxTime; parsing again gives the
// same answer. Include lines are left out: they read other files.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"ClusterName=ml\nSlurmctldHost=ctl1(10.0.0.1)\nSlurmctldHost=ctl2\nControllerPort=7817\n",
		"GresTypes=gpu\nNodeName=gpu[001-016] CPUs=128 RealMemory=1024000 Gres=gpu:h100:8 Features=ib,nvlink Weight=10\n",
		"NodeName=DEFAULT Sockets=2 CoresPerSocket=32 ThreadsPerCore=2\nNodeName=n[1-4] NodeAddr=10.0.0.[1-4]\n",
		"PartitionName=gpu Nodes=gpu[001-016] Default=YES MaxTime=1-00:00:00 DefaultTime=1:00:00 State=UP\n",
		"PartitionName=DEFAULT MaxNodes=UNLIMITED\nPartitionName=debug Nodes=ALL PriorityTier=10 PreemptMode=REQUEUE\n",
		"MinJobAge=300 PurgeJobAfter=30days MaxJobHistory=1000 MaxJobCount=10000 MaxScriptSize=8388608\n",
		"TopologyPlugin=topology/tree TopologyFile=topology.conf\nSchedulerType=sched/backfill\n",
		"NodeName=a \\\n  CPUs=4\nPartitionName=\"p q\" Nodes=a # comment\n",
		"PartitionName=p MaxTime=999999999 DefaultTime=99999999-00:00:00\n",
		"NodeName=n[1-999999999]\n", "NodeName=a Sockets=2147483647 CoresPerSocket=2147483647 ThreadsPerCore=3\n", "NodeName=n[1-3] NodeAddr=a,b\n", "=x\n", "x\n", "\"unterminated=\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if strings.Contains(strings.ToLower(text), "include") {
			return
		}
		cfg, err := Parse(strings.NewReader(text), "phalanx.conf")
		if (cfg == nil) == (err == nil) {
			t.Fatalf("Parse(%q) = %v, %v: want a config or an error", text, cfg, err)
		}
		if err != nil {
			checkErrors(t, text, err)
		} else {
			checkConfig(t, text, cfg)
		}
		again, err2 := Parse(strings.NewReader(text), "phalanx.conf")
		if !reflect.DeepEqual(again, cfg) || errText(err) != errText(err2) {
			t.Fatalf("Parse(%q) twice: %v, %v then %v, %v", text, cfg, err, again, err2)
		}
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func checkErrors(t *testing.T, text string, err error) {
	t.Helper()
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		t.Fatalf("Parse(%q): %v is not a list of problems", text, err)
	}
	errs := joined.Unwrap()
	if len(errs) > maxErrors+1 {
		t.Fatalf("Parse(%q): %d problems reported; want at most %d and a count", text, len(errs), maxErrors)
	}
	for _, e := range errs {
		var pe *ParseError
		if !errors.As(e, &pe) && !strings.HasSuffix(e.Error(), "more problems") || strings.Contains(e.Error(), "\n") {
			t.Fatalf("Parse(%q): problem %q is not one line naming its file and line", text, e)
		}
		if pe != nil && !errors.Is(e, cluster.ErrInvalid) {
			t.Fatalf("Parse(%q): %v does not wrap ErrInvalid", text, e)
		}
	}
}

func checkConfig(t *testing.T, text string, cfg *Config) {
	t.Helper()
	nodes := map[string]bool{}
	for _, n := range cfg.Nodes {
		if n.CPUs < 0 || n.MemoryMB < 0 || n.GPUs < 0 || n.Weight < 0 {
			t.Fatalf("Parse(%q): node %s with a negative count: %+v", text, n.Name, n)
		}
		if nodes[n.Name] || n.Name == "" {
			t.Fatalf("Parse(%q): node %q defined twice or empty", text, n.Name)
		}
		nodes[n.Name] = true
	}
	parts, defaults := map[string]bool{}, 0
	for _, p := range cfg.Partitions {
		if parts[p.Name] || p.Name == "" {
			t.Fatalf("Parse(%q): partition %q defined twice or empty", text, p.Name)
		}
		parts[p.Name] = true
		if p.Default {
			defaults++
		}
		if p.MaxTime < 0 || p.DefaultTime < 0 || p.MaxTime > 0 && p.DefaultTime > p.MaxTime || p.MaxTime > cluster.MaxTimeLimit {
			t.Fatalf("Parse(%q): partition %s times max=%v default=%v", text, p.Name, p.MaxTime, p.DefaultTime)
		}
	}
	if defaults > 1 {
		t.Fatalf("Parse(%q): %d default partitions", text, defaults)
	}
}
