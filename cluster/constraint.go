package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Constraint is a parsed --constraint (Slurm's -C), the one grammar every
// check reads: a node matches when it has every feature of one of the
// terms. "a&b" is one term of two features, "a|b" two terms of one, and
// "a&b|c" means (a and b) or c: & binds tighter than |, as in Slurm.
// Features compare case-sensitively, as in Slurm. The zero Constraint
// matches every node.
//
// Slurm's matching OR, "[a|b]", asks that every node of the job have the
// same one of a and b (e.g. [a100|h100]: one GPU generation); features
// joined with & may stand around it ("ib&[a100|h100]"). Matching is then
// set, and each term is one alternative, the outer features in it: the
// scheduler places the job on one alternative's nodes (Alternatives).
//
// Node counts ask for a number of the job's nodes with a feature rather
// than all of them: "a*2" is at least two nodes with a, "[a*2&b*4]" two
// nodes with a and four other nodes with b (a node counts once). The
// job's other nodes need no feature. Counts are Counts, and Terms is then
// empty: every node may be one of the job's. Slurm's rules for where
// counts may stand are kept: one feature alone, or features joined by &
// inside brackets; anything else is refused with a line saying so.
type Constraint struct {
	Terms    [][]string
	Matching bool
	Counts   []FeatureCount
}

// FeatureCount is one node count of a constraint: at least Nodes of the
// job's nodes have Feature.
type FeatureCount struct {
	Feature string
	Nodes   int
}

// CountedNodes is the number of nodes the counts ask for together: the
// fewest nodes such a job can have.
func (c Constraint) CountedNodes() int {
	n := 0
	for _, fc := range c.Counts {
		n += fc.Nodes
	}
	return n
}

// ParseConstraint reads a --constraint.
func ParseConstraint(s string) (Constraint, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Constraint{}, nil
	}
	switch {
	case strings.Contains(s, "*"):
		return parseCounts(s)
	case strings.ContainsAny(s, "[]"):
		return parseMatching(s)
	case strings.ContainsAny(s, "(),!"):
		return Constraint{}, Errorf(ErrInvalid, "--constraint=%s: invalid feature specification: write features joined by & (all) and | (any), e.g. a100&ib|h100", s)
	}
	var c Constraint
	for _, term := range strings.Split(s, "|") {
		var all []string
		for _, f := range strings.Split(term, "&") {
			f = strings.TrimSpace(f)
			if f == "" || strings.ContainsAny(f, " \t") {
				return Constraint{}, Errorf(ErrInvalid, "--constraint=%s: invalid feature specification: an empty or spaced feature name", s)
			}
			all = append(all, f)
		}
		c.Terms = append(c.Terms, all)
	}
	return c, nil
}

// parseMatching reads a constraint with one matching OR: OUTER&[A|B|...]
// or [A|B|...]&OUTER, OUTER features joined by & (or nothing), each
// alternative features joined by &.
func parseMatching(s string) (Constraint, error) {
	open, end := strings.IndexByte(s, '['), strings.IndexByte(s, ']')
	bad := func(why string) (Constraint, error) {
		return Constraint{}, Errorf(ErrInvalid, "--constraint=%s: %s: write one matching OR, [a|b], with features joined by & around it, e.g. ib&[a100|h100]", s, why)
	}
	if open < 0 || end < open || strings.Count(s, "[") != 1 || strings.Count(s, "]") != 1 {
		return bad("unbalanced brackets")
	}
	before, inner, after := s[:open], s[open+1:end], s[end+1:]
	var outer []string
	for _, side := range []string{strings.TrimSuffix(strings.TrimSpace(before), "&"), strings.TrimPrefix(strings.TrimSpace(after), "&")} {
		if strings.TrimSpace(side) == "" {
			continue
		}
		if strings.ContainsAny(side, "|[]") {
			return bad("| outside the brackets")
		}
		c, err := ParseConstraint(side)
		if err != nil {
			return Constraint{}, err
		}
		outer = append(outer, c.Terms[0]...)
	}
	if (strings.TrimSpace(before) != "" && !strings.HasSuffix(strings.TrimSpace(before), "&")) ||
		(strings.TrimSpace(after) != "" && !strings.HasPrefix(strings.TrimSpace(after), "&")) {
		return bad("features must join the brackets with &")
	}
	alts, err := ParseConstraint(inner)
	if err != nil {
		return Constraint{}, err
	}
	if len(alts.Terms) < 2 {
		return bad("one alternative")
	}
	c := Constraint{Matching: true}
	for _, t := range alts.Terms {
		term := append(slices.Clone(outer), t...)
		c.Terms = append(c.Terms, term)
	}
	return c, nil
}

// maxCountedNodes bounds the node counts of one constraint together, far
// above any cluster.
const maxCountedNodes = 1 << 20

// parseCounts reads a constraint with node counts: FEATURE*N, or
// [F1*N1&F2*N2...], every feature of the brackets with its count and each
// feature once.
func parseCounts(s string) (Constraint, error) {
	bad := func(why string) (Constraint, error) {
		return Constraint{}, Errorf(ErrInvalid, "--constraint=%s: invalid feature specification: %s: write a node count on one feature (gpu*2), or on features joined by & inside brackets ([rack1*2&rack2*4])", s, why)
	}
	inner := s
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		inner = s[1 : len(s)-1]
	} else if strings.ContainsAny(s, "&|[]") {
		return bad("a count beside other features")
	}
	if strings.ContainsAny(inner, "|[]") {
		return bad("a count in an OR")
	}
	var c Constraint
	for _, part := range strings.Split(inner, "&") {
		name, num, ok := strings.Cut(strings.TrimSpace(part), "*")
		if !ok {
			return bad(fmt.Sprintf("feature %q has no count", strings.TrimSpace(part)))
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 || n > maxCountedNodes-c.CountedNodes() {
			return bad(fmt.Sprintf("count %q of feature %q is not a whole number of nodes, 1 or more", num, name))
		}
		if name == "" || strings.ContainsAny(name, " \t*(),!") {
			return bad(fmt.Sprintf("feature name %q", name))
		}
		if slices.ContainsFunc(c.Counts, func(fc FeatureCount) bool { return fc.Feature == name }) {
			return bad(fmt.Sprintf("feature %q counted twice", name))
		}
		c.Counts = append(c.Counts, FeatureCount{Feature: name, Nodes: n})
	}
	return c, nil
}

// Alternatives are a matching OR's alternatives, each a constraint of its
// own (a&b), in order; nil when c is not a matching OR.
func (c Constraint) Alternatives() []string {
	if !c.Matching {
		return nil
	}
	out := make([]string, len(c.Terms))
	for i, t := range c.Terms {
		out[i] = strings.Join(t, "&")
	}
	return out
}

// Match reports whether a node with these features satisfies c.
func (c Constraint) Match(have []string) bool {
	if len(c.Terms) == 0 {
		return true
	}
	for _, term := range c.Terms {
		if !slices.ContainsFunc(term, func(f string) bool { return !slices.Contains(have, f) }) {
			return true
		}
	}
	return false
}

// Features lists every feature c names, in order, once each.
func (c Constraint) Features() []string {
	var out []string
	for _, fc := range c.Counts {
		out = append(out, fc.Feature)
	}
	for _, term := range c.Terms {
		for _, f := range term {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}
