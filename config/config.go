package config

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Defaults of the global keys, which Parse stores when a key is absent.
const (
	DefaultControllerPort  = 7817
	DefaultRaftPort        = 7819
	DefaultMinJobAge       = 300 * time.Second
	DefaultPurgeJobAfter   = 30 * 24 * time.Hour
	DefaultPurgeEventAfter = 30 * 24 * time.Hour
)

// Config is what phalanx.conf says. Parse fills an absent global key with
// its default (see the Default constants); callers use the fields as they are.
type Config struct {
	ClusterName string
	// Controllers are the controller replicas, in file order.
	Controllers []Controller
	// Nodes has one entry per host, in file order (hostlists expanded).
	Nodes []NodeConf
	// Partitions are in file order.
	Partitions []*cluster.Partition
	// TopologyPlugin is Slurm's plugin name, e.g. "topology/tree"; empty
	// when not set.
	TopologyPlugin string
	// TopologyFile is the topology.conf path as written; relative paths are
	// relative to the config file's directory.
	TopologyFile string
	// ControllerPort is the controllers' API port (ControllerPort= or
	// SlurmctldPort=; default 7817); RaftPort their Raft port (default
	// 7819). A controller whose SlurmctldHost address has a port uses that.
	ControllerPort int
	RaftPort       int
	// MinJobAge is how long a finished job stays in the controller's view
	// (squeue, scontrol show job); zero: it leaves at once. Default 300s.
	MinJobAge time.Duration
	// PurgeJobAfter is how long after it ended a finished job is kept for
	// accounting (default 30 days); MaxJobHistory caps how many are kept
	// (zero: no cap, the default).
	PurgeJobAfter time.Duration
	MaxJobHistory int
	// PriorityWeightFairshare is the priority a job of an account that
	// used nothing gets from fair share (Slurm's key; default 10000, 0:
	// no fair share); PriorityDecayHalfLife is how long until usage counts
	// half (default 7-0, 7 days; 0: it never fades).
	PriorityWeightFairshare int64
	PriorityDecayHalfLife   time.Duration
	// PurgeEventAfter is how long node events (phx events) are kept
	// (slurmdbd.conf's key; default 30 days).
	PurgeEventAfter time.Duration
	// MaxJobCount is Slurm's: the most jobs the controller holds that have
	// not finished (pending, running, ending); a submit beyond it is
	// refused. Zero: no cap, the default.
	MaxJobCount int
	// MaxArraySize is Slurm's: a job array's indices run below it (default
	// cluster.DefaultMaxArraySize, 1001; at most 4000001, Slurm's ceiling).
	MaxArraySize int
	// MaxScriptSize bounds a batch script, in bytes (Slurm's
	// SchedulerParameters=max_script_size); default
	// cluster.DefaultMaxScriptSize, at most cluster.MaxScriptSizeCeiling.
	MaxScriptSize int
	// DisableRootJobs refuses jobs that would run as root; AdminUsers and
	// OperatorUsers name who may change the cluster, and any job (see
	// access.go).
	DisableRootJobs bool
	AdminUsers      []string
	OperatorUsers   []string
	// PrivateJobs hides other users' jobs from users (PrivateData=jobs).
	PrivateJobs bool
	// RateLimit limits each user's calls (SlurmctldParameters=rl_enable).
	RateLimit RateLimit
	// HealthCheck is the node health program agents run
	// (HealthCheckProgram, HealthCheckInterval, HealthCheckNodeState).
	HealthCheck cluster.HealthCheck
	// Prolog is what agents run before a job's task starts on their node
	// (Prolog, PrologEpilogTimeout).
	Prolog cluster.Prolog
	// Unkillable is what agents do with a task that outlives SIGKILL
	// (UnkillableStepTimeout, UnkillableStepProgram).
	Unkillable cluster.Unkillable
	// KillWait is Slurm's time between SIGTERM and SIGKILL when a job is
	// stopped (its time limit, a cancel); zero: not set, the controllers'
	// default.
	KillWait time.Duration
	// Warnings are about settings Phalanx accepted but does not use.
	Warnings []string
}

// Controller is one controller replica.
type Controller struct {
	Name string
	// Addr is the address in SlurmctldHost=name(addr); Name when not given.
	// It may lack a port.
	Addr string
}

