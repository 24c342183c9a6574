package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/confgit/confgittest"
)

// growth is what reading a configuration that grew measured of the
// WEBAPP's resident memory, in bytes.
type growth struct {
	firstPeak int64 // peak of the first read (clone and fill the queue)
	growPeak  int64 // peak of the read that grew the queue
	rest      int64 // resident after it
	growTime  time.Duration
}

// growConfiguration starts the real WEBAPP on a CONFGIT of from .lorry
// files of two lorries each, reads it, commits files up to to, reads it
// again and returns what the WEBAPP's memory did.
func growConfiguration(tb testing.TB, from, to int) growth {
	tb.Helper()
	bin, err := plainBin()
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	repo := confgittest.BigRepo(tb, from, 2)
	w := startWebapp(tb, dir, startOpts{bin: bin, args: []string{"--confgit-url", repo, "--insecure-no-auth",
		"--log-level", "warn"}})
	c := &http.Client{Timeout: 10 * time.Minute}
	read := func(lorries int) {
		tb.Helper()
		resp, err := c.Post(w.url+"/1.0/read-configuration?wait=3600", "", nil)
		if err != nil {
			tb.Fatal(err)
		}
		defer resp.Body.Close()
		var m struct {
			Lorries int `json:"lorries"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 || m.Lorries != lorries {
			tb.Fatalf("read-configuration = %d %v, %d lorries; want 200, %d lorries", resp.StatusCode, err, m.Lorries, lorries)
		}
	}
	var g growth
	pid := w.cmd.Process.Pid
	read(2 * from)
	g.firstPeak = vmHWM(tb, pid)
	confgittest.GrowBigRepo(tb, repo, from, to, 2)
	// The peak is measured from here: writing 5 to clear_refs sets it
	// to what is resident now.
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		tb.Fatalf("reset the WEBAPP's peak resident memory: %v", err)
	}
	start := time.Now()
	read(2 * to)
	g.growTime = time.Since(start)
	g.growPeak = vmHWM(tb, pid)
	g.rest = vmRSS(tb, pid)
	return g
}

// vmRSS is the resident memory of process pid.
func vmRSS(tb testing.TB, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// growthBound is the most the WEBAPP may have resident while a
// read-configuration grows its queue from 20,000 to 100,000 lorries.
// Applying the configuration whole took it to 230-270 MiB; in batches
// it stays near 110 MiB.
const growthBound = 180 << 20

func TestReadConfigurationGrowthBoundedMemory(t *testing.T) {
	if _, err := os.Stat("/proc/self/clear_refs"); err != nil {
		t.Skip("no /proc to read the WEBAPP's memory from")
	}
	g := growConfiguration(t, 10_000, 50_000)
	t.Logf("peak resident %d MiB growing from 20,000 to 100,000 lorries, %d MiB after", g.growPeak>>20, g.rest>>20)
	if g.growPeak >= growthBound {
		t.Errorf("the WEBAPP peaked at %d MiB resident reading a configuration grown from 20,000 to 100,000 lorries; want under %d MiB",
			g.growPeak>>20, growthBound>>20)
	}
}

// BenchmarkReadConfigurationGrowth has the real WEBAPP read a CONFGIT of
// 20,000 lorries, then the same grown to 100,000, and reports the peak
// resident memory of each read.
func BenchmarkReadConfigurationGrowth(b *testing.B) {
	for range b.N {
		g := growConfiguration(b, 10_000, 50_000)
		b.ReportMetric(float64(g.firstPeak)/(1<<20), "first-peak-MiB")
		b.ReportMetric(float64(g.growPeak)/(1<<20), "grow-peak-MiB")
		b.ReportMetric(float64(g.rest)/(1<<20), "rest-MiB")
		b.ReportMetric(g.growTime.Seconds(), "grow-s")
		b.Logf("read-configuration from 20,000 to 100,000 lorries: peak resident %d MiB (first read of 20,000: %d MiB), %d MiB after, in %v",
			g.growPeak>>20, g.firstPeak>>20, g.rest>>20, g.growTime.Round(time.Millisecond))
	}
}
