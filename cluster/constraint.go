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
// Slurm's matching OR, "[a|b]", asks that every node of the job have the
// same one of a and b (e.g. [a100|h100]: one GPU generation); features
// joined with & may stand around it ("ib&[a100|h100]"). Matching is then
// set, and each term is one alternative, the outer features in it: the
// scheduler places the job on one alternative's nodes (Alternatives). Node
// counts ("a*2") are refused with a clear error, never read as something
// else.
type Constraint struct {
	Terms    [][]string
	Matching bool
}

// ParseConstraint reads a --constraint.
func ParseConstraint(s string) (Constraint, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Constraint{}, nil
	}
	switch {
	case strings.ContainsAny(s, "[]"):
		return parseMatching(s)
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
	if strings.Contains(s, "*") {
		return Constraint{}, Errorf(ErrInvalid, "--constraint=%s: node counts (a*2) are not supported: ask for the feature on every node (a), or split the job", s)
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
	for _, term := range c.Terms {
		for _, f := range term {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}
