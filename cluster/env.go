package cluster

import (
	"slices"
	"strings"
)

// Environ returns env as NAME=VALUE strings, sorted by name; nil for an
// empty env.
func Environ(env map[string]string) []string {
	if len(env) == 0 {
		return nil
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	slices.Sort(names)
	out := make([]string, len(names))
	for i, k := range names {
		out[i] = k + "=" + env[k]
	}
	return out
}

// EnvOf is an environment sent in either form: its NAME=VALUE list when
// there is one, else the map the first release sent.
func EnvOf(list []string, legacy map[string]string) map[string]string {
	if len(list) > 0 {
		return EnvMap(list)
	}
	return legacy
}

// EnvironOf is EnvOf as a NAME=VALUE list: the list as it came, else the
// map's, by name.
func EnvironOf(list []string, legacy map[string]string) []string {
	if len(list) > 0 {
		return list
	}
	return Environ(legacy)
}

// EnvMap reads NAME=VALUE strings (a later NAME wins; an entry without =
// is a NAME with an empty value); nil for none.
func EnvMap(list []string) map[string]string {
	if len(list) == 0 {
		return nil
	}
	out := make(map[string]string, len(list))
	for _, kv := range list {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = v
	}
	return out
}
