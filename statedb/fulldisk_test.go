package statedb

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"lorrycontroller.dev/lc/clock"
)

// smallDisk mounts a tmpfs of size bytes in a new directory and returns
// the directory. It needs the right to mount, as root has.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Skipf("mount a small tmpfs (needs root): %v; TestCheckWritesSeesAFullDatabase covers the rule with a size cap", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fillDisk writes a file in dir until the disk is full, and returns the
// file's path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return path
		}
	}
}

// On a real full disk a small write still finds room in pages the
// database already has (the write-ahead log's reused frames, free
// pages), while a job's output does not: the health check must go by the
// real write that failed, not by its own small one.
func TestCheckWritesOnAFullDisk(t *testing.T) {
	sqliteOnly(t)
	ctx := context.Background()
	disk := smallDisk(t, "4m")
	f := &fixture{clock: &clock.Fake{}, path: filepath.Join(disk, "state.db")}
	f.clock.Set(1000)
	db, err := Open(ctx, f.path, Options{Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f.db = db
	f.lorries(t, "a/b")
	m1 := MinionID{Name: "m1", Host: "h", PID: 1}
	a := f.mustGive(t, m1)
	// Some output, so that the log has frames to reuse once it is
	// checkpointed.
	if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m1, Stdout: bytes.Repeat([]byte("y"), 256<<10)}); err != nil {
		t.Fatal(err)
	}
	db.write.mu.Lock()
	_, err = db.write.conn.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
	db.write.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	filler := fillDisk(t, disk)

	big := JobUpdate{ID: a.Job.ID, Minion: m1, Stdout: bytes.Repeat([]byte("x"), 1<<20)}
	if _, err := f.report(t, big); err == nil || !strings.Contains(err.Error(), "full") {
		t.Fatalf("job update on a full disk: %v; want it full", err)
	}
	// Some space comes back, as when a request's spool files go: enough
	// for the health check's small write, not for a job's output.
	st, err := os.Stat(filler)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filler, st.Size()-128<<10); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := db.CheckWrites(ctx); err == nil || !strings.Contains(err.Error(), "full") {
			t.Fatalf("CheckWrites %d after a job update failed on a full disk: %v; want the failure", i+1, err)
		}
		if _, err := f.report(t, big); err == nil || !strings.Contains(err.Error(), "full") {
			t.Fatalf("job update %d on a nearly full disk: %v; want it full", i+1, err)
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := db.CheckWrites(ctx); err == nil {
		t.Errorf("CheckWrites once space is back, before a real write: nil; want the write's failure")
	}
	if _, err := f.report(t, big); err != nil {
		t.Fatalf("job update once space is back: %v", err)
	}
	if err := db.CheckWrites(ctx); err != nil {
		t.Errorf("CheckWrites after a real write committed: %v; want nil", err)
	}
}

// The first health check after the disk fills fails, though the last
// real write committed a moment before and no write has failed yet: the
// disk the database grows on has no room left. It passes again once
// there is room, no real write having failed meanwhile.
func TestCheckWritesAtOnceOnAFullDisk(t *testing.T) {
	sqliteOnly(t)
	ctx := context.Background()
	disk := smallDisk(t, "4m")
	f := &fixture{clock: &clock.Fake{}, path: filepath.Join(disk, "state.db")}
	f.clock.Set(1000)
	db, err := Open(ctx, f.path, Options{Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f.db = db
	f.lorries(t, "a/b")
	if err := db.CheckWrites(ctx); err != nil {
		t.Fatalf("CheckWrites with room on the disk: %v; want nil", err)
	}
	filler := fillDisk(t, disk)
	if err := db.CheckWrites(ctx); err == nil || !strings.Contains(err.Error(), "full") {
		t.Fatalf("first CheckWrites once the disk is full: %v; want it full", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := db.CheckWrites(ctx); err != nil {
		t.Errorf("CheckWrites once there is room again: %v; want nil", err)
	}
}
