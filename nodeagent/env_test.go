package nodeagent

import (
	"reflect"
	"strings"
	"testing"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// twoByEight is a 2-node job with 8 GPUs on each node.
func twoByEight() *phalanxv1.Job {
	gpus := []int32{0, 1, 2, 3, 4, 5, 6, 7}
	return &phalanxv1.Job{
		Id:      42,
		Attempt: 2,
		Spec: &phalanxv1.JobSpec{
			Name: "train", User: "alice", Partition: "gpu", WorkDir: "/home/alice/run",
			Env: map[string]string{"ZED": "z", "HOME": "/home/alice", "PATH": "/opt/bin", "SLURM_JOB_ID": "spoofed"},
		},
		Alloc: []*phalanxv1.NodeAlloc{
			{Node: "gpu001", Gpus: gpus, Addr: "10.0.0.1"},
			{Node: "gpu002", Gpus: gpus, Addr: "10.0.0.2"},
		},
		MasterPort: 29500,
	}
}

func TestTaskEnvTwoNodesEightGPUs(t *testing.T) {
	for rank := 0; rank < 2; rank++ {
		r := []string{"0", "1"}[rank]
		want := []string{
			"HOME=/home/alice",
			"PATH=/opt/bin",
			"ZED=z",
			"SLURM_JOB_ID=42",
			"SLURM_JOBID=42",
			"SLURM_JOB_NAME=train",
			"SLURM_JOB_NODELIST=gpu[001-002]",
			"SLURM_NODELIST=gpu[001-002]",
			"SLURM_NNODES=2",
			"SLURM_JOB_NUM_NODES=2",
			"SLURM_NODEID=" + r,
			"SLURM_PROCID=" + r,
			"SLURM_GTIDS=" + r,
			"SLURM_LOCALID=0",
			"SLURM_NTASKS=2",
			"SLURM_NPROCS=2",
			"SLURM_NTASKS_PER_NODE=1",
			"SLURM_TASKS_PER_NODE=1(x2)",
			"SLURM_GPUS_ON_NODE=8",
			"SLURM_JOB_PARTITION=gpu",
			"SLURM_SUBMIT_DIR=/home/alice/run",
			"SLURM_JOB_USER=alice",
			"SLURM_JOB_UID=1000",
			"SLURM_JOB_GID=100",
			"SLURMD_NODENAME=" + []string{"gpu001", "gpu002"}[rank],
			"SLURM_RESTART_COUNT=2",
			"SLURM_JOB_GPUS=0,1,2,3,4,5,6,7",
			"MASTER_ADDR=10.0.0.1",
			"MASTER_PORT=29500",
			"WORLD_SIZE=2",
			"RANK=" + r,
			"NODE_RANK=" + r,
			"LOCAL_WORLD_SIZE=8",
			"PET_NNODES=2",
			"PET_NODE_RANK=" + r,
			"PET_MASTER_ADDR=10.0.0.1",
			"PET_MASTER_PORT=29500",
			"CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7",
			"PHX_JOB_ID=42",
			"PHX_ATTEMPT=2",
		}
		got := taskEnv(envInput{job: jobFromWire(twoByEight()), rank: rank, uid: 1000, gid: 100})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("rank %d env:\n%s", rank, diffLines(got, want))
		}
	}
}

// oneNodeWhole is an exclusive job on one node.
func oneNodeWhole() *phalanxv1.Job {
	j := twoByEight()
	j.Alloc, j.Spec.Exclusive = j.Alloc[:1], true
	return j
}

