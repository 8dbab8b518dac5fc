package cli

import (
	"testing"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// sshare prints Slurm's columns: root with all the usage, each account one
// space in, a user's jobs without an account on a line of the user's (not
// to be taken for root's); -A keeps some accounts, -P and -p separate
// with |.
func TestFormatSshare(t *testing.T) {
	resp := &phalanxv1.GetFairShareResponse{Weight: 10000, HalfLifeSeconds: 604800, Accounts: []*phalanxv1.AccountShare{
		{Account: "ml", RawShares: 1, NormShares: 0.5, RawUsage: 28800, EffectiveUsage: 0.8, FairShare: 0.329877, Priority: 3299},
		{Account: "vision", RawShares: 1, NormShares: 0.5, RawUsage: 7200, EffectiveUsage: 0.2, FairShare: 0.757858, Priority: 7579},
		{User: "root", RawShares: 1, NormShares: 0.333333, FairShare: 1, Priority: 10000},
	}}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "" +
			"Account              User        RawShares  NormShares    RawUsage  EffectvUsage  FairShare\n" +
			"-------------------- ---------- ---------- ----------- ----------- ------------- ----------\n" +
			"root                                          0.000000       36000      1.000000\n" +
			" ml                                      1    0.500000       28800      0.800000   0.329877\n" +
			" vision                                  1    0.500000        7200      0.200000   0.757858\n" +
			"                     root                1    0.333333           0      0.000000   1.000000\n"},
		{[]string{"-n", "-P", "-A", "vision"}, "root|||0.000000|36000|1.000000|\n vision||1|0.500000|7200|0.200000|0.757858\n"},
		{[]string{"-n", "-p", "-A", "ml"}, "root|||0.000000|36000|1.000000||\n ml||1|0.500000|28800|0.800000|0.329877|\n"},
	} {
		v, err := parseSshare(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatSshare(resp, v); got != tc.want {
			t.Errorf("sshare %q:\n%s\nwant:\n%s", tc.args, got, tc.want)
		}
	}
	if _, err := parseSshare([]string{"ml"}); err == nil {
		t.Error("sshare with an operand: no error")
	}
}
