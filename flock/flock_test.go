package flock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	l, err := TryExclusive(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TryExclusive(path); !errors.Is(err, ErrLocked) {
		t.Errorf("second TryExclusive = %v; want ErrLocked", err)
	}
	start := time.Now()
	if _, err := Exclusive(context.Background(), path, 120*time.Millisecond); !errors.Is(err, ErrLocked) || time.Since(start) < 100*time.Millisecond {
		t.Errorf("Exclusive while held = %v after %v; want ErrLocked after the wait", err, time.Since(start))
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		l.Unlock()
	}()
	l2, err := Exclusive(context.Background(), path, 10*time.Second)
	if err != nil {
		t.Fatalf("Exclusive after release = %v", err)
	}
	l2.Unlock()
}

// A lock held by a process that dies is free at once.
func TestLockDiesWithHolder(t *testing.T) {
	if os.Getenv("FLOCK_HOLDER") != "" {
		if _, err := TryExclusive(os.Getenv("FLOCK_HOLDER")); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("held\n")
		time.Sleep(time.Minute)
		return
	}
	path := filepath.Join(t.TempDir(), "x.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockDiesWithHolder$")
	cmd.Env = append(os.Environ(), "FLOCK_HOLDER="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("holder said %q, %v", buf, err)
	}
	if _, err := TryExclusive(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryExclusive while the holder lives = %v; want ErrLocked", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, err := TryExclusive(path)
	if err != nil {
		t.Fatalf("TryExclusive after the holder died = %v", err)
	}
	l.Unlock()
}

func TestShared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	s1, err := TryShared(path)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Shared(context.Background(), path, time.Second)
	if err != nil {
		t.Fatalf("second shared lock = %v; want it granted beside the first", err)
	}
	if _, err := TryExclusive(path); !errors.Is(err, ErrLocked) {
		t.Errorf("TryExclusive under two shared locks = %v; want ErrLocked", err)
	}
	s1.Unlock()
	if _, err := TryExclusive(path); !errors.Is(err, ErrLocked) {
		t.Errorf("TryExclusive under one shared lock = %v; want ErrLocked", err)
	}
	s2.Unlock()
	x, err := TryExclusive(path)
	if err != nil {
		t.Fatalf("TryExclusive with no shared lock left = %v", err)
	}
	if _, err := TryShared(path); !errors.Is(err, ErrLocked) {
		t.Errorf("TryShared under the exclusive lock = %v; want ErrLocked", err)
	}
	x.Unlock()
}

// A lock file removed by the holder of its lock is not the lock any more:
// a file opened before the removal must not count as holding it.
func TestRemovedLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	old, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if same, err := named(old, path); err != nil || !same {
		t.Fatalf("named(open file) = %v, %v; want true", same, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if same, err := named(old, path); err != nil || same {
		t.Errorf("named(removed file) = %v, %v; want false", same, err)
	}
	l, err := TryExclusive(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if same, err := named(old, path); err != nil || same {
		t.Errorf("named(removed file) once the name is a new file = %v, %v; want false", same, err)
	}
}

// Close leaves the lock to a child given the file, for as long as the child
// lives.
func TestCloseLeavesLockToChild(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	l, err := TryShared(path)
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "600")
	child.ExtraFiles = []*os.File{l.File()}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Wait()
	defer child.Process.Kill()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := TryExclusive(path); !errors.Is(err, ErrLocked) {
		t.Errorf("TryExclusive while the child holds the lock = %v; want ErrLocked", err)
	}
	child.Process.Kill()
	child.Wait()
	x, err := TryExclusive(path)
	if err != nil {
		t.Fatalf("TryExclusive after the child died = %v", err)
	}
	x.Unlock()
}

// A lock passed on with Inherit stays held by the holder's children after
// the holder dies, and is free once they are gone.
func TestInheritOutlivesHolder(t *testing.T) {
	if os.Getenv("FLOCK_INHERIT") != "" {
		l, err := TryExclusive(os.Getenv("FLOCK_INHERIT"))
		if err != nil {
			os.Exit(3)
		}
		if err := l.Inherit(); err != nil {
			os.Exit(4)
		}
		child := exec.Command("sleep", "1000")
		if err := child.Start(); err != nil {
			os.Exit(5)
		}
		fmt.Printf("%d\n", child.Process.Pid)
		time.Sleep(time.Minute)
		return
	}
	path := filepath.Join(t.TempDir(), "x.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestInheritOutlivesHolder$")
	cmd.Env = append(os.Environ(), "FLOCK_INHERIT="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var child int
	if _, err := fmt.Fscan(out, &child); err != nil {
		t.Fatalf("holder said no child pid: %v", err)
	}
	childProc, err := os.FindProcess(child)
	if err != nil {
		t.Fatal(err)
	}
	defer childProc.Kill()
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := TryExclusive(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryExclusive while the dead holder's child lives = %v; want ErrLocked", err)
	}
	childProc.Kill()
	// The child was re-parented; its exit is seen once the lock is free.
	l, err := Exclusive(context.Background(), path, 30*time.Second)
	if err != nil {
		t.Fatalf("Exclusive after the child died = %v", err)
	}
	l.Unlock()
}

// A directory is locked in place, and its files stay as they were.
func TestExclusiveDir(t *testing.T) {
	dir := t.TempDir()
	l, err := TryExclusiveDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TryExclusiveDir(dir); !errors.Is(err, ErrLocked) {
		t.Errorf("second TryExclusiveDir = %v; want ErrLocked", err)
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Errorf("the locked directory holds %v; want nothing", names)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l, err = TryExclusiveDir(dir)
	if err != nil {
		t.Fatalf("TryExclusiveDir after Unlock = %v", err)
	}
	l.Unlock()
	if _, err := TryExclusiveDir(filepath.Join(dir, "none")); err == nil || errors.Is(err, ErrLocked) {
		t.Errorf("TryExclusiveDir of no directory = %v; want an error that is not ErrLocked", err)
	}
}
