package getopt

import (
	"fmt"
	"strings"
	"testing"
)

var testOpts = []Option{
	{Long: "nodes", Short: 'N', HasArg: true},
	{Long: "noheader", Short: 'h'},
	{Long: "partition", Short: 'p', HasArg: true},
	{Long: "parsable"},
	{Long: "time", Short: 't', HasArg: true},
	{Long: "nice", OptionalArg: true},
}

func render(vals []Value, ops []string) string {
	var parts []string
	for _, v := range vals {
		parts = append(parts, fmt.Sprintf("%s=%q", v.Name, v.Value))
	}
	return strings.Join(parts, " ") + " | " + strings.Join(ops, " ")
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args string
		mode Mode
		want string
	}{
		{"-N2 -t 30 x.sh -N 3", StopAtOperand, `nodes="2" time="30" | x.sh -N 3`},
		{"--nodes=2 --time 1:00 x.sh", StopAtOperand, `nodes="2" time="1:00" | x.sh`},
		{"-hN 4", StopAtOperand, `noheader="" nodes="4" | `},
		{"-hN4", StopAtOperand, `noheader="" nodes="4" | `},
		{"--part=gpu --parsable", StopAtOperand, `partition="gpu" parsable="" | `},
		{"--partition= x", StopAtOperand, `partition="" | x`},
		{"a -h b", Permute, `noheader="" | a b`},
		{"-- -h", Permute, ` | -h`},
		{"- -h", Permute, `noheader="" | -`},
		{"--nice x", StopAtOperand, `nice="" | x`},
		{"--nice=5 x", StopAtOperand, `nice="5" | x`},
	} {
		vals, ops, err := Parse(testOpts, strings.Fields(tc.args), tc.mode)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if got := render(vals, ops); got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.args, got, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"--bogus", "unrecognized option '--bogus'"},
		{"-x", "invalid option -- 'x'"},
		{"--pa=x", "option '--pa' is ambiguous; possibilities: --partition --parsable"},
		{"--nodes", "option '--nodes' requires an argument"},
		{"-N", "option requires an argument -- 'N'"},
		{"--parsable=yes", "option '--parsable' doesn't allow an argument"},
		{"--=1", "unrecognized option '--'"},
	} {
		_, _, err := Parse(testOpts, strings.Fields(tc.args), Permute)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: got error %v, want %q", tc.args, err, tc.want)
		}
	}
	// An option that does not print is escaped: an error is one line.
	for arg, want := range map[string]string{
		"-\n":           `invalid option -- '\n'`,
		"--bo\x01gus\n": `unrecognized option '--bo\x01gus\n'`,
		"--p\ta":        `unrecognized option '--p\ta'`,
	} {
		if _, _, err := Parse(testOpts, []string{arg}, Permute); err == nil || err.Error() != want {
			t.Errorf("%q: got error %v, want %q", arg, err, want)
		}
	}
}

func TestUsage(t *testing.T) {
	u := Usage(testOpts)
	if !strings.Contains(u, "-N, --nodes=VALUE") || !strings.Contains(u, "    --parsable") {
		t.Errorf("usage:\n%s", u)
	}
}