// NodeConf is one host as the admin configured it.
type NodeConf struct {
	Name     string
	Addr     string // NodeAddr; empty: Name
	CPUs     int    // zero: not configured
	MemoryMB int64  // RealMemory; zero: not configured
	GPUs     int
	GPUType  string // from Gres=gpu:TYPE:N; empty: any
	Features []string
	Weight   int // DefaultWeight unless the line sets one
	// Sockets, CoresPerSocket, ThreadsPerCore: the line's layout, as
	// written (zero: not given); CPUs is their product when the line gives
	// no CPUs.
	Sockets, CoresPerSocket, ThreadsPerCore int
}

// ParseError is a problem at one line of a config file. It wraps
// cluster.ErrInvalid.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Unwrap makes errors.Is(err, cluster.ErrInvalid) hold.
func (e *ParseError) Unwrap() error { return cluster.ErrInvalid }

func lineErr(file string, num int, format string, args ...any) error {
	return &ParseError{File: file, Line: num, Msg: fmt.Sprintf(format, args...)}
}

// lineAt is where a key was set: a file and a line (none: num 0).
type lineAt struct {
	file string
	num  int
}

// maxErrors bounds how many problems one parse reports.
const maxErrors = 20

// Parse parses a config in slurm.conf syntax; name is used in messages and
// to resolve relative Include paths. Every problem found is reported (up to
// a limit), each naming its line; unknown keys only add warnings.
func Parse(r io.Reader, name string) (*Config, error) {
	p := parseAll(r, name)
	if len(p.errs) > 0 {
		return nil, joinErrors(p.errs, name)
	}
	return p.cfg, nil
}

// parseAll parses a config and makes the whole file's checks; the parser
// holds the config, as far as it goes, and every problem found.
func parseAll(r io.Reader, name string) *parser {
	p := newParser()
	p.parse(r, name, nil)
	p.finish()
	return p
}

// joinErrors makes one error of a file's problems, up to a limit, in
// order: by file (the files in the order first met), then by line.
func joinErrors(errs []error, name string) error {
	errs = inOrder(errs)
	if len(errs) > maxErrors {
		errs = append(errs[:maxErrors], fmt.Errorf("%s: %d more problems", name, len(errs)-maxErrors))
	}
	return errors.Join(errs...)
}

// parser accumulates the config and its problems across lines and files.
type parser struct {
	cfg    *Config
	errs   []error
	warned map[string]*warnedAt // warning keys already given

	nodeDefaults []pair // from NodeName=DEFAULT
	partDefaults []pair // from PartitionName=DEFAULT
	// The global PreemptMode (OFF, REQUEUE; empty: unset, OFF) and
	// PreemptType (preemptOn: one that preempts), and where they are set.
	preemptMode     cluster.PreemptMode
	preemptTypeName string
	preemptOn       bool
	preemptModeAt   lineAt
	preemptTypeAt   lineAt
	nodeLine        map[string]string
	partLine        map[string]string
	globalLine      map[string]string // non-repeatable key → where it was set
	defaultPart     string            // "name (file:line)" of the Default=YES partition

	// What the whole file's checks (finish) need. nodeLines: the config
	// has NodeName lines (other than DEFAULT); declared: the nodes they
	// name, well formed or not; unresolved: one's names could not be
	// read, so which nodes are declared cannot be told.
	nodeLines, unresolved bool
	declared              map[string]bool
	partNodes             []partNodes // every partition line's nodes
	gpuGres               []gresAt    // NodeName lines that give GPUs
	gresTypesGPU          bool        // GresTypes lists gpu
}

func newParser() *parser {
	return &parser{
		cfg: &Config{
			ControllerPort:  DefaultControllerPort,
			RaftPort:        DefaultRaftPort,
			MinJobAge:       DefaultMinJobAge,
			PurgeJobAfter:   DefaultPurgeJobAfter,
			PurgeEventAfter: DefaultPurgeEventAfter,
			MaxScriptSize:   cluster.DefaultMaxScriptSize,

			PriorityWeightFairshare: DefaultPriorityWeightFairshare,
			PriorityDecayHalfLife:   cluster.DefaultDecayHalfLife,
		},
		warned:     map[string]*warnedAt{},
		nodeLine:   map[string]string{},
		partLine:   map[string]string{},
		declared:   map[string]bool{},
		globalLine: map[string]string{},
	}
}

// parse reads one file; outer are the files that include it, outermost
// first.
func (p *parser) parse(r io.Reader, file string, outer []string) {
	chain := append(slices.Clip(outer), file)
	lines, errs := logicalLines(r, file)
	p.errs = append(p.errs, errs...)
	for _, l := range lines {
		switch l.Pairs[0].lower {
		case "nodename":
			p.nodeLineDirective(file, l)
		case "partitionname":
			p.partitionLine(file, l)
		case "include":
			p.include(chain, l)
		case "downnodes":
			p.downNodes(file, l)
		case "nodeset", "frontendname", "switchname":
			p.warnOnce(l.Pairs[0].lower, file, l.Num, "%s lines are not used by Phalanx; ignored", l.Pairs[0].Key)
		default:
			for _, kv := range l.Pairs {
				p.global(file, l.Num, kv)
			}
		}
	}
}

