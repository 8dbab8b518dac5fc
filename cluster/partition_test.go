package cluster

import "testing"

// AllowAccounts, when set, alone decides: as in Slurm, DenyAccounts is
// not enforced then, even for an account both list.
func TestPartitionAdmits(t *testing.T) {
	for _, tc := range []struct {
		allow, deny []string
		account     string
		want        bool
	}{
		{nil, nil, "ml", true},
		{nil, []string{"guest"}, "guest", false},
		{nil, []string{"guest"}, "ml", true},
		{[]string{"ml"}, nil, "ml", true},
		{[]string{"ml"}, nil, "guest", false},
		{[]string{"ml"}, []string{"ml"}, "ml", true},
		{[]string{"ml"}, []string{"guest"}, "guest", false},
	} {
		p := &Partition{Name: "gpu", AllowAccounts: tc.allow, DenyAccounts: tc.deny}
		if got := p.Admits(tc.account); got != tc.want {
			t.Errorf("AllowAccounts=%v DenyAccounts=%v: Admits(%q) = %v; want %v", tc.allow, tc.deny, tc.account, got, tc.want)
		}
	}
}
