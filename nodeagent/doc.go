// Package nodeagent is the node agent: it makes one host run what the
// controller assigns to it.
//
// # Words
//
//   - Node: the host the agent runs on, registered under Config.Name with
//     the resources it found (GPUs from package gpu, CPUs, memory).
//   - Assignment: one task the controller wants on this node, a rank of an
//     attempt of a job, or a request to stop one (assignment.stop). The
//     stream's protobuf messages are read into the agent's own types once,
//     where they arrive (assignment.go); launching, the environment and
//     the pre-start gate never see a wire type.
//   - Task: the job's instance on this node, run by a runtime.Runtime
//     (process group, containerd container, or a fake in tests) under the
//     ID phx-<job>-<attempt>-<rank>.
//   - Report: a task's transition sent to the controller with
//     ReportTaskStatus: RUNNING, then one of EXITED (it ended by itself,
//     with its exit code or signal), KILLED (stopped because it was told
//     to), TIMEOUT (stopped at its time limit), FAILED (could not start),
//     LOST (the agent stopped it or lost it for reasons of its own: it shut
//     down, it restarted under the task, or the node was declared down).
//
// # Loop
//
// Run dials the controller and keeps three things going until its context
// ends, retrying with capped exponential backoff for as long as the
// controller is unreachable:
//
//  1. Registration and heartbeats. RegisterNode, then Heartbeat every
//     interval (the shorter of Config.HeartbeatInterval and what the
//     controller asks for), listing the tasks running here and the node's
//     failing health checks (health.go; what it carries is a healthState,
//     healthstate.go, whose changes send one at once). A heartbeat
//     answered "reregister" (the controller lost or downed the node, and
//     has its tasks LOST already) stops every task here, reporting them
//     LOST, waits for them to end, and only then starts over with
//     RegisterNode, so that no two jobs ever share the node's GPUs.
//  2. The assignment stream. WatchAssignments sends the node's complete set
//     of assignments whenever it changes; each message is reconciled
//     (reconcile.go): start what should run and does not, stop what is
//     marked stop or is no longer in the set. Reconciling is level
//     triggered and idempotent, so a repeated or missed message does no
//     harm; a broken stream is reopened, and its first message is again
//     the complete set. So is one still open on a replica once a call's
//     answer names another leader (apiclient.FollowLeader): a leader that
//     stopped answering without closing its connections (a frozen host)
//     would otherwise hold it while the new leader's assignments wait.
//  3. Reports. One ordered queue, delivered one report at a time and each
//     retried until the controller acknowledges it, so a controller
//     failover loses no report and a task's reports never overtake each
//     other (report.go).
//
// # A task's life
//
// For each new assignment a goroutine (task.go) prepares the task
// (launch.go): it writes the job script to
// <StateDir>/jobs/<job>.<attempt>/script (run through its #! line, else
// /bin/sh; containers get that directory and the working directory
// bind-mounted at the same paths), builds the Slurm/PyTorch environment
// (env.go) and resolves the sbatch output patterns (output.go). The
// pre-start gate (gate.go) then checks the task's GPUs and RDMA ports,
// runs the administrator's prolog, and checks the working directory and
// output files as the job's user; a failure that is the node's drains it
// and reports the task LOST, one that is the user's reports it FAILED.
// It starts the task, reports RUNNING, and waits for the
// first of: the task exits (EXITED), the job's time limit passes
// (TIMEOUT; a new limit the job is sent with while it runs, counted from
// its start, replaces it: timelimit.go), or a stop is requested (KILLED). Stopping is SIGTERM to every
// process of the task, the grace period (the assignment's, else
// Config.KillGrace), then SIGKILL. A task that cannot be prepared or
// started is reported FAILED with a one-line reason. A task that ended
// here is never started again under the same job, attempt and rank and
// placement; a controller whose state was restored from a backup and no
// longer has its end gets the end reported again, and one that has again
// a task whose end it rejected, having no such job, gets it reported LOST
// (reconcile.go). Nor does a task start on a GPU another task here
// still holds: it waits for its end.
//
// # Shutdown
//
// When Run's context ends, the agent lets go of the tasks its runtime can
// hand over to its next run (the process runtime's supervised tasks),
// leaving them running and reporting nothing; with
// Config.StopTasksOnExit, and for other runtimes, it stops every task with
// the same SIGTERM, grace, SIGKILL sequence and reports them LOST ("node
// agent shut down", with agent_shutdown set): neither the job nor the
// node is at fault, so the job restarts and may run here again. Either way
// it tries for a few seconds to deliver its reports, and returns.
//
// # Restart
//
// A new run takes over the tasks an earlier run left running (adopt.go):
// the runtime finds them (runtime.Recoverer), and the agent supervises
// each again with the limits it recorded in the attempt folder
// (task.<rank>), or reports how it ended meanwhile, or reports it LOST
// when its end cannot be known. The folder <StateDir>/jobs/<job>.<attempt>
// exists from just before a task starts until it has ended, so a folder no
// adopted task accounts for marks a task an earlier run started and that
// is gone or unknown (leftover.go): before it registers, the agent kills
// the process groups an older agent recorded there, removes the folder,
// and reports an assignment for that attempt LOST instead of starting it
// a second time; so does an assignment the controller already has RUNNING
// or STARTING but that no task here matches. This way no orphan keeps
// using GPUs the controller has given to another job, and no task runs
// twice. Containerd tasks are not taken over yet.
package nodeagent
