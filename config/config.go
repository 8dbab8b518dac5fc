package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Config is what phalanx.conf says.
type Config struct {
	ClusterName string
	// Controllers are the controller replicas, in file order.
	Controllers []Controller
	// Nodes has one entry per host, in file order (hostlists expanded).
	Nodes []NodeConf
	// Partitions are in file order.
	Partitions []*cluster.Partition
	// TopologyPlugin is Slurm's plugin name, e.g. "topology/tree"; empty
	// when not set.
	TopologyPlugin string
	// TopologyFile is the topology.conf path as written; relative paths are
	// relative to the config file's directory.
	TopologyFile string
	// Warnings are about settings Phalanx accepted but does not use.
	Warnings []string
}

// Controller is one controller replica.
type Controller struct {
	Name string
	// Addr is the address in SlurmctldHost=name(addr); Name when not given.
	// It may lack a port.
	Addr string
}

// NodeConf is one host as the admin configured it.
type NodeConf struct {
	Name     string
	Addr     string // NodeAddr; empty: Name
	CPUs     int    // zero: not configured
	MemoryMB int64  // RealMemory; zero: not configured
	GPUs     int
	GPUType  string // from Gres=gpu:TYPE:N; empty: any
	Features []string
	Weight   int
}

// ParseError is a problem at one line of a config file. It wraps
// cluster.ErrInvalid.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Unwrap makes errors.Is(err, cluster.ErrInvalid) hold.
func (e *ParseError) Unwrap() error { return cluster.ErrInvalid }

func lineErr(file string, num int, format string, args ...any) error {
	return &ParseError{File: file, Line: num, Msg: fmt.Sprintf(format, args...)}
}

// maxErrors bounds how many problems one parse reports.
const maxErrors = 20

// maxIncludeDepth bounds nested Include directives.
const maxIncludeDepth = 8

// Load reads and parses the config file at path.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse parses a config in slurm.conf syntax; name is used in messages and
// to resolve relative Include paths. Every problem found is reported (up to
// a limit), each naming its line; unknown keys only add warnings.
func Parse(r io.Reader, name string) (*Config, error) {
	p := newParser()
	p.parse(r, name, 0)
	p.finish()
	if len(p.errs) > 0 {
		if len(p.errs) > maxErrors {
			p.errs = append(p.errs[:maxErrors], fmt.Errorf("%s: %d more problems", name, len(p.errs)-maxErrors))
		}
		return nil, errors.Join(p.errs...)
	}
	return p.cfg, nil
}

// parser accumulates the config and its problems across lines and files.
type parser struct {
	cfg    *Config
	errs   []error
	warned map[string]bool // warning keys already given

	nodeDefaults []pair // from NodeName=DEFAULT
	partDefaults []pair // from PartitionName=DEFAULT
	nodeLine     map[string]string
	partLine     map[string]string
	globalLine   map[string]string // non-repeatable key → where it was set
	defaultPart  string            // "name (file:line)" of the Default=YES partition
}

func newParser() *parser {
	return &parser{
		cfg:        &Config{},
		warned:     map[string]bool{},
		nodeLine:   map[string]string{},
		partLine:   map[string]string{},
		globalLine: map[string]string{},
	}
}

func (p *parser) parse(r io.Reader, file string, depth int) {
	lines, errs := logicalLines(r, file)
	p.errs = append(p.errs, errs...)
	for _, l := range lines {
		switch l.Pairs[0].lower {
		case "nodename":
			p.nodeLineDirective(file, l)
		case "partitionname":
			p.partitionLine(file, l)
		case "include":
			p.include(file, l, depth)
		case "nodeset", "frontendname", "downnodes", "switchname":
			p.warnOnce(l.Pairs[0].lower, file, l.Num, "%s lines are not used by Phalanx; ignored", l.Pairs[0].Key)
		default:
			for _, kv := range l.Pairs {
				p.global(file, l.Num, kv)
			}
		}
	}
}

