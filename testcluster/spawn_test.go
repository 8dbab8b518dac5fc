package testcluster

import (
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Processes started with a Pdeathsig outlive the threads of the goroutines
// that asked for them, even of goroutines that end locked to their thread
// (which the runtime then ends too). Started from those threads
// themselves, nine of ten such children were killed at once.
func TestProcessesOutliveTheThreadThatStartedThem(t *testing.T) {
	var cmds []*exec.Cmd
	defer func() {
		for _, cmd := range cmds {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	for range 5 {
		started := make(chan *exec.Cmd, 1)
		go func() {
			goruntime.LockOSThread() // never unlocked: the thread exits with the goroutine
			cmd := exec.Command("sleep", "30")
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := startProcess(cmd); err != nil {
				t.Error(err)
				cmd = nil
			}
			started <- cmd
		}()
		if cmd := <-started; cmd != nil {
			cmds = append(cmds, cmd)
		}
	}
	time.Sleep(300 * time.Millisecond) // the goroutines have ended, and their threads
	for _, cmd := range cmds {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
		if err != nil {
			t.Errorf("child %d is gone: %v", cmd.Process.Pid, err)
			continue
		}
		if f := strings.Fields(string(stat)); len(f) > 2 && (f[2] == "Z" || f[2] == "X") {
			t.Errorf("child %d was killed when the thread that asked for it exited (state %s)", cmd.Process.Pid, f[2])
		}
	}
}
