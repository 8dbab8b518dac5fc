package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// TestDevAgentKilledAndRestarted kills a node's phalanx-agent process with
// SIGKILL while its job runs, then starts it again as it was: the task
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

	pid, argv := agentProcess(t, dir)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "the agent to die", func() bool { return !processAlive(pid) })
	logf, err := os.Create(filepath.Join(t.TempDir(), "agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	again := exec.Command(argv[0], argv[1:]...)
	again.Stdout, again.Stderr = logf, logf
	if err := again.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { again.Process.Signal(syscall.SIGTERM); again.Wait() })

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
		log, _ := os.ReadFile(logf.Name())
		t.Fatalf("job ended %s, exit code %d, %d attempts; want FAILED, 7, 1\nagent log:\n%s", job.State, job.ExitCode, len(job.Attempts), log)
	}
	if b, _ := os.ReadFile(out); string(b) != "started\nending\n" {
		t.Errorf("output %q: the task did not run once, to its end", b)
	}
	log, _ := os.ReadFile(logf.Name())
	if !bytes.Contains(log, []byte("re-adopted a task")) {
		t.Errorf("the restarted agent did not say it re-adopted the task:\n%s", log)
	}
}

// agentProcess finds the phalanx-agent serving the dev cluster in dir,
// and its command line.
func agentProcess(t *testing.T, dir string) (int, []string) {
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
		argv := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		if filepath.Base(argv[0]) == "phalanx-agent" && strings.Contains(string(b), filepath.Join(dir, "agents")) {
			return pid, argv
		}
	}
	t.Fatalf("no phalanx-agent process of %s", dir)
	return 0, nil
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
