package venv

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/requirements"
)

const (
	id1 = "1111111111111111111111111111111111111111"
	id2 = "2222222222222222222222222222222222222222"
	id3 = "3333333333333333333333333333333333333333"
)

func TestAcquireBuildsOnceThenReuses(t *testing.T) {
	f := newFake(t)
	dir := t.TempDir()
	c := newCache(t, dir, "--no-index")
	rt := Runtime{Name: "news", ID: id1, Python: f.python}
	env, err := c.Acquire(context.Background(), rt, sourceOf(t, simpleSource))
	if err != nil {
		t.Fatal(err)
	}
	if !env.Built || env.BuildTime <= 0 {
		t.Errorf("first Acquire: Built %v, BuildTime %v; want a build", env.Built, env.BuildTime)
	}
	want := filepath.Join(dir, "news", "111111111111", id1)
	if env.Dir != want || env.Python() != filepath.Join(want, "bin", "python") {
		t.Errorf("Dir %s, Python %s; want %s and its bin/python", env.Dir, env.Python(), want)
	}
	for _, p := range []string{"111111111111/" + id1 + ".usage", "111111111111/" + id1 + ".build", "111111111111/" + id1 + "/src/requirements.txt"} {
		if _, err := os.Stat(filepath.Join(dir, "news", p)); err != nil {
			t.Errorf("after a build: %v", err)
		}
	}
	info, err := readReady(env.Dir)
	if err != nil || info.ID != id1 || info.Built.IsZero() {
		t.Errorf("READY = %+v, %v; want the id and the build time", info, err)
	}
	log, _ := os.ReadFile(f.log)
	if !strings.Contains(string(log), "pip "+env.SourceDir()+" -m pip install --no-index -r requirements.txt\n") {
		t.Errorf("the fake python saw:\n%s\nwant pip install with the pip args and requirements.txt, run in the source", log)
	}
	if err := env.Release(); err != nil {
		t.Fatal(err)
	}

	env, err = c.Acquire(context.Background(), rt, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Release()
	if env.Built || env.BuildTime != 0 {
		t.Errorf("second Acquire: Built %v, BuildTime %v; want reuse", env.Built, env.BuildTime)
	}
	if n := f.builds(t); n != 1 {
		t.Errorf("%d builds; want 1", n)
	}
}

func TestRuntimeNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		rt   Runtime
		ok   bool
	}{
		{"plain", Runtime{Name: "news", ID: id1, Python: "python3"}, true},
		{"version", Runtime{Name: "news", Version: "2.0", ID: id1, Python: "python3"}, true},
		{"slash in name", Runtime{Name: "a/b", ID: id1, Python: "python3"}, false},
		{"dot dot", Runtime{Name: "..", ID: id1, Python: "python3"}, false},
		{"hidden", Runtime{Name: ".x", ID: id1, Python: "python3"}, false},
		{"version slash", Runtime{Name: "news", Version: "../x", ID: id1, Python: "python3"}, false},
		{"id not hex", Runtime{Name: "news", ID: "../../etc", Python: "python3"}, false},
		{"id upper", Runtime{Name: "news", ID: "ABCDEF12", Python: "python3"}, false},
		{"no python", Runtime{Name: "news", ID: id1}, false},
		{"empty", Runtime{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.rt.normal()
			if (err == nil) != tc.ok {
				t.Errorf("normal(%+v) = %v; want ok %v", tc.rt, err, tc.ok)
			}
		})
	}
}

// Goroutines of this process and other processes acquiring one new
// runtime at once build it once.
func TestConcurrentAcquiresBuildOnce(t *testing.T) {
	f := newFake(t)
	dir := t.TempDir()
	rt := Runtime{Name: "news", ID: id1, Python: f.python}
	const procs, goroutines = 4, 8

	var ins []io.WriteCloser
	var outs []interface{ ReadString(byte) (string, error) }
	for i := 0; i < procs; i++ {
		_, out, in := helper(t, dir, rt, false)
		ins, outs = append(ins, in), append(outs, out)
	}
	c := newCache(t, dir)
	var wg sync.WaitGroup
	built := make(chan bool, goroutines)
	for i := 0; i < goroutines; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env, err := c.Acquire(context.Background(), rt, sourceOf(t, simpleSource))
			if err != nil {
				t.Error(err)
				return
			}
			built <- env.Built
			env.Release()
		}()
	}
	wg.Wait()
	close(built)
	n := 0
	for b := range built {
		if b {
			n++
		}
	}
	for _, out := range outs {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("helper said %q: %v", line, err)
		}
		if line == "acquired built=true\n" {
			n++
		}
	}
	for _, in := range ins {
		in.Close()
	}
	if n != 1 || f.builds(t) != 1 {
		t.Errorf("%d acquisitions said they built, the python made %d environments; want 1 and 1", n, f.builds(t))
	}
}

