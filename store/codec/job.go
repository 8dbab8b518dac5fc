package codec

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	statev1 "github.com/phalanx-hpc/phalanx/api/phalanx/state/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// Job encodes a job's record: spec and status, without the payload (script
// and environment; see Payload).
func Job(j *cluster.Job) (*statev1.Job, error) {
	st, err := jobStatus(j)
	if err != nil {
		return nil, err
	}
	return &statev1.Job{Id: uint64(j.ID), Spec: jobSpec(j), Status: st}, nil
}

func jobSpec(j *cluster.Job) *statev1.JobSpec {
	return &statev1.JobSpec{
		Name:           j.Name,
		User:           j.User,
		Uid:            int32(j.UID),
		Gid:            int32(j.GID),
		Account:        j.Account,
		Partition:      j.Partition,
		Priority:       j.Priority,
		SubmitTime:     Time(j.SubmitTime),
		TimeLimit:      int64(j.TimeLimit),
		Image:          j.Image,
		WorkDir:        j.WorkDir,
		Output:         j.Output,
		Error:          j.Error,
		Nodes:          int32(j.Nodes),
		GpusPerNode:    int32(j.GPUsPerNode),
		GpuType:        j.GPUType,
		CpusPerNode:    int32(j.CPUsPerNode),
		MemoryMb:       j.MemoryMB,
		TasksPerNode:   int32(j.TasksPerNode),
		GpusPerTask:    int32(j.GPUsPerTask),
		CpusPerTask:    int32(j.CPUsPerTask),
		SubmitHost:     j.SubmitHost,
		RequestForm:    requestFormRecord(j.RequestForm),
		ScriptPath:     j.ScriptPath,
		ScriptArgs:     j.ScriptArgs,
		SubmitLine:     j.SubmitLine,
		Comment:        j.Comment,
		Constraint:     j.Constraint,
		Nodelist:       j.NodeList,
		Exclude:        j.Exclude,
		Exclusive:      j.Exclusive,
		Switches:       int32(j.Switches),
		SwitchesWait:   int64(j.SwitchesWait),
		Segment:        int32(j.Segment),
		Qos:            string(j.QoS),
		Nice:           int32(j.Nice),
		Restart:        restartPolicy(j.Restart),
		Signal:         int32(j.Signal.Signal),
		SignalBefore:   int64(j.Signal.Before),
		SignalBatch:    j.Signal.Batch,
		CheckpointDir:  j.Checkpoint.Dir,
		CheckpointKeep: int32(j.Checkpoint.Keep),
		HangTimeout:    int64(j.HangTimeout),

		BeginTime:        Time(j.BeginTime),
		Deadline:         Time(j.Deadline),
		Array:            arrayRecord(j.Array),
		Dependency:       depConds(j.Dependency),
		DependencyAny:    j.Dependency.Any,
		KillOnInvalidDep: j.KillOnInvalidDep,
		OpenMode:         openModeRecord(j.OpenMode),
	}
}

func requestFormRecord(f cluster.RequestForm) *statev1.RequestForm {
	if !f.Recorded {
		return nil
	}
	r := &statev1.RequestForm{Ntasks: f.NTasks, NtasksPerNode: f.NTasksPerNode, GpusPerNode: f.GPUsPerNode,
		Gpus: f.GPUs, MemPerCpuMb: f.MemPerCPUMB, MemPerGpuMb: f.MemPerGPUMB}
	if f.GPUsSplit {
		r.GpusSplit = &f.GPUsSplit
	}
	if f.GPUsPerTask {
		r.GpusPerTask = &f.GPUsPerTask
	}
	return r
}

// fromRequestForm reads a job's request form; nil: a job recorded before
// it was.
func fromRequestForm(f *statev1.RequestForm) cluster.RequestForm {
	if f == nil {
		return cluster.RequestForm{}
	}
	return cluster.RequestForm{Recorded: true, NTasks: f.GetNtasks(), NTasksPerNode: f.GetNtasksPerNode(), GPUsPerNode: f.GetGpusPerNode(),
		GPUs: f.GetGpus(), MemPerCPUMB: f.GetMemPerCpuMb(), MemPerGPUMB: f.GetMemPerGpuMb(), GPUsSplit: f.GetGpusSplit(),
		GPUsPerTask: f.GetGpusPerTask()}
}

