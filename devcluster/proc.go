package devcluster

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A component (a controller replica or a node's agent) is a child process
// that phx dev started and can start again with the same command line:
// after a kill -9, `phx dev start NAME` brings it back on its state, as
// systemd would restart a daemon on a real host. Only an exit phx dev did
// not ask for is announced; Close stops every component for good.

type proc struct {
	name string
	path string
	args []string
	out  io.Writer // the component's log file and Options.Log
	log  *os.File

	mu   sync.Mutex
	cmd  *exec.Cmd     // the current run
	done chan struct{} // closed when it exits
}

// current is the process of the component's latest run and a channel
// closed when it exits.
func (p *proc) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.done
}

// running reports whether the latest run has not exited yet.
func (p *proc) running() bool {
	_, done := p.current()
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// start runs one component, its output to Dir/logs/NAME.log and to w.
func (c *Cluster) start(name, path string, args []string, w io.Writer) error {
	logf, err := os.OpenFile(filepath.Join(c.Dir, "logs", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	p := &proc{name: name, path: path, args: args, out: io.MultiWriter(logf, w), log: logf}
	if err := c.launch(p); err != nil {
		logf.Close()
		return err
	}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return nil
}

// launch starts a run of the component and watches for its end.
func (c *Cluster) launch(p *proc) error {
	cmd := exec.Command(p.path, p.args...)
	cmd.Stdout = p.out
	cmd.Stderr = p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	go func() {
		cmd.Wait()
		close(done)
		c.mu.Lock()
		announce := c.up && !c.closing
		c.mu.Unlock()
		if announce {
			fmt.Fprintf(c.notices, "phx dev: %s exited (%v); `phx dev start %s` starts it again\n", p.name, cmd.ProcessState, p.name)
		}
	}()
	return nil
}

// StartAgain starts a component that has exited (a controller replica,
// ctl1..., or a node's agent) with the command line it had, on its state:
// a replica catches up from the leader, an agent takes over the tasks
// that ran on without it. It returns the new process's ID.
func (c *Cluster) StartAgain(name string) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return 0, fmt.Errorf("phx dev is stopping")
	}
	var p *proc
	var names []string
	for _, q := range c.procs {
		names = append(names, q.name)
		if q.name == name {
			p = q
		}
	}
	if p == nil {
		return 0, fmt.Errorf("no component %q in this dev cluster: give one of %s", name, strings.Join(names, ", "))
	}
	if cmd, _ := p.current(); p.running() {
		return 0, fmt.Errorf("%s is running (pid %d): it can be started again once it has exited", name, cmd.Process.Pid)
	}
	if err := c.launch(p); err != nil {
		return 0, err
	}
	cmd, _ := p.current()
	fmt.Fprintf(c.notices, "phx dev: %s started again (pid %d)\n", name, cmd.Process.Pid)
	return cmd.Process.Pid, nil
}

// stop sends SIGTERM to every process, waits, and SIGKILLs what remains.
func stop(ps []*proc, grace time.Duration) {
	var wg sync.WaitGroup
	for _, p := range ps {
		cmd, done := p.current()
		cmd.Process.Signal(syscall.SIGTERM)
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-done:
			case <-time.After(grace):
				cmd.Process.Kill()
				<-done
			}
		}()
	}
	wg.Wait()
}
