package config

import (
	"regexp"
	"strings"
)

// Who may do what. DisableRootJobs=YES|NO is Slurm's key. Slurm keeps
// administrator and operator levels in its accounting database
// (sacctmgr ... AdminLevel=); Phalanx has none, so its config lists them:
// AdminUsers=alice,bob and OperatorUsers=carol (user names, comma
// separated; root and the controller's own user are always
// administrators).

// userName is what a user list may hold: POSIX-portable user names.
var userName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*\$?$`)

// disableRootJobs parses DisableRootJobs=YES|NO.
func (p *parser) disableRootJobs(file string, num int, kv pair) {
	if !p.once(file, num, kv, kv.lower) {
		return
	}
	switch strings.ToUpper(kv.Value) {
	case "YES":
		p.cfg.DisableRootJobs = true
	case "NO":
		p.cfg.DisableRootJobs = false
	default:
		p.errorf(file, num, "%s=%s: write YES or NO", kv.Key, kv.Value)
	}
}

// users parses a comma-separated list of user names into dst.
func (p *parser) users(file string, num int, kv pair, dst *[]string) {
	if !p.once(file, num, kv, kv.lower) {
		return
	}
	for _, u := range strings.Split(kv.Value, ",") {
		if !userName.MatchString(u) {
			p.errorf(file, num, "%s=%s: %q is not a user name: list names separated by commas, e.g. %s=alice,bob", kv.Key, kv.Value, u, kv.Key)
			return
		}
		*dst = append(*dst, u)
	}
}

// privateData parses PrivateData=jobs[,...] (Slurm's). Phalanx hides jobs
// only; the other kinds Slurm knows are accepted with a warning.
func (p *parser) privateData(file string, num int, kv pair) {
	if !p.once(file, num, kv, kv.lower) {
		return
	}
	for _, v := range strings.Split(kv.Value, ",") {
		switch strings.ToLower(v) {
		case "jobs":
			p.cfg.PrivateJobs = true
		case "accounts", "cloud", "events", "nodes", "partitions", "reservations", "usage", "users":
			p.warnOnce("privatedata:"+strings.ToLower(v), file, num, "PrivateData=%s: Phalanx hides jobs only, not %s", v, v)
		default:
			p.errorf(file, num, "%s=%s: %q is not a kind of data: write jobs (Slurm also knows accounts, events, nodes, partitions, reservations, usage, users)", kv.Key, kv.Value, v)
			return
		}
	}
}
