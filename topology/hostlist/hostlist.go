// Package hostlist reads and writes Slurm hostlist expressions, the compact
// form in which Slurm and Phalanx print sets of node names:
//
//	gpu[001-064,100]     gpu001 … gpu064 and gpu100
//	a1,b[1-2]            a1, b1 and b2
//	r[1-2]n[01-03]       r1n01, r1n02, r1n03, r2n01, r2n02, r2n03
//
// A range keeps the zero padding of its lower bound: [08-10] is 08, 09, 10.
// Expand turns an expression into names; Compress turns names into the
// shortest expression Slurm would print, numbering on the last run of digits
// in each name.
package hostlist

import (
	"fmt"
	"strconv"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// MaxHosts bounds how many names one expression may expand to, so a typo
// like gpu[1-100000000] is an error instead of an out-of-memory.
const MaxHosts = 1_000_000

// Expand returns the names an expression denotes, in the order written.
// Items are separated by commas or white space outside brackets; several
// bracket groups in one item multiply out, the first group varying slowest.
// Duplicates are kept, as Slurm keeps them. An empty expression is no names.
// Malformed input is an error wrapping cluster.ErrInvalid.
func Expand(expr string) ([]string, error) {
	items, err := splitItems(expr)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, item := range items {
		names, err := expandItem(item, MaxHosts-len(out))
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", expr, err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// splitItems splits at top-level commas and spaces, checking that brackets
// balance and do not nest.
func splitItems(expr string) ([]string, error) {
	var items []string
	depth, start := 0, 0
	for i := 0; i < len(expr); i++ {
		switch c := expr[i]; {
		case c == '[':
			if depth > 0 {
				return nil, fmt.Errorf("hostlist %q: nested '[' at offset %d: %w", expr, i, cluster.ErrInvalid)
			}
			depth++
		case c == ']':
			if depth == 0 {
				return nil, fmt.Errorf("hostlist %q: ']' without '[' at offset %d: %w", expr, i, cluster.ErrInvalid)
			}
			depth--
		case depth == 0 && (c == ',' || isSpace(c)):
			if i > start {
				items = append(items, expr[start:i])
			}
			start = i + 1
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("hostlist %q: unclosed '[': %w", expr, cluster.ErrInvalid)
	}
	if start < len(expr) {
		items = append(items, expr[start:])
	}
	return items, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// expandItem expands one item (no top-level separators, brackets balanced),
// producing at most limit names.
func expandItem(item string, limit int) ([]string, error) {
	if limit < 1 {
		return nil, fmt.Errorf("more than %d names: %w", MaxHosts, cluster.ErrInvalid)
	}
	names := []string{""}
	for len(item) > 0 {
		open := indexByte(item, '[')
		if open < 0 {
			appendAll(names, item)
			break
		}
		appendAll(names, item[:open])
		end := open + indexByte(item[open:], ']')
		nums, err := parseGroup(item[open+1 : end])
		if err != nil {
			return nil, err
		}
		if len(names)*len(nums) > limit {
			return nil, fmt.Errorf("more than %d names: %w", MaxHosts, cluster.ErrInvalid)
		}
		names = product(names, nums)
		item = item[end+1:]
	}
	return names, nil
}

func appendAll(names []string, s string) {
	for i := range names {
		names[i] += s
	}
}

func product(heads, tails []string) []string {
	out := make([]string, 0, len(heads)*len(tails))
	for _, h := range heads {
		for _, t := range tails {
			out = append(out, h+t)
		}
	}
	return out
}

// parseGroup expands the inside of one bracket group: "001-003,7".
func parseGroup(g string) ([]string, error) {
	if g == "" {
		return nil, fmt.Errorf("empty brackets: %w", cluster.ErrInvalid)
	}
	var out []string
	for len(g) > 0 {
		r := g
		if i := indexByte(g, ','); i >= 0 {
			r, g = g[:i], g[i+1:]
		} else {
			g = ""
		}
		nums, err := parseRange(r, MaxHosts-len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, nums...)
	}
	return out, nil
}

// parseRange expands "lo-hi" or "n", padding to the width of lo.
func parseRange(r string, limit int) ([]string, error) {
	loS, hiS := r, r
	if i := indexByte(r, '-'); i >= 0 {
		loS, hiS = r[:i], r[i+1:]
	}
	lo, err := parseNum(loS)
	if err != nil {
		return nil, err
	}
	hi, err := parseNum(hiS)
	if err != nil {
		return nil, err
	}
	if hi < lo {
		return nil, fmt.Errorf("reversed range %q: %w", r, cluster.ErrInvalid)
	}
	if hi-lo >= uint64(limit) {
		return nil, fmt.Errorf("range %q: more than %d names: %w", r, MaxHosts, cluster.ErrInvalid)
	}
	out := make([]string, 0, hi-lo+1)
	for n := lo; n <= hi; n++ {
		out = append(out, pad(n, len(loS)))
	}
	return out, nil
}

func parseNum(s string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("empty number in range: %w", cluster.ErrInvalid)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a number: %w", s, cluster.ErrInvalid)
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("number %q too large: %w", s, cluster.ErrInvalid)
	}
	return n, nil
}

// pad formats n with at least width digits.
func pad(n uint64, width int) string {
	s := strconv.FormatUint(n, 10)
	for len(s) < width {
		s = "0" + s
	}
	return s
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}
