package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	ucli "github.com/urfave/cli/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/apiclient"
	"github.com/phalanx-hpc/phalanx/cli/getopt"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

// scontrolUsage is what "scontrol --help" prints.
const scontrolUsage = `Usage: scontrol show job [JOBID] | node [NAMES] | partition [NAME] | controllers [ID]
       scontrol ping
       scontrol raft add ID RAFT_HOST:PORT [API_HOST:PORT] | raft remove ID | raft transfer [ID]
       scontrol backup FILE | restore FILE [force]
       scontrol token [username=NAME] [lifespan=SECONDS]
       scontrol update NodeName=NODES State=DRAIN|RESUME|UNDRAIN|DOWN [Reason=WHY]
       scontrol update JobId=JOBID[,JOBID...] [JobName=NAME] [TimeLimit=LIMIT]
       scontrol update PartitionName=P [State=UP|DOWN|DRAIN|INACTIVE] [MaxTime=T] [DefaultTime=T] [MaxNodes=N] [PriorityTier=N] [Default=YES]
       scontrol reconfigure
       scontrol hold|uhold|release JOBID[,JOBID...]
       scontrol requeue JOBID[,JOBID...]
       scontrol top JOBID[,JOBID...]
       scontrol version
A JOBID is a job's ID, a job array's (all its tasks), ARRAYID_TASKID or ARRAYID_[LIST].`

func (k *commands) scontrol() *ucli.Command {
	return slurmCommand("scontrol", "show jobs, nodes, partitions and controllers; ping and change the controllers (scontrol show|ping|raft ...)", k.runScontrol)
}

func (k *commands) runScontrol(c *ucli.Context, args []string) error {
	if versionAsked(scontrolOptions, args, getopt.Permute) {
		return k.printVersion()
	}
	flags, args, err := parseScontrol(args)
	if err != nil {
		return err
	}
	if len(args) == 0 || flags.help || args[0] == "help" {
		fmt.Fprintf(k.sys.Stdout, "%s\n\nOptions:\n%s", scontrolUsage, getopt.Usage(scontrolOptions))
		return nil
	}
	switch strings.ToLower(args[0]) {
	case "show":
		return k.runShow(c, args[1:], flags)
	case "ping":
		if len(args) > 1 {
			return errors.New("scontrol ping takes no arguments")
		}
		return k.ping(c)
	case "raft":
		return k.runRaft(c, args[1:])
	case "backup":
		return k.backup(c, args[1:])
	case "restore":
		return k.restore(c, args[1:])
	case "token":
		return k.token(c, args[1:])
	case "update":
		return k.update(c, args[1:])
	case "hold", "uhold", "release":
		return k.hold(c, strings.ToLower(args[0]), args[1:])
	case "requeue":
		return k.requeue(c, args[1:])
	case "top":
		return k.top(c, args[1:])
	case "reconfigure":
		return k.reconfigure(c, args[1:], flags.quiet)
	case "version":
		if len(args) > 1 {
			return errors.New("scontrol version takes no arguments")
		}
		return k.printVersion()
	}
	return fmt.Errorf("invalid command %q: phx supports scontrol show, ping, raft, backup, restore, token, update, hold, uhold, release, requeue, top, reconfigure and version (scontrol --help)", args[0])
}

func (k *commands) runShow(c *ucli.Context, args []string, flags scontrolFlags) error {
	if len(args) < 1 || len(args) > 2 {
		return fmt.Errorf("write scontrol show job|node|partition|controllers|hostnames|hostlist [ID, NAME or LIST]")
	}
	entity, name, withValue := strings.Cut(args[0], "=") // Slurm's show job=12, show JobId=12 too
	switch {
	case withValue && len(args) == 2:
		return fmt.Errorf("show %s: give the %s once, as %s=VALUE or %s VALUE", args[0], entity, entity, entity)
	case len(args) == 2:
		name = args[1]
	}
	switch showEntity(entity) {
	case "hostnames":
		return k.showHostnames(name)
	case "hostlist":
		return k.showHostlist(name, false)
	case "hostlistsorted":
		return k.showHostlist(name, true)
	case "jobs":
		return k.showJobs(c, name, flags)
	case "nodes":
		return k.showNodes(c, name, flags)
	case "partitions":
		return k.showPartitions(c, name, flags)
	case "controllers":
		return k.showControllers(c, name, flags)
	}
	return fmt.Errorf("invalid entity %q for show: use job, node, partition, controllers, hostnames, hostlist or hostlistsorted", entity)
}

