package topology

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// Load reads a topology.conf file.
func Load(path string) (*Tree, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// maxLine bounds one line: the most names a hostlist expands to, a comma
// each, and room for the key.
const maxLine = hostlist.MaxBytes + hostlist.MaxHosts + 64<<10

// Parse reads Slurm topology.conf syntax:
//
//	# comment
//	SwitchName=leaf1 Nodes=gpu[001-032]
//	SwitchName=spine1 Switches=leaf[1-4] LinkSpeed=100
//	BlockName=nvl1 Nodes=gpu[001-018]
//	BlockSizes=18,36
//
// Keys are case-insensitive; names take hostlist expressions; a line ending
// in a backslash continues on the next. A bad line is an error naming its
// number and wrapping cluster.ErrInvalid.
func Parse(r io.Reader) (*Tree, error) {
	b := newBuilder()
	sc := bufio.NewScanner(r)
	// A line may hold as many names as one hostlist may expand to, written
	// out with commas (what Conf writes for a list it cannot compress):
	// whatever Parse accepts, Conf writes and Parse reads back.
	sc.Buffer(make([]byte, 64*1024), maxLine)
	lineNo, start, pending := 0, 0, ""
	for sc.Scan() {
		lineNo++
		text := stripComment(sc.Text())
		if pending == "" {
			start = lineNo
		}
		if strings.HasSuffix(text, `\`) {
			pending += strings.TrimSuffix(text, `\`) + " "
			continue
		}
		if err := parseLine(b, start, pending+text); err != nil {
			return nil, err
		}
		pending = ""
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if pending != "" {
		if err := parseLine(b, start, pending); err != nil {
			return nil, err
		}
	}
	return b.finish()
}

func stripComment(s string) string {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// parseLine handles one logical line.
func parseLine(b *builder, line int, text string) error {
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return nil
	}
	kv := make(map[string]string, len(fields))
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return lineErr(line, "%q is not Key=Value", f)
		}
		k = strings.ToLower(k)
		if _, dup := kv[k]; dup {
			return lineErr(line, "%s given twice", k)
		}
		kv[k] = v
	}
	first, _, _ := strings.Cut(fields[0], "=")
	switch strings.ToLower(first) {
	case "switchname":
		return parseSwitch(b, line, kv)
	case "blockname":
		return parseBlock(b, line, kv)
	case "blocksizes":
		return parseBlockSizes(b, line, kv)
	}
	return lineErr(line, "unknown line starting with %s= (want SwitchName=, BlockName= or BlockSizes=)", first)
}

func checkKeys(line int, kv map[string]string, allowed ...string) error {
	for k := range kv {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			return lineErr(line, "unknown key %q (allowed here: %s)", k, strings.Join(allowed, ", "))
		}
	}
	return nil
}

func expand(line int, key, expr string) ([]string, error) {
	names, err := hostlist.Expand(expr)
	if err != nil {
		return nil, lineErr(line, "%s: %v", key, err)
	}
	if strings.Contains(expr, `\`) {
		return nil, lineErr(line, "%s=%s: %s", key, expr, errBackslash)
	}
	return names, nil
}

// errBackslash explains why names cannot hold a backslash: Conf could not
// write them back (a backslash that ends a line continues it), and one is
// usually a continuation with text after it.
const errBackslash = `a name cannot hold a backslash (a backslash at the end of a line continues it onto the next)`

func parseSwitch(b *builder, line int, kv map[string]string) error {
	if err := checkKeys(line, kv, "switchname", "switches", "nodes", "linkspeed"); err != nil {
		return err
	}
	name, err := oneName(line, "SwitchName", kv["switchname"])
	if err != nil {
		return err
	}
	children, err := expand(line, "Switches", kv["switches"])
	if err != nil {
		return err
	}
	nodes, err := expand(line, "Nodes", kv["nodes"])
	if err != nil {
		return err
	}
	if s, ok := kv["linkspeed"]; ok {
		if _, err := strconv.Atoi(s); err != nil {
			return lineErr(line, "LinkSpeed %q is not a number", s)
		}
	}
	return b.addSwitch(line, name, children, nodes)
}

func parseBlock(b *builder, line int, kv map[string]string) error {
	if err := checkKeys(line, kv, "blockname", "nodes"); err != nil {
		return err
	}
	name, err := oneName(line, "BlockName", kv["blockname"])
	if err != nil {
		return err
	}
	nodes, err := expand(line, "Nodes", kv["nodes"])
	if err != nil {
		return err
	}
	if len(nodes) == 0 {
		return lineErr(line, "block %q has no Nodes=", name)
	}
	return b.addBlock(line, name, nodes)
}

// oneName checks a switch or block name: one plain name, not a hostlist.
func oneName(line int, key, name string) (string, error) {
	if name == "" {
		return "", lineErr(line, "%s is empty", key)
	}
	if strings.ContainsAny(name, "[],") {
		return "", lineErr(line, "%s=%s: give one name, not a hostlist", key, name)
	}
	if strings.Contains(name, `\`) {
		return "", lineErr(line, "%s=%s: %s", key, name, errBackslash)
	}
	return name, nil
}

func parseBlockSizes(b *builder, line int, kv map[string]string) error {
	if err := checkKeys(line, kv, "blocksizes"); err != nil {
		return err
	}
	var sizes []int
	for _, s := range strings.Split(kv["blocksizes"], ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return lineErr(line, "block size %q is not a number", s)
		}
		sizes = append(sizes, n)
	}
	return b.setBlockSizes(line, sizes)
}
