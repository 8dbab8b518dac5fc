package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// partSpec collects one PartitionName line.
type partSpec struct {
	part *cluster.Partition
	bad  bool
	p    *parser
	file string
	num  int
}

// partitionLine handles PartitionName=name Key=Value...;
// PartitionName=DEFAULT sets values for the lines after it.
func (p *parser) partitionLine(file string, l line) {
	name := l.Pairs[0].Value
	if strings.EqualFold(name, "DEFAULT") {
		p.partDefaultLine(file, l)
		return
	}
	if name == "" {
		p.errorf(file, l.Num, "PartitionName is empty: name the partition, e.g. PartitionName=gpu")
		return
	}
	part := &cluster.Partition{Name: name, State: cluster.PartitionUp, PriorityTier: DefaultPriorityTier}
	s := &partSpec{part: part, p: p, file: file, num: l.Num}
	for _, kv := range p.partDefaults {
		s.set(kv)
	}
	for _, kv := range l.Pairs[1:] {
		s.set(kv)
	}
	s.check()
	// The checks across lines, whatever else is wrong with this one.
	p.partNodes = append(p.partNodes, partNodes{name: name, nodes: part.Nodes, file: file, num: l.Num})
	named, isDefault := p.claimName(file, l.Num, name), p.claimDefault(file, l.Num, part)
	if !s.bad && named && isDefault {
		p.cfg.Partitions = append(p.cfg.Partitions, part)
	}
}

// partDefaultLine checks each value of a PartitionName=DEFAULT line where it
// is written, and keeps the good ones for the lines after it: a bad value is
// reported once, at the DEFAULT line, not at every line that would take it.
func (p *parser) partDefaultLine(file string, l line) {
	for _, kv := range l.Pairs[1:] {
		s := &partSpec{part: &cluster.Partition{}, p: p, file: file, num: l.Num}
		if s.set(kv); !s.bad {
			p.partDefaults = append(p.partDefaults, kv)
		}
	}
}

// DefaultPriorityTier is the PriorityTier of a partition that sets none,
// Slurm's default: a partition set to PriorityTier=0 ranks below it.
const DefaultPriorityTier = 1

// claimName records a partition's name; false (and an error) when another
// line has it.
func (p *parser) claimName(file string, num int, name string) bool {
	if prev, dup := p.partLine[name]; dup {
		p.errorf(file, num, "partition %s is already defined at %s: define each partition once", name, prev)
		return false
	}
	p.partLine[name] = fmt.Sprintf("%s:%d", file, num)
	return true
}

// claimDefault records a Default=YES partition; false (and an error) when
// another line was first.
func (p *parser) claimDefault(file string, num int, part *cluster.Partition) bool {
	switch {
	case !part.Default:
	case p.defaultPart != "":
		p.errorf(file, num, "partition %s is Default=YES, and so is %s: keep one default", part.Name, p.defaultPart)
		return false
	default:
		p.defaultPart = fmt.Sprintf("%s (%s:%d)", part.Name, file, num)
	}
	return true
}

func (s *partSpec) errorf(format string, args ...any) {
	s.bad = true
	s.p.errorf(s.file, s.num, format, args...)
}

// set applies one Key=Value of a PartitionName line.
func (s *partSpec) set(kv pair) {
	part := s.part
	switch kv.lower {
	case "nodes":
		s.nodes(kv)
	case "default":
		part.Default = s.yesNo(kv)
	case "state":
		s.state(kv)
	case "maxtime":
		part.MaxTime = s.duration(kv)
	case "defaulttime":
		part.DefaultTime = s.duration(kv)
	case "maxnodes":
		part.MaxNodes = s.limit(kv)
	case "minnodes":
		part.MinNodes = s.minNodes(kv)
	case "priorityjobfactor":
		s.errorf("PriorityJobFactor=%s is not supported: Phalanx orders partitions by PriorityTier alone; remove it, or write PriorityTier=N (higher runs first)", kv.Value)
	case "prioritytier":
		n, err := strconv.Atoi(kv.Value)
		if err != nil || n < 0 || n > cluster.MaxPriorityTier {
			s.errorf("PriorityTier=%s: want a whole number from 0 to %d (Slurm's most), e.g. PriorityTier=10 (higher runs first)", kv.Value, cluster.MaxPriorityTier)
		}
		part.PriorityTier = n
	case "allowaccounts":
		s.part.AllowAccounts = accountList(kv.Value)
	case "denyaccounts":
		s.part.DenyAccounts = accountList(kv.Value)
	case "allowgroups":
		s.part.AllowGroups = accountList(kv.Value)
	case "preemptmode":
		s.preemptMode(kv)
	case "oversubscribe", "shared":
		s.overSubscribe(kv)
	default:
		s.p.warnOnce("partition:"+kv.lower, s.file, s.num, "PartitionName key %s is not used by Phalanx; ignored", kv.Key)
	}
}

