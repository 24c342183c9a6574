package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/flock"
	"lorrycontroller.dev/lc/venv"
)

// environment makes what a build leaves in the cache: the environment with
// its READY, built at built, and its usage lock last touched at used.
func environment(t *testing.T, cache, name, version, id string, built, used time.Time) {
	t.Helper()
	dir := filepath.Join(cache, name, version, id)
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	ready := fmt.Sprintf(`{"name": %q, "version": %q, "id": %q, "built": %q}`, name, version, id, built.UTC().Format(time.RFC3339))
	if err := os.WriteFile(filepath.Join(dir, "READY"), []byte(ready), 0o644); err != nil {
		t.Fatal(err)
	}
	usage := filepath.Join(cache, name, version, id+".usage")
	if err := os.WriteFile(usage, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(usage, used, used); err != nil {
		t.Fatal(err)
	}
}

// TestGC runs the real lorry-controller-minion gc with the minion's
// configuration file: it removes what no job holds and is outdated or
// long unused, keeps and names what is held, and leaves the rest alone.
func TestGC(t *testing.T) {
	area := t.TempDir()
	cache := filepath.Join(area, "runtimes")
	now := time.Now()
	const a1, a2, b1 = "aaaaaaa1", "aaaaaaa2", "bbbbbbb1"
	environment(t, cache, "news", "1", a1, now.Add(-48*time.Hour), now.Add(-47*time.Hour))
	environment(t, cache, "news", "2", a2, now.Add(-24*time.Hour), now.Add(-time.Hour))
	environment(t, cache, "old", "1", b1, now.Add(-100*time.Hour), now.Add(-80*time.Hour))
	environment(t, cache, "weather", "1", b1, now.Add(-100*time.Hour), now.Add(-90*time.Hour))
	// Jobs run in news 1 and weather 1.
	for _, p := range []string{"news/1/" + a1, "weather/1/" + b1} {
		l, err := flock.TryShared(filepath.Join(cache, p+".usage"))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock()
	}
	live, err := venv.LockWorkDir(area, "box-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	gone, err := venv.LockWorkDir(area, "box-2", nil)
	if err != nil {
		t.Fatal(err)
	}
	gone.Close()

	conf := writeFile(t, "minion.conf", "webapp-url = http://webapp:1234\nworking-area = "+area+"\nkeep-unused = 72h\n")
	cmd := exec.Command(os.Args[0], "gc", "--config", conf)
	cmd.Env = append(os.Environ(), mainEnv+"=1", "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gc: %v\n%s", err, out)
	}
	want := strings.Join([]string{
		"removed runtime " + cache + "/old/1/" + b1 + ": unused since " + now.Add(-80*time.Hour).UTC().Format(time.RFC3339),
		"kept runtime " + cache + "/news/1/" + a1 + ": in use (not the newest of news)",
		"kept runtime " + cache + "/weather/1/" + b1 + ": in use (unused since " + now.Add(-90*time.Hour).UTC().Format(time.RFC3339) + ")",
		"removed scraper working directory " + area + "/scrapers/box-2: no minion holds it",
		"kept scraper working directory " + area + "/scrapers/box-1: in use",
	}, "\n") + "\n"
	if string(out) != want {
		t.Errorf("gc said\n%s\nwant\n%s", out, want)
	}
	for _, p := range []string{"runtimes/news/1/" + a1, "runtimes/news/2/" + a2, "runtimes/weather/1/" + b1, "scrapers/box-1"} {
		if _, err := os.Stat(filepath.Join(area, p)); err != nil {
			t.Errorf("gc removed %s: %v", p, err)
		}
	}
	for _, p := range []string{"runtimes/old", "scrapers/box-2", "scrapers/box-2.lock"} {
		if _, err := os.Stat(filepath.Join(area, p)); !os.IsNotExist(err) {
			t.Errorf("gc left %s (%v)", p, err)
		}
	}
}
