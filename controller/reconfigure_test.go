package controller

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/config"
)

// An administrator's scontrol update PartitionName= lasts across a leader
// change while the config's partitions stay as they were; scontrol
// reconfigure applies the file again, and refuses, applying nothing, a
// change that needs a restart.
func TestPartitionUpdateAndReconfigure(t *testing.T) {
	gpu := &cluster.Partition{Name: "gpu", AllNodes: true, Default: true, State: cluster.PartitionUp, MaxTime: time.Hour}
	s := newTestServer(t, Config{Partitions: []*cluster.Partition{gpu}})
	ctx := context.Background()
	api := &controllerService{s: s}
	part := func(name string) *cluster.Partition {
		t.Helper()
		for _, p := range s.store.Partitions() {
			if p.Name == name {
				return p
			}
		}
		return nil
	}
	if p := part("gpu"); p == nil || p.State != cluster.PartitionUp || s.store.PartitionsConfig() == "" {
		t.Fatalf("at start: %+v, digest %q; want the config's, recorded", p, s.store.PartitionsConfig())
	}

	if _, err := api.UpdatePartition(ctx, &phalanxv1.UpdatePartitionRequest{Name: "gpu", State: proto.String("down"), MaxNodes: proto.Int32(4), MinNodes: proto.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	if p := part("gpu"); p.State != cluster.PartitionDown || p.MaxNodes != 4 || p.MinNodes != 2 || p.MaxTime != time.Hour {
		t.Fatalf("after update: %+v", p)
	}
	if _, err := s.applyConfigPartitions(ctx, false); err != nil { // as a new leader does
		t.Fatal(err)
	}
	if p := part("gpu"); p.State != cluster.PartitionDown {
		t.Errorf("a leader taking over with the same config undid the update: %+v", p)
	}
	for _, bad := range []*phalanxv1.UpdatePartitionRequest{
		{Name: "nope", State: proto.String("UP")},
		{Name: "gpu", State: proto.String("SIDEWAYS")},
		{Name: "gpu", DefaultTimeSeconds: proto.Int64(7200)}, // over MaxTime
		{Name: "gpu", MinNodes: proto.Int32(5)},              // over MaxNodes
		{Name: "gpu", MinNodes: proto.Int32(-1)},
		{Name: "gpu", PriorityTier: proto.Int32(65534)}, // over Slurm's most
		{Name: "gpu", Default: proto.Bool(false)},
	} {
		if _, err := api.UpdatePartition(ctx, bad); err == nil {
			t.Errorf("UpdatePartition %v: no error", bad)
		}
	}

	if _, _, err := s.reconfigure(ctx); err == nil || !strings.Contains(err.Error(), "without a config file") {
		t.Errorf("reconfigure without a file: %v", err)
	}
	file := s.cfg // what the file says now
	file.Partitions = []*cluster.Partition{
		{Name: "gpu", AllNodes: true, Default: true, State: cluster.PartitionUp, MaxTime: 2 * time.Hour},
		{Name: "debug", AllNodes: true, State: cluster.PartitionUp, MaxTime: 30 * time.Minute},
	}
	file.Nodes = []config.NodeConf{{Name: "gpu001", GPUs: 8}}
	// The file's warnings reach the admin who asked (they are not a change
	// that needs a restart).
	file.ConfigWarnings = []string{`phalanx.conf:4: unknown key "MaxTme"`}
	// A ControllerHost line added, as for a new replica, is said and does
	// not stop the rest: membership is Raft's (scontrol raft add).
	file.Peers = append(slices.Clone(s.cfg.Peers), "ctl4=10.0.0.4:7819")
	s.cfg.Reload = func() (Config, error) { return file, nil }
	resp, err := api.Reconfigure(ctx, &phalanxv1.ReconfigureRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"partition gpu changed", "partition debug added", "node gpu001 added"}; !slices.Equal(resp.Changes, want) {
		t.Errorf("changes %q, want %q", resp.Changes, want)
	}
	peers := "the ControllerHost lines differ from those this controller started with: they are read when a replica first starts; " +
		"the replicas are those phx scontrol show controllers lists, changed with phx scontrol raft add|remove"
	if want := append(slices.Clone(file.ConfigWarnings), peers); !slices.Equal(resp.Warnings, want) {
		t.Errorf("warnings %q, want the file's and the ControllerHost lines' %q", resp.Warnings, want)
	}
	if p := part("gpu"); p.State != cluster.PartitionUp || p.MaxTime != 2*time.Hour || p.MaxNodes != 0 || part("debug") == nil {
		t.Errorf("after reconfigure: gpu %+v, debug %+v", p, part("debug"))
	}
	if _, _, ok := s.declared("gpu002"); ok {
		t.Error("a node without a NodeName line is still taken after the file declared gpu001")
	}

	restart := file
	restart.MinJobAge = time.Hour
	restart.Partitions = []*cluster.Partition{gpu}
	restart.Nodes = nil
	s.cfg.Reload = func() (Config, error) { return restart, nil }
	_, _, err = s.reconfigure(ctx)
	if err == nil || !strings.Contains(err.Error(), "MinJobAge changed") || !strings.Contains(err.Error(), "NodeName line of gpu001 is gone") {
		t.Errorf("reconfigure with a new MinJobAge and a node gone: %v; want both refused", err)
	}
	if part("debug") == nil {
		t.Error("a refused reconfigure applied the partitions")
	}

	// Every PartitionName line removed: the partitions stay, and the admin
	// is told so (it said nothing).
	none := file
	none.Partitions, none.ConfigWarnings, none.Peers = nil, nil, s.cfg.Peers
	s.cfg.Reload = func() (Config, error) { return none, nil }
	resp, err = api.Reconfigure(ctx, &phalanxv1.ReconfigureRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Warnings) != 1 || !strings.HasPrefix(resp.Warnings[0], "the config has no PartitionName lines any more: the partitions stay as they are") ||
		part("gpu") == nil || part("debug") == nil {
		t.Errorf("reconfigure without PartitionName lines: warnings %q, gpu %v, debug %v", resp.Warnings, part("gpu"), part("debug"))
	}
}

// Every field of Config that holds a function (or runtime state) is
// ignored when a reread config is compared with the running one: a func
// never equals another, so a new such field would refuse every reconfigure.
func TestFixedChangesIgnoresRuntimeFields(t *testing.T) {
	cur := Config{LookupGroups: func(int, int) ([]string, error) { return nil, nil }, Fatal: func(error) {},
		Reload: func() (Config, error) { return Config{}, nil }}
	next := cur
	next.LookupGroups = func(int, int) ([]string, error) { return nil, nil }
	next.Fatal, next.Reload = func(error) {}, func() (Config, error) { return Config{}, nil }
	if fixed := fixedChanges(cur, next); len(fixed) > 0 {
		t.Errorf("fixedChanges = %q, want none", fixed)
	}
}

// A change that needs a restart is named by its phalanx.conf key, with
// its values as the file writes them: the health program's settings, the
// prolog's and the unkillable ones are each a struct in Config, and were
// refused as "HealthCheck changed ({/bin/true 30s IDLE} to {...})".
func TestFixedChangesNameTheConfigKeys(t *testing.T) {
	cur := Config{HealthCheck: cluster.HealthCheck{Program: "/bin/true", Interval: 30 * time.Second, States: cluster.HealthCheckIdle},
		Unkillable: cluster.Unkillable{Timeout: time.Minute}}
	next := cur
	next.HealthCheck.Program, next.HealthCheck.Interval = "/usr/sbin/nhc", 2*time.Second
	next.Prolog = cluster.Prolog{Programs: []string{"/etc/phalanx/p1", "/etc/phalanx/p2"}}
	next.Unkillable.Program = "/usr/local/sbin/unkillable-report"
	next.RateLimit.Bucket = 50
	want := []string{
		"HealthCheckProgram changed (/bin/true to /usr/sbin/nhc): restart the controllers to apply it",
		"HealthCheckInterval changed (30s to 2s): restart the controllers to apply it",
		"Prolog changed ((none) to /etc/phalanx/p1,/etc/phalanx/p2): restart the controllers to apply it",
		"UnkillableStepProgram changed ((none) to /usr/local/sbin/unkillable-report): restart the controllers to apply it",
		"SlurmctldParameters rl_bucket_size changed (0 to 50): restart the controllers to apply it",
	}
	if got := fixedChanges(cur, next); !slices.Equal(got, want) {
		t.Errorf("fixedChanges:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// configKeys names every field of the structs it splits, so that a new
// field is not refused under another's key.
func TestConfigKeysNameEveryField(t *testing.T) {
	ct := reflect.TypeOf(Config{})
	for name, keys := range configKeys {
		f, ok := ct.FieldByName(name)
		if !ok || f.Type.Kind() != reflect.Struct || f.Type.NumField() != len(keys) {
			t.Errorf("configKeys[%q] names %d keys; Config.%s is %v", name, len(keys), name, f.Type)
		}
	}
}

// scontrol reconfigure brings registered nodes to their changed NodeName
// lines through Raft, and says what it changed: what a node offers
// (never more than its agent reported; INVAL when less), its features
// (a feature gone from the line goes), its weight.
func TestReconfigureNodeLines(t *testing.T) {
	n1 := config.NodeConf{Name: "n1", CPUs: 8, GPUs: 2, GPUType: "h100", Features: []string{"b", "ib"}}
	s := newTestServer(t, Config{Nodes: []config.NodeConf{n1}})
	ctx := context.Background()
	ns := &nodeService{s: s}
	if _, err := ns.RegisterNode(ctx, &phalanxv1.RegisterNodeRequest{Name: "n1", Cpus: 16, MemoryMb: 64000, Gpus: 2, Features: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	file := s.cfg
	reconfigure := func(line config.NodeConf) []string {
		t.Helper()
		file.Nodes = []config.NodeConf{line}
		s.cfg.Reload = func() (Config, error) { return file, nil }
		changes, _, err := s.reconfigure(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return changes
	}
	stored := func() string {
		t.Helper()
		n, err := s.store.Node("n1")
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d CPUs, %d MB, %d GPUs, %v, weight %d, %s %s", n.CPUs, n.MemoryMB, n.GPUs, n.Features, n.Weight, n.State, n.Reason)
	}
	if got, want := stored(), "8 CPUs, 64000 MB, 2 GPUs, [x b ib], weight 0, UP "; got != want {
		t.Fatalf("registered: %s, want %s", got, want)
	}

	changes := reconfigure(config.NodeConf{Name: "n1", CPUs: 4, MemoryMB: 1000, GPUs: 1, GPUType: "h100", Features: []string{"b"}, Weight: 5})
	if want := []string{"node n1: CPUs 8 to 4, RealMemory (none) to 1000, Gres gpu:h100:2 to gpu:h100:1, Feature b,ib to b, Weight (none) to 5"}; !slices.Equal(changes, want) {
		t.Errorf("changes %q\nwant    %q", changes, want)
	}
	if got, want := stored(), "4 CPUs, 1000 MB, 1 GPUs, [x b], weight 5, UP "; got != want {
		t.Errorf("after lowering the line: %s, want %s", got, want)
	}

	// The store does not know what lies past a cap: a raised cap waits for
	// the agent, and says so; the node is not INVAL meanwhile.
	changes = reconfigure(config.NodeConf{Name: "n1", CPUs: 16, GPUs: 2, GPUType: "h100"})
	if want := []string{"node n1: CPUs 4 to 16, RealMemory 1000 to (none), Gres gpu:h100:1 to gpu:h100:2, Feature b to (none), Weight 5 to (none)",
		"node n1: CPUs 16 applies when its agent registers again (restart its phalanx-agent); until then it offers 4, what the controllers know it has",
		"node n1: RealMemory as its agent reports applies when its agent registers again (restart its phalanx-agent); until then it offers 1000, what the controllers know it has",
		"node n1: Gres gpu count 2 applies when its agent registers again (restart its phalanx-agent); until then it offers 1, what the controllers know it has"}; !slices.Equal(changes, want) {
		t.Errorf("changes %q\nwant    %q", changes, want)
	}
	if got, want := stored(), "4 CPUs, 1000 MB, 1 GPUs, [x], weight 0, UP "; got != want {
		t.Errorf("after raising the line: %s, want %s", got, want)
	}
	if _, err := ns.RegisterNode(ctx, &phalanxv1.RegisterNodeRequest{Name: "n1", Cpus: 16, MemoryMb: 64000, Gpus: 2, Features: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := stored(), "16 CPUs, 64000 MB, 2 GPUs, [x], weight 0, UP "; got != want {
		t.Errorf("registered again: %s, want %s", got, want)
	}

	// Known to be short (what the agent reported, uncapped): INVAL, and
	// used again when the line fits.
	changes = reconfigure(config.NodeConf{Name: "n1", CPUs: 16, MemoryMB: 128000, GPUs: 2, GPUType: "h100"})
	if want := []string{"node n1: RealMemory (none) to 128000",
		"node n1 INVAL, not used: Low RealMemory (reported:64000 < configured:128000)"}; !slices.Equal(changes, want) {
		t.Errorf("changes %q\nwant    %q", changes, want)
	}
	changes = reconfigure(config.NodeConf{Name: "n1", CPUs: 16, MemoryMB: 32000, GPUs: 2, GPUType: "h100"})
	if want := []string{"node n1: RealMemory 128000 to 32000", "node n1 is no longer INVAL"}; !slices.Equal(changes, want) {
		t.Errorf("changes %q\nwant    %q", changes, want)
	}
	if got, want := stored(), "16 CPUs, 32000 MB, 2 GPUs, [x], weight 0, UP "; got != want {
		t.Errorf("after the line fits again: %s, want %s", got, want)
	}

	// A new leader takes the nodes as recorded under the lines it reads.
	s.live.Store(&liveConfig{Partitions: s.conf().Partitions, Nodes: []config.NodeConf{{Name: "n1", CPUs: 2, MemoryMB: 32000, Features: []string{"z"}}}})
	if err := s.adoptNodeConf(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := stored(), "2 CPUs, 32000 MB, 2 GPUs, [x z], weight 0, UP "; got != want {
		t.Errorf("after a new leader adopted its lines: %s, want %s", got, want)
	}
}
