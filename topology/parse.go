package topology

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// Load reads a topology.conf file. Its problems name the file and line,
// path:N: what.
func Load(path string) (*Tree, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parse(f, path)
}

// maxLine bounds one line: the most names a hostlist expands to, a comma
// each, and room for the key.
const maxLine = hostlist.MaxBytes + hostlist.MaxHosts + 64<<10

// maxErrors bounds the problems one parse reports.
const maxErrors = 20

// Parse reads Slurm topology.conf syntax:
//
//	# comment
//	SwitchName=leaf1 Nodes=gpu[001-032]
//	SwitchName=spine1 Switches=leaf[1-4] LinkSpeed=100
//	BlockName=nvl1 Nodes=gpu[001-018]
//	BlockSizes=18,36
//
// Keys are case-insensitive; names take hostlist expressions; a line ending
// in a backslash continues on the next. The problems of a bad file are
// reported together (up to a limit), in line order, one line each ("line
// N: what"; each a *ParseError, which is cluster.ErrInvalid): those of
// each line and those of the whole file, such as a switch listed but
// defined nowhere.
func Parse(r io.Reader) (*Tree, error) { return parse(r, "") }

// parse reads topology.conf text; file, when not empty, is named in
// messages.
func parse(r io.Reader, file string) (*Tree, error) {
	b := newBuilder(file)
	if err := b.read(r); err != nil {
		if file != "" {
			err = fmt.Errorf("%s: %w", file, err)
		}
		return nil, errors.Join(append(b.report(), err)...)
	}
	if !b.stopped {
		b.finish()
	}
	if len(b.errs) > 0 {
		return nil, errors.Join(b.report()...)
	}
	b.t.lines = b.lineOf
	return b.t, nil
}

