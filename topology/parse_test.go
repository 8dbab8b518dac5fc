package topology

import (
	"errors"
	"fmt"
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
