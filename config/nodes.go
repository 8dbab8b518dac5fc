package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// nodeSpec is what one NodeName line (with the DEFAULT line's values) says
// about each of its hosts.
type nodeSpec struct {
	conf                    NodeConf // without Name and Addr
	addrs                   string   // NodeAddr hostlist
	sockets, cores, threads int
	cpusSet                 bool
	gpuGres                 string // the Gres= value that gives GPUs; "" for none
	bad                     bool   // an error was reported

	p    *parser
	file string
	num  int
}

// DefaultWeight is the Weight of a node whose NodeName line sets none,
// Slurm's default: a node set to Weight=0 ranks before it.
const DefaultWeight = 1

// nodeLineDirective handles NodeName=hosts Key=Value...; NodeName=DEFAULT
// sets values for the lines after it.
func (p *parser) nodeLineDirective(file string, l line) {
	names := l.Pairs[0].Value
	if strings.EqualFold(names, "DEFAULT") {
		p.nodeDefaultLine(file, l)
		return
	}
	hosts, err := hostlist.Expand(names)
	p.declare(hosts, err) // whatever else the line says
	s := &nodeSpec{conf: NodeConf{Weight: DefaultWeight}, file: file, num: l.Num, p: p}
	for _, kv := range p.nodeDefaults {
		s.set(kv)
	}
	for _, kv := range l.Pairs[1:] {
		s.set(kv)
	}
	if s.gpuGres != "" {
		p.gpuGres = append(p.gpuGres, gresAt{value: s.gpuGres, file: file, num: l.Num})
	}
	if !s.bad {
		s.deriveCPUs()
	}
	s.conf.Sockets, s.conf.CoresPerSocket, s.conf.ThreadsPerCore = s.sockets, s.cores, s.threads
	if err != nil || len(hosts) == 0 {
		s.errorf("NodeName: %s; write a host name or a hostlist such as gpu[001-016]", reason(errOrEmpty(err)))
		return
	}
	addrs := s.expandAddrs(len(hosts))
	if !s.bad {
		p.addNodes(file, l.Num, names, hosts, addrs, s.conf)
	}
}

// nodeDefaultLine checks each value of a NodeName=DEFAULT line where it is
// written, and keeps the good ones for the lines after it: a bad value is
// reported once, at the DEFAULT line, not at every line that would take it.
func (p *parser) nodeDefaultLine(file string, l line) {
	for _, kv := range l.Pairs[1:] {
		s := &nodeSpec{file: file, num: l.Num, p: p}
		if s.set(kv); !s.bad {
			p.nodeDefaults = append(p.nodeDefaults, kv)
		}
	}
}

// downNodes refuses a DownNodes= line, as a NodeName line's State=DOWN is
// refused: a node's state comes from its agent, so a node the line means
// to keep out would run jobs.
func (p *parser) downNodes(file string, l line) {
	names := l.Pairs[0].Value
	if names == "" {
		names = "NAME"
	}
	p.errorf(file, l.Num, "DownNodes=%s is not supported: a node's state comes from its agent, and a node meant to be out would run jobs; "+
		"take it out with `phx scontrol update NodeName=%s State=DRAIN Reason=...` once it has registered", l.Pairs[0].Value, names)
}

// declare records that a NodeName line names hosts (err: its names could
// not be read, so which nodes the config declares cannot be told).
func (p *parser) declare(hosts []string, err error) {
	p.nodeLines = true
	if err != nil {
		p.unresolved = true
		return
	}
	for _, h := range hosts {
		p.declared[h] = true
	}
}

// addNodes adds a NodeName line's hosts to the config, each with conf
// (and its address, when the line gives them).
func (p *parser) addNodes(file string, num int, names string, hosts, addrs []string, conf NodeConf) {
	here := fmt.Sprintf("%s:%d", file, num)
	for i, h := range hosts {
		if prev, dup := p.nodeLine[h]; dup {
			if prev == here {
				p.errorf(file, num, "NodeName=%s lists node %s twice: list each node once", names, h)
			} else {
				p.errorf(file, num, "node %s is already defined at %s: define each node once", h, prev)
			}
			return
		}
		p.nodeLine[h] = here
		n := conf
		n.Name = h
		if addrs != nil {
			n.Addr = addrs[i]
		}
		n.Features = append([]string(nil), conf.Features...)
		p.cfg.Nodes = append(p.cfg.Nodes, n)
	}
}

func errOrEmpty(err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("no hosts given")
}

func (s *nodeSpec) errorf(format string, args ...any) {
	s.bad = true
	s.p.errorf(s.file, s.num, format, args...)
}