func openModeRecord(m cluster.OpenMode) statev1.OpenMode {
	switch m {
	case cluster.OpenAppend:
		return statev1.OpenMode_OPEN_MODE_APPEND
	case cluster.OpenTruncate:
		return statev1.OpenMode_OPEN_MODE_TRUNCATE
	}
	return statev1.OpenMode_OPEN_MODE_UNSPECIFIED
}

// fromOpenModeRecord decodes an open mode; one this version does not know
// is the default.
func fromOpenModeRecord(m statev1.OpenMode) cluster.OpenMode {
	switch m {
	case statev1.OpenMode_OPEN_MODE_APPEND:
		return cluster.OpenAppend
	case statev1.OpenMode_OPEN_MODE_TRUNCATE:
		return cluster.OpenTruncate
	}
	return cluster.OpenDefault
}

func jobStatus(j *cluster.Job) (*statev1.JobStatus, error) {
	state, err := JobState(j.State)
	if err != nil {
		return nil, err
	}
	out := &statev1.JobStatus{
		State:      state,
		Reason:     j.Reason,
		ExitCode:   int32(j.ExitCode),
		ExitSignal: int32(j.ExitSignal),
		StartTime:  Time(j.StartTime),
		EndTime:    Time(j.EndTime),
		Attempt:    int32(j.Attempt),
		MasterPort: int32(j.MasterPort),
		Requeued:   j.Requeued,
	}
	if j.Alloc != nil {
		out.Alloc = Allocation(*j.Alloc)
	}
	for _, t := range j.Tasks {
		ts, err := TaskState(t.State)
		if err != nil {
			return nil, err
		}
		out.Tasks = append(out.Tasks, &statev1.Task{
			Rank: int32(t.Rank), Node: t.Node, State: ts, ExitCode: int32(t.ExitCode), ExitSignal: int32(t.ExitSignal),
			Message: t.Message, StartTime: Time(t.StartTime), EndTime: Time(t.EndTime),
		})
	}
	for _, a := range j.Attempts {
		as, err := JobState(a.State)
		if err != nil {
			return nil, err
		}
		out.Attempts = append(out.Attempts, &statev1.Attempt{
			Attempt: int32(a.Attempt), Alloc: Allocation(a.Alloc), StartTime: Time(a.StartTime), EndTime: Time(a.EndTime),
			State: as, Reason: a.Reason, PlacedIndex: a.PlacedIndex, ReleasedIndex: a.ReleasedIndex,
			Cause: restartCause(a.Cause), FaultNode: a.FaultNode, Unfenced: a.Unfenced,
			ExitCode: int32(a.ExitCode), ExitSignal: int32(a.ExitSignal), PlacedBy: PlacedBy(a.PlacedBy),
			PreemptedFor: uint64(a.PreemptedFor.Job), PreemptedForAttempt: int32(a.PreemptedFor.Attempt),
		})
	}
	if j.Checkpointed {
		out.CheckpointStep = &j.CheckpointStep
	}
	out.Hold = HoldRecord(j.Hold)
	for _, r := range j.SignalRequests {
		out.SignalRequests = append(out.SignalRequests, &statev1.SignalRequest{Seq: r.Seq, Signal: int32(r.Signal), Scope: SignalScopeRecord(r.Scope), Step: r.Step})
	}
	for _, c := range j.CheckpointPending {
		p := &statev1.CheckpointCommits{Step: c.Step}
		for _, r := range c.Ranks {
			p.Ranks = append(p.Ranks, int32(r))
		}
		out.CheckpointPending = append(out.CheckpointPending, p)
	}
	return out, nil
}

