package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// gres.conf, as Slurm reads it from beside slurm.conf. Phalanx finds a
// node's GPUs itself, through NVML (Slurm's AutoDetect=nvml), so the file
// is a second statement of what the NodeName lines' Gres= say: every GPU
// line must agree with its node's Gres= (count and type), and a node it
// names must have a NodeName line. Lines for other GRES (Name=mps, ...)
// and keys Phalanx does not use (Cores=, Links=, Flags=) are warnings.

// loadGres checks the gres.conf beside the config file at path, when there
// is one, and returns its problems.
func (p *parser) loadGres(path string) []error {
	gres := filepath.Join(filepath.Dir(path), "gres.conf")
	f, err := os.Open(gres)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []error{fmt.Errorf("read gres.conf: %w", err)}
	}
	defer f.Close()
	// Messages name the file an admin edits: phx dev's controllers read a
	// link to the gres.conf beside the config it was given.
	if real, err := filepath.EvalSymlinks(gres); err == nil {
		gres = real
	}
	return p.checkGres(f, gres)
}

// gresCount is what gres.conf says of one node's GPUs, and where.
type gresCount struct {
	n     int
	typ   string
	where string // file:line of the last line naming it
}

// gresCheck reads a gres.conf against the config's NodeName lines.
type gresCheck struct {
	p      *parser
	file   string
	lines  map[string]NodeConf // the nodes whose NodeName line is good
	all    []string            // their names, in order
	seen   map[string]*gresCount
	warned map[string]bool
	errs   []error
}

// checkGres reads a gres.conf from r (named file in messages) and checks
// it against the NodeName lines: a node it names must be declared, and
// the GPUs it gives a node must be those of the node's line. A node whose
// line has an error of its own is not compared.
func (p *parser) checkGres(r io.Reader, file string) []error {
	lines, errs := logicalLines(r, file)
	g := &gresCheck{p: p, file: file, errs: errs,
		lines: map[string]NodeConf{}, seen: map[string]*gresCount{}, warned: map[string]bool{}}
	for _, n := range p.cfg.Nodes {
		g.lines[n.Name] = n
		g.all = append(g.all, n.Name)
	}
	for _, l := range lines {
		g.line(l)
	}
	g.compare()
	return g.errs
}

func (g *gresCheck) errorf(num int, format string, args ...any) {
	g.errs = append(g.errs, lineErr(g.file, num, format, args...))
}

func (g *gresCheck) warn(key string, num int, format string, args ...any) {
	if !g.warned[key] {
		g.warned[key] = true
		g.p.cfg.Warnings = append(g.p.cfg.Warnings, fmt.Sprintf("%s:%d: ", g.file, num)+fmt.Sprintf(format, args...))
	}
}

// gresLine is what one gres.conf line says.
type gresLine struct {
	nodes        []string
	allNodes     bool // no NodeName=: every node
	badNodes     bool // a NodeName= that cannot be read (an error)
	name, typ    string
	count, files int  // count -1: not given
	badCount     bool // a Count= that cannot be read (an error)
}

// line reads one gres.conf line and records the GPUs it gives its nodes.
func (g *gresCheck) line(l line) {
	if why := nameless(l); why != "" {
		g.errorf(l.Num, "%s", why)
		return
	}
	gl := g.read(l)
	switch {
	case gl.name == "":
		return // AutoDetect= alone
	case !strings.EqualFold(gl.name, "gpu"):
		g.warn("name:"+strings.ToLower(gl.name), l.Num, "Name=%s is not scheduled by Phalanx; ignored", gl.name)
		return
	case gl.badNodes:
		return
	}
	count := gl.count
	switch {
	case count < 0:
		count = max(gl.files, 1)
	case gl.files > 0 && count != gl.files && !gl.badCount:
		// Slurm's slurmd stops at it: "count does not match File value".
		g.errorf(l.Num, "Count=%d, but File= names %d devices: make them agree, or leave out Count=", count, gl.files)
		return
	}
	nodes := gl.nodes
	if gl.allNodes {
		nodes = g.all
	}
	for _, n := range nodes {
		g.add(l.Num, n, count, gl.typ)
	}
}

