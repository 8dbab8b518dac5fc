package sbatch

import (
	"fmt"
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// exportEnv builds the job's environment, NAME=VALUE by name, from
// --export and the submitter's environment: "" and ALL export everything,
// NONE nothing, and a comma list of VAR (taken from the submitter) and
// VAR=value entries exports just those, or those on top of everything when
// the list contains ALL.
func exportEnv(spec string, environ []string) ([]string, error) {
	own := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			own[k] = v
		}
	}
	out := map[string]string{}
	if spec == "" {
		spec = "ALL"
	}
	items := strings.Split(spec, ",")
	for _, it := range items {
		if it == "ALL" {
			for k, v := range own {
				out[k] = v
			}
		}
	}
	for _, it := range items {
		switch k, v, hasVal := strings.Cut(it, "="); {
		case it == "ALL" || it == "NONE":
		case k == "":
			return nil, fmt.Errorf("empty variable name: write ALL, NONE or VAR[=value],...")
		case hasVal:
			out[k] = v
		default:
			if val, ok := own[k]; ok {
				out[k] = val
			}
		}
	}
	return cluster.Environ(out), nil
}
