package controller

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/config"
	"github.com/phalanx-hpc/phalanx/controller/fsm"
	"github.com/phalanx-hpc/phalanx/store/codec"
)

// Changing the configuration of a running cluster. The config file's
// partitions and NodeName lines can change live; everything else needs
// the controllers restarted.
//
//   - A leader applies the config's partitions when they differ from those
//     it last applied (the store keeps their digest), so that an
//     administrator's scontrol update PartitionName=... lasts across
//     leader changes until the config's partitions change. It reads its
//     config file again first (Config.Reload), so that a replica started
//     before a reconfigure does not bring back the old partitions.
//   - phx scontrol reconfigure (and SIGHUP on the leader) reads the file
//     again and applies its partitions, whatever an administrator changed,
//     and its NodeName lines: nodes added, and every registered node (but
//     those DOWN, which take their line when they register again) brought
//     to its line as registration would (nodeconf.go): what it offers,
//     INVAL when it has less, its features, its Weight. What the store
//     cannot tell (a cap raised or dropped: what the agent reported past
//     it) applies when the node's agent registers again, and says so. A
//     change that cannot apply live (a port, a limit, the topology, a
//     NodeName line removed) is refused with what it is, and nothing is
//     applied. SIGHUP on a follower only reads its file again, for when it
//     leads.

// liveConfig is the part of the configuration that changes live.
type liveConfig struct {
	Partitions []*cluster.Partition // nil: the store's, else the default partition
	Nodes      []config.NodeConf
}

// conf is the live configuration.
func (s *Server) conf() *liveConfig { return s.live.Load() }

