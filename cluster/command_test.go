package cluster

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCommandAsSlurmShowsIt(t *testing.T) {
	for _, c := range []struct {
		path string
		args []string
		want string
	}{
		{"/home/u/train.sh", []string{"a1", "--lr=3"}, "/home/u/train.sh a1 --lr=3"},
		{"/home/u/train.sh", nil, "/home/u/train.sh"},
		{"", nil, "(null)"}, // --wrap, or a script on standard input
	} {
		if got := CommandLine(c.path, c.args); got != c.want {
			t.Errorf("CommandLine(%q, %q) = %q, want %q", c.path, c.args, got, c.want)
		}
	}
}

func TestCheckCommand(t *testing.T) {
	long := strings.Repeat("x", MaxEnvVarBytes)
	many := make([]string, MaxScriptArgs+1)
	for _, c := range []struct {
		name    string
		path    string
		args    []string
		line    string
		comment string
		want    string // "" for none
	}{
		{"fine", "/a/b.sh", []string{"x", "", "y z"}, "sbatch b.sh x  y z", "", ""},
		{"nul", "/a", []string{"ok", "a\x00b"}, "", "", "script argument 2 holds a NUL byte"},
		{"utf8", "/a", []string{"\xff"}, "", "", "script argument 1 is not valid UTF-8"},
		{"one too long", "/a", []string{long}, "", "", "script argument 1 is 131073 bytes"},
		{"too many", "/a", many, "", "", "10001 script arguments, over the limit of 10000"},
		{"too much", "/a", []string{long[:100000], long[:100000], long[:100000]}, "", "", "the script arguments are 300003 bytes"},
		{"path", "/" + strings.Repeat("p", MaxScriptPath), nil, "", "", "script path of 4097 bytes"},
		{"line", "/a", nil, strings.Repeat("l", MaxSubmitLine+1), "", "submit line of 65537 bytes"},
		{"comment", "/a", nil, "", strings.Repeat("c", MaxComment+1), "--comment of 65537 bytes"},
	} {
		err := CheckCommand(c.path, c.args, c.line, c.comment)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrInvalid)):
			t.Errorf("%s: got %v, want an invalid-argument error with %q", c.name, err, c.want)
		}
	}
}

func TestSubmitLineOfCutsLongLines(t *testing.T) {
	if got := SubmitLineOf([]string{"sbatch", "-N2", "job.sh", "a b"}); got != "sbatch -N2 job.sh a b" {
		t.Errorf("got %q", got)
	}
	long := SubmitLineOf([]string{"sbatch", strings.Repeat("é", MaxSubmitLine)})
	if len(long) > MaxSubmitLine || !utf8.ValidString(long) || !strings.HasSuffix(long, "...") {
		t.Errorf("cut line: %d bytes, valid %v, ends %q", len(long), utf8.ValidString(long), long[len(long)-5:])
	}
	if err := CheckCommand("", nil, long, ""); err != nil {
		t.Errorf("the cut line is refused: %v", err)
	}
	if got := SubmitLineOf([]string{"sbatch", "\xff"}); !utf8.ValidString(got) {
		t.Errorf("invalid UTF-8 kept: %q", got)
	}
}

func TestCheckJobName(t *testing.T) {
	for name, want := range map[string]string{
		"train-llm ジョブ":          "",
		strings.Repeat("x", 256): "",
		"a\x00b":                 "holds a NUL byte",
		"a\rb":                   "holds a line break",
		strings.Repeat("x", 257): "job name of 257 bytes: at most 256",
	} {
		err := CheckJobName(name)
		if (want == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), want) || !errors.Is(err, ErrInvalid))) {
			t.Errorf("CheckJobName(%.20q): %v, want %q", name, err, want)
		}
	}
}
