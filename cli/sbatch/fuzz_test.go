package sbatch

import (
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// fuzzEnv is the submitter of the fuzz targets: the script is what any
// file name reads.
func fuzzEnv(script string) Env {
	return Env{
		User: "alice", UID: 1000, GID: 100, Cwd: "/home/alice/run",
		Environ:  []string{"HOME=/home/alice", "PATH=/usr/bin", "EMPTY="},
		ReadFile: func(string) ([]byte, error) { return []byte(script), nil },
	}
}

// FuzzParse parses a command line (split as a shell would) and a script.
// A parse gives a request or an error, never both; the error is one line;
// the request can be sent (it marshals: every string is UTF-8), asks for
// at least one node, nothing negative and no more time than MaxTimeLimit,
// has an absolute working directory and one warning per ignored option at
// most; parsing again gives the same request.
func FuzzParse(f *testing.F) {
	for _, c := range [][2]string{
		{"job.sh", "#!/bin/bash\n#SBATCH -J train -N 2 --gres=gpu:a100:8\n#SBATCH -t 1-00:00:00 -p gpu\nsrun python train.py\n"},
		{"-N4 --job-name eval --time=30 job.sh", "#!/bin/bash\n#SBATCH -J train -N 2\n"},
		{"-D ../out sub/job.sh", "#!/bin/sh\n#SBATCH -o logs/%j.out -e logs/%j.err\n"},
		{"job.sh", "#!/bin/bash\n#SBATCH --job-name=\"my job\" --output='out dir/%j.log'\n#SBATCH -A ml\\ team\n"},
		{"--export=NONE,A=1,HOME job.sh", "#!/bin/sh\n"},
		{"--wrap='hostname; nvidia-smi'", ""},
		{"job.sh", "#!/bin/sh\n#SBATCH --mem=64G --cpus-per-task=16 --gpus-per-task=2 --ntasks-per-node=4\n"},
		{"job.sh", "#!/bin/sh\n#SBATCH -w gpu[001-004] -x gpu[010-012] --switches=1@30:00 --segment=2 -N 4\n"},
		{"job.sh", "#!/bin/sh\n#SBATCH --comment=x\n#SBATCH --comment=x\n#SBATCH --mail-type=END\n"},
		{"--time=999999999 job.sh", "#!/bin/sh\n"},
		{"--mem=99999999999999T job.sh", "#!/bin/sh\n"},
		{"job.sh", "#!/bin/sh\n#SBATCH -J caf\xe9\n"},
		{"-J caf\xe9 job.sh", "#!/bin/sh\n"},
		{"--export=ALL,X=\xff job.sh", "#!/bin/sh\n"},
		{"--array=0-9 job.sh", "#!/bin/sh\n"},
		{"-N 2 --gpus=3 job.sh", "#!/bin/sh\n"},
		{"job.sh", "no shebang\n"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, line, script string) {
		args, err := Split(line)
		if err != nil {
			return
		}
		req, err := Parse(args, fuzzEnv(script))
		if (req == nil) == (err == nil) {
			t.Fatalf("Parse(%q) = %v, %v: want a request or an error", args, req, err)
		}
		if err != nil {
			if strings.Contains(err.Error(), "\n") && err != ErrNotBatchScript {
				t.Fatalf("Parse(%q): error of several lines: %q", args, err)
			}
			return
		}
		if req.Help || req.Version { // no job: nothing is submitted
			return
		}
		checkRequest(t, args, req)
		again, err := Parse(args, fuzzEnv(script))
		if err != nil || !proto.Equal(again.Spec, req.Spec) || !reflect.DeepEqual(again.Warnings, req.Warnings) {
			t.Fatalf("Parse(%q) twice: %v then %v (%v)", args, req.Spec, again, err)
		}
	})
}

func checkRequest(t *testing.T, args []string, req *Request) {
	t.Helper()
	s := req.Spec
	if _, err := proto.Marshal(s); err != nil {
		t.Fatalf("Parse(%q) made a spec that cannot be sent: %v", args, err)
	}
	switch {
	case s.Nodes < 1, s.GpusPerNode < 0, s.CpusPerNode < 0, s.MemoryMb < 0, s.Segment < 0, s.Switches < 0,
		s.TimeLimitSeconds < 0, s.TimeLimitSeconds > int64(cluster.MaxTimeLimit/time.Second),
		s.SwitchesWaitSeconds < 0, s.SwitchesWaitSeconds > int64(cluster.MaxTimeLimit/time.Second):
		t.Fatalf("Parse(%q): out of range: %v", args, s)
	case !strings.HasPrefix(s.WorkDir, "/"):
		t.Fatalf("Parse(%q): working directory %q is not absolute", args, s.WorkDir)
	case len(req.Warnings) > len(ignored):
		t.Fatalf("Parse(%q): %d warnings for %d ignored options", args, len(req.Warnings), len(ignored))
	}
}

// FuzzSplit checks Split against quoting: words quoted back as a shell
// would ('...' with '\” for a quote) split again into the same words.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		`-N 2 --gres=gpu:8`, `--job-name="my job" -o 'out dir/%j'`, `-A ml\ team`, `"a\"b" 'c' d\`,
		`-N 2 # a comment`, `"unterminated`, `'unterminated`, `a"b"'c'd`, "tab\tsep\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := Split(s)
		if err != nil {
			if words != nil || strings.Contains(err.Error(), "\n") && !strings.Contains(s, "\n") {
				t.Fatalf("Split(%q) = %q, %v", s, words, err)
			}
			return
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		back, err := Split(strings.Join(quoted, " "))
		if err != nil || !reflect.DeepEqual(back, words) && len(words) > 0 {
			t.Fatalf("Split(%q) = %q; quoted back and split again: %q, %v", s, words, back, err)
		}
	})
}

// FuzzParseMem checks --mem against exact arithmetic: N, NK (rounded up
// to a megabyte), NM, NG and NT in megabytes, an error when the size does
// not fit an int64, and never a negative size.
func FuzzParseMem(f *testing.F) {
	for _, s := range []string{"4096", "500M", "64G", "1T", "1k", "1025K", "0", "-1", "G", "",
		"9223372036854775807", "9223372036854775807K", "8796093022208T", "8796093022207T", "99999999999999T", "1.5G"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mb, err := parseMem(s)
		want, ok := memOracle(s)
		switch {
		case err != nil && mb != 0:
			t.Fatalf("parseMem(%q) = %d and %v", s, mb, err)
		case err == nil && (!ok || want.Cmp(big.NewInt(mb)) != 0):
			t.Fatalf("parseMem(%q) = %d; want %v (valid: %v)", s, mb, want, ok)
		case err != nil && ok && want.IsInt64():
			t.Fatalf("parseMem(%q): %v; want %v", s, err, want)
		}
	})
}

// memOracle computes a --mem size in megabytes with big integers: digits
// and an optional K, M, G or T in either case.
func memOracle(s string) (*big.Int, bool) {
	num, unit := s, ""
	if n := len(s); n > 0 && strings.ContainsAny(s[n-1:], "kKmMgGtT") {
		num, unit = s[:n-1], strings.ToUpper(s[n-1:])
	}
	if num == "" || strings.TrimLeft(num, "0123456789") != "" {
		return nil, false
	}
	v, _ := new(big.Int).SetString(num, 10)
	switch unit {
	case "K":
		v.Add(v, big.NewInt(1023)).Div(v, big.NewInt(1024))
	case "G":
		v.Mul(v, big.NewInt(1024))
	case "T":
		v.Mul(v, big.NewInt(1024*1024))
	}
	return v, true
}
