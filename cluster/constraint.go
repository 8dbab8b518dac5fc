package cluster

import (
	"slices"
	"strings"
)

// Constraint is a parsed --constraint (Slurm's -C), the one grammar every
// check reads: a node matches when it has every feature of one of the
// terms. "a&b" is one term of two features, "a|b" two terms of one, and
// "a&b|c" means (a and b) or c: & binds tighter than |, as in Slurm.
// Features compare case-sensitively, as in Slurm. The zero Constraint
// matches every node.
//
// Slurm's matching OR ("[a|b]": every node the same one of them) and node
// counts ("a*2") are refused with a clear error, never read as something
// else.
type Constraint struct {
	Terms [][]string
}

// ParseConstraint reads a --constraint.
func ParseConstraint(s string) (Constraint, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Constraint{}, nil
	}
	switch {
	case strings.ContainsAny(s, "[]"):
		return Constraint{}, Errorf(ErrInvalid, "--constraint=%s: matching OR ([a|b]) is not supported: use a|b (each node any of them)", s)
	case strings.Contains(s, "*"):
		return Constraint{}, Errorf(ErrInvalid, "--constraint=%s: node counts (a*2) are not supported: ask for the feature on every node (a), or split the job", s)
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
	for _, term := range c.Terms {
		for _, f := range term {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}
