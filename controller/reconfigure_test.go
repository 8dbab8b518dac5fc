package controller

import (
	"context"
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

	if _, err := api.UpdatePartition(ctx, &phalanxv1.UpdatePartitionRequest{Name: "gpu", State: proto.String("down"), MaxNodes: proto.Int32(4)}); err != nil {
		t.Fatal(err)
	}
	if p := part("gpu"); p.State != cluster.PartitionDown || p.MaxNodes != 4 || p.MaxTime != time.Hour {
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
		{Name: "gpu", Default: proto.Bool(false)},
	} {
		if _, err := api.UpdatePartition(ctx, bad); err == nil {
			t.Errorf("UpdatePartition %v: no error", bad)
		}
	}

	if _, err := s.reconfigure(ctx); err == nil || !strings.Contains(err.Error(), "without a config file") {
		t.Errorf("reconfigure without a file: %v", err)
	}
	file := s.cfg // what the file says now
	file.Partitions = []*cluster.Partition{
		{Name: "gpu", AllNodes: true, Default: true, State: cluster.PartitionUp, MaxTime: 2 * time.Hour},
		{Name: "debug", AllNodes: true, State: cluster.PartitionUp, MaxTime: 30 * time.Minute},
	}
	file.Nodes = []config.NodeConf{{Name: "gpu001", GPUs: 8}}
	s.cfg.Reload = func() (Config, error) { return file, nil }
	changes, err := s.reconfigure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"partition gpu changed", "partition debug added", "node gpu001 added"}; !slices.Equal(changes, want) {
		t.Errorf("changes %q, want %q", changes, want)
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
	_, err = s.reconfigure(ctx)
	if err == nil || !strings.Contains(err.Error(), "MinJobAge changed") || !strings.Contains(err.Error(), "NodeName line of gpu001 is gone") {
		t.Errorf("reconfigure with a new MinJobAge and a node gone: %v; want both refused", err)
	}
	if part("debug") == nil {
		t.Error("a refused reconfigure applied the partitions")
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
