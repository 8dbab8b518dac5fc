package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// TestDevAgentKilledAndRestarted kills a node's phalanx-agent process with
// SIGKILL while its job runs, then starts it again as it was (phx dev
// start, once phx dev has said it exited): the task
// runs on under its supervisor, the new agent takes it over, and the job
// ends with the task's own exit code, in one attempt, with no NODE_FAIL.
func TestDevAgentKilledAndRestarted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs controller and agent processes; not in -short")
	}
	bin := buildDevBinaries(t)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := filepath.Join(t.TempDir(), "dev")
	dev := startDev(t, "--nodes", "1", "--gpus-per-node", "2", "--listen", "127.0.0.1:0", "--dir", dir)
	api := devClient(t, dev, dev.servers)

	work := t.TempDir()
	gate := filepath.Join(work, "gate")
	script := "#!/bin/sh\necho started\nwhile [ ! -e " + gate + " ]; do sleep 0.05; done\necho ending\nexit 7\n"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sub, err := api.SubmitJob(ctx, &phalanxv1.SubmitJobRequest{Spec: &phalanxv1.JobSpec{
		Name: "survivor", User: "alice", Uid: -1, Gid: -1, WorkDir: work, Script: script, Nodes: 1, GpusPerNode: 1,
	}})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(work, "slurm-"+strconv.FormatUint(sub.JobId, 10)+".out")
	waitUntil(t, ctx, "the job's first line", func() bool { b, _ := os.ReadFile(out); return string(b) == "started\n" })

	pid := devProcess(t, dir, "phalanx-agent", "--name gpu001 ")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "the agent to die", func() bool { return !processAlive(pid) })
	notice := "phx dev: gpu001 exited (signal: killed); `phx dev start gpu001` starts it again\n"
	waitUntil(t, ctx, "phx dev to say the agent exited", func() bool { return strings.Contains(dev.out.String(), notice) })
	logPath := filepath.Join(dir, "logs", "gpu001.log")
	before, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	out2, err := runDevCommand(t, "start", "--dir", dir, "gpu001")
	if err != nil || !regexp.MustCompile(`^phx dev start: gpu001 started \(pid \d+\)\n$`).MatchString(out2) {
		t.Fatalf("phx dev start gpu001: %v\n%s", err, out2)
	}
	agentLog := func() []byte { b, _ := os.ReadFile(logPath); return b[len(before):] }
	again := regexp.MustCompile(`^phx dev start gpu001: gpu001 is running \(pid \d+\): it can be started again once it has exited$`)
	if _, err := runDevCommand(t, "start", "--dir", dir, "gpu001"); err == nil || !again.MatchString(err.Error()) {
		t.Errorf("phx dev start of a running agent: %v", err)
	}
	unknown := `phx dev start gpu009: no component "gpu009" in this dev cluster: give one of ctl1, gpu001`
	if _, err := runDevCommand(t, "start", "--dir", dir, "gpu009"); err == nil || err.Error() != unknown {
		t.Errorf("phx dev start gpu009: %v, want %q", err, unknown)
	}

	// The task never stopped: the gate is opened only now.
	if b, _ := os.ReadFile(out); string(b) != "started\n" {
		t.Fatalf("output before the gate: %q", b)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var job *phalanxv1.Job
	waitUntil(t, ctx, "the job to end", func() bool {
		job, err = api.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: sub.JobId})
		return err == nil && job.State != "PENDING" && job.State != "CONFIGURING" && job.State != "RUNNING" && job.State != "COMPLETING"
	})
	if job.State != "FAILED" || job.ExitCode != 7 || len(job.Attempts) != 1 {
		t.Fatalf("job ended %s, exit code %d, %d attempts; want FAILED, 7, 1\nagent log:\n%s", job.State, job.ExitCode, len(job.Attempts), agentLog())
	}
	if b, _ := os.ReadFile(out); string(b) != "started\nending\n" {
		t.Errorf("output %q: the task did not run once, to its end", b)
	}
	if log := agentLog(); !bytes.Contains(log, []byte("re-adopted a task")) {
		t.Errorf("the restarted agent did not say it re-adopted the task:\n%s", log)
	}
}

// devProcess finds the process of the dev cluster in dir whose
// executable is exe and whose command line has arg in it.
func devProcess(t *testing.T, dir, exe, arg string) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		argv := strings.Fields(strings.ReplaceAll(string(b), "\x00", " "))
		line := strings.Join(argv, " ") + " "
		if len(argv) > 0 && filepath.Base(argv[0]) == exe && strings.Contains(line, dir+"/") && strings.Contains(line, arg) && processAlive(pid) {
			return pid
		}
	}
	t.Fatalf("no %s process with %q of %s", exe, arg, dir)
	return 0
}

// runDevCommand runs a phx dev subcommand (start, fault) to its end.
func runDevCommand(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out := &syncBuffer{}
	err := devApp(out).Run(append([]string{"phx", "dev"}, args...))
	return out.String(), err
}

func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