func TestTaskEnvVariants(t *testing.T) {
	partial := func() *phalanxv1.Job {
		j := twoByEight()
		j.Spec.Env = nil
		j.Alloc[0].Addr = "" // no address: MASTER_ADDR falls back to the name
		j.Alloc[0].Gpus = []int32{4, 5, 6, 7}
		j.Alloc[1].Gpus = []int32{2, 6}
		return j
	}
	noGPUs := partial()
	noGPUs.Alloc[1].Gpus = nil
	tasks := func() *phalanxv1.Job {
		j := twoByEight()
		j.Spec.TasksPerNode, j.Spec.GpusPerTask, j.Spec.CpusPerTask, j.Spec.SubmitHost = 4, 2, 6, "login1"
		return j
	}
	oneNode := tasks()
	oneNode.Alloc = oneNode.Alloc[:1]
	held := tasks()
	held.Alloc[0].Cpus, held.Alloc[1].Cpus = 24, 24
	uneven := tasks()
	uneven.Alloc[0].Cpus, uneven.Alloc[1].Cpus, uneven.Alloc[0].MemoryMb = 24, 12, 64000
	whole := tasks()
	whole.Spec.Exclusive = true
	firstAttempt := twoByEight()
	firstAttempt.Attempt = 0
	for _, tc := range []struct {
		name string
		in   envInput
		want map[string]string // variables checked; "" means must be absent
	}{
		{"process sees host indices", envInput{job: jobFromWire(partial()), rank: 0},
			map[string]string{"CUDA_VISIBLE_DEVICES": "4,5,6,7", "SLURM_GPUS_ON_NODE": "4", "LOCAL_WORLD_SIZE": "4",
				"MASTER_ADDR": "gpu001", "PET_MASTER_ADDR": "gpu001", "PATH": defaultPath, "SLURM_CLUSTER_NAME": ""}},
		{"container sees its GPUs from 0", envInput{job: jobFromWire(partial()), rank: 1, container: true},
			map[string]string{"CUDA_VISIBLE_DEVICES": "0,1", "SLURM_GPUS_ON_NODE": "2", "LOCAL_WORLD_SIZE": "2", "PATH": ""}},
		{"process rank 1", envInput{job: jobFromWire(partial()), rank: 1},
			map[string]string{"CUDA_VISIBLE_DEVICES": "2,6", "RANK": "1"}},
		// No GPUs: none visible (CUDA_VISIBLE_DEVICES set, empty), and no
		// SLURM_GPUS_ON_NODE, as Slurm's.
		{"no GPUs", envInput{job: jobFromWire(noGPUs), rank: 1},
			map[string]string{"CUDA_VISIBLE_DEVICES": "", "SLURM_GPUS_ON_NODE": "", "LOCAL_WORLD_SIZE": "1"}},
		{"cluster name", envInput{job: jobFromWire(partial()), rank: 0, cluster: "dgx"},
			map[string]string{"SLURM_CLUSTER_NAME": "dgx"}},
		// As Slurm's, only once the job has restarted.
		{"first attempt", envInput{job: jobFromWire(firstAttempt)}, map[string]string{"SLURM_RESTART_COUNT": "", "PHX_ATTEMPT": "0"}},
		{"no tasks or submit host given", envInput{job: jobFromWire(partial()), rank: 0},
			map[string]string{"SLURM_SUBMIT_HOST": "", "SLURM_CPUS_PER_TASK": "", "SLURM_GPUS_PER_TASK": "", "SLURM_JOB_GPUS": "4,5,6,7"}},
		{"container: SLURM_JOB_GPUS keeps the host's indices", envInput{job: jobFromWire(partial()), rank: 1, container: true},
			map[string]string{"SLURM_JOB_GPUS": "2,6", "CUDA_VISIBLE_DEVICES": "0,1"}},
		{"four tasks per node, rank 1", envInput{job: jobFromWire(tasks()), rank: 1},
			map[string]string{"SLURM_PROCID": "4", "SLURM_LOCALID": "0", "SLURM_NTASKS": "8", "SLURM_NPROCS": "8",
				"SLURM_NTASKS_PER_NODE": "4", "SLURM_TASKS_PER_NODE": "4(x2)", "SLURM_CPUS_PER_TASK": "6",
				"SLURM_GPUS_PER_TASK": "2", "SLURM_SUBMIT_HOST": "login1", "RANK": "1", "WORLD_SIZE": "2"}},
		{"one node", envInput{job: jobFromWire(oneNode), rank: 0},
			map[string]string{"SLURM_TASKS_PER_NODE": "4", "SLURM_NTASKS": "4"}},
		// SLURM_CPUS_ON_NODE: the CPUs the job holds there; all the node's
		// for an exclusive job.
		// SLURM_JOB_CPUS_PER_NODE: each node's, as Slurm writes the runs;
		// not known for an exclusive job on other nodes. SLURM_MEM_PER_NODE:
		// the memory asked, in MB.
		{"CPUs held", envInput{job: jobFromWire(held), rank: 0, nodeCPUs: 128},
			map[string]string{"SLURM_CPUS_ON_NODE": "24", "SLURM_JOB_CPUS_PER_NODE": "24(x2)", "SLURM_MEM_PER_NODE": ""}},
		{"CPUs and memory held, uneven", envInput{job: jobFromWire(uneven), rank: 0, nodeCPUs: 128},
			map[string]string{"SLURM_JOB_CPUS_PER_NODE": "24,12", "SLURM_MEM_PER_NODE": "64000"}},
		{"exclusive", envInput{job: jobFromWire(whole), rank: 0, nodeCPUs: 128}, map[string]string{"SLURM_CPUS_ON_NODE": "128", "SLURM_JOB_CPUS_PER_NODE": ""}},
		{"exclusive, one node", envInput{job: jobFromWire(oneNodeWhole()), rank: 0, nodeCPUs: 128}, map[string]string{"SLURM_JOB_CPUS_PER_NODE": "128"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkEnv(t, tc.in, tc.want) })
	}
}

