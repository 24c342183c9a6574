package yarns

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stampMain is a scraper whose first output is the time it started
// running Python code.
const stampMain = `import time
print("%.6f" % time.time(), flush=True)
`

// gotJob is when the minion's log says it had the answer of give-me-job
// for job id.
func gotJob(tb testing.TB, log string, id int) time.Time {
	tb.Helper()
	data, err := os.ReadFile(log)
	if err != nil {
		tb.Fatal(err)
	}
	re := regexp.MustCompile(`time=(\S+) level=INFO msg="got job" .*job_id=` + strconv.Itoa(id) + ` `)
	m := re.FindSubmatch(data)
	if m == nil {
		tb.Fatalf("%s: no \"got job\" for job %d", log, id)
	}
	t, err := time.Parse(time.RFC3339Nano, string(m[1]))
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// firstOutput is the time the scraper of j printed first.
func firstOutput(tb testing.TB, j *rigJob) time.Time {
	tb.Helper()
	f, err := strconv.ParseFloat(strings.TrimSpace(strings.SplitN(j.Output, "\n", 2)[0]), 64)
	if err != nil {
		tb.Fatalf("scraper output %q: %v", j.Output, err)
	}
	return time.Unix(0, int64(f*1e9))
}

func (r *rig) pretend(now int64) {
	r.tb.Helper()
	resp, err := http.PostForm(r.url+"/1.0/pretend-time", url.Values{"now": {strconv.FormatInt(now, 10)}})
	if err != nil || resp.StatusCode != http.StatusOK {
		r.tb.Fatalf("pretend-time: %v %v", resp, err)
	}
	resp.Body.Close()
}

// pythonStart is the mean time of python -c pass.
func pythonStart(tb testing.TB, python string, n int) time.Duration {
	start := time.Now()
	for range n {
		if out, err := exec.Command(python, "-c", "pass").CombinedOutput(); err != nil {
			tb.Fatalf("%s: %v\n%s", python, err, out)
		}
	}
	return time.Since(start) / time.Duration(n)
}

// BenchmarkScraperStart measures a scraper job end to end through a real
// minion, from the answer of give-me-job to the scraper's first output:
// cold, when the job's runtime is new and is built for it, and warm, when
// it is reused. The warm start is compared with Python's own start-up.
func BenchmarkScraperStart(b *testing.B) {
	needPythonVenv(b)
	wheels := writeGreet(b, stampMain)
	r := newRig(b, map[string]string{
		"lorry-controller.conf": `[{"type": "runtime", "name": "fn", "path": "runtimes/fn"},
 {"type": "scrapers", "prefix": "s", "globs": ["*.scraper"], "interval": "1m"}]`,
		"runtimes/fn/requirements.txt": "greet==1.0\n",
		"a.scraper":                    "a: {runtime: fn, module: greet}\n",
	})
	r.minion("m0", "--pip-arg=--no-index", "--pip-arg=--find-links="+wheels)
	log := filepath.Join(r.work, "minion-m0.log")
	id, now := 0, int64(0)
	run := func() time.Duration {
		id++
		j := r.finished(id, 5*time.Minute)
		if j.Status != "succeeded" {
			b.Fatalf("job %d: %s: %s", id, j.Status, j.Output)
		}
		return firstOutput(b, j).Sub(gotJob(b, log, id))
	}
	var cold, warm time.Duration
	n := 0
	for b.Loop() {
		for range 3 {
			if id > 0 {
				r.commit(map[string]string{"runtimes/fn/requirements.txt": fmt.Sprintf("greet==1.0\n# %d\n", id)})
				r.post("read-configuration")
				now += 3600
				r.pretend(now)
			}
			cold += run()
			now += 3600
			r.pretend(now)
			warm += run()
			n++
		}
	}
	cold, warm = cold/time.Duration(n), warm/time.Duration(n)
	// Not python3 itself, which may be a wrapper script: the
	// interpreter that the environment links to.
	exe, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		b.Fatal(err)
	}
	python := pythonStart(b, strings.TrimSpace(string(exe)), 10)
	b.ReportMetric(cold.Seconds()*1000, "cold-ms")
	b.ReportMetric(warm.Seconds()*1000, "warm-ms")
	b.ReportMetric(python.Seconds()*1000, "python-ms")
	b.Logf("mean of %d: cold start (build) %v; warm start (reuse) %v; python -c pass %v; warm start adds %v to Python's start-up",
		n, cold.Round(time.Millisecond), warm.Round(time.Millisecond), python.Round(time.Millisecond), (warm - python).Round(time.Millisecond))
}

// BenchmarkScraperSharedBuild hands 8 minions sharing a runtime cache 8
// jobs of one new runtime at once: one of them builds it, the others wait
// for that build and reuse it.
func BenchmarkScraperSharedBuild(b *testing.B) {
	needPythonVenv(b)
	const minions = 8
	wheels := writeGreet(b, stampMain)
	var spec strings.Builder
	for i := range minions {
		fmt.Fprintf(&spec, "s%d: {runtime: fn, module: greet}\n", i)
	}
	for b.Loop() {
		r := newRig(b, map[string]string{
			"lorry-controller.conf": `[{"type": "runtime", "name": "fn", "path": "runtimes/fn"},
 {"type": "scrapers", "prefix": "s", "globs": ["*.scraper"], "interval": "1d"}]`,
			"runtimes/fn/requirements.txt": "greet==1.0\n",
			"all.scraper":                  spec.String(),
		})
		r.post("stop-queue")
		cache := filepath.Join(r.work, "runtimes")
		for i := range minions {
			r.minion(fmt.Sprint("m", i), "--runtime-cache", cache, "--pip-arg=--no-index", "--pip-arg=--find-links="+wheels)
		}
		r.post("start-queue")
		builds := 0
		var buildTime time.Duration
		var waits []string
		for id := 1; id <= minions; id++ {
			j := r.finished(id, 5*time.Minute)
			if j.Status != "succeeded" || j.Runtime == nil || j.Runtime.Built == nil {
				b.Fatalf("job %d: %s: %s", id, j.Status, j.Output)
			}
			var log string
			for i := range minions {
				l := filepath.Join(r.work, fmt.Sprintf("minion-m%d.log", i))
				if data, _ := os.ReadFile(l); strings.Contains(string(data), fmt.Sprintf(`msg="got job" minion=m%d job_id=%d `, i, id)) {
					log = l
				}
			}
			start := firstOutput(b, j).Sub(gotJob(b, log, id))
			if *j.Runtime.Built {
				builds++
				buildTime = time.Duration(*j.Runtime.BuildSeconds * float64(time.Second))
				waits = append(waits, fmt.Sprintf("job %d built it: %v to its first output", id, start.Round(time.Millisecond)))
			} else {
				waits = append(waits, fmt.Sprintf("job %d reused it: %v", id, start.Round(time.Millisecond)))
			}
		}
		b.ReportMetric(float64(builds), "builds")
		b.ReportMetric(buildTime.Seconds(), "build-s")
		b.Logf("%d minions, one new runtime: %d build in %v; %s", minions, builds, buildTime.Round(time.Millisecond), strings.Join(waits, "; "))
		if builds != 1 {
			b.Errorf("the runtime was built %d times, want once", builds)
		}
	}
}
