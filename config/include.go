package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxIncludeDepth bounds nested Include directives.
const maxIncludeDepth = 8

// include reads the file an Include line names; chain is the files being
// read, outermost first, the last holding the line. A file that includes
// itself, directly or through others, is refused as such, rather than
// read again until the depth runs out with its every line a duplicate.
func (p *parser) include(chain []string, l line) {
	file := chain[len(chain)-1]
	path, err := p.includeModifiers(l.Pairs[0].Value)
	if err != nil {
		p.errorf(file, l.Num, "Include %s: %v", l.Pairs[0].Value, err)
		return
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(file), path)
	}
	if i := slices.IndexFunc(chain, func(f string) bool { return sameFile(f, path) }); i >= 0 {
		p.errorf(file, l.Num, "Include %s: it includes itself (%s): remove this Include",
			path, strings.Join(append(slices.Clone(chain[i:]), path), " includes "))
		return
	}
	if len(chain) > maxIncludeDepth {
		p.errorf(file, l.Num, "Include %s: more than %d nested includes", path, maxIncludeDepth)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		p.errorf(file, l.Num, "Include: %v", err)
		return
	}
	defer f.Close()
	p.parse(f, path, chain)
}

// sameFile reports whether two config paths name the same file: the same
// absolute path, or the same file on disk (a link to it).
func sameFile(a, b string) bool {
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	if errA == nil && errB == nil && absA == absB {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
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
