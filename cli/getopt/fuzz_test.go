package getopt

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzParse parses command lines (arguments separated by newlines) in both
// modes. A parse gives values or an error, never both; every value names
// a known option and only options that take a value have one; with
// StopAtOperand the operands are the arguments after the options, as
// given; and writing the values back as --name=value (--name for a flag)
// parses to the same values.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"-N2\n-t\n30\nx.sh\n-N\n3", "--nodes=2\n--time\n1:00\nx.sh", "-hN\n4", "-hN4", "--part=gpu\n--parsable",
		"--partition=\nx", "a\n-h\nb", "--\n-h", "-\n-h", "--nice\n--nice=10", "--p=x", "--bogus", "-x", "-N",
		"--noheader=1", "--nodes",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, line string, permute bool) {
		args := strings.Split(line, "\n")
		mode := StopAtOperand
		if permute {
			mode = Permute
		}
		vals, ops, err := Parse(testOpts, args, mode)
		if err != nil {
			if vals != nil || ops != nil || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Parse(%q) = %v, %q, %q", args, vals, ops, err)
			}
			return
		}
		checkValues(t, args, vals)
		if mode == StopAtOperand && len(ops) > 0 && !reflect.DeepEqual(args[len(args)-len(ops):], ops) {
			t.Fatalf("Parse(%q): operands %q are not the tail of the arguments", args, ops)
		}
		var back []string
		for _, v := range vals {
			if o, _ := lookupLong(testOpts, v.Name); o.HasArg || o.OptionalArg && v.Value != "" {
				back = append(back, "--"+v.Name+"="+v.Value)
			} else {
				back = append(back, "--"+v.Name)
			}
		}
		again, _, err := Parse(testOpts, back, mode)
		if err != nil || !reflect.DeepEqual(again, vals) && len(vals) > 0 {
			t.Fatalf("Parse(%q) = %v; written back as %q: %v, %v", args, vals, back, again, err)
		}
	})
}

func checkValues(t *testing.T, args []string, vals []Value) {
	t.Helper()
	for _, v := range vals {
		o, err := lookupLong(testOpts, v.Name)
		if err != nil || o.Long != v.Name {
			t.Fatalf("Parse(%q): value for unknown option %q", args, v.Name)
		}
		if !o.HasArg && !o.OptionalArg && v.Value != "" {
			t.Fatalf("Parse(%q): flag --%s has value %q", args, v.Name, v.Value)
		}
	}
}
