package nodeagent

import (
	"time"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// assignment is one task the controller wants on this node (or wants
// stopped), read from the wire once, where the stream delivers it
// (reconcile): the rest of the agent never sees a protobuf type.
type assignment struct {
	key        taskKey
	stop       bool
	stopReason string
	grace      time.Duration // SIGTERM to SIGKILL; zero: Config.KillGrace
	prolog     cluster.Prolog
	hasJob     bool
	job        jobInfo
	signals    []cluster.SignalRequest // scancel --signal requests, oldest first
}

// jobInfo is what a task needs to know of its job.
type jobInfo struct {
	id                     uint64
	attempt                int
	name, user, account    string
	partition              string
	uid, gid               int // zero or less: the agent's own
	script, image, workDir string
	scriptArgs             []string // sbatch script [args...]: the script's $1...
	output, errPattern     string
	openMode               cluster.OpenMode // sbatch --open-mode
	exclusive              bool             // whole nodes (--exclusive, --mem=0)
	submitTime             int64            // Unix nanoseconds: with id, names the job on its files
	env                    map[string]string
	timeLimit              time.Duration // zero: none
	killGrace              time.Duration // SIGTERM to SIGKILL at the limit or a hang: the controllers'; zero: Config.KillGrace
	signal                 cluster.JobSignal
	masterPort             int
	ckpt                   ckptInfo
	hangTimeout            time.Duration         // zero: not watched
	restartOn              cluster.RestartCauses // what restarts the job
	ranks                  []rankSlot            // by rank
	startedRanks           []int                 // ranks the controller has STARTING or RUNNING
	// placed: the Raft index of the command that placed this attempt (0:
	// not said). It tells this placement from another of the same job and
	// attempt number, as a restored state makes.
	placed uint64
	array  *cluster.ArrayTask // a task of a job array; nil: not one
	// Tasks srun starts on each node (at least 1), each with gpusPerTask
	// of the node's GPUs (0: all) and cpusPerTask CPUs (0: not given).
	tasksPerNode, gpusPerTask, cpusPerTask int
	submitHost                             string // "": unknown
	// The GPUs asked on each node (0: none), of type gpuType (""; any),
	// and which options asked for the tasks, GPUs and memory.
	gpusPerNode int
	gpuType     string
	form        cluster.RequestForm
}

// ckptInfo is the job's checkpoint store and its newest complete step.
type ckptInfo struct {
	dir      string // "": none
	keep     int
	step     int64
	complete bool // step is set
}

// rankSlot is where one rank of the job runs.
type rankSlot struct {
	node, addr string
	gpus       []int // host indices
	cpus       int   // CPUs held there; 0: none counted (an exclusive job holds the node)
	memMB      int64 // memory held there; 0: none asked
}

func assignmentFromWire(as *phalanxv1.Assignment) assignment {
	out := assignment{
		key:        taskKey{job: as.GetJobId(), attempt: as.GetAttempt(), rank: as.GetRank()},
		stop:       as.GetStop(),
		stopReason: as.GetStopReason(),
		grace:      secondsDuration(int64(as.GetGraceSeconds())),
		prolog:     prologFromWire(as.GetProlog()),
		hasJob:     as.GetJob() != nil,
		job:        jobFromWire(as.GetJob()),
		signals:    signalsFromWire(as.GetSignals()),
	}
	if !out.stop { // a stop's grace may be the preemption's
		out.job.killGrace = out.grace
	}
	return out
}

func signalsFromWire(rs []*phalanxv1.SignalRequest) []cluster.SignalRequest {
	var out []cluster.SignalRequest
	for _, r := range rs {
		scope := cluster.SignalSteps
		switch r.GetScope() {
		case phalanxv1.SignalScope_SIGNAL_SCOPE_BATCH:
			scope = cluster.SignalBatch
		case phalanxv1.SignalScope_SIGNAL_SCOPE_FULL:
			scope = cluster.SignalFull
		case phalanxv1.SignalScope_SIGNAL_SCOPE_STEP:
			scope = cluster.SignalStep
		}
		if sig := int(r.GetSignal()); sig > 0 && sig <= cluster.MaxSignal {
			out = append(out, cluster.SignalRequest{Seq: r.GetSeq(), Signal: sig, Scope: scope, Step: r.GetStep()})
		}
	}
	return out
}

// jobFromWire reads the job an assignment carries (nil: an empty one,
// which checkAssignment refuses).
func jobFromWire(j *phalanxv1.Job) jobInfo {
	js := j.GetSpec()
	out := jobInfo{
		id: j.GetId(), attempt: int(j.GetAttempt()),
		name: js.GetName(), user: js.GetUser(), account: js.GetAccount(), partition: js.GetPartition(),
		uid: int(js.GetUid()), gid: int(js.GetGid()),
		script: js.GetScript(), scriptArgs: js.GetScriptArgs(), image: js.GetImage(), workDir: js.GetWorkDir(),
		output: js.GetOutput(), errPattern: js.GetError(), openMode: openModeFromWire(js.GetOpenMode()), exclusive: js.GetExclusive(),
		submitTime: j.GetSubmitTime().AsTime().UnixNano(),
		env:        cluster.EnvOf(js.GetEnvironment(), js.GetEnv()), // an older controller sends the map
		masterPort: int(j.GetMasterPort()),
		signal: cluster.JobSignal{Signal: int(js.GetSignal()), Before: secondsDuration(int64(js.GetSignalSeconds())),
			Batch: js.GetSignalBatch()},
		array:        arrayFromWire(j.GetArrayTask()),
		tasksPerNode: max(1, int(js.GetTasksPerNode())), gpusPerTask: max(0, int(js.GetGpusPerTask())),
		cpusPerTask: max(0, int(js.GetCpusPerTask())), submitHost: js.GetSubmitHost(),
		gpusPerNode: max(0, int(js.GetGpusPerNode())), gpuType: js.GetGpuType(), form: requestFormFromWire(js.GetRequestForm()),
		ckpt: ckptInfo{dir: js.GetCheckpointDir(), keep: cluster.CheckpointSpec{Dir: js.GetCheckpointDir(), Keep: int(js.GetCheckpointKeep())}.KeepSteps(),
			step: j.GetCheckpointStep(), complete: j != nil && j.CheckpointStep != nil},
	}
	out.hangTimeout = secondsDuration(max(js.GetHangTimeoutSeconds(), 0))
	if js != nil && !js.NoRequeue && (js.MaxRestarts == nil || js.GetMaxRestarts() > 0) {
		out.restartOn = cluster.DefaultRestartOn
		if js.GetRestartOn() != "" {
			out.restartOn, _ = cluster.ParseRestartCauses(js.GetRestartOn())
		}
	}
	limit := j.GetTimeLimitSeconds()
	if limit <= 0 {
		limit = js.GetTimeLimitSeconds()
	}
	out.timeLimit = secondsDuration(limit)
	for _, a := range j.GetAlloc() {
		gpus := make([]int, len(a.GetGpus()))
		for i, g := range a.GetGpus() {
			gpus[i] = int(g)
		}
		out.ranks = append(out.ranks, rankSlot{node: a.GetNode(), addr: a.GetAddr(), gpus: gpus, cpus: int(a.GetCpus()), memMB: a.GetMemoryMb()})
	}
	for _, a := range j.GetAttempts() {
		if a.GetAttempt() == j.GetAttempt() {
			out.placed = a.GetPlacedIndex()
		}
	}
	for _, t := range j.GetTasks() {
		if st := cluster.TaskState(t.GetState()); st == cluster.TaskRunning || st == cluster.TaskStarting {
			out.startedRanks = append(out.startedRanks, int(t.GetRank()))
		}
	}
	return out
}

// requestFormFromWire reads a job's request form; nil: not recorded (a
// job submitted before it was).
func requestFormFromWire(f *phalanxv1.RequestForm) cluster.RequestForm {
	if f == nil {
		return cluster.RequestForm{}
	}
	return cluster.RequestForm{Recorded: true, NTasks: f.GetNtasks(), NTasksPerNode: f.GetNtasksPerNode(), GPUsPerNode: f.GetGpusPerNode(),
		GPUs: f.GetGpus(), MemPerCPUMB: max(0, f.GetMemPerCpuMb()), MemPerGPUMB: max(0, f.GetMemPerGpuMb()),
		GPUsPerTask: f.GetGpusPerTask()}
}

// openModeFromWire reads an open mode; one this agent does not know is the
// default.
func openModeFromWire(m phalanxv1.OpenMode) cluster.OpenMode {
	switch m {
	case phalanxv1.OpenMode_OPEN_MODE_APPEND:
		return cluster.OpenAppend
	case phalanxv1.OpenMode_OPEN_MODE_TRUNCATE:
		return cluster.OpenTruncate
	}
	return cluster.OpenDefault
}

// prologFromWire reads the prolog an assignment carries.
func prologFromWire(p *phalanxv1.Prolog) cluster.Prolog {
	return cluster.Prolog{Programs: p.GetPrograms(), Timeout: secondsDuration(p.GetTimeoutSeconds())}
}

// nodeNames are the job's nodes, by rank.
// gpusOf returns the host GPUs of rank's slot (nil: none, or no such
// rank).
func (j jobInfo) gpusOf(rank int32) []int {
	if rank < 0 || int(rank) >= len(j.ranks) {
		return nil
	}
	return j.ranks[rank].gpus
}

func (j jobInfo) nodeNames() []string {
	names := make([]string, len(j.ranks))
	for i, r := range j.ranks {
		names[i] = r.node
	}
	return names
}

func arrayFromWire(a *phalanxv1.ArrayTask) *cluster.ArrayTask {
	if a == nil {
		return nil
	}
	return &cluster.ArrayTask{JobID: cluster.JobID(a.GetArrayJobId()), TaskID: int(a.GetTaskId()), Count: int(a.GetCount()),
		Min: int(a.GetMin()), Max: int(a.GetMax()), Step: int(a.GetStep()), Throttle: int(a.GetThrottle())}
}
