package nodeagent

import (
	"context"
	"strings"
	"testing"
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/pki"
	"github.com/phalanx-hpc/phalanx/runtime/fake"
)

// tlsOf issues a certificate of kind for name from ca and loads it.
func tlsOf(t *testing.T, ca *pki.CA, kind pki.Kind, name string) *pki.Material {
	t.Helper()
	dir := t.TempDir()
	if _, err := ca.IssueInto(dir, kind, name, nil, time.Hour, time.Now()); err != nil {
		t.Fatal(err)
	}
	m, err := pki.Load(pki.DirFiles(dir, kind))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// An agent starts a step from outside its job only beside the job's
// running task, and only with a step credential a controller signed for
// exactly this node, job, user and command, once.
func TestStartStepChecksCredential(t *testing.T) {
	ca, err := pki.InitCA(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ctl, self := tlsOf(t, ca, pki.KindController, "ctl1"), tlsOf(t, ca, pki.KindNode, node)
	rt := fake.New()
	a, err := New(Config{Name: node, Controllers: []string{"127.0.0.1:1"}, StateDir: t.TempDir(), Runtime: rt, TLS: self, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	job := &phalanxv1.Job{Id: 7, Spec: &phalanxv1.JobSpec{Uid: 1001, Gid: 1001, WorkDir: "/tmp"},
		Alloc: []*phalanxv1.NodeAlloc{{Node: node, Gpus: []int32{0, 1}}}}
	argv := []string{"nvidia-smi", "-L"}
	sign := func(m *pki.Material, g pki.StepGrant) string {
		tok, err := m.SignStep(g, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := pki.StepGrant{Job: 7, Step: 100000, Node: node, UID: 1001, GID: 1001, Argv: argv}
	read := func(cred string, argv []string) *phalanxv1.LogRead {
		return &phalanxv1.LogRead{Id: 1, Job: job, Rank: 0, Step: &phalanxv1.StepLaunch{Credential: cred, Argv: argv, StepId: 100000, StepNodes: 1}}
	}
	ctx := context.Background()

	// No task of the job here: nothing starts, whatever the credential.
	if _, _, err := a.startStep(ctx, stepFromWire(read(sign(ctl, good), argv))); err == nil || !strings.Contains(err.Error(), "runs no task") {
		t.Errorf("a step beside no task: %v", err)
	}
	a.mu.Lock()
	a.tasks[taskKey{job: 7, rank: 0}] = newTask(taskKey{job: 7, rank: 0})
	a.mu.Unlock()

	other := good
	other.Node = "gpu002"
	for name, r := range map[string]*phalanxv1.LogRead{
		"no credential":           read("", argv),
		"another node's":          read(sign(ctl, other), argv),
		"for another command":     read(sign(ctl, good), []string{"rm", "-rf", "/"}),
		"not a credential at all": read("x.y.z", argv),
	} {
		if _, _, err := a.startStep(ctx, stepFromWire(r)); err == nil || !strings.Contains(err.Error(), "step credential refused") {
			t.Errorf("%s: %v, want the credential refused", name, err)
		}
	}
	if specs := rt.Specs(); len(specs) != 0 {
		t.Fatalf("refused steps started %d tasks", len(specs))
	}

	cred := sign(ctl, good)
	task, out, err := a.startStep(ctx, stepFromWire(read(cred, argv)))
	if err != nil {
		t.Fatalf("a good credential: %v", err)
	}
	defer task.Close(ctx)
	spec := rt.Specs()[0]
	if spec.UID != 1001 || spec.GID != 1001 || spec.Stdout != out || len(spec.GPUs) != 2 ||
		strings.Join(spec.Argv, " ") != `/bin/sh -c exec "$@" srun nvidia-smi -L` {
		t.Errorf("step spec %+v", spec)
	}
	for _, want := range []string{"SLURM_STEP_ID=100000", "SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_JOB_ID=7"} {
		if !strings.Contains(strings.Join(spec.Env, "\n"), want) {
			t.Errorf("step env lacks %s", want)
		}
	}
	if _, _, err := a.startStep(ctx, stepFromWire(read(cred, argv))); err == nil || !strings.Contains(err.Error(), "used already") {
		t.Errorf("the same credential again: %v", err)
	}
}
