package yarns

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// checkerMain is the scraper of the stress test: it works a little, then
// checks that the files of its environment are all still there, and exits
// 3 if not.
const checkerMain = `import os, sys, time

import greet

time.sleep(0.2)
files = [greet.__file__, os.path.join(sys.prefix, "bin", "python"), os.path.join(sys.prefix, "pyvenv.cfg"), os.__file__]
missing = [f for f in files if not os.path.exists(f)]
if missing:
    print("damaged:", missing)
    sys.exit(3)
print("intact", sys.prefix)
`

// writeGreet writes the wheel of greet 1.0, whose module the scrapers of
// the tests and benchmarks run, into a new directory.
func writeGreet(tb testing.TB, main string) string {
	tb.Helper()
	src := tb.TempDir()
	os.MkdirAll(filepath.Join(src, "greet"), 0o755)
	os.WriteFile(filepath.Join(src, "greet", "__init__.py"), []byte("hello = 'hello'\n"), 0o644)
	os.WriteFile(filepath.Join(src, "greet", "__main__.py"), []byte(main), 0o644)
	wheels := tb.TempDir()
	if err := writeWheel(filepath.Join(wheels, "greet-1.0-py3-none-any.whl"), "greet", "1.0", src); err != nil {
		tb.Fatal(err)
	}
	return wheels
}

// TestScraperStress runs 60 scraper jobs on 4 minions that share two
// runtimes, while gc runs every 100 ms and a new version of a runtime is
// deployed every 4 seconds. No job may find its environment damaged, and
// each runtime id must be built exactly once, whichever minion needs it
// first.
func TestScraperStress(t *testing.T) {
	if testing.Short() {
		t.Skip("the stress test takes about a minute")
	}
	needPythonVenv(t)
	const jobs, minions = 60, 4
	wheels := writeGreet(t, checkerMain)
	var spec strings.Builder
	for i := range jobs {
		fmt.Fprintf(&spec, "s%02d: {runtime: %s, module: greet}\n", i, []string{"fn", "gn"}[i%2])
	}
	r := newRig(t, map[string]string{
		"lorry-controller.conf": `[{"type": "runtime", "name": "fn", "path": "runtimes/fn"},
 {"type": "runtime", "name": "gn", "path": "runtimes/gn"},
 {"type": "scrapers", "prefix": "s", "globs": ["*.scraper"], "interval": "1d"}]`,
		"runtimes/fn/requirements.txt": "greet==1.0\n",
		"runtimes/gn/requirements.txt": "greet==1.0\n",
		"all.scraper":                  spec.String(),
	})
	defer func() {
		if t.Failed() {
			r.showLogs()
		}
	}()
	cache := filepath.Join(r.work, "runtimes")
	for i := range minions {
		r.minion(fmt.Sprint("m", i), "--runtime-cache", cache, "--pip-arg=--no-index", "--pip-arg=--find-links="+wheels)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var gcRuns, deploys int
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			out, err := exec.Command(filepath.Join(binDir, minionBin), "gc", "--runtime-cache", cache,
				"--working-area", filepath.Join(r.work, "minion-m0")).CombinedOutput()
			if err != nil {
				t.Errorf("gc: %v\n%s", err, out)
				return
			}
			gcRuns++
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(4 * time.Second):
			}
			deploys++
			name := []string{"fn", "gn"}[deploys%2]
			r.commit(map[string]string{"runtimes/" + name + "/requirements.txt": fmt.Sprintf("greet==1.0\n# deploy %d\n", deploys)})
			r.post("read-configuration")
		}
	}()

	start := time.Now()
	builds := map[string]int{}
	damaged := 0
	for id := 1; id <= jobs; id++ {
		j := r.finished(id, 3*time.Minute)
		if j.Status != "succeeded" {
			if *j.Exit == 3 {
				damaged++
			}
			t.Errorf("job %d: %s, exit %d: %s", id, j.Status, *j.Exit, j.Output)
			continue
		}
		if j.Runtime == nil || j.Runtime.Built == nil {
			t.Errorf("job %d: no runtime_built reported", id)
			continue
		}
		// Runtimes of two names may have one id: their sources are
		// alike, but each name has its own environment.
		rt := j.Runtime.Name + "/" + j.Runtime.ID
		if *j.Runtime.Built {
			builds[rt]++
		} else if _, ok := builds[rt]; !ok {
			builds[rt] = 0
		}
	}
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()
	for id, n := range builds {
		if n != 1 {
			t.Errorf("runtime %s: built %d times, want once", id, n)
		}
	}
	if damaged > 0 {
		t.Errorf("%d jobs found their environment damaged, want none", damaged)
	}
	t.Logf("%d jobs on %d minions in %v: %d runtimes used; %d deploys, %d gc runs; %d damaged",
		jobs, minions, elapsed.Round(time.Millisecond), len(builds), deploys, gcRuns, damaged)
}

// needPythonVenv fails, naming the package, where python3 cannot make
// environments.
func needPythonVenv(tb testing.TB) {
	tb.Helper()
	if out, err := exec.Command("python3", "-c", "import venv, ensurepip").CombinedOutput(); err != nil {
		tb.Fatalf("python3 -m venv is needed and does not work here (on Debian: apt-get install python3-venv): %v\n%s", err, out)
	}
}