// A builder killed while pip runs leaves a directory without READY; the
// next user wipes it and builds again.
func TestCrashMidBuild(t *testing.T) {
	f := newFake(t)
	dir := t.TempDir()
	rt := Runtime{Name: "news", ID: id1, Python: f.python}
	touchFile(t, f.stall)
	cmd, _, _ := helper(t, dir, rt, false)
	started, err := os.ReadFile(f.started) // opens once the fake pip runs
	if err != nil || string(started) != "started\n" {
		t.Fatalf("fake pip said %q, %v", started, err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	envDir := filepath.Join(dir, "news", "111111111111", id1)
	if _, err := os.Stat(filepath.Join(envDir, "half-built")); err != nil {
		t.Fatalf("the killed build left no half-built directory: %v", err)
	}
	if ready(envDir) {
		t.Fatal("the killed build left READY")
	}
	os.Remove(f.stall)
	env, err := newCache(t, dir).Acquire(context.Background(), rt, sourceOf(t, simpleSource))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Release()
	if !env.Built || !ready(envDir) {
		t.Errorf("Acquire after the crash: Built %v, READY %v; want a new build", env.Built, ready(envDir))
	}
	if _, err := os.Stat(filepath.Join(envDir, "half-built")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("half-built is still there (%v); want the leftovers wiped before the build", err)
	}
	if n := f.builds(t); n != 2 {
		t.Errorf("%d builds; want 2", n)
	}
}

// Between a user finding an environment complete and using it, neither a
// builder's cleanup nor GC can remove it: the user holds its usage lock
// before it looks.
func TestUsageBeforeBuild(t *testing.T) {
	f := newFake(t)
	dir := t.TempDir()
	old := Runtime{Name: "news", ID: id1, Python: f.python}
	env, err := newCache(t, dir).Acquire(context.Background(), old, sourceOf(t, simpleSource))
	if err != nil {
		t.Fatal(err)
	}
	env.Release()

	user := newCache(t, dir)
	checked, proceed := make(chan struct{}), make(chan struct{})
	user.checked = func() {
		close(checked)
		<-proceed
	}
	got := make(chan *Env)
	go func() {
		env, err := user.Acquire(context.Background(), old, nil)
		if err != nil {
			t.Error(err)
		}
		got <- env
	}()
	<-checked

	// Another process builds a newer runtime of the same name and
	// cleans up; then GC runs with nothing to keep for unused.
	newer, err := newCache(t, dir).Acquire(context.Background(), Runtime{Name: "news", ID: id2, Python: f.python}, sourceOf(t, simpleSource))
	if err != nil {
		t.Fatal(err)
	}
	newer.Release()
	res, err := newCache(t, dir).GC(0)
	if err != nil {
		t.Fatal(err)
	}
	oldDir := filepath.Join(dir, "news", "111111111111", id1)
	if len(res.InUse) != 1 || res.InUse[0].Path != oldDir {
		t.Errorf("GC kept %+v as in use; want %s", res.InUse, oldDir)
	}
	close(proceed)
	env = <-got
	if env == nil {
		t.FailNow()
	}
	defer env.Release()
	if out, err := exec.Command(env.Python(), "-m", "pip", "check").CombinedOutput(); err != nil {
		t.Errorf("the environment the user was given does not run: %v\n%s", err, out)
	}
}

// The builder's cleanup removes the unused environments of the name, and
// keeps one whose usage lock a process holds, even when the process that
// acquired it is gone.
func TestCleanupKeepsInherited(t *testing.T) {
	// The sleep that holds the lock outlives its parent, the helper; as
	// subreaper this test can wait for it.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	f := newFake(t)
	dir := t.TempDir()
	c := newCache(t, dir)
	cmd, out, _ := helper(t, dir, Runtime{Name: "news", ID: id1, Python: f.python}, true)
	if line := readLine(t, out); line != "acquired built=true" {
		t.Fatalf("helper said %q", line)
	}
	var pid int
	if _, err := fmtSscan(readLine(t, out), &pid); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	env, err := c.Acquire(context.Background(), Runtime{Name: "news", Version: "v2", ID: id2, Python: f.python}, sourceOf(t, simpleSource))
	if err != nil {
		t.Fatal(err)
	}
	env.Release()
	dir1, dir2 := filepath.Join(dir, "news", "111111111111", id1), filepath.Join(dir, "news", "v2", id2)
	if !ready(dir1) {
		t.Fatalf("cleanup removed %s, which a running process holds", dir1)
	}

	unix.Kill(pid, unix.SIGKILL)
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	env, err = c.Acquire(context.Background(), Runtime{Name: "news", Version: "v3", ID: id3, Python: f.python}, sourceOf(t, simpleSource))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Release()
	for _, d := range []string{dir1, dir2, filepath.Join(dir, "news", "v2")} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there (%v); want it removed by the build of %s", d, err, id3)
		}
	}
	if !ready(env.Dir) {
		t.Errorf("the new environment %s is not ready", env.Dir)
	}
}