// set applies one Key=Value of a NodeName line.
func (s *nodeSpec) set(kv pair) {
	switch kv.lower {
	case "cpus", "procs":
		s.cpusSet = true
		s.conf.CPUs = s.count(kv, "CPUs=64")
	case "realmemory":
		s.conf.MemoryMB = int64(s.count(kv, "RealMemory=515000 (megabytes)"))
	case "weight":
		s.conf.Weight = s.count(kv, "Weight=10")
	case "sockets":
		s.sockets = s.count(kv, "Sockets=2")
	case "corespersocket":
		s.cores = s.count(kv, "CoresPerSocket=32")
	case "threadspercore":
		s.threads = s.count(kv, "ThreadsPerCore=2")
	case "features", "feature", "availablefeatures":
		s.conf.Features = splitList(kv.Value)
	case "gres":
		s.gres(kv)
	case "nodeaddr":
		s.addrs = kv.Value
	case "state":
		// A node's state comes from its agent and from scontrol update:
		// UNKNOWN, Slurm's default, says just that. A node listed DOWN or
		// DRAIN would run jobs here, so those are refused, not ignored.
		if !strings.EqualFold(kv.Value, "UNKNOWN") {
			s.errorf("NodeName State=%s is not supported: a node's state comes from its agent (State=UNKNOWN, Slurm's default, is accepted); take a node out with `phx scontrol update NodeName=NAME State=DRAIN Reason=...` once it has registered", kv.Value)
		}
	default:
		s.p.warnOnce("node:"+kv.lower, s.file, s.num, "NodeName key %s is not used by Phalanx; ignored", kv.Key)
	}
}

// count parses a whole number from 0 to math.MaxInt32.
func (s *nodeSpec) count(kv pair, example string) int {
	n, err := strconv.Atoi(kv.Value)
	if err != nil || n < 0 || n > math.MaxInt32 {
		s.errorf("%s=%s: want a whole number, e.g. %s", kv.Key, kv.Value, example)
		return 0
	}
	return n
}

// deriveCPUs computes CPUs from Sockets×CoresPerSocket×ThreadsPerCore when
// CPUs is not given, as Slurm does; a product past math.MaxInt32 is an
// error, not a wrapped count.
func (s *nodeSpec) deriveCPUs() {
	if s.cpusSet || (s.sockets == 0 && s.cores == 0 && s.threads == 0) {
		return
	}
	cpus := 1
	for _, n := range []int{s.sockets, s.cores, s.threads} {
		if cpus *= max(n, 1); cpus > math.MaxInt32 { // each factor is at most MaxInt32: no overflow
			s.errorf("Sockets=%d CoresPerSocket=%d ThreadsPerCore=%d make more CPUs than a node can have: give the real counts",
				s.sockets, s.cores, s.threads)
			return
		}
	}
	s.conf.CPUs = cpus
}

// expandAddrs expands NodeAddr for n hosts; nil when it is not given (or
// wrong: an error is reported).
func (s *nodeSpec) expandAddrs(n int) []string {
	if s.addrs == "" {
		return nil
	}
	addrs, err := hostlist.Expand(s.addrs)
	switch {
	case err != nil:
		s.errorf("NodeAddr: %s; write an address or a hostlist such as 10.0.0.[1-16]", reason(err))
		return nil
	case len(addrs) != n:
		s.errorf("NodeAddr=%s gives %d addresses for %d nodes: give one address per node, in order",
			s.addrs, len(addrs), n)
		return nil
	}
	return addrs
}

// gres parses Gres=gpu[:type][:count][(...)][,other...]. Only GPUs are
// scheduled; other resources are accepted with a warning.
func (s *nodeSpec) gres(kv pair) {
	s.conf.GPUs, s.conf.GPUType, s.gpuGres = 0, "", ""
	seenGPU := false
	for _, item := range splitOutsideParens(kv.Value) {
		if item == "" {
			continue
		}
		if i := strings.IndexByte(item, '('); i >= 0 {
			item = item[:i] // socket binding, e.g. gpu:8(S:0-1)
		}
		parts := strings.Split(item, ":")
		if !strings.EqualFold(parts[0], "gpu") {
			s.p.warnOnce("gres:"+strings.ToLower(parts[0]), s.file, s.num, "Gres %s is not scheduled by Phalanx; ignored", parts[0])
			continue
		}
		if seenGPU {
			s.errorf("Gres=%s lists GPUs twice: one GPU type per node is supported, e.g. Gres=gpu:h100:8", kv.Value)
			return
		}
		seenGPU, s.gpuGres = true, kv.Value
		typ, n, ok := parseGPUGres(parts[1:])
		if !ok {
			s.errorf("Gres=%s: write gpu, gpu:COUNT or gpu:TYPE:COUNT, e.g. Gres=gpu:h100:8", kv.Value)
			return
		}
		s.conf.GPUType, s.conf.GPUs = typ, n
	}
}

func parseGPUGres(parts []string) (typ string, n int, ok bool) {
	switch len(parts) {
	case 0:
		return "", 1, true
	case 1:
		if c, err := strconv.Atoi(parts[0]); err == nil {
			return "", c, c >= 0
		}
		return parts[0], 1, parts[0] != ""
	case 2:
		c, err := strconv.Atoi(parts[1])
		return parts[0], c, err == nil && c >= 0 && parts[0] != ""
	}
	return "", 0, false
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// splitOutsideParens splits on commas that are not inside parentheses.
func splitOutsideParens(s string) []string {
	var (
		out   []string
		depth int
		start int
	)
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