func (s *partSpec) nodes(kv pair) {
	part := s.part
	part.AllNodes, part.Nodes = false, nil
	switch {
	case strings.EqualFold(kv.Value, "ALL"):
		part.AllNodes = true
	case kv.Value == "":
	default:
		hosts, err := hostlist.Expand(kv.Value)
		if err != nil {
			s.errorf("Nodes: %s; write ALL or a hostlist such as gpu[001-016],cpu01", reason(err))
			return
		}
		part.Nodes = hosts
	}
}

// overSubscribe reads OverSubscribe (Shared, its old name): NO, the
// default (jobs share a node's GPUs, CPUs and memory, never more than it
// has), or EXCLUSIVE (whole nodes for every job). YES and FORCE, which let
// jobs share the same resources in turn, are refused.
func (s *partSpec) overSubscribe(kv pair) {
	v := strings.ToUpper(kv.Value)
	switch {
	case v == "NO":
		s.part.Exclusive = false
	case v == "EXCLUSIVE":
		s.part.Exclusive = true
	default:
		s.errorf("%s=%s is not supported: Phalanx never gives two jobs the same GPU, CPU or memory; write NO (the default) or EXCLUSIVE (whole nodes)", kv.Key, kv.Value)
	}
}

// preemptMode reads PreemptMode: OFF, or REQUEUE (the partition's jobs may
// be requeued to make room for jobs of a higher tier or QoS).
func (s *partSpec) preemptMode(kv pair) {
	m, err := cluster.ParsePreemptMode(kv.Value)
	if err != nil || kv.Value == "" {
		s.errorf("PreemptMode=%s is not supported: write OFF or REQUEUE", kv.Value)
		return
	}
	s.part.PreemptMode = m
}

func (s *partSpec) yesNo(kv pair) bool {
	switch strings.ToUpper(kv.Value) {
	case "YES":
		return true
	case "NO":
		return false
	}
	s.errorf("%s=%s: write YES or NO", kv.Key, kv.Value)
	return false
}

func (s *partSpec) state(kv pair) {
	st := cluster.PartitionState(strings.ToUpper(kv.Value))
	switch st {
	case cluster.PartitionUp, cluster.PartitionDown, cluster.PartitionDrain, cluster.PartitionInactive:
		s.part.State = st
	default:
		s.errorf("State=%s: write UP, DOWN, DRAIN or INACTIVE", kv.Value)
	}
}

func (s *partSpec) duration(kv pair) time.Duration {
	d, err := cluster.ParseDuration(kv.Value)
	if err != nil {
		s.errorf("%s: %v", kv.Key, err)
	}
	return d
}

// limit parses a count where UNLIMITED (or INFINITE) means zero.
func (s *partSpec) limit(kv pair) int {
	switch strings.ToUpper(kv.Value) {
	case "UNLIMITED", "INFINITE":
		return 0
	}
	n, err := strconv.Atoi(kv.Value)
	if err != nil || n < 0 {
		s.errorf("%s=%s: want a whole number or UNLIMITED, e.g. %s=64", kv.Key, kv.Value, kv.Key)
		return 0
	}
	return n
}

// minNodes parses MinNodes=N, Slurm's least count of nodes a job of the
// partition may have; 0, the default, is no minimum.
func (s *partSpec) minNodes(kv pair) int {
	n, err := strconv.Atoi(kv.Value)
	if err != nil || n < 0 {
		s.errorf("MinNodes=%s: want a whole number, e.g. MinNodes=2 (0: no minimum)", kv.Value)
		return 0
	}
	return n
}