// A failing pip install gives pip's own words and leaves no directory.
func TestFailedBuild(t *testing.T) {
	f := newFake(t)
	touchFile(t, f.fail)
	dir := t.TempDir()
	c := newCache(t, dir)
	_, err := c.Acquire(context.Background(), Runtime{Name: "news", ID: id1, Python: f.python}, sourceOf(t, simpleSource))
	var be *BuildError
	if !errors.As(err, &be) || be.Step != "pip install" || be.Exit != 1 ||
		!strings.Contains(be.Output, "No matching distribution found for nosuch") {
		t.Fatalf("Acquire = %v; want a BuildError of pip install with pip's output", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "news", "111111111111", id1)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed build left its directory (%v)", err)
	}
	// The locks are free again: the next attempt builds.
	os.Remove(f.fail)
	env, err := c.Acquire(context.Background(), Runtime{Name: "news", ID: id1, Python: f.python}, sourceOf(t, simpleSource))
	if err != nil {
		t.Fatal(err)
	}
	env.Release()
}

// A runtime whose requirements reach outside its source (one accepted
// before the WEBAPP refused such) is refused before pip runs.
func TestSourceRequirementsReachingOut(t *testing.T) {
	for _, req := range []string{"-r /etc/passwd\n", "-\\\nr ../../../token\n", "--index-url=https://evil.example/simple\n"} {
		f := newFake(t)
		c := newCache(t, t.TempDir())
		_, err := c.Acquire(context.Background(), Runtime{Name: "news", ID: id1, Python: f.python},
			sourceOf(t, map[string]string{"requirements.txt": req}))
		var re *requirements.Error
		if !errors.As(err, &re) || re.File != "requirements.txt" {
			t.Errorf("%q: Acquire = %v; want a requirements.Error", req, err)
		}
		if b, _ := os.ReadFile(f.log); strings.Contains(string(b), "pip /") {
			t.Errorf("%q: pip ran:\n%s", req, b)
		}
	}
}

func TestSourceWithoutRequirements(t *testing.T) {
	f := newFake(t)
	c := newCache(t, t.TempDir())
	_, err := c.Acquire(context.Background(), Runtime{Name: "news", ID: id1, Python: f.python}, sourceOf(t, map[string]string{"x.py": ""}))
	if err == nil || !strings.Contains(err.Error(), "no requirements.txt") {
		t.Errorf("Acquire = %v; want no requirements.txt", err)
	}
}

