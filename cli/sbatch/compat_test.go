package sbatch

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// docs/compat.md says "accepted, ignored with a warning" of exactly the
// options sbatch ignores with a warning, in sbatch's table and in the row
// of srun outside a job that names those srun passes to sbatch. It said so
// of --comment, which sbatch and srun keep (sacct -o comment, squeue %k).
func TestCompatPageNamesTheIgnoredOptions(t *testing.T) {
	b, err := os.ReadFile("../../docs/compat.md")
	if err != nil {
		t.Fatal(err)
	}
	section := func(heading string) string {
		page := string(b)
		i := strings.Index(page, "\n## "+heading+"\n")
		if i < 0 {
			t.Fatalf("docs/compat.md has no section %q", heading)
		}
		rest := page[i+1:]
		if j := strings.Index(rest[1:], "\n## "); j >= 0 {
			rest = rest[:j+1]
		}
		return rest
	}
	long := regexp.MustCompile("`--([a-z-]+)`")
	ignoredRows := func(text string) map[string]bool {
		out := map[string]bool{}
		for _, line := range strings.Split(text, "\n") {
			cols := strings.Split(line, " | ")
			if len(cols) < 2 || !strings.HasPrefix(line, "| `") || !strings.HasPrefix(cols[1], "accepted, ignored with a warning") {
				continue
			}
			for _, m := range long.FindAllStringSubmatch(cols[0], -1) {
				out[m[1]] = true
			}
		}
		return out
	}
	documented := ignoredRows(section("sbatch (and `#SBATCH` lines)"))
	for name := range ignored {
		if !documented[name] {
			t.Errorf("docs/compat.md, sbatch: --%s is ignored with a warning, and its row does not say so", name)
		}
	}
	for name := range documented {
		if _, ok := ignored[name]; !ok {
			t.Errorf("docs/compat.md, sbatch: --%s is said to be ignored with a warning; sbatch takes it", name)
		}
	}
	for name := range ignoredRows(section("srun outside a job")) {
		if _, ok := ignored[name]; !ok {
			t.Errorf("docs/compat.md, srun outside a job: --%s is said to be ignored with a warning, as by sbatch; sbatch takes it", name)
		}
	}
}
