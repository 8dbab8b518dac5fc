package config

import (
	"regexp"
	"strconv"
	"strings"
	"time"
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

// RateLimit is Slurm's per-user limit on calls to the controller
// (SlurmctldParameters=rl_enable,rl_bucket_size=N,rl_refill_rate=N,
// rl_refill_period=SECONDS,rl_table_size=N); Bucket is zero when it is
// off.
type RateLimit struct {
	Bucket, Refill, Table int
	Period                time.Duration
}

// Slurm's defaults for the rl_* options.
const (
	defaultRateBucket = 30
	defaultRateRefill = 2
	defaultRatePeriod = time.Second
	defaultRateTable  = 8192
)

// slurmctldParameters reads the rate limit from SlurmctldParameters; the
// other options there are accepted with a warning.
func (p *parser) slurmctldParameters(file string, num int, kv pair) {
	if !p.once(file, num, kv, kv.lower) {
		return
	}
	rl := RateLimit{Bucket: defaultRateBucket, Refill: defaultRateRefill, Period: defaultRatePeriod, Table: defaultRateTable}
	enabled := false
	for _, opt := range strings.Split(kv.Value, ",") {
		name, val, hasVal := strings.Cut(opt, "=")
		var dst *int
		switch strings.ToLower(name) {
		case "rl_enable":
			enabled = true
			continue
		case "rl_bucket_size":
			dst = &rl.Bucket
		case "rl_refill_rate":
			dst = &rl.Refill
		case "rl_table_size":
			dst = &rl.Table
		case "rl_refill_period":
			var secs int
			if n, err := strconv.Atoi(val); err == nil && n >= 1 && hasVal {
				secs = n
			} else {
				p.errorf(file, num, "%s: rl_refill_period=%s: give whole seconds, 1 or more", kv.Key, val)
				return
			}
			rl.Period = time.Duration(secs) * time.Second
			continue
		default:
			p.warnOnce("slurmctldparameters:"+strings.ToLower(name), file, num, "%s=%s: %s is not used by Phalanx; ignored", kv.Key, kv.Value, name)
			continue
		}
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > 1<<20 || !hasVal {
			p.errorf(file, num, "%s: %s=%s: give a whole number from 1 to %d", kv.Key, name, val, 1<<20)
			return
		}
		*dst = n
	}
	if enabled {
		p.cfg.RateLimit = rl
	}
}
