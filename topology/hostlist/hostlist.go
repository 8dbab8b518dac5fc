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

// MaxBytes bounds the total length of the names one expression may expand
// to: a long name times a large range (a 2 KB prefix on [1-999999] is 2 GB)
// is an error too.
const MaxBytes = 32 << 20

// Expand returns the names an expression denotes, in the order written.
// Items are separated by commas or white space outside brackets; several
// bracket groups in one item multiply out, the first group varying slowest.
// Duplicates are kept, as Slurm keeps them. An empty expression is no names.
// Malformed input, or more than MaxHosts names or MaxBytes bytes of them,
// is an error wrapping cluster.ErrInvalid.
func Expand(expr string) ([]string, error) {
	items, err := splitItems(expr)
	if err != nil {
		return nil, err
	}
	var out []string
	left := budget{names: MaxHosts, bytes: MaxBytes}
	for _, item := range items {
		names, err := expandItem(item, &left)
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", expr, err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// budget is how many names, and bytes of them, an expansion may still make.
type budget struct{ names, bytes int }

// fits reports, as an error, whether n names of size bytes in all fit.
func (b budget) fits(n, size int) error {
	switch {
	case n > b.names:
		return cluster.Errorf(cluster.ErrInvalid, "more than %d names", MaxHosts)
	case size > b.bytes:
		return cluster.Errorf(cluster.ErrInvalid, "more than %d MiB of names", MaxBytes>>20)
	}
	return nil
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
				return nil, cluster.Errorf(cluster.ErrInvalid, "hostlist %q: nested '[' at offset %d", expr, i)
			}
			depth++
		case c == ']':
			if depth == 0 {
				return nil, cluster.Errorf(cluster.ErrInvalid, "hostlist %q: ']' without '[' at offset %d", expr, i)
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
		return nil, cluster.Errorf(cluster.ErrInvalid, "hostlist %q: unclosed '['", expr)
	}
	if start < len(expr) {
		items = append(items, expr[start:])
	}
	return items, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// expandItem expands one item (no top-level separators, brackets balanced)
// and takes what it made from left.
func expandItem(item string, left *budget) ([]string, error) {
	names, size := []string{""}, 0
	for len(item) > 0 {
		open := indexByte(item, '[')
		if open < 0 {
			open = len(item)
		}
		size += len(names) * open
		if err := left.fits(len(names), size); err != nil {
			return nil, err
		}
		appendAll(names, item[:open])
		if open == len(item) {
			break
		}
		end := open + indexByte(item[open:], ']')
		nums, numBytes, err := parseGroup(item[open+1:end], *left)
		if err != nil {
			return nil, err
		}
		size = size*len(nums) + len(names)*numBytes
		if err := left.fits(len(names)*len(nums), size); err != nil {
			return nil, err
		}
		names = product(names, nums)
		item = item[end+1:]
	}
	left.names, left.bytes = left.names-len(names), left.bytes-size
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

// parseGroup expands the inside of one bracket group, "001-003,7", within
// left, and returns the numbers and their length in all.
func parseGroup(g string, left budget) ([]string, int, error) {
	if g == "" {
		return nil, 0, cluster.Errorf(cluster.ErrInvalid, "empty brackets")
	}
	var out []string
	size := 0
	for len(g) > 0 {
		r := g
		if i := indexByte(g, ','); i >= 0 {
			r, g = g[:i], g[i+1:]
		} else {
			g = ""
		}
		nums, n, err := parseRange(r, budget{names: left.names - len(out), bytes: left.bytes - size})
		if err != nil {
			return nil, 0, err
		}
		out, size = append(out, nums...), size+n
	}
	return out, size, nil
}

// parseRange expands "lo-hi" or "n", padding to the width of lo, within
// left, and returns the numbers and their length in all.
func parseRange(r string, left budget) ([]string, int, error) {
	loS, hiS := r, r
	if i := indexByte(r, '-'); i >= 0 {
		loS, hiS = r[:i], r[i+1:]
	}
	lo, err := parseNum(loS)
	if err != nil {
		return nil, 0, err
	}
	hi, err := parseNum(hiS)
	if err != nil {
		return nil, 0, err
	}
	if hi < lo {
		return nil, 0, cluster.Errorf(cluster.ErrInvalid, "reversed range %q", r)
	}
	if hi-lo >= uint64(left.names) {
		return nil, 0, cluster.Errorf(cluster.ErrInvalid, "range %q: more than %d names", r, MaxHosts)
	}
	count := int(hi-lo) + 1
	width := max(len(loS), len(strconv.FormatUint(hi, 10)))
	if err := left.fits(count, count*width); err != nil { // an upper bound of the size
		return nil, 0, fmt.Errorf("range %q: %w", r, err)
	}
	out := make([]string, 0, count)
	size := 0
	for n := lo; n <= hi; n++ {
		s := pad(n, len(loS))
		out, size = append(out, s), size+len(s)
		if n == hi {
			break // hi may be the largest uint64
		}
	}
	return out, size, nil
}

func parseNum(s string) (uint64, error) {
	if s == "" {
		return 0, cluster.Errorf(cluster.ErrInvalid, "empty number in range")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, cluster.Errorf(cluster.ErrInvalid, "%q is not a number", s)
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, cluster.Errorf(cluster.ErrInvalid, "number %q too large", s)
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