// nameless says what is wrong with a line that names no GRES ("" when
// it names one, or is an AutoDetect= line). Slurm's slurmd ignores a line
// with NodeName= and no Name= ("Invalid GRES data, no type name"), so its
// nodes register no GPUs and are INVAL, or fails at Count= on a line
// without NodeName= either; Phalanx would count nothing for it. One error
// says what it lacks, and nothing else of the line is read.
func nameless(l line) string {
	var rest []string
	var named, auto bool
	nodes := ""
	for _, kv := range l.Pairs {
		switch kv.lower {
		case "name":
			if strings.TrimSpace(kv.Value) == "" {
				return "Name= is empty: name the GRES, e.g. Name=gpu"
			}
			named = true
		case "nodename":
			nodes = kv.Key + "=" + kv.Value
		case "autodetect":
			auto = true
		default:
			rest = append(rest, kv.Key+"="+kv.Value)
		}
	}
	switch {
	case named || (auto && len(rest) == 0):
		return ""
	case len(rest) > 0:
		what := strings.Join(rest, " ")
		return fmt.Sprintf("%s without Name=: name the GRES, e.g. Name=gpu %s", what, what)
	}
	return fmt.Sprintf("%s gives no GRES: add Name=gpu with Count= or File=, or remove the line", nodes)
}

// read parses one gres.conf line's keys.
func (g *gresCheck) read(l line) gresLine {
	gl := gresLine{count: -1, allNodes: true}
	for _, kv := range l.Pairs {
		switch kv.lower {
		case "nodename":
			nodes, err := hostlist.Expand(kv.Value)
			if err != nil {
				g.errorf(l.Num, "NodeName=%s: %s", kv.Value, reason(err))
			}
			gl.nodes, gl.allNodes, gl.badNodes = nodes, false, err != nil
		case "name":
			gl.name = kv.Value
		case "type":
			gl.typ = kv.Value
		case "count":
			n, err := strconv.Atoi(kv.Value)
			if err != nil || n < 0 {
				g.errorf(l.Num, "Count=%s: want a whole number", kv.Value)
				n = 0
			}
			gl.count, gl.badCount = n, err != nil || n < 0
		case "file":
			paths, err := hostlist.Expand(kv.Value)
			if err != nil {
				g.errorf(l.Num, "File=%s: %s", kv.Value, reason(err))
			}
			gl.files = len(paths)
		case "autodetect":
			if !strings.EqualFold(kv.Value, "nvml") && !strings.EqualFold(kv.Value, "nvidia") {
				g.warn("autodetect", l.Num, "AutoDetect=%s is not used: Phalanx always finds GPUs through NVML", kv.Value)
			}
		default:
			g.warn("key:"+kv.lower, l.Num, "gres.conf key %s is not used by Phalanx; ignored", kv.Key)
		}
	}
	return gl
}

// add counts count GPUs of type typ for node n, which must be declared.
func (g *gresCheck) add(num int, n string, count int, typ string) {
	if _, ok := g.lines[n]; !ok {
		if !g.p.declared[n] && !g.p.unresolved { // declared on a line with an error: that error says it
			g.errorf(num, "node %s has no NodeName line in the config: declare it there (with Gres=gpu:...)", n)
		}
		return
	}
	c := g.seen[n]
	if c == nil {
		c = &gresCount{}
		g.seen[n] = c
	}
	c.n += count
	if typ != "" {
		c.typ = typ
	}
	c.where = fmt.Sprintf("%s:%d", g.file, num)
}

// compare checks that each node gres.conf names has the GPUs its NodeName
// line gives.
func (g *gresCheck) compare() {
	for _, name := range g.all {
		c := g.seen[name]
		if c == nil {
			continue
		}
		n := g.lines[name]
		if c.n != n.GPUs || (c.typ != "" && !strings.EqualFold(c.typ, n.GPUType)) {
			file, num := splitLine(c.where)
			g.errs = append(g.errs, lineErr(file, num, "node %s has %s here, but its NodeName line says %s: make them agree",
				name, gresText(c.typ, c.n), gresText(n.GPUType, n.GPUs)))
		}
	}
}

// gresText writes GPUs as a Gres= value: gpu:TYPE:N, gpu:N, or none.
func gresText(typ string, n int) string {
	switch {
	case n == 0:
		return "no GPUs"
	case typ == "":
		return "Gres=gpu:" + strconv.Itoa(n)
	}
	return "Gres=gpu:" + typ + ":" + strconv.Itoa(n)
}

// gresTypes reads GresTypes: gpu is the GRES Phalanx schedules (NodeName
// Gres=gpu:..., gres.conf); any other is a warning, as its Gres= entries
// are.
func (p *parser) gresTypes(file string, num int, kv pair) {
	for _, t := range strings.Split(kv.Value, ",") {
		t = strings.TrimSpace(t)
		p.gresTypesGPU = p.gresTypesGPU || strings.EqualFold(t, "gpu")
		if t != "" && !strings.EqualFold(t, "gpu") {
			p.warnOnce("grestypes:"+strings.ToLower(t), file, num, "GresTypes %s is not scheduled by Phalanx (only gpu); ignored", t)
		}
	}
}
