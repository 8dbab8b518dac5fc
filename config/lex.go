package config

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// pair is one Key=Value from a line. Key keeps the spelling of the file
// (for messages); lower is the key in lower case, for matching.
type pair struct {
	Key, lower, Value string
}

// line is one logical line: physical lines joined at a trailing backslash,
// comments removed, split into pairs. Num is its first physical line.
type line struct {
	Num   int
	Pairs []pair
}

// logicalLines reads r into logical lines, skipping blank ones. Syntax
// errors are reported per line; the other lines are still returned.
func logicalLines(r io.Reader, file string) ([]line, []error) {
	var (
		out   []line
		errs  []error
		buf   strings.Builder
		start int
		num   int
	)
	flush := func() {
		text := buf.String()
		buf.Reset()
		pairs, err := splitPairs(text)
		switch {
		case err != nil:
			errs = append(errs, lineErr(file, start, "%s", err))
		case len(pairs) > 0:
			out = append(out, line{Num: start, Pairs: pairs})
		}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		num++
		text := stripComment(sc.Text())
		if buf.Len() == 0 {
			start = num
		}
		trimmed := strings.TrimRightFunc(text, unicode.IsSpace)
		if strings.HasSuffix(trimmed, `\`) {
			buf.WriteString(strings.TrimSuffix(trimmed, `\`))
			buf.WriteByte(' ')
			continue
		}
		buf.WriteString(text)
		flush()
	}
	if buf.Len() > 0 {
		flush() // a continuation on the last line
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: read: %w", file, err))
	}
	return out, errs
}

// stripComment removes a # comment; a # inside double quotes is kept.
func stripComment(s string) string {
	quoted := false
	for i, c := range s {
		switch c {
		case '"':
			quoted = !quoted
		case '#':
			if !quoted {
				return s[:i]
			}
		}
	}
	return s
}

// splitPairs splits a logical line into Key=Value pairs separated by white
// space. A value may be double-quoted to hold spaces; the quotes are removed.
// Slurm's "Include PATH" directive becomes the pair Include=PATH.
func splitPairs(s string) ([]pair, error) {
	fs := fields(s)
	if len(fs) == 2 && strings.EqualFold(fs[0], "include") {
		return []pair{{Key: fs[0], lower: "include", Value: strings.ReplaceAll(fs[1], `"`, "")}}, nil
	}
	var out []pair
	for _, f := range fs {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not Key=Value: write settings as Key=Value separated by spaces", f)
		}
		v = strings.ReplaceAll(v, `"`, "")
		out = append(out, pair{Key: k, lower: strings.ToLower(k), Value: v})
	}
	return out, nil
}

// fields splits on white space outside double quotes.
func fields(s string) []string {
	var (
		out    []string
		cur    strings.Builder
		quoted bool
	)
	for _, c := range s {
		switch {
		case c == '"':
			quoted = !quoted
			cur.WriteRune(c)
		case unicode.IsSpace(c) && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(c)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}