func (p *parser) include(file string, l line, depth int) {
	path := l.Pairs[0].Value
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(file), path)
	}
	if depth >= maxIncludeDepth {
		p.errorf(file, l.Num, "Include %s: more than %d nested includes (does a file include itself?)", path, maxIncludeDepth)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		p.errorf(file, l.Num, "Include: %v", err)
		return
	}
	defer f.Close()
	p.parse(f, path, depth+1)
}

func (p *parser) errorf(file string, num int, format string, args ...any) {
	p.errs = append(p.errs, lineErr(file, num, format, args...))
}

// warnOnce adds a warning the first time key is seen.
func (p *parser) warnOnce(key, file string, num int, format string, args ...any) {
	if p.warned[key] {
		return
	}
	p.warned[key] = true
	p.cfg.Warnings = append(p.cfg.Warnings, fmt.Sprintf("%s:%d: ", file, num)+fmt.Sprintf(format, args...))
}

// global handles a key outside NodeName and PartitionName lines.
func (p *parser) global(file string, num int, kv pair) {
	switch kv.lower {
	case "slurmctldhost", "controllerhost", "controlmachine", "backupcontroller":
		p.controller(file, num, kv)
	case "clustername":
		p.single(file, num, kv, &p.cfg.ClusterName)
	case "topologyplugin":
		p.single(file, num, kv, &p.cfg.TopologyPlugin)
		p.checkTopologyPlugin(file, num, kv.Value)
	case "topologyfile":
		p.single(file, num, kv, &p.cfg.TopologyFile)
	default:
		p.warnOnce("global:"+kv.lower, file, num, "%s is not used by Phalanx; ignored", kv.Key)
	}
}

// single sets a key that may appear once; a repeat is an error.
func (p *parser) single(file string, num int, kv pair, dst *string) {
	here := fmt.Sprintf("%s:%d", file, num)
	if prev, ok := p.globalLine[kv.lower]; ok {
		p.errorf(file, num, "%s is already set at %s: keep one", kv.Key, prev)
		return
	}
	p.globalLine[kv.lower] = here
	if kv.Value == "" {
		p.errorf(file, num, "%s is empty: give it a value or remove the line", kv.Key)
		return
	}
	*dst = kv.Value
}

func (p *parser) checkTopologyPlugin(file string, num int, v string) {
	switch strings.ToLower(v) {
	case "topology/tree", "topology/block", "topology/flat", "topology/none", "topology/default":
	default:
		p.errorf(file, num, "TopologyPlugin=%s is not supported: use topology/tree, topology/block or topology/flat", v)
	}
}

// controller parses SlurmctldHost=name or name(addr).
func (p *parser) controller(file string, num int, kv pair) {
	v := kv.Value
	c := Controller{Name: v, Addr: v}
	if open := strings.IndexByte(v, '('); open >= 0 {
		if !strings.HasSuffix(v, ")") || open == 0 || open == len(v)-2 {
			p.errorf(file, num, "%s=%s: write name or name(address), e.g. ctl1(10.0.0.1)", kv.Key, v)
			return
		}
		c = Controller{Name: v[:open], Addr: v[open+1 : len(v)-1]}
	}
	if c.Name == "" {
		p.errorf(file, num, "%s is empty: name a controller host", kv.Key)
		return
	}
	for _, have := range p.cfg.Controllers {
		if have.Name == c.Name {
			p.errorf(file, num, "controller %s is listed twice: remove one", c.Name)
			return
		}
	}
	p.cfg.Controllers = append(p.cfg.Controllers, c)
}

// finish checks what needs the whole file.
func (p *parser) finish() {
	if len(p.cfg.Nodes) == 0 {
		return
	}
	for _, part := range p.cfg.Partitions {
		for _, n := range part.Nodes {
			if _, ok := p.nodeLine[n]; !ok {
				p.cfg.Warnings = append(p.cfg.Warnings, fmt.Sprintf(
					"partition %s: node %s has no NodeName line; it joins when its agent registers", part.Name, n))
				break
			}
		}
	}
}
