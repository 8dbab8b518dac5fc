package config

import (
	"strconv"
	"strings"
	"time"
)

// minJobAge parses MinJobAge=SECONDS.
func (p *parser) minJobAge(file string, num int, kv pair) {
	if !p.once(file, num, kv, kv.lower) {
		return
	}
	n, err := strconv.ParseInt(kv.Value, 10, 64)
	if err != nil || n < 0 || n > int64(maxDuration/time.Second) {
		p.errorf(file, num, "%s=%s: want whole seconds, e.g. %s=300 (0: finished jobs leave the view at once)", kv.Key, kv.Value, kv.Key)
		return
	}
	p.cfg.MinJobAge = time.Duration(n) * time.Second
}

// maxDuration is the longest time.Duration.
const maxDuration = time.Duration(1<<63 - 1)

// purgeUnits are slurmdbd's units of a purge age; a bare number is months.
var purgeUnits = []struct {
	name string
	d    time.Duration
}{
	{"hour", time.Hour},
	{"day", 24 * time.Hour},
	{"month", 30 * 24 * time.Hour},
}

// purgeAfter parses PurgeJobAfter=N[hours|days|months] (or another purge
// key of slurmdbd.conf) into dst as slurmdbd.conf does: a bare number is
// months; a month is 30 days.
func (p *parser) purgeAfter(file string, num int, kv pair, dst *time.Duration) {
	if !p.once(file, num, kv, kv.lower) {
		return
	}
	v := kv.Value
	digits := strings.TrimLeft(v, "0123456789")
	number, unit := v[:len(v)-len(digits)], strings.ToLower(digits)
	per := time.Duration(0)
	if unit == "" {
		per = purgeUnits[len(purgeUnits)-1].d
	}
	for _, u := range purgeUnits {
		if unit == u.name || unit == u.name+"s" {
			per = u.d
		}
	}
	n, err := strconv.ParseInt(number, 10, 64)
	if per == 0 || err != nil || n < 1 || n > int64(maxDuration/per) {
		p.errorf(file, num, "%s=%s: want a positive number of hours, days or months, e.g. %s=30days (a bare number is months)", kv.Key, v, kv.Key)
		return
	}
	*dst = time.Duration(n) * per
}
