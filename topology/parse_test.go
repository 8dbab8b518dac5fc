package topology

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// TestParseKeyNotUTF8 is the regression test for a panic that FuzzParse
// found: a first key that is not UTF-8 grows when lower-cased, and the
// message sliced the original with the longer length.
func TestParseKeyNotUTF8(t *testing.T) {
	_, err := Parse(strings.NewReader("\x8c=x\n"))
	if err == nil || !errors.Is(err, cluster.ErrInvalid) || !strings.Contains(err.Error(), "unknown line starting with \x8c=") {
		t.Fatalf("Parse = %v; want an unknown line error", err)
	}
}

// TestParseRefusesBackslashInNames is the regression test for names that
// Conf could not write back: "SwitchName=s\ LinkSpeed=1" named a switch
// s\, which Conf wrote at the end of a line, where a backslash continues
// it.
func TestParseRefusesBackslashInNames(t *testing.T) {
	for _, text := range []string{
		"SwitchName=s\\ LinkSpeed=1\n",
		"SwitchName=s Nodes=n\\ LinkSpeed=1\n",
		"SwitchName=s Switches=a\\b\n",
		"BlockName=b\\ Nodes=n1\n",
	} {
		_, err := Parse(strings.NewReader(text))
		if err == nil || !errors.Is(err, cluster.ErrInvalid) || !strings.Contains(err.Error(), "a name cannot hold a backslash") {
			t.Errorf("Parse(%q) = %v; want an error about the backslash", text, err)
		}
	}
}

// TestParseLongChain is the regression test for levels computed again
// from every switch: a chain of 20,000 switches (650 KB) took 90 s to
// parse, and the time grows with the square of the chain.
func TestParseLongChain(t *testing.T) {
	const n = 50_000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "SwitchName=s%d Switches=s%d\n", i, i+1)
	}
	fmt.Fprintf(&b, "SwitchName=s%d Nodes=n1\n", n)
	type result struct {
		tree *Tree
		err  error
	}
	done := make(chan result, 1)
	go func() {
		tree, err := Parse(strings.NewReader(b.String()))
		done <- result{tree, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if top, _ := r.tree.Switch("s0"); top.Level != n || len(r.tree.Path("n1")) != n+1 {
			t.Fatalf("s0 at level %d, path of n1 %d switches; want %d and %d", top.Level, len(r.tree.Path("n1")), n, n+1)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("parsing a chain of switches did not finish in 20s")
	}
}

// TestLoadNamesFileAndLine: read from a file, every problem names the file
// and its line, path:N, as the config's do, and none ends in the words
// "invalid request".
func TestLoadNamesFileAndLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "topology.conf")
	text := "SwitchName=s1 Nodes=n[1-2] Foo=1\nSwitchName=s1 Nodes=n3\nSwitchName=s2 Switches=s9 LinkSpeed=abc\nSwitchName=s3 Nodes=a[2-1]\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if !errors.Is(err, cluster.ErrInvalid) {
		t.Fatalf("Load = %v; want ErrInvalid", err)
	}
	want := []string{
		path + `:1: unknown key "foo" (allowed here: switchname, switches, nodes, linkspeed)`,
		path + `:2: switch "s1" already defined on line 1`,
		path + `:3: LinkSpeed "abc" is not a number`,
		path + `:3: switch "s9" is not defined`,
		path + `:4: Nodes: hostlist "a[2-1]": reversed range "2-1"`,
	}
	if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, want) {
		t.Errorf("Load:\n%s\nwant\n%s", err, strings.Join(want, "\n"))
	}
}

// TestParseBoundedWork is the regression test for pathological files that
// took minutes once a parse went on past a bad line: a hostlist that fails
// costs what it expanded before failing, and lines that expand a million
// names each add up. The parse stops reading after more problems than it
// reports (two a line here: a bad hostlist, a switch defined again), and
// once the file's names pass hostlist.MaxHosts in all.
func TestParseBoundedWork(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"SwitchName=s Nodes=n[1-999999],m[5-1]\n", "not read past line 11"},
		{"SwitchName=s Nodes=n[1-999999]\n", "line 2: the file names more than 1000000 nodes and switches in all"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := Parse(strings.NewReader(strings.Repeat(tc.line, 500)))
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("500 lines of %q: %v; want %q", tc.line, err, tc.want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("500 lines of %q: not parsed in 30s", tc.line)
		}
	}
}
