// Package config reads phalanx.conf, written in slurm.conf syntax, so that
// an admin's existing slurm.conf loads with little or no change.
//
// # Syntax
//
// Settings are Key=Value pairs separated by spaces; keys are
// case-insensitive; '#' starts a comment; a trailing backslash continues a
// line; a value with spaces is double-quoted. "Include PATH" reads another
// file in place (relative paths are relative to the including file).
//
// # What Phalanx reads
//
//	ClusterName=NAME
//	SlurmctldHost=NAME[(ADDR)]      repeatable, in order; also ControllerHost
//	TopologyPlugin=topology/tree    or topology/block, topology/flat
//	TopologyFile=PATH               topology.conf, relative to this file
//	ControllerPort=PORT             controllers' API port, default 7817; also
//	                                SlurmctldPort (one port, not a range)
//	RaftPort=PORT                   controllers' Raft port, default 7819
//	MinJobAge=SECONDS               a finished job stays in squeue and scontrol
//	                                show job this long, default 300; 0: it
//	                                leaves at once
//	PurgeJobAfter=N[hours|days|months]
//	                                a finished job is kept for accounting this
//	                                long after it ended, default 30days; a
//	                                bare number is months (of 30 days), as in
//	                                slurmdbd.conf
//	PurgeEventAfter=N[hours|days|months]
//	                                a node event (phx events) is kept this
//	                                long, default 30days; as PurgeJobAfter
//	PriorityWeightFairshare=N       the priority a job of an account that used
//	                                nothing gets from fair share (Slurm's
//	                                classic factor 2^(-usage/share), equal
//	                                shares); default 10000, at most 999999;
//	                                0: no fair share (docs/scheduler.md)
//	PriorityDecayHalfLife=TIME      usage this long ago counts half; a Slurm
//	                                time (7-0: 7 days, the default); 0: usage
//	                                never fades
//	MaxJobHistory=N                 the most finished jobs kept for accounting
//	                                (the oldest go first); default 0, no cap
//	PreemptMode=OFF|REQUEUE         the mode of partitions that set none;
//	                                default OFF
//	PreemptType=preempt/none|preempt/partition_prio|preempt/qos
//	                                none (the default) turns preemption off
//	                                everywhere; the others need
//	                                PreemptMode=REQUEUE, none needs OFF
//	MaxArraySize=N                  Slurm's: job array indices run below N
//	                                (default 1001, at most 4000001)
//	MaxJobCount=N                   Slurm's: the most jobs not yet finished
//	                                (pending, running, ending) the controllers
//	                                hold; a submit that finds it reached is
//	                                refused until some end (submits arriving
//	                                together may pass it by as many). Default
//	                                0, no cap (Slurm's 10000 also counts jobs
//	                                finished within MinJobAge, which Phalanx
//	                                keeps on disk)
//	MaxScriptSize=BYTES             the largest batch script a submit may carry
//	                                (Slurm's SchedulerParameters=max_script_size),
//	                                default 4194304 (4 MiB, Slurm's default), at
//	                                most 67108864 (64 MiB). phx reads it too, to
//	                                refuse a larger script before sending it
//	DisableRootJobs=YES|NO          Slurm's: refuse jobs that would run as root
//	AdminUsers=NAME,...             users who may change the cluster and any job
//	                                (root and the controller's user always may)
//	OperatorUsers=NAME,...          users who may change any job
//	PrivateData=jobs                Slurm's: users see only their own jobs
//	SlurmctldParameters=rl_enable[,rl_bucket_size=N,rl_refill_rate=N,
//	         rl_refill_period=SECONDS,rl_table_size=N]
//	                                Slurm's per-user limit on calls (defaults
//	                                30, 2, 1, 8192); other options are ignored
//	HealthCheckProgram=PATH         Slurm's: the node health program every
//	                                agent runs (absolute path; NHC works), given
//	                                to the agents with each heartbeat reply
//	HealthCheckInterval=SECONDS     between its runs on a node; default 0: it
//	                                never runs (a warning if a program is set)
//	HealthCheckNodeState=STATE,...  ANY (default), IDLE, ALLOC, MIXED,
//	                                NONDRAINED_IDLE, CYCLE; ALLOC and MIXED both
//	                                mean "runs a task" (docs/health.md)
//	Prolog=PATH[,PATH...]           Slurm's: programs an agent runs as root, in
//	                                order, before a job's task starts on its
//	                                node; one that fails drains the node and
//	                                fails the attempt (docs/health.md)
//	PrologEpilogTimeout=SECONDS     how long each may run; default 300 (Slurm
//	                                waits for ever)
//	UnkillableStepTimeout=SECONDS   Slurm's: how long a task may outlive its
//	                                SIGKILL before its node is drained with
//	                                "Kill task failed"; 1 to 3600, default 60
//	UnkillableStepProgram=PATH      Slurm's: what the agent then runs as root
//	                                (docs/health.md)
//	KillWait=SECONDS                Slurm's: SIGTERM to SIGKILL at a job's time
//	                                limit, cancel or requeue; 1 to 65533; the
//	                                controllers' --kill-grace wins (default 10)
//	NodeName=HOSTLIST [NodeAddr=HOSTLIST] CPUs=N RealMemory=MB
//	         Gres=gpu[:TYPE][:N] Features=a,b Weight=N
//	         (Sockets, CoresPerSocket, ThreadsPerCore give CPUs when CPUs is absent)
//	         State=UNKNOWN is accepted (a node's state comes from its agent);
//	         any other State is refused, and so are DownNodes= lines
//	         The controller applies Weight and Features (merged into what
//	         the node's agent reports). Weight defaults to 1, as in Slurm
//	         (a node set to 0 is used before one that sets none). With NodeName lines the config is
//	         the cluster: a node no line names is refused at registration;
//	         one that reports fewer CPUs, less RealMemory or fewer GPUs than
//	         its line is INVAL (not used) with Slurm's reason, e.g. "Low
//	         RealMemory (reported:X < configured:Y)"; one that never
//	         registered is listed DOWN, not responding (down*). Without
//	         NodeName lines every node that registers is taken.
//	PartitionName=NAME Nodes=HOSTLIST|ALL Default=YES|NO State=UP|DOWN|DRAIN|INACTIVE
//	         MaxTime=T DefaultTime=T MaxNodes=N|UNLIMITED MinNodes=N PriorityTier=N
//	         PreemptMode=OFF|REQUEUE AllowAccounts=A,B|ALL DenyAccounts=A,B
//	         (with AllowAccounts, DenyAccounts is not enforced, as in Slurm;
//	         a warning says so)
//	         OverSubscribe=NO|EXCLUSIVE (Shared=; YES and FORCE are refused)
//	         AllowGroups=G,H|ALL (members of these groups only)
//	         PriorityTier defaults to 1, as in Slurm (a partition set to 0
//	         ranks below one that sets none), at most 65533; PriorityJobFactor is refused
//	         (partitions are ordered by PriorityTier alone). A job asking
//	         for more nodes than MaxNodes or fewer than MinNodes (default
//	         0, no minimum) is refused at submit. With NodeName lines, a node
//	         Nodes= names must have one (Slurm's "Invalid node name");
//	         without any, nodes join as their agents register
//	GresTypes=gpu                   needed by a NodeName line's Gres=gpu (as
//	                                in Slurm); other types are warnings
//
// Load also checks the gres.conf beside the file, when there is one: its
// GPU lines must agree with the NodeName lines' Gres= (gres.go).
// LoadWithTopology also reads the topology.conf the file names (or one
// given) with the topology package.
//
// Each global key but SlurmctldHost may be set once. Parse stores the default of an absent
// key in Config (see DefaultControllerPort and the other Default
// constants), so callers use the fields as they are.
//
// NodeName=DEFAULT and PartitionName=DEFAULT set values for the lines that
// follow; a bad value there is reported once, at the DEFAULT line. Any
// other key is accepted and reported in Config.Warnings (once per key,
// naming its file and line), so a full slurm.conf loads.
//
// # Problems
//
// Problems are reported with their file and line, one line each, and say
// how to fix them; all of them (up to 20) at once, in order of file and
// line: each line's, and the whole file's (a second Default=YES partition,
// a partition or node defined twice, a partition naming an undeclared
// node, Gres=gpu without GresTypes=gpu), and, from Load and
// LoadWithTopology, those of gres.conf and topology.conf too (with a
// switch or block of topology.conf listing an undeclared node). A line with
// a problem still takes part in the whole file's checks as far as it can be
// read, so that fixing it brings no new problem elsewhere. Only a config
// that cannot be read stops the rest; a NodeName line whose host names
// cannot be read leaves unchecked which nodes partitions and gres.conf may
// name, until it is fixed.
package config