func (p *parser) errorf(file string, num int, format string, args ...any) {
	p.errs = append(p.errs, lineErr(file, num, format, args...))
}

// warnedAt is a warning given once for a key: its place in the config's
// warnings and how many more lines gave it again.
type warnedAt struct{ index, more int }

// warnOnce adds a warning the first time key is seen; later lines only
// count, and the warning says how many there were (countRepeats).
func (p *parser) warnOnce(key, file string, num int, format string, args ...any) {
	if w := p.warned[key]; w != nil {
		w.more++
		return
	}
	p.warned[key] = &warnedAt{index: len(p.cfg.Warnings)}
	p.cfg.Warnings = append(p.cfg.Warnings, fmt.Sprintf("%s:%d: ", file, num)+fmt.Sprintf(format, args...))
}

// countRepeats adds to each warning given once how many more lines gave it.
func (p *parser) countRepeats() {
	for _, w := range p.warned {
		switch {
		case w.more == 1:
			p.cfg.Warnings[w.index] += " (and on 1 more line)"
		case w.more > 1:
			p.cfg.Warnings[w.index] += fmt.Sprintf(" (and on %d more lines)", w.more)
		}
	}
}

// global handles a key outside NodeName and PartitionName lines.
func (p *parser) global(file string, num int, kv pair) {
	switch kv.lower {
	case "slurmctldhost", "controllerhost", "controlmachine", "backupcontroller":
		p.controller(file, num, kv)
	case "clustername":
		p.single(file, num, kv, &p.cfg.ClusterName)
	case "topologyplugin":
		p.single(file, num, kv, &p.cfg.TopologyPlugin)
		p.checkTopologyPlugin(file, num, kv.Value)
	case "topologyfile":
		p.single(file, num, kv, &p.cfg.TopologyFile)
	case "controllerport", "slurmctldport":
		p.port(file, num, kv, "controllerport", &p.cfg.ControllerPort)
	case "raftport":
		p.port(file, num, kv, kv.lower, &p.cfg.RaftPort)
	case "minjobage":
		p.minJobAge(file, num, kv)
	case "purgejobafter":
		p.purgeAfter(file, num, kv, &p.cfg.PurgeJobAfter)
	case "purgeeventafter":
		p.purgeAfter(file, num, kv, &p.cfg.PurgeEventAfter)
	case "maxjobcount":
		p.count(file, num, kv, "jobs not yet finished to hold", &p.cfg.MaxJobCount)
	case "maxarraysize":
		p.arraySize(file, num, kv)
	case "preemptmode":
		p.globalPreemptMode(file, num, kv)
	case "preempttype":
		p.preemptType(file, num, kv)
	case "maxjobhistory":
		p.count(file, num, kv, "finished jobs to keep", &p.cfg.MaxJobHistory)
	case "maxscriptsize":
		p.scriptSize(file, num, kv)
	case "disablerootjobs":
		p.disableRootJobs(file, num, kv)
	case "adminusers":
		p.users(file, num, kv, &p.cfg.AdminUsers)
	case "operatorusers":
		p.users(file, num, kv, &p.cfg.OperatorUsers)
	case "privatedata":
		p.privateData(file, num, kv)
	case "slurmctldparameters":
		p.slurmctldParameters(file, num, kv)
	case "healthcheckprogram", "healthcheckinterval", "healthchecknodestate":
		p.healthCheck(file, num, kv)
	case "prolog", "prologepilogtimeout":
		p.prolog(file, num, kv)
	case "unkillablesteptimeout", "unkillablestepprogram":
		p.unkillable(file, num, kv)
	case "killwait":
		p.killWait(file, num, kv)
	case "grestypes":
		p.gresTypes(file, num, kv)
	case "priorityweightfairshare", "prioritydecayhalflife":
		p.priority(file, num, kv)
	default:
		p.warnOnce("global:"+kv.lower, file, num, "%s is not used by Phalanx; ignored", kv.Key)
	}
}

// single sets a key that may appear once; a repeat is an error.
func (p *parser) single(file string, num int, kv pair, dst *string) {
	if p.once(file, num, kv, kv.lower) {
		*dst = kv.Value
	}
}