// read parses r line by line, recording each line's problems, until the
// end, or until the file names too many nodes or has more problems than
// are reported (b.stopped).
func (b *builder) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	// A line may hold as many names as one hostlist may expand to, written
	// out with commas (what Conf writes for a list it cannot compress):
	// whatever Parse accepts, Conf writes and Parse reads back.
	sc.Buffer(make([]byte, 64*1024), maxLine)
	lineNo, start, pending := 0, 0, ""
	for !b.stopped && sc.Scan() {
		lineNo++
		text := stripComment(sc.Text())
		if pending == "" {
			start = lineNo
		}
		if strings.HasSuffix(text, `\`) {
			pending += strings.TrimSuffix(text, `\`) + " "
			continue
		}
		b.parseLine(start, pending+text)
		pending = ""
		if len(b.errs) > maxErrors {
			// Enough to report; and a bad hostlist costs what it expanded
			// before it failed, which the names counted do not include.
			b.stopped, b.lastRead = true, lineNo
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if pending != "" && !b.stopped {
		b.parseLine(start, pending)
	}
	return nil
}

// report returns the problems found in line order, at most maxErrors of
// them and a count of the rest.
func (b *builder) report() []error {
	errs := slices.Clone(b.errs)
	slices.SortStableFunc(errs, func(x, y error) int { return errLine(x) - errLine(y) })
	if len(errs) > maxErrors {
		msg := fmt.Sprintf("%d more problems", len(errs)-maxErrors)
		if len(errs) == maxErrors+1 {
			msg = "1 more problem"
		}
		if b.lastRead > 0 {
			msg += fmt.Sprintf(", and the file was not read past line %d", b.lastRead)
		}
		errs = append(errs[:maxErrors], &ParseError{File: b.file, Msg: msg})
	}
	return errs
}

// errLine is the line a problem names; 0 for none.
func errLine(err error) int {
	var pe *ParseError
	if errors.As(err, &pe) {
		return pe.Line
	}
	return 0
}

func stripComment(s string) string {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// keyValues are a line's settings by lower-case key, and the keys in the
// order written.
type keyValues struct {
	value map[string]string
	keys  []string
}

// parseLine handles one logical line, recording its problems.
func (b *builder) parseLine(line int, text string) {
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return
	}
	first, _, ok := strings.Cut(fields[0], "=")
	if !ok || first == "" {
		b.errorf(line, "%q is not Key=Value", fields[0])
		return // what kind of line it is cannot be told
	}
	kv := b.pairs(line, fields)
	switch strings.ToLower(first) {
	case "switchname":
		b.parseSwitch(line, kv)
	case "blockname":
		b.parseBlock(line, kv)
	case "blocksizes":
		b.parseBlockSizes(line, kv)
	default:
		b.errorf(line, "unknown line starting with %s= (want SwitchName=, BlockName= or BlockSizes=)", first)
	}
}

// pairs splits a line's fields into settings; a field that is not
// Key=Value and a key given twice are problems, left out.
func (b *builder) pairs(line int, fields []string) keyValues {
	kv := keyValues{value: make(map[string]string, len(fields))}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			b.errorf(line, "%q is not Key=Value", f)
			continue
		}
		k = strings.ToLower(k)
		if _, dup := kv.value[k]; dup {
			b.errorf(line, "%s given twice", k)
			continue
		}
		kv.value[k] = v
		kv.keys = append(kv.keys, k)
	}
	return kv
}

// checkKeys reports each key the line may not have.
func (b *builder) checkKeys(line int, kv keyValues, allowed ...string) {
	for _, k := range kv.keys {
		if !slices.Contains(allowed, k) {
			b.errorf(line, "unknown key %q (allowed here: %s)", k, strings.Join(allowed, ", "))
		}
	}
}

// expand expands a hostlist; false, and a problem recorded, when it
// cannot.
func (b *builder) expand(line int, key, expr string) ([]string, bool) {
	names, err := hostlist.Expand(expr)
	if err != nil {
		b.errorf(line, "%s: %s", key, reason(err))
		return nil, false
	}
	if b.expanded += len(names); b.expanded > hostlist.MaxHosts {
		b.errorf(line, "the file names more than %d nodes and switches in all", hostlist.MaxHosts)
		b.stopped = true // and the rest could only cost more
		return nil, false
	}
	if strings.Contains(expr, `\`) {
		b.errorf(line, "%s=%s: %s", key, expr, errBackslash)
		return nil, false
	}
	return names, true
}

// reason is err's text without the ": invalid request" of a wrapped
// cluster.ErrInvalid, which says nothing in a list of problems.
func reason(err error) string {
	return strings.TrimSuffix(err.Error(), ": "+cluster.ErrInvalid.Error())
}

// errBackslash explains why names cannot hold a backslash: Conf could not
// write them back (a backslash that ends a line continues it), and one is
// usually a continuation with text after it.
const errBackslash = `a name cannot hold a backslash (a backslash at the end of a line continues it onto the next)`

// parseSwitch defines the line's switch when its name is good, whatever
// else is wrong with the line: the lines that list it are not blamed too.
func (b *builder) parseSwitch(line int, kv keyValues) {
	b.checkKeys(line, kv, "switchname", "switches", "nodes", "linkspeed")
	name, ok := b.oneName(line, "SwitchName", kv.value["switchname"])
	children, _ := b.expand(line, "Switches", kv.value["switches"])
	nodes, _ := b.expand(line, "Nodes", kv.value["nodes"])
	if s, given := kv.value["linkspeed"]; given {
		if _, err := strconv.Atoi(s); err != nil {
			b.errorf(line, "LinkSpeed %q is not a number", s)
		}
	}
	if ok {
		b.addSwitch(line, name, children, nodes)
	}
}

// parseBlock defines the line's block, as parseSwitch does.
func (b *builder) parseBlock(line int, kv keyValues) {
	b.checkKeys(line, kv, "blockname", "nodes")
	name, ok := b.oneName(line, "BlockName", kv.value["blockname"])
	nodes, expanded := b.expand(line, "Nodes", kv.value["nodes"])
	if !ok {
		return
	}
	if expanded && len(nodes) == 0 {
		b.errorf(line, "block %q has no Nodes=", name)
	}
	b.addBlock(line, name, nodes)
}

// oneName checks a switch or block name: one plain name, not a hostlist.
func (b *builder) oneName(line int, key, name string) (string, bool) {
	switch {
	case name == "":
		b.errorf(line, "%s is empty", key)
	case strings.ContainsAny(name, "[],"):
		b.errorf(line, "%s=%s: give one name, not a hostlist", key, name)
	case strings.Contains(name, `\`):
		b.errorf(line, "%s=%s: %s", key, name, errBackslash)
	default:
		return name, true
	}
	return "", false
}

func (b *builder) parseBlockSizes(line int, kv keyValues) {
	b.checkKeys(line, kv, "blocksizes")
	var sizes []int
	for _, s := range strings.Split(kv.value["blocksizes"], ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			b.errorf(line, "block size %q is not a number", s)
			return
		}
		sizes = append(sizes, n)
	}
	b.setBlockSizes(line, sizes)
}
