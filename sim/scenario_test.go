package sim

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// TestScenarios runs the scripts in testdata/scenarios.txt:
//
//	cluster nodes=N leaf-size=L [gpus=8] [block-size=B] [grace=60s]
//	        [fail-rate=F] [seed=S] [repair=4h] [partition=SPEC]...
//	run
//	<JSON workload>
//	----
//	<summary, one field per line, then the jobs CSV>
//
// Pass timings are zero: the tests inject no clock.
func TestScenarios(t *testing.T) {
	var cfg Config
	datadriven.RunTest(t, "testdata/scenarios.txt", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "cluster":
			c, err := scenarioCluster(d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			cfg = c
			return ""
		case "run":
			specs, err := ParseWorkload(strings.NewReader(d.Input))
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			res, err := Run(t.Context(), cfg, specs)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return describe(t, res)
		}
		t.Fatalf("unknown command %q", d.Cmd)
		return ""
	})
}

func scenarioCluster(d *datadriven.TestData) (Config, error) {
	fo := FabricOptions{SpineSize: 16}
	shape := NodeShape{GPUs: 8, CPUs: 128, MemoryMB: 1 << 20}
	cfg := Config{}
	var extra []*cluster.Partition
	for _, a := range d.CmdArgs {
		v := ""
		if len(a.Vals) > 0 {
			v = a.Vals[0]
		}
		var err error
		switch a.Key {
		case "nodes":
			fo.Nodes, err = strconv.Atoi(v)
		case "leaf-size":
			fo.LeafSize, err = strconv.Atoi(v)
		case "block-size":
			fo.BlockSize, err = strconv.Atoi(v)
		case "gpus":
			shape.GPUs, err = strconv.Atoi(v)
		case "grace":
			cfg.PreemptGrace, err = time.ParseDuration(v)
		case "repair":
			cfg.Repair, err = time.ParseDuration(v)
		case "fail-rate":
			cfg.FailRate, err = strconv.ParseFloat(v, 64)
		case "seed":
			cfg.Seed, err = strconv.ParseUint(v, 10, 64)
		case "partition":
			var p *cluster.Partition
			p, err = ParsePartition(v)
			extra = append(extra, p)
		default:
			err = fmt.Errorf("unknown argument %q", a.Key)
		}
		if err != nil {
			return Config{}, err
		}
	}
	tree, err := GenerateTopology(fo)
	if err != nil {
		return Config{}, err
	}
	cfg.Tree, cfg.Nodes = tree, MakeNodes(tree, shape)
	cfg.Partitions = MergePartitions(DefaultPartitions(), extra)
	return cfg, nil
}

// describe prints the summary one field per line, in JSON names, then the
// jobs as CSV.
func describe(t *testing.T, res *Result) string {
	var b strings.Builder
	v := reflect.ValueOf(res.Summary)
	for i := 0; i < v.NumField(); i++ {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		fmt.Fprintf(&b, "%s: %v\n", name, v.Field(i).Interface())
	}
	var csv bytes.Buffer
	if err := WriteCSV(&csv, res.Jobs); err != nil {
		t.Fatal(err)
	}
	b.WriteString(csv.String())
	return b.String()
}