// Slurm sets some variables only after the sbatch option that asks for
// them (checked live against Slurm 22.05): SLURM_NTASKS and SLURM_NPROCS
// after -n or --ntasks-per-node, SLURM_NTASKS_PER_NODE after
// --ntasks-per-node, SLURM_GPUS_PER_NODE after --gpus-per-node, SLURM_GPUS
// after -G (0 when 0 was asked, as SLURM_GPUS_PER_TASK after --gpus-per-task
// and SLURM_GPUS_PER_NODE), SLURM_MEM_PER_CPU or SLURM_MEM_PER_GPU in
// place of SLURM_MEM_PER_NODE; and a job of one whole node that gave no task count
// has as many tasks as CPUs (SLURM_TASKS_PER_NODE). A job from before the
// request form was recorded keeps the counts.
func TestTaskEnvAfterTheOptionsGiven(t *testing.T) {
	form := func(f *phalanxv1.RequestForm, edit func(*phalanxv1.Job)) *phalanxv1.Job {
		j := twoByEight()
		j.Spec.RequestForm, j.Spec.GpusPerNode = f, 8
		j.Alloc[0].MemoryMb, j.Alloc[1].MemoryMb = 8192, 8192
		if edit != nil {
			edit(j)
		}
		return j
	}
	perTask := func(j *phalanxv1.Job) { j.Spec.TasksPerNode = 4 }
	for _, tc := range []struct {
		name string
		job  *phalanxv1.Job
		want map[string]string // "" means must be absent
	}{
		{"-N2", form(&phalanxv1.RequestForm{}, nil), map[string]string{"SLURM_NTASKS": "", "SLURM_NPROCS": "",
			"SLURM_NTASKS_PER_NODE": "", "SLURM_TASKS_PER_NODE": "1(x2)", "SLURM_MEM_PER_NODE": "8192", "SLURM_GPUS_PER_NODE": "", "SLURM_GPUS": "",
			"SLURM_GPUS_PER_TASK": ""}},
		{"-N2 --ntasks-per-node=1", form(&phalanxv1.RequestForm{NtasksPerNode: true}, nil),
			map[string]string{"SLURM_NTASKS": "2", "SLURM_NPROCS": "2", "SLURM_NTASKS_PER_NODE": "1"}},
		{"-N2 -n8", form(&phalanxv1.RequestForm{Ntasks: true}, perTask),
			map[string]string{"SLURM_NTASKS": "8", "SLURM_NPROCS": "8", "SLURM_NTASKS_PER_NODE": "", "SLURM_TASKS_PER_NODE": "4(x2)"}},
		{"before the form", form(nil, nil), map[string]string{"SLURM_NTASKS": "2", "SLURM_NTASKS_PER_NODE": "1"}},
		{"--gpus-per-node=8", form(&phalanxv1.RequestForm{GpusPerNode: true}, nil), map[string]string{"SLURM_GPUS_PER_NODE": "8", "SLURM_GPUS": ""}},
		{"--gpus-per-node=h100:8", form(&phalanxv1.RequestForm{GpusPerNode: true}, func(j *phalanxv1.Job) { j.Spec.GpuType = "h100" }),
			map[string]string{"SLURM_GPUS_PER_NODE": "h100:8"}},
		{"-G 16", form(&phalanxv1.RequestForm{Gpus: true}, nil), map[string]string{"SLURM_GPUS": "16", "SLURM_GPUS_PER_NODE": ""}},
		{"-G 0", form(&phalanxv1.RequestForm{Gpus: true}, func(j *phalanxv1.Job) { j.Spec.GpusPerNode = 0 }),
			map[string]string{"SLURM_GPUS": "0", "SLURM_GPUS_PER_NODE": ""}},
		{"--gpus-per-node=0", form(&phalanxv1.RequestForm{GpusPerNode: true}, func(j *phalanxv1.Job) { j.Spec.GpusPerNode = 0 }),
			map[string]string{"SLURM_GPUS_PER_NODE": "0", "SLURM_GPUS": ""}},
		{"--gpus-per-node=4 -G 8", form(&phalanxv1.RequestForm{GpusPerNode: true, Gpus: true}, func(j *phalanxv1.Job) { j.Spec.GpusPerNode = 4 }),
			map[string]string{"SLURM_GPUS_PER_NODE": "4", "SLURM_GPUS": "8"}},
		{"--gpus-per-task=2", form(&phalanxv1.RequestForm{Ntasks: true}, func(j *phalanxv1.Job) { j.Spec.TasksPerNode, j.Spec.GpusPerTask = 4, 2 }),
			map[string]string{"SLURM_GPUS_PER_TASK": "2"}},
		{"--gpus-per-task=h100:2", form(&phalanxv1.RequestForm{Ntasks: true}, func(j *phalanxv1.Job) {
			j.Spec.TasksPerNode, j.Spec.GpusPerTask, j.Spec.GpuType = 4, 2, "h100"
		}), map[string]string{"SLURM_GPUS_PER_TASK": "h100:2"}},
		{"-N2 --gpus-per-task=0", form(&phalanxv1.RequestForm{Ntasks: true, GpusPerTask: true}, func(j *phalanxv1.Job) { j.Spec.GpusPerNode = 0 }),
			map[string]string{"SLURM_GPUS_PER_TASK": "0", "SLURM_GPUS_PER_NODE": "", "SLURM_GPUS": ""}},
		{"--gpus-per-node=2 --gpus-per-task=0", form(&phalanxv1.RequestForm{Ntasks: true, GpusPerNode: true, GpusPerTask: true}, func(j *phalanxv1.Job) { j.Spec.GpusPerNode = 2 }),
			map[string]string{"SLURM_GPUS_PER_TASK": "0", "SLURM_GPUS_PER_NODE": "2"}},
		{"-G 0 --gpus-per-task=0", form(&phalanxv1.RequestForm{Ntasks: true, Gpus: true, GpusPerTask: true}, func(j *phalanxv1.Job) { j.Spec.GpusPerNode = 0 }),
			map[string]string{"SLURM_GPUS_PER_TASK": "0", "SLURM_GPUS": "0"}},
		{"--mem-per-cpu=512", form(&phalanxv1.RequestForm{MemPerCpuMb: 512}, nil),
			map[string]string{"SLURM_MEM_PER_CPU": "512", "SLURM_MEM_PER_NODE": "", "SLURM_MEM_PER_GPU": ""}},
		{"--mem-per-gpu=1024", form(&phalanxv1.RequestForm{MemPerGpuMb: 1024}, nil),
			map[string]string{"SLURM_MEM_PER_GPU": "1024", "SLURM_MEM_PER_NODE": "", "SLURM_MEM_PER_CPU": ""}},
		{"--exclusive -N1", form(&phalanxv1.RequestForm{}, func(j *phalanxv1.Job) { j.Alloc, j.Spec.Exclusive = j.Alloc[:1], true }),
			map[string]string{"SLURM_TASKS_PER_NODE": "64", "SLURM_NTASKS": ""}},
		{"--exclusive -N1 -c4", form(&phalanxv1.RequestForm{}, func(j *phalanxv1.Job) { j.Alloc, j.Spec.Exclusive, j.Spec.CpusPerTask = j.Alloc[:1], true, 4 }),
			map[string]string{"SLURM_TASKS_PER_NODE": "16"}},
		{"--exclusive -N1 --ntasks-per-node=2", form(&phalanxv1.RequestForm{NtasksPerNode: true}, func(j *phalanxv1.Job) {
			j.Alloc, j.Spec.Exclusive, j.Spec.TasksPerNode = j.Alloc[:1], true, 2
		}), map[string]string{"SLURM_TASKS_PER_NODE": "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkEnv(t, envInput{job: jobFromWire(tc.job), rank: 0, nodeCPUs: 64}, tc.want) })
	}
}

// checkEnv checks the variables of want in in's task environment; "" means
// unset (CUDA_VISIBLE_DEVICES: set and empty).
func checkEnv(t *testing.T, in envInput, want map[string]string) {
	t.Helper()
	env := map[string]string{}
	for _, kv := range taskEnv(in) {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := env[k]; dup {
			t.Errorf("%s set twice", k)
		}
		env[k] = v
	}
	for k, w := range want {
		got, ok := env[k]
		switch {
		case w == "" && k != "CUDA_VISIBLE_DEVICES" && ok:
			t.Errorf("%s=%q, want it unset", k, got)
		case (w != "" || k == "CUDA_VISIBLE_DEVICES") && (!ok || got != w):
			t.Errorf("%s=%q (set %v), want %q", k, got, ok, w)
		}
	}
}

// diffLines shows two lists side by side where they differ.
func diffLines(got, want []string) string {
	var b strings.Builder
	for i := 0; i < max(len(got), len(want)); i++ {
		g, w := "", ""
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		mark := "  "
		if g != w {
			mark = "!="
		}
		b.WriteString(mark + " " + g + "\t" + w + "\n")
	}
	return b.String()
}