// showEntities are scontrol show's entities in the order Slurm's scontrol
// tries them, each with the fewest letters that name it (Slurm takes a
// prefix: show hostn, show part).
var showEntities = []struct {
	name string
	min  int
}{{"hostnames", 5}, {"hostlistsorted", 9}, {"hostlist", 5}, {"jobs", 1}, {"jobid", 4}, {"nodes", 1}, {"partitions", 1}, {"partitionname", 2}, {"controllers", 4}}

// showEntity is the entity a word names, or "" for none.
func showEntity(word string) string {
	w := strings.ToLower(word)
	for _, e := range showEntities {
		if len(w) >= e.min && strings.HasPrefix(e.name, w) {
			switch e.name {
			case "jobid":
				return "jobs"
			case "partitionname":
				return "partitions"
			}
			return e.name
		}
	}
	return ""
}

func (k *commands) showJobs(c *ucli.Context, id string, flags scontrolFlags) error {
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	var jobs []*phalanxv1.Job
	if id == "" {
		jobs, err = cn.listJobs(c.Context, &phalanxv1.ListJobsRequest{IncludeFinished: true})
		if err == nil && len(jobs) == 0 {
			fmt.Fprintln(k.sys.Stdout, "No jobs in the system")
			return nil
		}
	} else {
		jobs, err = cn.jobsNamed(c.Context, id)
	}
	if err != nil {
		return err
	}
	now := k.sys.Now()
	printRecords(k.sys.Stdout, flags, len(jobs), func(i int) string { return formatJob(jobs[i], now, k.loc(), flags.details) })
	return nil
}

// jobsNamed returns the jobs `scontrol show job ID` shows: the job, every
// task of an array named by its ID, or the tasks ARRAYID_TASKID or
// ARRAYID_[LIST] names. None is Slurm's error, and so is an ID that does
// not read as one (a word, a list), in Slurm's other words.
func (cn *conn) jobsNamed(ctx context.Context, id string) ([]*phalanxv1.Job, error) {
	invalid := &rawError{msg: "slurm_load_jobs error: Invalid job id specified"}
	refs, err := parseJobRefs(id)
	if err != nil || len(refs) != 1 {
		return nil, &rawError{msg: "scontrol_print_job error: Invalid job id specified"}
	}
	r := refs[0]
	if r.tasks == nil {
		var j *phalanxv1.Job
		err := cn.call(ctx, func(ctx context.Context) (err error) {
			j, err = cn.api.GetJob(ctx, &phalanxv1.GetJobRequest{JobId: r.id})
			return err
		})
		if isNotFound(err) {
			return nil, invalid
		}
		if a := j.GetArrayTask(); err != nil || a == nil || a.ArrayJobId != r.id || a.Count < 2 {
			return []*phalanxv1.Job{j}, err
		}
	}
	listed, err := cn.lookupRefs(ctx, refs)
	jobs, _ := r.pick(listed)
	if err == nil && len(jobs) == 0 {
		return nil, invalid
	}
	return jobs, err
}