func TestGC(t *testing.T) {
	f := newFake(t)
	dir := t.TempDir()
	var clk clock.Fake
	c, err := New(Config{Dir: dir, Clock: &clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	acquire := func(name, version, id string) *Env {
		t.Helper()
		env, err := c.Acquire(context.Background(), Runtime{Name: name, Version: version, ID: id, Python: f.python}, sourceOf(t, simpleSource))
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	const hour = 3600
	clk.Set(1000 * hour)
	a1 := acquire("a", "1", id1) // held throughout
	clk.Set(1001 * hour)
	acquire("b", "1", id1).Release()
	clk.Set(1002 * hour)
	acquire("a", "2", id2).Release()
	clk.Set(1003 * hour)
	acquire("c", "1", id1).Release()
	// What a crash mid-build leaves.
	crashed := filepath.Join(dir, "a", "3", id3)
	if err := os.MkdirAll(crashed, 0o755); err != nil {
		t.Fatal(err)
	}

	clk.Set(1001*hour + 72*hour)
	res, err := c.GC(72 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got := func(rs []Removal) string {
		var s []string
		for _, r := range rs {
			s = append(s, strings.TrimPrefix(r.Path, dir+"/")+": "+r.Reason)
		}
		return strings.Join(s, "; ")
	}
	wantRemoved := "a/3/" + id3 + ": incomplete; b/1/" + id1 + ": unused since 1970-02-11T17:00:00Z"
	wantInUse := "a/1/" + id1 + ": not the newest of a"
	if got(res.Removed) != wantRemoved || got(res.InUse) != wantInUse {
		t.Errorf("GC removed %q, kept in use %q;\nwant removed %q, in use %q", got(res.Removed), got(res.InUse), wantRemoved, wantInUse)
	}
	for _, d := range []string{"a/2/" + id2, "c/1/" + id1, "a/1/" + id1} {
		if !ready(filepath.Join(dir, d)) {
			t.Errorf("GC removed %s", d)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "b")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("GC left the empty directory of b (%v)", err)
	}

	a1.Release()
	res, err = c.GC(72 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if want := "a/1/" + id1 + ": not the newest of a"; got(res.Removed) != want || len(res.InUse) != 0 {
		t.Errorf("GC after release removed %q, kept in use %q; want removed %q", got(res.Removed), got(res.InUse), want)
	}
}

func TestLockWorkDir(t *testing.T) {
	area := t.TempDir()
	w, err := LockWorkDir(area, "box-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if w.Path != filepath.Join(area, "scrapers", "box-1") {
		t.Errorf("Path = %s", w.Path)
	}
	touchFile(t, filepath.Join(w.Path, "left-over"))
	if _, err := LockWorkDir(area, "box-1", nil); !errors.Is(err, errLocked()) {
		t.Errorf("second LockWorkDir = %v; want ErrLocked", err)
	}
	if _, err := LockWorkDir(area, "../x", nil); err == nil {
		t.Error("LockWorkDir(../x) succeeded")
	}
	other, err := LockWorkDir(area, "box-2", nil)
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	touchFile(t, filepath.Join(other.Path, "left-over"))

	res, err := GCWorkDirs(area, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Removed) != 1 || res.Removed[0].Path != other.Path || len(res.InUse) != 1 || res.InUse[0].Path != w.Path || res.InUse[0].Reason != "" {
		t.Errorf("GCWorkDirs = %+v; want %s removed and %s in use", res, other.Path, w.Path)
	}
	w.Close()
	w, err = LockWorkDir(area, "box-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if entries, _ := os.ReadDir(w.Path); len(entries) != 0 {
		t.Errorf("LockWorkDir left %v in the directory; want it emptied", entries)
	}
}

func TestReadyRecordsBuild(t *testing.T) {
	f := newFake(t)
	var clk clock.Fake
	clk.Set(1700000000)
	c, err := New(Config{Dir: t.TempDir(), Clock: &clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	env, err := c.Acquire(context.Background(), Runtime{Name: "news", ID: id1, Python: f.python}, sourceOf(t, simpleSource))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Release()
	b, _ := os.ReadFile(filepath.Join(env.Dir, "READY"))
	var info map[string]any
	if err := json.Unmarshal(b, &info); err != nil || info["built"] != "2023-11-14T22:13:20Z" || info["id"] != id1 {
		t.Errorf("READY = %s; want the id and the build time from the clock", b)
	}
}

// A runtime asked for after another, and built before it, is the newer:
// the older one's builder leaves it, and gc removes the older one.
func TestNewestByBuildStart(t *testing.T) {
	f := newFake(t)
	dir := t.TempDir()
	var clk clock.Fake
	c, err := New(Config{Dir: dir, Clock: &clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	acquire := func(version, id string) {
		t.Helper()
		env, err := c.Acquire(context.Background(), Runtime{Name: "a", Version: version, ID: id, Python: f.python}, sourceOf(t, simpleSource))
		if err != nil {
			t.Fatal(err)
		}
		env.Release()
	}
	newer, older := filepath.Join(dir, "a", "2", id2), filepath.Join(dir, "a", "1", id1)
	clk.Set(200)
	acquire("2", id2)
	// The older build started first, as for a job handed the older
	// runtime just before the deploy, and ends later.
	clk.Set(100)
	acquire("1", id1)
	if !ready(newer) {
		t.Fatalf("the older runtime's builder removed the newer one, %s", newer)
	}
	clk.Set(300)
	res, err := c.GC(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Removed) != 1 || res.Removed[0].Path != older {
		t.Errorf("GC removed %v; want only %s", res.Removed, older)
	}
	if !ready(newer) {
		t.Errorf("GC removed the newer runtime %s", newer)
	}
}