// check validates the partition as a whole.
func (s *partSpec) check() {
	part := s.part
	for _, problem := range part.LimitProblems() {
		s.errorf("%s", problem)
	}
	if len(part.AllowAccounts) > 0 && len(part.DenyAccounts) > 0 {
		s.p.cfg.Warnings = append(s.p.cfg.Warnings, fmt.Sprintf("%s:%d: partition %s: DenyAccounts is ignored when AllowAccounts is set, as in Slurm: "+
			"only the accounts AllowAccounts lists may use it; remove DenyAccounts", s.file, s.num, part.Name))
	}
}

// Preemption, globally, as Slurm reads it: PreemptType is preempt/none
// unless set, and preempts nothing; preempt/partition_prio and preempt/qos
// turn preemption on (Phalanx weighs a partition's tier and a job's QoS
// both). The global PreemptMode (OFF unless set) is what a partition
// without its own takes, and must agree with PreemptType: OFF with
// preempt/none, REQUEUE with the others; Slurm refuses to start otherwise
// ("PreemptType and PreemptMode values incompatible").

func (p *parser) globalPreemptMode(file string, num int, kv pair) {
	if !p.once(file, num, kv, kv.lower) {
		return
	}
	m, err := cluster.ParsePreemptMode(kv.Value)
	if err != nil || kv.Value == "" {
		p.errorf(file, num, "PreemptMode=%s is not supported: write OFF or REQUEUE (Phalanx requeues; it does not suspend, cancel or gang)", kv.Value)
		return
	}
	p.preemptMode, p.preemptModeAt = m, lineAt{file, num}
}

func (p *parser) preemptType(file string, num int, kv pair) {
	if !p.once(file, num, kv, kv.lower) {
		return
	}
	switch v := strings.ToLower(kv.Value); v {
	case "preempt/none", "preempt/partition_prio", "preempt/qos":
		p.preemptTypeName, p.preemptOn, p.preemptTypeAt = v, v != "preempt/none", lineAt{file, num}
	default:
		p.errorf(file, num, "PreemptType=%s is not supported: write preempt/none, preempt/partition_prio or preempt/qos", kv.Value)
	}
}

// finishPreemption checks that PreemptType and the global PreemptMode
// agree, gives partitions the global PreemptMode, and turns preemption off
// without a PreemptType that preempts (a partition's REQUEUE then gets a
// warning, where Slurm says nothing).
func (p *parser) finishPreemption() {
	switch {
	case !p.preemptOn && p.preemptMode == cluster.PreemptRequeue:
		p.errorf(p.preemptModeAt.file, p.preemptModeAt.num, "PreemptMode=REQUEUE needs PreemptType=preempt/partition_prio or preempt/qos: "+
			"without one PreemptType is preempt/none, which preempts nothing (Slurm: PreemptType and PreemptMode values incompatible)")
	case p.preemptOn && p.preemptMode != cluster.PreemptRequeue:
		p.errorf(p.preemptTypeAt.file, p.preemptTypeAt.num, "PreemptType=%s needs PreemptMode=REQUEUE: the global PreemptMode is OFF unless set "+
			"(a partition that must not be preempted sets its own PreemptMode=OFF; Slurm: PreemptType and PreemptMode values incompatible)", p.preemptTypeName)
	}
	for _, part := range p.cfg.Partitions {
		if part.PreemptMode == "" {
			part.PreemptMode = p.preemptMode
		}
		if !p.preemptOn && part.PreemptMode == cluster.PreemptRequeue {
			why := "no PreemptType (preempt/none, the default) turns preemption off: set PreemptType=preempt/partition_prio and PreemptMode=REQUEUE"
			if at := p.preemptTypeAt; at.num > 0 {
				why = fmt.Sprintf("PreemptType=preempt/none (%s:%d) turns preemption off", at.file, at.num)
			}
			p.cfg.Warnings = append(p.cfg.Warnings, fmt.Sprintf("%s: partition %s: PreemptMode=REQUEUE, but %s", p.partLine[part.Name], part.Name, why))
			part.PreemptMode = cluster.PreemptOff
		}
	}
}

// accountList reads AllowAccounts=, DenyAccounts= or AllowGroups=:
// comma-separated names; ALL (the Allow keys' default) is no list.
func accountList(v string) []string {
	if strings.EqualFold(strings.TrimSpace(v), "ALL") {
		return nil
	}
	var out []string
	for _, a := range strings.Split(v, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
