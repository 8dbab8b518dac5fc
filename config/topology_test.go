package config

import "testing"

func TestTopologyPath(t *testing.T) {
	for _, tc := range []struct {
		plugin, file, want string
	}{
		{"", "", ""},
		{"topology/flat", "", ""},
		{"topology/tree", "", "/etc/slurm/topology.conf"},
		{"topology/block", "", "/etc/slurm/topology.conf"},
		{"topology/tree", "net/topo.conf", "/etc/slurm/net/topo.conf"},
		{"", "/opt/topo.conf", "/opt/topo.conf"},
	} {
		c := &Config{TopologyPlugin: tc.plugin, TopologyFile: tc.file}
		if got := c.TopologyPath("/etc/slurm/slurm.conf"); got != tc.want {
			t.Errorf("TopologyPlugin=%q TopologyFile=%q: %q, want %q", tc.plugin, tc.file, got, tc.want)
		}
	}
}
