package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A job's file is emptied once for the job (the first to open it), marked
// with the job, and kept by the job's later opens (other nodes, a requeued
// attempt); another job empties it again.
func TestTruncateOnce(t *testing.T) {
	path := filepath.Join(markableDir(t), "slurm-7.out")
	if err := os.WriteFile(path, []byte("an earlier job's output\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func() string { b, _ := os.ReadFile(path); return string(b) }
	if emptied, err := TruncateOnce(path, -1, -1, "7@1"); err != nil || !emptied || read() != "" {
		t.Fatalf("first open: emptied=%v err=%v content %q; want emptied", emptied, err, read())
	}
	buf := make([]byte, 64)
	if n, err := unix.Getxattr(path, outputMark, buf); err != nil || string(buf[:n]) != "7@1" {
		t.Fatalf("mark = %q, %v; want 7@1", buf[:n], err)
	}
	appendLine(t, path, "rank 0")
	if emptied, err := TruncateOnce(path, -1, -1, "7@1"); err != nil || emptied || read() != "rank 0\n" {
		t.Fatalf("the job's second open: emptied=%v err=%v content %q; want it kept", emptied, err, read())
	}
	if emptied, err := TruncateOnce(path, -1, -1, "8@2"); err != nil || !emptied || read() != "" {
		t.Fatalf("another job: emptied=%v err=%v content %q; want emptied", emptied, err, read())
	}
	// A file that does not exist is created empty; /dev/null is left be.
	fresh := filepath.Join(filepath.Dir(path), "new.out")
	if _, err := TruncateOnce(fresh, -1, -1, "7@1"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Size() != 0 {
		t.Fatalf("new file: %v, %v", fi, err)
	}
	if emptied, err := TruncateOnce(os.DevNull, -1, -1, "7@1"); err != nil || emptied {
		t.Fatalf("/dev/null: emptied=%v err=%v; want neither", emptied, err)
	}
}

// The nodes of a job start together and each opens the shared file then
// writes at once: whatever the order, no line written is lost to a later
// node's truncation, and the earlier content is gone.
func TestTruncateOnceRace(t *testing.T) {
	for round := range 20 {
		path := filepath.Join(markableDir(t), "shared.out")
		if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for rank := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if _, err := TruncateOnce(path, -1, -1, fmt.Sprintf("9@%d", round)); err != nil {
					t.Error(err)
					return
				}
				appendLine(t, path, fmt.Sprintf("rank %d", rank))
			}()
		}
		close(start)
		wg.Wait()
		b, _ := os.ReadFile(path)
		lines := strings.Fields(strings.ReplaceAll(string(b), "rank ", "rank_"))
		slices.Sort(lines)
		if want := "rank_0 rank_1 rank_2 rank_3 rank_4 rank_5 rank_6 rank_7"; strings.Join(lines, " ") != want {
			t.Fatalf("round %d: file holds %q; want every rank's line once and nothing else", round, b)
		}
	}
}

// Truncate empties a regular file and leaves /dev/null be.
func TestTruncate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "one.out")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Truncate(path, -1, -1); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Size() != 0 {
		t.Fatalf("size %d after Truncate", fi.Size())
	}
	if err := Truncate(os.DevNull, -1, -1); err != nil {
		t.Fatal(err)
	}
}

func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Error(err)
	}
}

// On a file system without user extended attributes (ramfs) TruncateOnce
// cannot mark the file: it says so and leaves the file as it was.
func TestTruncateOnceWithoutMarks(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	if err := unix.Mount("phx-ramfs", dir, "ramfs", 0, ""); err != nil {
		t.Fatalf("mount ramfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	path := filepath.Join(dir, "x.out")
	if err := os.WriteFile(path, []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	emptied, err := TruncateOnce(path, -1, -1, "7@1")
	if !errors.Is(err, ErrNoMark) || emptied {
		t.Fatalf("emptied=%v err=%v; want ErrNoMark, not emptied", emptied, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "kept\n" {
		t.Fatalf("file holds %q; want it untouched", b)
	}
}

// A lock held elsewhere (the user's own, a hung lock daemon) delays the
// truncation a bounded time, then fails it rather than block the task's
// start.
func TestLockWithinGivesUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "held.out")
	holder, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := unix.Flock(int(holder.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := lockWithin(int(f.Fd()), 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "held by another process") {
		t.Fatalf("lock held elsewhere: %v; want a bounded wait that gives up", err)
	}
	unix.Flock(int(holder.Fd()), unix.LOCK_UN)
	if err := lockWithin(int(f.Fd()), 50*time.Millisecond); err != nil {
		t.Fatalf("lock free again: %v", err)
	}
}

// markableDir is a temporary directory whose file system keeps user
// extended attributes (tmpfs before Linux 6.6 does not: the truncation
// falls back there, which TestTruncateOnceWithoutMarks checks).
func markableDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	probe := filepath.Join(dir, ".probe")
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(probe, outputMark, []byte("x"), 0); err != nil {
		t.Skipf("%s keeps no user extended attributes (%v): run where it does", dir, err)
	}
	return dir
}
