package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"lorrycontroller.dev/lc/confgit/confgittest"
)

// plainBin is the WEBAPP built without the race detector, whose memory
// is what the memory figures are about.
var plainBin = sync.OnceValues(func() (string, error) {
	if !raceEnabled {
		return webappBin, nil
	}
	bin := filepath.Join(filepath.Dir(webappBin), "lorry-controller-webapp-plain")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the WEBAPP: %v\n%s", err, out)
	}
	return bin, nil
})

const (
	updateClients = 30
	updateOutput  = 31 << 20 // bytes of stdout each client sends
	// rssBound is the most the WEBAPP may have resident under that load.
	rssBound = 400 << 20
)

// filler is the middle of every client's output: URL-safe, so that the
// form body carries it as it is.
var filler = bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstuvwxyz-ABCDEFGHIJKLMNOPQRSTUVWXYZ."), 1<<14)

// updateBody is a job-update form body of job id whose stdout is
// updateOutput bytes, starting and ending with markers of its own.
func updateBody(id int64) (io.Reader, int64, string, string) {
	first, last := fmt.Sprintf("start-of-job-%04d.", id), fmt.Sprintf(".end-of-job-%04d", id)
	prefix := fmt.Sprintf("job_id=%d&exit=no&minion=m%d&stdout=%s", id, id, first)
	var parts []io.Reader
	parts = append(parts, strings.NewReader(prefix))
	left := updateOutput - len(first) - len(last)
	for left > 0 {
		n := min(left, len(filler))
		parts = append(parts, bytes.NewReader(filler[:n]))
		left -= n
	}
	parts = append(parts, strings.NewReader(last))
	return io.MultiReader(parts...), int64(len(prefix) + updateOutput - len(first)), first, last
}

// updateLoad is what a run of concurrent large job-updates measured.
type updateLoad struct {
	peakRSS int64           // VmHWM of the WEBAPP, bytes
	health  []time.Duration // each health-check's time
	codes   []int           // and its status code
	errs    []error
}

// loadWebapp starts a WEBAPP with updateClients running jobs, has each
// client post an updateOutput-byte job-update at once while one more
// asks for the health check over and over, and returns what it saw and
// the WEBAPP, for its output to be checked.
func loadWebapp(tb testing.TB) (updateLoad, *webapp, []int64) {
	tb.Helper()
	bin, err := plainBin()
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	repo := confgittest.BigRepo(tb, updateClients, 1)
	// Each update is its job's first word; on a busy machine 30 of them
	// may take longer to arrive than the default claim timeout.
	w := startWebapp(tb, dir, startOpts{bin: bin, args: []string{"--confgit-url", repo, "--insecure-no-auth",
		"--claim-timeout", "1h"}})
	c := &http.Client{Timeout: 10 * time.Minute}
	form := func(path string, v url.Values) map[string]any {
		resp, err := c.PostForm(w.url+path, v)
		if err != nil {
			tb.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
			tb.Fatalf("POST %s = %d %v", path, resp.StatusCode, err)
		}
		return m
	}
	form("/1.0/read-configuration", nil)
	var ids []int64
	for i := range updateClients {
		m := form("/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}, "minion": {fmt.Sprintf("m%d", i+1)}})
		ids = append(ids, int64(m["job_id"].(float64)))
	}

	var load updateLoad
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, n, _, _ := updateBody(id)
			req, _ := http.NewRequest("POST", w.url+"/1.0/job-update", body)
			req.ContentLength = n
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := c.Do(req)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					err = fmt.Errorf("job-update of job %d = %d %s", id, resp.StatusCode, b)
				}
			}
			if err != nil {
				mu.Lock()
				load.errs = append(load.errs, err)
				mu.Unlock()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	// The health check is asked until the updates are done, at most a
	// few thousand times.
	for i := 0; i < 5000; i++ {
		select {
		case <-done:
			i = 5000
			continue
		default:
		}
		start := time.Now()
		code := 0
		if resp, err := c.Get(w.url + "/1.0/health-check"); err == nil {
			code = resp.StatusCode
			resp.Body.Close()
		}
		load.health = append(load.health, time.Since(start))
		load.codes = append(load.codes, code)
	}
	<-done
	load.peakRSS = vmHWM(tb, w.cmd.Process.Pid)
	return load, w, ids
}

// vmHWM is the peak resident memory of process pid.
func vmHWM(tb testing.TB, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

func TestLargeJobUpdatesBoundedMemory(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc to read the WEBAPP's memory from")
	}
	load, w, ids := loadWebapp(t)
	for _, err := range load.errs {
		t.Error(err)
	}
	if load.peakRSS >= rssBound {
		t.Errorf("the WEBAPP peaked at %d MiB resident under %d job-updates of %d MiB; want under %d MiB",
			load.peakRSS>>20, updateClients, updateOutput>>20, rssBound>>20)
	}
	for i, code := range load.codes {
		if code != 200 {
			t.Errorf("health-check %d of %d during the updates = %d; want 200", i+1, len(load.codes), code)
			break
		}
	}
	for _, id := range ids {
		resp, err := http.Get(fmt.Sprintf("%s/1.0/job/%d", w.url, id))
		if err != nil {
			t.Fatal(err)
		}
		var j struct {
			Output      string `json:"output"`
			OutputBytes int64  `json:"output_bytes"`
			CutBytes    int64  `json:"cut_bytes"`
		}
		err = json.NewDecoder(resp.Body).Decode(&j)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		_, _, first, last := updateBody(id)
		if j.OutputBytes != updateOutput || !strings.HasPrefix(j.Output, first) || !strings.HasSuffix(j.Output, last) ||
			int64(len(j.Output)) >= updateOutput || j.CutBytes == 0 {
			t.Errorf("job %d: %d bytes received, %d cut, output %.40q...%q; want %d bytes from %q to %q, cut",
				id, j.OutputBytes, j.CutBytes, j.Output, j.Output[max(0, len(j.Output)-20):], updateOutput, first, last)
		}
	}
	w.stop(t)
}

// BenchmarkLargeJobUpdates posts 30 job-updates of 31 MiB at once to the
// real WEBAPP and reports its peak resident memory and the time the
// health check took meanwhile.
func BenchmarkLargeJobUpdates(b *testing.B) {
	for range b.N {
		load, w, _ := loadWebapp(b)
		for _, err := range load.errs {
			b.Error(err)
		}
		slices.Sort(load.health)
		q := func(p float64) float64 {
			return float64(load.health[int(p*float64(len(load.health)-1))].Microseconds()) / 1000
		}
		b.ReportMetric(float64(load.peakRSS)/(1<<20), "peak-RSS-MiB")
		b.ReportMetric(float64(len(load.health)), "health-checks")
		b.ReportMetric(q(0.5), "health-p50-ms")
		b.ReportMetric(q(0.99), "health-p99-ms")
		b.ReportMetric(q(1), "health-max-ms")
		w.cmd.Process.Kill()
	}
}
