package minion

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"lorrycontroller.dev/lc/proc"
	"lorrycontroller.dev/lc/wire"
)

// TestCleanUp plays a minion killed outright: its job's leader is gone, but
// a grandchild, in a session of its own, keeps writing. The next start of
// the minion kills every process carrying the job's mark, and only those,
// and removes the job's files.
func TestCleanUp(t *testing.T) {
	f := newFakeWebapp(t)
	m, _ := newTestMinion(t, f, writeLorry(t, "exit 0"))
	dir := t.TempDir()
	grow, childFile, strangerFile := filepath.Join(dir, "grow"), filepath.Join(dir, "child"), filepath.Join(dir, "stranger")

	mark, err := proc.NewMark()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.writeRecord(jobRecord{JobID: 8, Path: "delta/left", Mark: mark, Pgid: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.writeSpec(&job{Offer: wire.Offer{ID: 8, Text: "{}"}}); err != nil {
		t.Fatal(err)
	}
	// The leader starts a writer that leaves its group, then exits, as a
	// leader killed by its parent-death signal would.
	leader := exec.Command("sh", "-c", `setsid sh -c 'echo $$ > `+sh(childFile)+`; while :; do echo x >> `+sh(grow)+`; sleep 0.01; done' </dev/null >/dev/null 2>&1 &`)
	leader.Env = append(os.Environ(), mark)
	if err := leader.Run(); err != nil {
		t.Fatal(err)
	}
	child := readPid(t, childFile)
	// A process with another job's mark is not this job's.
	other, err := proc.NewMark()
	if err != nil {
		t.Fatal(err)
	}
	stranger := exec.Command("sh", "-c", `echo $$ > `+sh(strangerFile)+`; exec sleep 1000`)
	stranger.Env = append(os.Environ(), other)
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stranger.Process.Kill()
		stranger.Wait()
	}()
	readPid(t, strangerFile)
	waitFile(t, grow)

	if err := m.CleanUp(t.Context()); err != nil {
		t.Fatalf("CleanUp: %v", err)
	}
	if !gone(child) {
		t.Errorf("the job's grandchild %d still runs after CleanUp", child)
	}
	if gone(stranger.Process.Pid) {
		t.Errorf("a process with another mark was killed")
	}
	before, err := os.ReadFile(grow)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.jobDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("job directory after CleanUp: got %v, want it removed", err)
	}
	// Nothing is left to write: another pass finds nothing to kill.
	if err := m.CleanUp(t.Context()); err != nil {
		t.Fatalf("second CleanUp: %v", err)
	}
	if after, _ := os.ReadFile(grow); len(after) != len(before) {
		t.Errorf("the file kept growing after CleanUp: %d bytes, then %d", len(before), len(after))
	}
}
