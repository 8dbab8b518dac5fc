package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxIncludeDepth bounds nested Include directives.
const maxIncludeDepth = 8

func (p *parser) include(file string, l line, depth int) {
	path, err := p.includeModifiers(l.Pairs[0].Value)
	if err != nil {
		p.errorf(file, l.Num, "Include %s: %v", l.Pairs[0].Value, err)
		return
	}
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

// includeModifiers replaces Slurm's include modifiers in an Include path:
// %c, the ClusterName set before the line.
func (p *parser) includeModifiers(path string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		if path[i] != '%' {
			b.WriteByte(path[i])
			continue
		}
		if i+1 == len(path) || path[i+1] != 'c' {
			return "", fmt.Errorf("%q is not an include modifier: Slurm's only one is %%c, the cluster name", path[i:min(i+2, len(path))])
		}
		if p.cfg.ClusterName == "" {
			return "", errors.New("%c is the cluster name: set ClusterName before this line")
		}
		b.WriteString(p.cfg.ClusterName)
		i++
	}
	return b.String(), nil
}
