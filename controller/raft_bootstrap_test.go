package controller

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
)

// TestBootstrapConfigIsTheSameOnEveryReplica: replicas started together
// from the same ControllerHost lines form the same configuration, in the
// lines' order, whichever of them they are; each used to put itself
// first, so that scontrol ping and show controllers listed the members in
// another order depending on the replica that answered. A replica the
// peers leave out comes first.
func TestBootstrapConfigIsTheSameOnEveryReplica(t *testing.T) {
	peers := []string{"ctl1=10.0.0.1:7819", "ctl2=10.0.0.2:7819", "ctl3=10.0.0.3:7819"}
	for _, tc := range []struct {
		self, addr, want string
	}{
		{"ctl1", "10.0.0.1:7819", "[ctl1@10.0.0.1:7819 ctl2@10.0.0.2:7819 ctl3@10.0.0.3:7819]"},
		{"ctl2", "10.0.0.2:7819", "[ctl1@10.0.0.1:7819 ctl2@10.0.0.2:7819 ctl3@10.0.0.3:7819]"},
		{"ctl3", "10.0.0.3:7819", "[ctl1@10.0.0.1:7819 ctl2@10.0.0.2:7819 ctl3@10.0.0.3:7819]"},
		{"ctl0", "10.0.0.9:7819", "[ctl0@10.0.0.9:7819 ctl1@10.0.0.1:7819 ctl2@10.0.0.2:7819 ctl3@10.0.0.3:7819]"},
	} {
		conf, err := bootstrapConfig(raft.ServerID(tc.self), raft.ServerAddress(tc.addr), peers)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, srv := range conf.Servers {
			if srv.Suffrage != raft.Voter {
				t.Errorf("%s: %s is not a voter", tc.self, srv.ID)
			}
			got = append(got, fmt.Sprintf("%s@%s", srv.ID, srv.Address))
		}
		if fmt.Sprint(got) != tc.want {
			t.Errorf("bootstrap of %s: %v, want %s", tc.self, got, tc.want)
		}
	}
}
