package cluster

import (
	"errors"
	"strings"
	"testing"
)

func TestParseConstraint(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		match   [][]string // feature sets that match
		miss    [][]string // feature sets that do not
	}{
		{in: "", match: [][]string{nil, {"x"}}},
		{in: "ib", match: [][]string{{"ib"}, {"a100", "ib"}}, miss: [][]string{nil, {"IB"}}},
		{in: "a100&ib", match: [][]string{{"ib", "a100"}}, miss: [][]string{{"a100"}, {"ib"}}},
		{in: "a100|h100", match: [][]string{{"a100"}, {"h100"}}, miss: [][]string{{"v100"}}},
		{in: "a100&ib|h100", match: [][]string{{"a100", "ib"}, {"h100"}}, miss: [][]string{{"a100"}}},
		{in: " a & b ", match: [][]string{{"a", "b"}}},
		{in: "[a100|h100]", match: [][]string{{"a100"}, {"h100"}}, miss: [][]string{{"v100"}}},
		{in: "ib&[a100|h100]", match: [][]string{{"ib", "a100"}}, miss: [][]string{{"a100"}}},
		{in: "[a|b", err: "unbalanced brackets"},
		{in: "[a]", err: "one alternative"},
		{in: "x|[a|b]", err: "| outside the brackets"},
		{in: "x[a|b]", err: "features must join the brackets with &"},
		{in: "a*2", match: [][]string{nil, {"b"}, {"a"}}},
		{in: "[a*2&b*4]", match: [][]string{nil, {"a"}}},
		{in: "[a*2|b]", err: "a count in an OR"},
		{in: "[a*2|b*2]", err: "a count in an OR"},
		{in: "a*2&b", err: "a count beside other features"},
		{in: "ib&[a*2&b*4]", err: "a count beside other features"},
		{in: "[a*2&b]", err: `feature "b" has no count`},
		{in: "a*0", err: `count "0" of feature "a" is not a whole number of nodes`},
		{in: "a*x", err: `count "x"`},
		{in: "*2", err: `feature name ""`},
		{in: "[a*1&a*2]", err: `feature "a" counted twice`},
		{in: "a&&b", err: "invalid feature specification"},
		{in: "!a", err: "invalid feature specification"},
		{in: "a|", err: "invalid feature specification"},
	} {
		c, err := ParseConstraint(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrInvalid) {
				t.Errorf("%q: %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		for _, m := range tc.match {
			if !c.Match(m) {
				t.Errorf("%q does not match %v", tc.in, m)
			}
		}
		for _, m := range tc.miss {
			if c.Match(m) {
				t.Errorf("%q matches %v", tc.in, m)
			}
		}
	}
	if c, _ := ParseConstraint("ib&[a100|h100&nvl]"); strings.Join(c.Alternatives(), " ") != "ib&a100 ib&h100&nvl" || !c.Matching {
		t.Errorf("Alternatives = %q", c.Alternatives())
	}
	if c, _ := ParseConstraint(" [rack1*2 & rack2*4] "); c.CountedNodes() != 6 || len(c.Terms) != 0 ||
		strings.Join(c.Features(), ",") != "rack1,rack2" || c.Counts[1] != (FeatureCount{Feature: "rack2", Nodes: 4}) {
		t.Errorf("[rack1*2&rack2*4] = %+v", c)
	}
	if c, _ := ParseConstraint("a|b"); c.Alternatives() != nil {
		t.Errorf("a|b has alternatives %q", c.Alternatives())
	}
	if c, _ := ParseConstraint("a&b|c&a"); strings.Join(c.Features(), ",") != "a,b,c" {
		t.Errorf("Features = %v", c.Features())
	}
}
