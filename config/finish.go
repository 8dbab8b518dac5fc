package config

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// The whole file's checks: what no one line can tell. They run on every
// line, well formed or not, as far as it can be read (a partition line
// with a bad MaxTime still names its nodes), so that one pass reports the
// lines' problems and these together.

// partNodes is what a partition line names, and where.
type partNodes struct {
	name  string
	nodes []string
	file  string
	num   int
}

// gresAt is a NodeName line's Gres= value that gives GPUs, and where.
type gresAt struct {
	value string
	file  string
	num   int
}

// finish checks what needs the whole file.
func (p *parser) finish() {
	p.finishHealthCheck()
	p.finishPreemption()
	p.checkGresTypes()
	p.checkPartitionNodes()
	p.countRepeats()
}

// checkPartitionNodes refuses, with NodeName lines, a partition naming a
// node none declares, as Slurm does ("Invalid node name"): the
// controllers take no other node. Without NodeName lines, nodes join as
// they register, and a partition may name them before they do. When a
// NodeName line's names cannot be read (an error of its own), which nodes
// are declared cannot be told, and this waits until it is fixed.
func (p *parser) checkPartitionNodes() {
	if !p.nodeLines || p.unresolved {
		return
	}
	for _, part := range p.partNodes {
		var missing []string
		for _, n := range part.nodes {
			if !p.declared[n] {
				missing = append(missing, n)
			}
		}
		switch {
		case len(missing) == 1:
			p.errorf(part.file, part.num, "partition %s names node %s, which no NodeName line declares: declare it (NodeName=%s ...) or take it out of the partition",
				part.name, missing[0], missing[0])
		case len(missing) > 1:
			list := hostlist.Compress(missing)
			p.errorf(part.file, part.num, "partition %s names nodes %s, which no NodeName line declares: declare them (NodeName=%s ...) or take them out of the partition",
				part.name, list, list)
		}
	}
}

// checkGresTypes refuses GPUs on NodeName lines without GresTypes=gpu, as
// Slurm does (a Gres its GresTypes does not list is fatal). It names the
// first such line, and counts the others.
func (p *parser) checkGresTypes() {
	if len(p.gpuGres) == 0 || p.gresTypesGPU {
		return
	}
	first := p.gpuGres[0]
	more := ""
	switch n := len(p.gpuGres) - 1; n {
	case 0:
	case 1:
		more = " (so does 1 more NodeName line)"
	default:
		more = fmt.Sprintf(" (so do %d more NodeName lines)", n)
	}
	p.errorf(first.file, first.num, "Gres=%s needs gpu in GresTypes%s: add GresTypes=gpu, as Slurm requires", first.value, more)
}

// splitLine splits a "file:line" location.
func splitLine(loc string) (string, int) {
	i := strings.LastIndexByte(loc, ':')
	num, _ := strconv.Atoi(loc[i+1:])
	return loc[:i], num
}

// reason is err's text without the ": invalid request" of a wrapped
// cluster.ErrInvalid (a hostlist's error), which says nothing in a list of
// problems that each say what to write.
func reason(err error) string {
	return strings.TrimSuffix(err.Error(), ": "+cluster.ErrInvalid.Error())
}

// inOrder sorts problems by file, in the order the files were first met,
// then by line: a file's whole-file problems, found last, go to their
// lines. Problems that name no line (a file that cannot be read, another
// file's own list) keep their order, after these.
func inOrder(errs []error) []error {
	rank := map[string]int{}
	key := func(err error) (int, int) {
		var pe *ParseError
		if !errors.As(err, &pe) {
			return math.MaxInt, 0
		}
		if _, ok := rank[pe.File]; !ok {
			rank[pe.File] = len(rank)
		}
		return rank[pe.File], pe.Line
	}
	for _, err := range errs {
		key(err) // rank the files in the order met
	}
	out := slices.Clone(errs)
	slices.SortStableFunc(out, func(a, b error) int {
		fa, la := key(a)
		fb, lb := key(b)
		return cmp.Or(cmp.Compare(fa, fb), cmp.Compare(la, lb))
	})
	return out
}