// showNodes prints the nodes of list, a node name or a hostlist
// (gpu[001-004], $SLURM_JOB_NODELIST), in its order, as Slurm's scontrol
// does; every node without one. A name no node has is Slurm's line in its
// place, "Node NAME not found" on standard output as Slurm's, and the
// status is 1.
func (k *commands) showNodes(c *ucli.Context, list string, flags scontrolFlags) error {
	var names []string
	if list != "" {
		var err error
		if names, err = hostlist.Expand(list); err != nil {
			return hostlistError(err)
		}
	}
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	req := &phalanxv1.ListNodesRequest{}
	if len(names) == 1 {
		req.Names = names // the controller picks it out; a list is picked out here
	}
	nodes, err := cn.listNodes(c.Context, req)
	if err != nil && !(isNotFound(err) && len(names) > 0) {
		return err
	}
	if len(names) == 0 {
		printRecords(k.sys.Stdout, flags, len(nodes), func(i int) string { return FormatNode(nodes[i], k.loc()) })
		return nil
	}
	byName := make(map[string]*phalanxv1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	var missing error
	for _, name := range names {
		if n := byName[name]; n != nil {
			printRecords(k.sys.Stdout, flags, 1, func(int) string { return FormatNode(n, k.loc()) })
		} else {
			fmt.Fprintf(k.sys.Stdout, "Node %s not found\n", name)
			missing = &exitStatus{code: 1}
		}
	}
	return missing
}

func (k *commands) showPartitions(c *ucli.Context, name string, flags scontrolFlags) error {
	parts, nodes, err := k.clusterState(c)
	if err != nil {
		return err
	}
	var shown []*phalanxv1.Partition
	for _, p := range parts {
		if name == "" || p.Name == name {
			shown = append(shown, p)
		}
	}
	if len(shown) == 0 && name != "" { // on standard output, as Slurm's
		fmt.Fprintf(k.sys.Stdout, "Partition %s not found\n", name)
		return &exitStatus{code: 1}
	}
	printRecords(k.sys.Stdout, flags, len(shown), func(i int) string { return FormatPartition(shown[i], nodes) })
	return nil
}

func (k *commands) showControllers(c *ucli.Context, id string, flags scontrolFlags) error {
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	ctls, _, err := cn.listControllers(c.Context)
	if err != nil {
		return err
	}
	var shown []*phalanxv1.ControllerInfo
	for _, ci := range ctls {
		if id == "" || ci.Id == id {
			shown = append(shown, ci)
		}
	}
	if len(shown) == 0 && id != "" {
		return &rawError{msg: fmt.Sprintf("Controller %s not found", id)}
	}
	printRecords(k.sys.Stdout, flags, len(shown), func(i int) string { return FormatController(shown[i], k.loc()) })
	return nil
}

// ping prints whether each controller answers, as Slurm's "scontrol ping"
// does, and fails when none is UP or none leads. The list comes from
// whichever replica answers first: it needs no leader. When none answers,
// every configured address is DOWN.
func (k *commands) ping(c *ucli.Context) error {
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	ctls, reached, err := cn.listControllers(c.Context)
	if !reached {
		for _, addr := range cn.addrs {
			fmt.Fprintf(k.sys.Stdout, "Controller at %s is DOWN\n", addr)
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprint(k.sys.Stdout, FormatPing(ctls))
	return pingError(ctls)
}

// pingError is ping's verdict: nil when a controller is UP and one leads.
func pingError(ctls []*phalanxv1.ControllerInfo) error {
	up, leader := false, false
	for _, ci := range ctls {
		up = up || ci.Reachable
		leader = leader || isLeader(ci)
	}
	switch {
	case !up:
		return errors.New("no controller is UP (is phalanx-controller running?)")
	case !leader:
		return errors.New("no controller is the leader: an election is under way or fewer than a majority of the voters are UP; jobs cannot be submitted or changed until one leads (scontrol show controllers)")
	}
	return nil
}

// listControllers asks whichever controller answers for the members of
// the cluster; reached is false when none answered at all.
func (cn *conn) listControllers(ctx context.Context) (ctls []*phalanxv1.ControllerInfo, reached bool, err error) {
	reached = true
	err = cn.call(ctx, func(ctx context.Context) error {
		resp, err := cn.api.ListControllers(ctx, &phalanxv1.ListControllersRequest{})
		ctls = resp.GetControllers()
		// A NotLeader answer came from a replica that runs (outside the
		// cluster, or with no leader): it is not DOWN.
		if c := status.Code(err); (c == codes.Unavailable && apiclient.NotLeader(err) == nil) || c == codes.DeadlineExceeded {
			reached = false
		}
		return err
	})
	return ctls, reached, err
}

// raftUsage is the usage line of "scontrol raft".
const raftUsage = "write scontrol raft add ID RAFT_HOST:PORT [API_HOST:PORT], scontrol raft remove ID or scontrol raft transfer [ID]"

// runRaft changes the controllers' Raft configuration. Like Slurm's
// scontrol update, it prints nothing when the change is made.
func (k *commands) runRaft(c *ucli.Context, args []string) error {
	if len(args) == 0 {
		return errors.New(raftUsage)
	}
	var rpc func(ctx context.Context, api phalanxv1.ControllerServiceClient) error
	switch strings.ToLower(args[0]) {
	case "add":
		req, err := addControllerRequest(args[1:])
		if err != nil {
			return err
		}
		rpc = func(ctx context.Context, api phalanxv1.ControllerServiceClient) error {
			if _, err := api.AddController(ctx, req); err != nil {
				return err
			}
			k.warnIfSilent(ctx, api, req.Id)
			return nil
		}
	case "remove":
		if len(args) != 2 || args[1] == "" {
			return errors.New("raft remove takes one controller ID (scontrol show controllers lists them): write scontrol raft remove ID")
		}
		req := &phalanxv1.RemoveControllerRequest{Id: args[1]}
		rpc = func(ctx context.Context, api phalanxv1.ControllerServiceClient) error {
			_, err := api.RemoveController(ctx, req)
			return err
		}
	case "transfer":
		if len(args) > 2 {
			return errors.New("raft transfer takes at most one controller ID: write scontrol raft transfer [ID]")
		}
		req := &phalanxv1.TransferLeadershipRequest{}
		if len(args) == 2 {
			req.Id = args[1]
		}
		rpc = func(ctx context.Context, api phalanxv1.ControllerServiceClient) error {
			resp, err := api.TransferLeadership(ctx, req)
			if err == nil {
				fmt.Fprintf(k.sys.Stdout, "Controller %s leads\n", resp.LeaderId)
			}
			return err
		}
	default:
		return fmt.Errorf("invalid raft command %q: %s", args[0], raftUsage)
	}
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	return cn.call(c.Context, func(ctx context.Context) error { return rpc(ctx, cn.api) })
}

// warnIfSilent warns, on stderr, when the controller just added does not
// answer: it counts as a voter from now on, so until it runs the cluster
// needs a majority of the larger membership.
func (k *commands) warnIfSilent(ctx context.Context, api phalanxv1.ControllerServiceClient, id string) {
	resp, err := api.ListControllers(ctx, &phalanxv1.ListControllersRequest{})
	if err != nil {
		return
	}
	voters := 0
	var added *phalanxv1.ControllerInfo
	for _, ci := range resp.GetControllers() {
		if ci.GetVoter() {
			voters++
		}
		if ci.GetId() == id {
			added = ci
		}
	}
	if added == nil || added.GetReachable() {
		return
	}
	if added.GetApiAddr() == "" { // nothing was asked: say why not, not that it is silent
		fmt.Fprintf(k.sys.Stderr, "scontrol: warning: controller %s was added without its API address, so whether it runs cannot be checked (it records its address when it starts): until it runs, the cluster needs %d of its %d voters to work (start it, or phx scontrol raft remove %s)\n",
			id, voters/2+1, voters, id)
		return
	}
	fmt.Fprintf(k.sys.Stderr, "scontrol: warning: controller %s does not answer at %s yet: until it runs, the cluster needs %d of its %d voters to work (start it, or phx scontrol raft remove %s)\n",
		id, added.GetApiAddr(), voters/2+1, voters, id)
}

// addControllerRequest reads "raft add ID RAFT_HOST:PORT [API_HOST[:PORT]]";
// the API address gets the default port when it has none.
func addControllerRequest(args []string) (*phalanxv1.AddControllerRequest, error) {
	const usage = "write scontrol raft add ID RAFT_HOST:PORT [API_HOST:PORT]"
	if len(args) < 2 || len(args) > 3 || args[0] == "" {
		return nil, fmt.Errorf("raft add takes the new controller's ID and Raft address: %s", usage)
	}
	req := &phalanxv1.AddControllerRequest{Id: args[0], RaftAddr: args[1]}
	if err := apiclient.CheckHostPort(req.RaftAddr); err != nil {
		return nil, fmt.Errorf("the Raft address %w: %s", err, usage)
	}
	if len(args) == 3 {
		req.ApiAddr = apiclient.WithPort(args[2])
		if err := apiclient.CheckHostPort(req.ApiAddr); err != nil {
			return nil, fmt.Errorf("the API address %w: %s", err, usage)
		}
	}
	return req, nil
}

// printRecords prints records as scontrol does: each followed by a blank
// line, or, with -o, each on one line.
func printRecords(w io.Writer, flags scontrolFlags, n int, record func(int) string) {
	for i := 0; i < n; i++ {
		if flags.oneLiner {
			fmt.Fprint(w, oneLine(record(i)))
			continue
		}
		fmt.Fprint(w, record(i))
		fmt.Fprintln(w)
	}
}
