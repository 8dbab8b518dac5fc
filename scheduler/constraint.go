package scheduler

import (
	"fmt"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// features is a parsed --constraint: any of its terms, each a set of
// features that must all be present. "a&b" is one term of two features,
// "a|b" two terms of one, "a&b|c" means (a and b) or c. Empty: no
// constraint. Features compare case-sensitively, as in Slurm.
type features [][]string

func parseConstraint(s string) (features, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out features
	for _, term := range strings.Split(s, "|") {
		var all []string
		for _, f := range strings.Split(term, "&") {
			f = strings.TrimSpace(f)
			if f == "" {
				return nil, fmt.Errorf("constraint %q: empty feature: %w", s, cluster.ErrInvalid)
			}
			all = append(all, f)
		}
		out = append(out, all)
	}
	return out, nil
}

// match reports whether a node with these features satisfies the constraint.
func (c features) match(have []string) bool {
	if len(c) == 0 {
		return true
	}
	for _, term := range c {
		if hasAll(have, term) {
			return true
		}
	}
	return false
}

func hasAll(have, want []string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

// unknown returns a feature no node has, when every term of the
// constraint names one (so no node could ever match); else "".
func (c features) unknown(nodes []*cluster.Node) string {
	if len(c) == 0 {
		return ""
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		for _, f := range n.Features {
			seen[f] = true
		}
	}
	first := ""
	for _, term := range c {
		missing := ""
		for _, f := range term {
			if !seen[f] && missing == "" {
				missing = f
			}
		}
		if missing == "" {
			return ""
		}
		if first == "" {
			first = missing
		}
	}
	return first
}
