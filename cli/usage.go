package cli

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// A command whose flags urfave/cli parses (phx sim, phx dev, ...) prints,
// on a bad flag, "Incorrect Usage" and its whole help unless it has an
// OnUsageError. onUsageErrors gives every such command one that makes the
// flag package's message one line: what is wrong and what to do.

// The flag package's messages, the only form its errors take.
var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	badFlagValue  = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-+([^:]*): (.*)$`)
	missingValue  = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
)

// onUsageErrors sets OnUsageError on cmds and their subcommands where
// none is set; parent is the words before them ("phx", "phx sim").
func onUsageErrors(parent string, cmds []*ucli.Command) {
	for _, c := range cmds {
		path := parent + " " + c.Name
		if c.OnUsageError == nil && !c.SkipFlagParsing {
			c.OnUsageError = usageErrorFunc(path, c.Flags)
		}
		onUsageErrors(path, c.Subcommands)
	}
}

// nameErrors makes the errors of the commands' actions (and their
// subcommands') name their command, as a bad flag's do: "sim: error: ...",
// "dev start: error: ...", not "phx: error: ...". An error that already
// says how it is printed is left as it is.
func nameErrors(parent string, cmds []*ucli.Command) {
	for _, c := range cmds {
		path := parent + " " + c.Name
		if act := c.Action; act != nil {
			name := strings.TrimPrefix(path, "phx ")
			c.Action = func(ctx *ucli.Context) error {
				err := act(ctx)
				var ce *cmdError
				var re *rawError
				var st *exitStatus
				if err == nil || errors.As(err, &ce) || errors.As(err, &re) || errors.As(err, &st) {
					return err
				}
				return &cmdError{cmd: name, err: err}
			}
		}
		nameErrors(path, c.Subcommands)
	}
}

// usageErrorFunc reports a bad flag of the command path ("phx sim ettr")
// as "sim ettr: error: ...".
func usageErrorFunc(path string, flags []ucli.Flag) ucli.OnUsageErrorFunc {
	name := strings.TrimPrefix(path, "phx ")
	return func(_ *ucli.Context, err error, _ bool) error {
		return &cmdError{cmd: name, err: flagError(path, flags, err)}
	}
}

// flagError rewords a flag parsing error of the command path.
func flagError(path string, flags []ucli.Flag, err error) error {
	msg := err.Error()
	if m := undefinedFlag.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("unknown option %s: run %s --help", dashed(m[1]), path)
	}
	if m := badFlagValue.FindStringSubmatch(msg); m != nil {
		given := dashed(m[2]) + " " + m[1]
		if strings.HasPrefix(msg, "invalid boolean") { // a boolean's value comes after "="
			given = dashed(m[2]) + "=" + m[1]
		}
		if want := wantValue(flags, m[2]); want != "" && !strings.Contains(m[3], "out of range") {
			return fmt.Errorf("%s: %s", given, want)
		}
		return fmt.Errorf("%s: %s", given, m[3])
	}
	if m := missingValue.FindStringSubmatch(msg); m != nil {
		if want := wantValue(flags, m[1]); want != "" {
			return fmt.Errorf("%s needs a value: %s", dashed(m[1]), want)
		}
		return fmt.Errorf("%s needs a value: run %s --help", dashed(m[1]), path)
	}
	return fmt.Errorf("%s: run %s --help", msg, path)
}

// dashed is a flag's name as it is typed: -x, --name.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// wantValue says what the flag called name takes; "" when it cannot say.
func wantValue(flags []ucli.Flag, name string) string {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			switch f.(type) {
			case *ucli.DurationFlag:
				return "want a duration such as 30s, 5m or 1h30m"
			case *ucli.IntFlag, *ucli.Int64Flag:
				return "want a whole number"
			case *ucli.UintFlag, *ucli.Uint64Flag:
				return "want a whole number, 0 or more"
			case *ucli.Float64Flag:
				return "want a number such as 0.5"
			case *ucli.BoolFlag:
				return "want true or false"
			}
			return ""
		}
	}
	return ""
}
