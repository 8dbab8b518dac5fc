package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/phalanx-hpc/phalanx/cli/getopt"
	"github.com/phalanx-hpc/phalanx/cli/sbatch"
)

// docs/compat.md lists every option of every command in that command's
// section: a new option without its line there fails here.
func TestCompatPageListsEveryOption(t *testing.T) {
	b, err := os.ReadFile("../docs/compat.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	section := func(heading string) string {
		i := strings.Index(page, "\n## "+heading)
		if i < 0 {
			t.Fatalf("docs/compat.md has no section %q", heading)
		}
		rest := page[i+4:]
		if j := strings.Index(rest, "\n## "); j >= 0 {
			rest = rest[:j]
		}
		return rest
	}
	for _, c := range []struct {
		heading string
		opts    []getopt.Option
	}{
		{"sbatch", sbatch.Options}, {"squeue", squeueOptions}, {"sinfo", sinfoOptions},
		{"scancel", scancelOptions}, {"sacct", sacctOptions}, {"sshare", sshareOptions}, {"srun outside a job", srunOptions()}, {"scontrol", scontrolOptions},
	} {
		text := section(c.heading)
		for _, o := range c.opts {
			if !strings.Contains(text, "`--"+o.Long+"`") {
				t.Errorf("docs/compat.md, section %s: no line for --%s", c.heading, o.Long)
			}
			if o.Short != 0 && !strings.Contains(text, "`-"+string(o.Short)+"`") {
				t.Errorf("docs/compat.md, section %s: -%c (--%s) is not named", c.heading, o.Short, o.Long)
			}
		}
	}
}
