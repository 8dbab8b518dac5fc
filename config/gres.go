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
// is one.
func (c *Config) loadGres(path string) error {
	gres := filepath.Join(filepath.Dir(path), "gres.conf")
	f, err := os.Open(gres)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read gres.conf: %w", err)
	}
	defer f.Close()
	return c.checkGres(f, gres)
}

// gresCount is what gres.conf says of one node's GPUs, and where.
type gresCount struct {
	n     int
	typ   string
	where string // file:line of the last line naming it
}

// checkGres reads a gres.conf from r (named file in messages) and checks
// it against the NodeName lines.
func (c *Config) checkGres(r io.Reader, file string) error {
	lines, errs := logicalLines(r, file)
	declared := map[string]NodeConf{}
	var all []string
	for _, n := range c.Nodes {
		declared[n.Name] = n
		all = append(all, n.Name)
	}
	seen := map[string]*gresCount{}
	warned := map[string]bool{}
	warn := func(key string, num int, format string, args ...any) {
		if !warned[key] {
			warned[key] = true
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s:%d: ", file, num)+fmt.Sprintf(format, args...))
		}
	}
	for _, l := range lines {
		nodes, name, typ, count, files := all, "", "", -1, 0
		for _, kv := range l.Pairs {
			switch kv.lower {
			case "nodename":
				var err error
				if nodes, err = hostlist.Expand(kv.Value); err != nil {
					errs = append(errs, lineErr(file, l.Num, "NodeName=%s: %v", kv.Value, err))
				}
			case "name":
				name = kv.Value
			case "type":
				typ = kv.Value
			case "count":
				n, err := strconv.Atoi(kv.Value)
				if err != nil || n < 0 {
					errs = append(errs, lineErr(file, l.Num, "Count=%s: want a whole number", kv.Value))
				}
				count = n
			case "file":
				paths, err := hostlist.Expand(kv.Value)
				if err != nil {
					errs = append(errs, lineErr(file, l.Num, "File=%s: %v", kv.Value, err))
				}
				files = len(paths)
			case "autodetect":
				if !strings.EqualFold(kv.Value, "nvml") && !strings.EqualFold(kv.Value, "nvidia") {
					warn("autodetect", l.Num, "AutoDetect=%s is not used: Phalanx always finds GPUs through NVML", kv.Value)
				}
			default:
				warn("key:"+kv.lower, l.Num, "gres.conf key %s is not used by Phalanx; ignored", kv.Key)
			}
		}
		switch {
		case name == "":
			continue // AutoDetect= alone
		case !strings.EqualFold(name, "gpu"):
			warn("name:"+strings.ToLower(name), l.Num, "Name=%s is not scheduled by Phalanx; ignored", name)
			continue
		}
		if count < 0 {
			count = max(files, 1)
		}
		for _, n := range nodes {
			if _, ok := declared[n]; !ok {
				errs = append(errs, lineErr(file, l.Num, "node %s has no NodeName line in the config: declare it there (with Gres=gpu:...)", n))
				continue
			}
			g := seen[n]
			if g == nil {
				g = &gresCount{}
				seen[n] = g
			}
			g.n += count
			if typ != "" {
				g.typ = typ
			}
			g.where = fmt.Sprintf("%s:%d", file, l.Num)
		}
	}
	for _, name := range all {
		g := seen[name]
		if g == nil {
			continue
		}
		n := declared[name]
		if g.n != n.GPUs || (g.typ != "" && !strings.EqualFold(g.typ, n.GPUType)) {
			errs = append(errs, fmt.Errorf("%s: node %s has %s here, but its NodeName line says %s: make them agree",
				g.where, name, gresText(g.typ, g.n), gresText(n.GPUType, n.GPUs)))
		}
	}
	return errors.Join(errs...)
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
		if t = strings.TrimSpace(t); t != "" && !strings.EqualFold(t, "gpu") {
			p.warnOnce("grestypes:"+strings.ToLower(t), file, num, "GresTypes %s is not scheduled by Phalanx (only gpu); ignored", t)
		}
	}
}
