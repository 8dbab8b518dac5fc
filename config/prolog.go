package config

import (
	"strconv"
	"strings"
	"time"
)

// prolog parses Slurm's Prolog (comma-separated programs) and
// PrologEpilogTimeout into cfg.Prolog.
func (p *parser) prolog(file string, num int, kv pair) {
	if !p.once(file, num, kv, kv.lower) {
		return
	}
	pr := &p.cfg.Prolog
	switch kv.lower {
	case "prolog":
		pr.Programs = nil
		for _, prog := range strings.Split(kv.Value, ",") {
			if prog = strings.TrimSpace(prog); prog != "" {
				pr.Programs = append(pr.Programs, prog)
			}
		}
		if err := pr.Validate(); err != nil {
			p.errorf(file, num, "%v", err)
		}
	case "prologepilogtimeout":
		n, err := strconv.ParseInt(kv.Value, 10, 64)
		if err != nil || n < 0 || n > int64(maxDuration/time.Second) {
			p.errorf(file, num, "%s=%s: want whole seconds, e.g. %s=300 (0: the default, 300)", kv.Key, kv.Value, kv.Key)
			return
		}
		pr.Timeout = time.Duration(n) * time.Second
	}
}
