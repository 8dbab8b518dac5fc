package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The completion script, run by bash over a stand-in phx that answers
// squeue and sinfo as a cluster would.
func TestCompletionScript(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "phx")
	stub := "#!/bin/sh\ncase \"$*\" in\n" +
		"'squeue --me -h -o %i') printf '41\\n42\\n' ;;\n" +
		"'sinfo -h -o %R') printf 'gpu\\ndebug\\ngpu\\n' ;;\n" +
		"'sinfo -N -h -o %N') printf 'gpu001\\ngpu002\\n' ;;\n" +
		"*) exit 1 ;;\nesac\n"
	if err := os.WriteFile(fake, []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "completion.bash")
	cmds := []string{"sbatch", "squeue", "sinfo", "scancel", "scontrol", "sacct", "events", "logs", "completion"}
	if err := os.WriteFile(script, []byte(completionScript(fake, cmds)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line string // the words typed; the last is completed ("" for a new word)
		want string
	}{
		{"phx ", "sbatch squeue sinfo scancel scontrol sacct events logs completion"},
		{"phx s", "sbatch squeue sinfo scancel scontrol sacct"},
		{"sbatch --gpus", "--gpus --gpus-per-node --gpus-per-task"},
		{"phx sbatch --ntasks", "--ntasks --ntasks-per-node"},
		{"sbatch -p ", "debug gpu"},
		{"squeue -w gpu", "gpu001 gpu002"},
		{"scancel ", "41 42"},
		{"phx logs -f 4", "41 42"},
		{"scontrol ", "show ping raft backup restore token update hold uhold release requeue top reconfigure"},
		{"phx scontrol rec", "reconfigure"},
		{"scontrol show j", "job"},
		{"scontrol show node ", "gpu001 gpu002"},
		{"phx scontrol top ", "41 42"},
		{"scontrol update Job", "JobId= JobName="},
		{"scontrol update Part", "PartitionName= Partition="},
		{"scontrol update PartitionName=gpu ", "State= MaxTime= DefaultTime= MaxNodes= PriorityTier= Default="},
		{"scontrol update PartitionName=gpu Max", "MaxTime= MaxNodes="},
		{"phx scontrol update NodeName=gpu001 ", "State= Reason="},
		{"scontrol update JobId=41 Time", "TimeLimit="},
		{"scontrol update JobId 41 Time", "TimeLimit="}, // bash splits words at =
		{"scontrol update St", "State="},
		{"sinfo --s", "--states --summarize"},
	} {
		words := strings.Split(tc.line, " ")
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, shellQuote(w))
		}
		prog := ". " + shellQuote(script) + "; COMP_WORDS=(" + strings.Join(quoted, " ") + "); COMP_CWORD=" +
			strconv.Itoa(len(words)-1) + "; _phx_complete; echo \"${COMPREPLY[*]}\""
		out, err := exec.Command(bash, "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v: %s", tc.line, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != tc.want {
			t.Errorf("%q completes to %q, want %q", tc.line, got, tc.want)
		}
	}
}
