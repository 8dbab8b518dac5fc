package controller

import (
	"strings"
	"testing"
	"time"
)

// A negative duration in the controller's settings is a mistake, refused
// with one line that names it, where it used to be taken: a negative
// --heartbeat-interval passed the lease check, a negative --kill-grace
// reached the agents, a negative --min-hang-timeout let any hang
// timeout through.
func TestNegativeDurationsRefused(t *testing.T) {
	for name, edit := range map[string]func(*Config){
		"HeartbeatInterval": func(c *Config) { c.HeartbeatInterval = -time.Second },
		"KillGrace":         func(c *Config) { c.KillGrace = -time.Second },
		"PreemptGrace":      func(c *Config) { c.PreemptGrace = -time.Second },
		"MinHangTimeout":    func(c *Config) { c.MinHangTimeout = -5 * time.Second },
	} {
		c := Config{DataDir: t.TempDir(), Insecure: true}
		edit(&c)
		if _, err := c.withDefaults(); err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "negative") {
			t.Errorf("%s negative: %v; want it refused by name", name, err)
		}
	}
}
