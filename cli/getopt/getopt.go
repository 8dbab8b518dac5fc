// Package getopt parses command lines the way Slurm's commands do
// (getopt_long): short options with attached or separate values (-N2,
// -N 2), grouped short flags (-hN), long options with = or a separate value
// (--nodes=2, --nodes 2), unambiguous long prefixes (--part=gpu), and "--"
// to end the options. The same table parses the command line and #SBATCH
// directives, so both accept exactly the same spellings.
package getopt

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Option describes one option. Long is its canonical name; Short is its
// one-letter alias or zero. HasArg options take a value; OptionalArg ones
// take a value only when it is attached (--nice=10), as getopt_long's
// optional_argument, and give an empty value otherwise.
type Option struct {
	Long        string
	Short       byte
	HasArg      bool
	OptionalArg bool
	Usage       string
}

// Value is one parsed occurrence, named by the option's Long name. Value is
// empty for flags.
type Value struct {
	Name  string
	Value string
}

// Mode says where option parsing stops.
type Mode int

const (
	// StopAtOperand stops at the first non-option argument, as sbatch does
	// (everything after the script belongs to the script).
	StopAtOperand Mode = iota
	// Permute accepts options anywhere, as squeue and scancel do.
	Permute
)

// Parse parses args (without the program name) against opts. It returns the
// options in the order given and the operands.
func Parse(opts []Option, args []string, mode Mode) ([]Value, []string, error) {
	var vals []Value
	var operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return vals, append(operands, args[i+1:]...), nil
		case strings.HasPrefix(a, "--"):
			v, used, err := parseLong(opts, a[2:], args[i+1:])
			if err != nil {
				return nil, nil, err
			}
			vals = append(vals, v)
			i += used
		case len(a) > 1 && a[0] == '-':
			vs, used, err := parseShort(opts, a[1:], args[i+1:])
			if err != nil {
				return nil, nil, err
			}
			vals = append(vals, vs...)
			i += used
		case mode == StopAtOperand:
			return vals, append(operands, args[i:]...), nil
		default:
			operands = append(operands, a)
		}
	}
	return vals, operands, nil
}

// parseLong parses "name" or "name=value"; rest is what follows on the
// command line. used counts the arguments taken from rest.
func parseLong(opts []Option, s string, rest []string) (v Value, used int, err error) {
	name, val, hasVal := strings.Cut(s, "=")
	o, err := lookupLong(opts, name)
	if err != nil {
		return Value{}, 0, err
	}
	switch {
	case o.OptionalArg:
		return Value{Name: o.Long, Value: val}, 0, nil
	case !o.HasArg && hasVal:
		return Value{}, 0, fmt.Errorf("option '--%s' doesn't allow an argument", o.Long)
	case !o.HasArg:
		return Value{Name: o.Long}, 0, nil
	case hasVal:
		return Value{Name: o.Long, Value: val}, 0, nil
	case len(rest) == 0:
		return Value{}, 0, fmt.Errorf("option '--%s' requires an argument", o.Long)
	}
	return Value{Name: o.Long, Value: rest[0]}, 1, nil
}

func lookupLong(opts []Option, name string) (Option, error) {
	var match []Option
	for _, o := range opts {
		if o.Long == name {
			return o, nil
		}
		if name != "" && strings.HasPrefix(o.Long, name) {
			match = append(match, o)
		}
	}
	switch len(match) {
	case 1:
		return match[0], nil
	case 0:
		return Option{}, fmt.Errorf("unrecognized option '--%s'", printable(name))
	}
	names := make([]string, len(match))
	for i, o := range match {
		names[i] = "--" + o.Long
	}
	return Option{}, fmt.Errorf("option '--%s' is ambiguous; possibilities: %s", printable(name), strings.Join(names, " "))
}

// parseShort parses a group of short options ("hN", "N2", "t").
func parseShort(opts []Option, s string, rest []string) (vals []Value, used int, err error) {
	for j := 0; j < len(s); j++ {
		o, ok := lookupShort(opts, s[j])
		if !ok {
			return nil, 0, fmt.Errorf("invalid option -- '%s'", printable(string(rune(s[j]))))
		}
		if !o.HasArg {
			vals = append(vals, Value{Name: o.Long})
			continue
		}
		if j+1 < len(s) {
			return append(vals, Value{Name: o.Long, Value: s[j+1:]}), 0, nil
		}
		if len(rest) == 0 {
			return nil, 0, fmt.Errorf("option requires an argument -- '%c'", s[j])
		}
		return append(vals, Value{Name: o.Long, Value: rest[0]}), 1, nil
	}
	return vals, 0, nil
}

func lookupShort(opts []Option, c byte) (Option, bool) {
	for _, o := range opts {
		if o.Short == c {
			return o, true
		}
	}
	return Option{}, false
}

// Usage lists the options, one per line, for --help.
func Usage(opts []Option) string {
	var b strings.Builder
	for _, o := range opts {
		flag := "    "
		if o.Short != 0 {
			flag = fmt.Sprintf("-%c, ", o.Short)
		}
		flag += "--" + o.Long
		switch {
		case o.HasArg:
			flag += "=VALUE"
		case o.OptionalArg:
			flag += "[=VALUE]"
		}
		fmt.Fprintf(&b, "  %-28s %s\n", flag, o.Usage)
	}
	return b.String()
}

// printable is s for an error message of one line: a character that does
// not print (a newline, a control byte) is written as Go escapes it (\n,
// \x01), the rest as it is, as getopt prints it.
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsPrint(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}