// FromJob decodes a job's record; its payload fields are empty (see
// WithPayload).
func FromJob(r *statev1.Job) (*cluster.Job, error) {
	sp := r.GetSpec()
	j := &cluster.Job{
		ID:           cluster.JobID(r.GetId()),
		Name:         sp.GetName(),
		User:         sp.GetUser(),
		UID:          int(sp.GetUid()),
		GID:          int(sp.GetGid()),
		Account:      sp.GetAccount(),
		Partition:    sp.GetPartition(),
		Priority:     sp.GetPriority(),
		SubmitTime:   FromTime(sp.GetSubmitTime()),
		TimeLimit:    time.Duration(sp.GetTimeLimit()),
		Image:        sp.GetImage(),
		WorkDir:      sp.GetWorkDir(),
		Output:       sp.GetOutput(),
		Error:        sp.GetError(),
		Nodes:        int(sp.GetNodes()),
		GPUsPerNode:  int(sp.GetGpusPerNode()),
		GPUType:      sp.GetGpuType(),
		CPUsPerNode:  int(sp.GetCpusPerNode()),
		MemoryMB:     sp.GetMemoryMb(),
		TasksPerNode: int(sp.GetTasksPerNode()),
		GPUsPerTask:  int(sp.GetGpusPerTask()),
		CPUsPerTask:  int(sp.GetCpusPerTask()),
		SubmitHost:   sp.GetSubmitHost(),
		RequestForm:  fromRequestForm(sp.GetRequestForm()),
		ScriptPath:   sp.GetScriptPath(),
		ScriptArgs:   sp.GetScriptArgs(),
		SubmitLine:   sp.GetSubmitLine(),
		Comment:      sp.GetComment(),
		Constraint:   sp.GetConstraint(),
		NodeList:     sp.GetNodelist(),
		Exclude:      sp.GetExclude(),
		Exclusive:    sp.GetExclusive(),
		Switches:     int(sp.GetSwitches()),
		SwitchesWait: time.Duration(sp.GetSwitchesWait()),
		Segment:      int(sp.GetSegment()),
		QoS:          cluster.QoS(sp.GetQos()),
		Nice:         int(sp.GetNice()),
		Restart:      fromRestartPolicy(sp.GetRestart()),
		Signal: cluster.JobSignal{Signal: int(sp.GetSignal()), Before: time.Duration(sp.GetSignalBefore()),
			Batch: sp.GetSignalBatch()},
		Checkpoint:  cluster.CheckpointSpec{Dir: sp.GetCheckpointDir(), Keep: int(sp.GetCheckpointKeep())},
		HangTimeout: time.Duration(sp.GetHangTimeout()),

		BeginTime:        FromTime(sp.GetBeginTime()),
		Deadline:         FromTime(sp.GetDeadline()),
		Array:            fromArrayRecord(sp.GetArray()),
		Dependency:       fromDepConds(sp.GetDependency(), sp.GetDependencyAny()),
		KillOnInvalidDep: sp.GetKillOnInvalidDep(),
		OpenMode:         fromOpenModeRecord(sp.GetOpenMode()),
	}
	if err := fromJobStatus(j, r.GetStatus()); err != nil {
		return nil, err
	}
	return j, nil
}