// partitionsDigest identifies a list of partitions, for the store.
func partitionsDigest(ps []*cluster.Partition) string {
	h := sha256.New()
	opts := proto.MarshalOptions{Deterministic: true}
	for _, p := range ps {
		r, err := codec.Partition(p)
		if err != nil {
			return "" // never applied as the config's
		}
		b, _ := opts.Marshal(r)
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// applyConfigPartitions makes the replicated partitions the config's:
// when the config's differ from those last applied, or always when force.
// It returns what changed.
func (s *Server) applyConfigPartitions(ctx context.Context, force bool) ([]string, error) {
	want := s.conf().Partitions
	have := s.store.Partitions()
	if want == nil {
		if len(have) > 0 {
			return nil, nil
		}
		want = []*cluster.Partition{DefaultPartition()}
	}
	digest := partitionsDigest(want)
	same := reflect.DeepEqual(normalizePartitions(want), normalizePartitions(have))
	applied := s.store.PartitionsConfig() == digest
	if applied && (same || !force) {
		return nil, nil // the config's, or an administrator's changes to them
	}
	if _, err := s.propose(ctx, fsm.SetPartitions{Partitions: want, ConfigDigest: digest}); err != nil {
		return nil, err
	}
	s.kickScheduler()
	return partitionChanges(have, want), nil
}

// partitionChanges says what replacing have with want does, a line each.
func partitionChanges(have, want []*cluster.Partition) []string {
	var out []string
	for _, w := range want {
		i := slices.IndexFunc(have, func(h *cluster.Partition) bool { return h.Name == w.Name })
		switch {
		case i < 0:
			out = append(out, "partition "+w.Name+" added")
		case !reflect.DeepEqual(normalizePartitions(have[i:i+1]), normalizePartitions([]*cluster.Partition{w})):
			out = append(out, "partition "+w.Name+" changed")
		}
	}
	for _, h := range have {
		if !slices.ContainsFunc(want, func(w *cluster.Partition) bool { return w.Name == h.Name }) {
			out = append(out, "partition "+h.Name+" removed")
		}
	}
	return out
}

// reread reads the config file again into the live configuration, and
// returns what in it cannot change live and the file's warnings. Without
// Config.Reload (no config file) it changes nothing.
func (s *Server) reread() (fixed, warnings []string, err error) {
	if s.cfg.Reload == nil {
		return nil, nil, cluster.Errorf(cluster.ErrInvalid, "this controller was started without a config file: there is nothing to read again")
	}
	next, err := s.cfg.Reload()
	if err == nil {
		next, err = next.withDefaults()
	}
	if err != nil {
		return nil, nil, cluster.Errorf(cluster.ErrInvalid, "reading the config again: %v", err)
	}
	fixed = fixedChanges(s.cfg, next)
	cur := s.conf()
	for _, n := range cur.Nodes {
		if !slices.ContainsFunc(next.Nodes, func(c config.NodeConf) bool { return c.Name == n.Name }) {
			fixed = append(fixed, fmt.Sprintf("the NodeName line of %s is gone: nodes are not removed live (drain it, then restart the controllers)", n.Name))
		}
	}
	if len(fixed) == 0 {
		s.live.Store(&liveConfig{Partitions: next.Partitions, Nodes: next.Nodes})
	}
	warnings = slices.Clip(next.ConfigWarnings)
	if next.Partitions == nil && cur.Partitions != nil {
		warnings = append(warnings, "the config has no PartitionName lines any more: the partitions stay as they are "+
			"(a config without any keeps the cluster's; to remove partitions, keep the lines of those that stay)")
	}
	if !slices.Equal(s.cfg.Peers, next.Peers) {
		// As docs/operations.md has it: the new line goes into every
		// replica's file, and phx scontrol raft add makes the change.
		warnings = append(warnings, "the ControllerHost lines differ from those this controller started with: "+
			"they are read when a replica first starts; the replicas are those phx scontrol show controllers lists, "+
			"changed with phx scontrol raft add|remove")
	}
	return fixed, warnings, nil
}

// reconfigure is scontrol reconfigure on the leader: read the file again,
// refuse what cannot change live, apply the rest. It returns what changed
// and the file's warnings.
func (s *Server) reconfigure(ctx context.Context) (changes, warnings []string, err error) {
	before := s.conf()
	fixed, warnings, err := s.reread()
	if err != nil {
		return nil, nil, err
	}
	if len(fixed) > 0 {
		return nil, warnings, cluster.Errorf(cluster.ErrInvalid, "nothing applied: %s", strings.Join(fixed, "; "))
	}
	if changes, err = s.applyConfigPartitions(ctx, true); err != nil {
		return nil, warnings, err
	}
	changes = append(changes, nodeLineChanges(before.Nodes, s.conf().Nodes)...)
	applied, err := s.applyNodeLines(ctx, before.Nodes)
	return append(changes, applied...), warnings, err
}

// nodeLineChanges says what changed from the NodeName lines have to want,
// a line each: "node n1 added", "node n1: CPUs 8 to 4, Feature b,ib to b".
func nodeLineChanges(have, want []config.NodeConf) []string {
	var out []string
	for _, w := range want {
		i := slices.IndexFunc(have, func(c config.NodeConf) bool { return c.Name == w.Name })
		if i < 0 {
			out = append(out, "node "+w.Name+" added")
			continue
		}
		if diff := nodeLineDiff(have[i], w); len(diff) > 0 {
			out = append(out, "node "+w.Name+": "+strings.Join(diff, ", "))
		}
	}
	return out
}

// nodeLineDiff lists the keys of a NodeName line that differ, with their
// values before and after: "CPUs 8 to 4".
func nodeLineDiff(a, b config.NodeConf) []string {
	var out []string
	for _, k := range []struct {
		key      string
		was, now string
	}{
		{"NodeAddr", a.Addr, b.Addr},
		{"CPUs", lineCount(int64(a.CPUs)), lineCount(int64(b.CPUs))},
		{"RealMemory", lineCount(a.MemoryMB), lineCount(b.MemoryMB)},
		{"Gres", lineGres(a), lineGres(b)},
		{"Feature", strings.Join(a.Features, ","), strings.Join(b.Features, ",")},
		{"Weight", lineCount(int64(a.Weight)), lineCount(int64(b.Weight))},
		{"Sockets", lineCount(int64(a.Sockets)), lineCount(int64(b.Sockets))},
		{"CoresPerSocket", lineCount(int64(a.CoresPerSocket)), lineCount(int64(b.CoresPerSocket))},
		{"ThreadsPerCore", lineCount(int64(a.ThreadsPerCore)), lineCount(int64(b.ThreadsPerCore))},
	} {
		if k.was != k.now {
			out = append(out, fmt.Sprintf("%s %s to %s", k.key, cmp.Or(k.was, "(none)"), cmp.Or(k.now, "(none)")))
		}
	}
	return out
}

// lineCount prints a count of a NodeName line, "" when not given.
func lineCount(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

// lineGres prints a NodeName line's Gres as written: gpu:TYPE:N, gpu:N.
func lineGres(c config.NodeConf) string {
	switch {
	case c.GPUs == 0:
		return ""
	case c.GPUType == "":
		return fmt.Sprintf("gpu:%d", c.GPUs)
	}
	return fmt.Sprintf("gpu:%s:%d", c.GPUType, c.GPUs)
}

// liveFields are the Config fields reconfigure changes; the others must
// stay as they are. ignoredFields, and functions (never equal to
// another), are not the config file's.
var (
	liveFields    = []string{"Partitions", "Nodes"}
	ignoredFields = []string{"Fatal", "AuthKeys", "TLS", "Clock", "Logger", "Bootstrap", "PeerAPIs", "FastRaft", "NoSync", "ConfigWarnings"}
)

// fixedChanges lists the changes from cur to next that need a restart.
func fixedChanges(cur, next Config) []string {
	var out []string
	cv, nv := reflect.ValueOf(cur), reflect.ValueOf(next)
	for i := 0; i < cv.NumField(); i++ {
		name := cv.Type().Field(i).Name
		if slices.Contains(liveFields, name) || slices.Contains(ignoredFields, name) || cv.Field(i).Kind() == reflect.Func ||
			reflect.DeepEqual(cv.Field(i).Interface(), nv.Field(i).Interface()) {
			continue
		}
		switch keys, split := configKeys[name]; {
		case name == "Peers": // read at a replica's first start only: see reread
			continue
		case name == "Topology":
			out = append(out, "the topology changed: restart the controllers to apply it")
		case split:
			// A struct of several keys: each that changed, by its key.
			for j, key := range keys {
				c, n := cv.Field(i).Field(j), nv.Field(i).Field(j)
				if !reflect.DeepEqual(c.Interface(), n.Interface()) {
					out = append(out, fixedChange(key, c, n))
				}
			}
		default:
			out = append(out, fixedChange(name, cv.Field(i), nv.Field(i)))
		}
	}
	return out
}

// configKeys are the phalanx.conf keys of the Config fields that hold
// several, one per field of the struct, in order.
var configKeys = map[string][]string{
	"HealthCheck": {"HealthCheckProgram", "HealthCheckInterval", "HealthCheckNodeState"},
	"Prolog":      {"Prolog", "PrologEpilogTimeout"},
	"Unkillable":  {"UnkillableStepTimeout", "UnkillableStepProgram"},
	"RateLimit": {"SlurmctldParameters rl_bucket_size", "SlurmctldParameters rl_refill_rate",
		"SlurmctldParameters rl_refill_period", "SlurmctldParameters rl_table_size"},
}

// fixedChange says that key changed from cur to next, which needs a restart.
func fixedChange(key string, cur, next reflect.Value) string {
	return fmt.Sprintf("%s changed (%v to %v): restart the controllers to apply it", key, shown(cur), shown(next))
}

// shown prints a config value for a message, a list as the file writes
// it, and "(none)" for a path or list not set.
func shown(v reflect.Value) any {
	if d, ok := v.Interface().(time.Duration); ok {
		return d.String()
	}
	switch x := v.Interface().(type) {
	case string:
		return cmp.Or(x, "(none)")
	case []string:
		return cmp.Or(strings.Join(x, ","), "(none)")
	}
	return v.Interface()
}

func (c *controllerService) Reconfigure(ctx context.Context, _ *phalanxv1.ReconfigureRequest) (*phalanxv1.ReconfigureResponse, error) {
	changes, warnings, err := c.s.reconfigure(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return &phalanxv1.ReconfigureResponse{Changes: changes, Warnings: warnings}, nil
}

// Reload is SIGHUP: read the config file again; the leader applies it as
// reconfigure does, a follower keeps it for when it leads. The file's
// warnings are the reader's to log (Config.Reload).
func (s *Server) Reload(ctx context.Context) ([]string, error) {
	if s.leaderTerm() != nil {
		changes, _, err := s.reconfigure(ctx)
		return changes, err
	}
	fixed, _, err := s.reread()
	if err == nil && len(fixed) > 0 {
		err = cluster.Errorf(cluster.ErrInvalid, "not read: %s", strings.Join(fixed, "; "))
	}
	return nil, err
}

// UpdatePartition is scontrol update PartitionName=...: the change is
// made to the replicated partitions only, and lasts until the config's
// partitions change.
func (c *controllerService) UpdatePartition(ctx context.Context, req *phalanxv1.UpdatePartitionRequest) (*phalanxv1.UpdatePartitionResponse, error) {
	s := c.s
	parts := s.store.Partitions()
	i := slices.IndexFunc(parts, func(p *cluster.Partition) bool { return p.Name == req.Name })
	if i < 0 {
		return nil, toStatus(cluster.Errorf(cluster.ErrNotFound, "Invalid partition name specified: %q", req.Name))
	}
	next := make([]*cluster.Partition, len(parts))
	for j, p := range parts {
		next[j] = p.Clone()
	}
	p := next[i]
	if req.State != nil {
		st := cluster.PartitionState(strings.ToUpper(*req.State))
		switch st {
		case cluster.PartitionUp, cluster.PartitionDown, cluster.PartitionDrain, cluster.PartitionInactive:
		default:
			return nil, toStatus(cluster.Errorf(cluster.ErrInvalid, "State=%s: give UP, DOWN, DRAIN or INACTIVE", *req.State))
		}
		p.State = st
	}
	if req.MaxTimeSeconds != nil {
		p.MaxTime = time.Duration(*req.MaxTimeSeconds) * time.Second
	}
	if req.DefaultTimeSeconds != nil {
		p.DefaultTime = time.Duration(*req.DefaultTimeSeconds) * time.Second
	}
	if req.MaxNodes != nil {
		p.MaxNodes = int(*req.MaxNodes)
	}
	if req.MinNodes != nil {
		p.MinNodes = int(*req.MinNodes)
	}
	if req.PriorityTier != nil {
		p.PriorityTier = int(*req.PriorityTier)
	}
	switch problems := p.LimitProblems(); {
	case p.MaxTime < 0 || p.DefaultTime < 0 || p.MaxNodes < 0 || p.MinNodes < 0 || p.PriorityTier < 0:
		return nil, toStatus(cluster.Errorf(cluster.ErrInvalid, "MaxTime, DefaultTime, MaxNodes, MinNodes and PriorityTier must not be negative"))
	case p.PriorityTier > cluster.MaxPriorityTier:
		return nil, toStatus(cluster.Errorf(cluster.ErrInvalid, "PriorityTier=%d: at most %d (Slurm's most)", p.PriorityTier, cluster.MaxPriorityTier))
	case len(problems) > 0:
		return nil, toStatus(cluster.Errorf(cluster.ErrInvalid, "%s", strings.Join(problems, "; ")))
	}
	if req.Default != nil {
		if !*req.Default {
			return nil, toStatus(cluster.Errorf(cluster.ErrInvalid, "Default=NO: make another partition the default instead (Default=YES on it)"))
		}
		for _, q := range next {
			q.Default = q == p
		}
	}
	if _, err := s.propose(ctx, fsm.SetPartitions{Partitions: next}); err != nil {
		return nil, toStatus(err)
	}
	s.kickScheduler()
	return &phalanxv1.UpdatePartitionResponse{}, nil
}