// once records a key that may appear once, under id (aliases share one),
// and reports whether its value is to be used: not a repeat, not empty.
func (p *parser) once(file string, num int, kv pair, id string) bool {
	if prev, ok := p.globalLine[id]; ok {
		p.errorf(file, num, "%s is already set at %s: keep one", kv.Key, prev)
		return false
	}
	p.globalLine[id] = fmt.Sprintf("%s:%d", file, num)
	if kv.Value == "" {
		p.errorf(file, num, "%s is empty: give it a value or remove the line", kv.Key)
		return false
	}
	return true
}

// port parses a TCP port. Slurm allows a range of ports (6817-6818);
// Phalanx listens on one.
func (p *parser) port(file string, num int, kv pair, id string, dst *int) {
	if !p.once(file, num, kv, id) {
		return
	}
	v := kv.Value
	if lo, _, ok := strings.Cut(v, "-"); ok && validPort(lo) {
		p.errorf(file, num, "%s=%s: Phalanx uses one port, not a range: write %s=%s", kv.Key, v, kv.Key, lo)
		return
	}
	if !validPort(v) {
		p.errorf(file, num, "%s=%s: want a port from 1 to 65535, e.g. %s=%d", kv.Key, v, kv.Key, *dst)
		return
	}
	*dst, _ = strconv.Atoi(v)
}

func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 1 && n <= 65535
}

// count parses a KEY=N cap on what, 0 for none.
func (p *parser) count(file string, num int, kv pair, what string, dst *int) {
	if !p.once(file, num, kv, kv.lower) {
		return
	}
	n, err := strconv.Atoi(kv.Value)
	if err != nil || n < 0 {
		p.errorf(file, num, "%s=%s: want a whole number of %s, e.g. %s=100000 (0: no cap)", kv.Key, kv.Value, what, kv.Key)
		return
	}
	*dst = n
}

// MaxArraySizeCeiling is Slurm's largest MaxArraySize.
const MaxArraySizeCeiling = cluster.MaxArraySizeCeiling

// arraySize parses MaxArraySize=N, from 1 to Slurm's ceiling.
func (p *parser) arraySize(file string, num int, kv pair) {
	if !p.once(file, num, kv, kv.lower) {
		return
	}
	n, err := strconv.Atoi(kv.Value)
	if err != nil || n < 1 || n > MaxArraySizeCeiling {
		p.errorf(file, num, "%s=%s: want 1 to %d (array indices run below it; Slurm's default is %d)", kv.Key, kv.Value, MaxArraySizeCeiling, cluster.DefaultMaxArraySize)
		return
	}
	p.cfg.MaxArraySize = n
}

// scriptSize parses MaxScriptSize=BYTES, from 1 to the ceiling.
func (p *parser) scriptSize(file string, num int, kv pair) {
	if !p.once(file, num, kv, kv.lower) {
		return
	}
	n, err := strconv.Atoi(kv.Value)
	if err != nil || n < 1 || n > cluster.MaxScriptSizeCeiling {
		p.errorf(file, num, "%s=%s: want a size in bytes from 1 to %d, e.g. %s=%d (Slurm's default, 4 MiB)",
			kv.Key, kv.Value, cluster.MaxScriptSizeCeiling, kv.Key, cluster.DefaultMaxScriptSize)
		return
	}
	p.cfg.MaxScriptSize = n
}

func (p *parser) checkTopologyPlugin(file string, num int, v string) {
	switch strings.ToLower(v) {
	case "topology/tree", "topology/block", "topology/flat", "topology/none", "topology/default":
	default:
		p.errorf(file, num, "TopologyPlugin=%s is not supported: use topology/tree, topology/block or topology/flat", v)
	}
}

// controller parses SlurmctldHost=name or name(addr).
func (p *parser) controller(file string, num int, kv pair) {
	v := kv.Value
	c := Controller{Name: v, Addr: v}
	if open := strings.IndexByte(v, '('); open >= 0 {
		if !strings.HasSuffix(v, ")") || open == 0 || open == len(v)-2 {
			p.errorf(file, num, "%s=%s: write name or name(address), e.g. ctl1(10.0.0.1)", kv.Key, v)
			return
		}
		c = Controller{Name: v[:open], Addr: v[open+1 : len(v)-1]}
	}
	if c.Name == "" {
		p.errorf(file, num, "%s is empty: name a controller host", kv.Key)
		return
	}
	for _, have := range p.cfg.Controllers {
		if have.Name == c.Name {
			p.errorf(file, num, "controller %s is listed twice: remove one", c.Name)
			return
		}
	}
	p.cfg.Controllers = append(p.cfg.Controllers, c)
}
