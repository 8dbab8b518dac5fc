package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const nobody = 65534

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("switching to another user's file-system identity needs root (CI runs as root)")
	}
}

// A job's output is opened as its user: root's files and directories are
// out of its reach, and what it creates is its own.
func TestOpenOutputAsTheUser(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // root's, 0755
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rootFile := filepath.Join(dir, "passwd")
	if err := os.WriteFile(rootFile, []byte("root:x:0:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err := OpenOutput(rootFile, nobody, nobody); !errors.Is(err, fs.ErrPermission) {
		f.Close()
		t.Fatalf("open root's 0644 file as nobody: %v; want permission denied", err)
	}
	if b, _ := os.ReadFile(rootFile); string(b) != "root:x:0:0\n" {
		t.Fatalf("root's file changed: %q", b)
	}
	if f, err := OpenOutput(filepath.Join(dir, "new.out"), nobody, nobody); !errors.Is(err, fs.ErrPermission) {
		f.Close()
		t.Fatalf("create in root's 0755 directory as nobody: %v; want permission denied", err)
	}

	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(open, "job.out")
	f, err := OpenOutput(out, nobody, nobody)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != nobody || st.Gid != nobody {
		t.Errorf("created output owned by %d:%d; want %d:%d", st.Uid, st.Gid, nobody, nobody)
	}

	// The agent's own identity is untouched.
	if err := os.WriteFile(filepath.Join(dir, "still-root"), nil, 0o600); err != nil {
		t.Errorf("agent lost root after AsUser: %v", err)
	}
}

func TestOpenOutputNoPathDiscards(t *testing.T) {
	f, err := OpenOutput("", -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Name() != os.DevNull {
		t.Errorf("empty path opened %s", f.Name())
	}
}

// An output that is a FIFO is refused at once instead of blocking until a
// reader comes.
func TestOpenOutputRefusesAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := OpenOutput(fifo, -1, -1)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a FIFO was accepted as output")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OpenOutput blocked on a FIFO without a reader")
	}
}

// While AsUser runs as another user, every other goroutine keeps the
// agent's identity: root's private directory stays writable for them.
func TestAsUserLeaksToNoOtherThread(t *testing.T) {
	needRoot(t)
	private := t.TempDir() // root's, 0700
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := os.WriteFile(filepath.Join(private, fmt.Sprintf("w%d", w)), nil, 0o600); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	for i := 0; i < 200; i++ {
		err := AsUser(nobody, nobody, func() error {
			if err := os.WriteFile(filepath.Join(private, "as-nobody"), nil, 0o600); !errors.Is(err, fs.ErrPermission) {
				return fmt.Errorf("as nobody, root's directory: %v; want permission denied", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("another goroutine lost root's identity: %v", err)
	}
}