func fromJobStatus(j *cluster.Job, st *statev1.JobStatus) error {
	var err error
	if j.State, err = FromJobState(st.GetState()); err != nil {
		return err
	}
	j.Reason = st.GetReason()
	j.ExitCode, j.ExitSignal = int(st.GetExitCode()), int(st.GetExitSignal())
	j.StartTime, j.EndTime = FromTime(st.GetStartTime()), FromTime(st.GetEndTime())
	j.Attempt = int(st.GetAttempt())
	j.MasterPort = int(st.GetMasterPort())
	j.Requeued = st.GetRequeued()
	if st.GetAlloc() != nil {
		a := FromAllocation(st.GetAlloc())
		j.Alloc = &a
	}
	for _, t := range st.GetTasks() {
		ts, err := FromTaskState(t.GetState())
		if err != nil {
			return err
		}
		j.Tasks = append(j.Tasks, cluster.Task{
			Rank: int(t.GetRank()), Node: t.GetNode(), State: ts, ExitCode: int(t.GetExitCode()), ExitSignal: int(t.GetExitSignal()),
			Message: t.GetMessage(), StartTime: FromTime(t.GetStartTime()), EndTime: FromTime(t.GetEndTime()),
		})
	}
	for _, a := range st.GetAttempts() {
		as, err := FromJobState(a.GetState())
		if err != nil {
			return err
		}
		j.Attempts = append(j.Attempts, cluster.Attempt{
			Attempt: int(a.GetAttempt()), Alloc: FromAllocation(a.GetAlloc()), StartTime: FromTime(a.GetStartTime()),
			EndTime: FromTime(a.GetEndTime()), State: as, Reason: a.GetReason(),
			PlacedIndex: a.GetPlacedIndex(), ReleasedIndex: a.GetReleasedIndex(),
			Cause: fromRestartCause(a.GetCause()), FaultNode: a.GetFaultNode(), Unfenced: a.GetUnfenced(),
			ExitCode: int(a.GetExitCode()), ExitSignal: int(a.GetExitSignal()), PlacedBy: FromPlacedBy(a.GetPlacedBy()),
			PreemptedFor: cluster.JobAttempt{Job: cluster.JobID(a.GetPreemptedFor()), Attempt: int(a.GetPreemptedForAttempt())},
		})
	}
	if st.CheckpointStep != nil {
		j.Checkpointed, j.CheckpointStep = true, st.GetCheckpointStep()
	}
	j.Hold = FromHoldRecord(st.GetHold())
	for _, r := range st.GetSignalRequests() {
		j.SignalRequests = append(j.SignalRequests, cluster.SignalRequest{Seq: r.GetSeq(), Signal: int(r.GetSignal()), Scope: FromSignalScopeRecord(r.GetScope()), Step: r.GetStep()})
	}
	for _, c := range st.GetCheckpointPending() {
		p := cluster.CheckpointCommits{Step: c.GetStep()}
		for _, r := range c.GetRanks() {
			p.Ranks = append(p.Ranks, int(r))
		}
		j.CheckpointPending = append(j.CheckpointPending, p)
	}
	return nil
}

// Payload encodes a job's large fields; the environment as NAME=VALUE
// strings, by name.
func Payload(j *cluster.Job) *statev1.JobPayload {
	return &statev1.JobPayload{Script: j.Script, Environment: cluster.Environ(j.Env)}
}

// WithPayload sets a decoded job's large fields from its payload, which
// holds the environment as a list or, written by the first release, a map.
func WithPayload(j *cluster.Job, p *statev1.JobPayload) {
	j.Script = p.GetScript()
	j.Env = cluster.EnvOf(p.GetEnvironment(), p.GetEnv())
}

// EncodePayload encodes a script and an environment (NAME=VALUE) as a
// JobPayload, for a submit that has them in that form already.
func EncodePayload(script string, environ []string) ([]byte, error) {
	return proto.Marshal(&statev1.JobPayload{Script: script, Environment: environ})
}

// FullJob decodes a job record and its payload into one job.
func FullJob(r *statev1.Job, p *statev1.JobPayload) (*cluster.Job, error) {
	j, err := FromJob(r)
	if err != nil {
		return nil, err
	}
	WithPayload(j, p)
	return j, nil
}

// PayloadBytes encodes a job's large fields, deterministically, for the
// Raft log and the payloads bucket.
func PayloadBytes(j *cluster.Job) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(Payload(j))
}

// DecodePayload sets a job's large fields from an encoded JobPayload.
func DecodePayload(j *cluster.Job, data []byte) error {
	var p statev1.JobPayload
	if err := proto.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("job %d payload: %w", j.ID, err)
	}
	WithPayload(j, &p)
	return nil
}
