package venv

import (
	"context"
	"sync"
	"testing"
	"time"
)

// BenchmarkAcquire builds a runtime with python3 and pip from local wheels
// (cold), then acquires it again (warm): what a scraper job waits for before
// it starts.
func BenchmarkAcquire(b *testing.B) {
	needVenv(b)
	wheelDir := wheels(b)
	src := sourceOf(b, projectSource)
	var cold, warm time.Duration
	for i := 0; i < b.N; i++ {
		c := newCache(b, b.TempDir(), "--no-index", "--find-links", wheelDir)
		rt := Runtime{Name: "news", ID: id1, Python: "python3"}
		start := time.Now()
		env, err := c.Acquire(context.Background(), rt, src)
		if err != nil {
			b.Fatal(err)
		}
		cold += time.Since(start)
		env.Release()
		start = time.Now()
		env, err = c.Acquire(context.Background(), rt, src)
		if err != nil {
			b.Fatal(err)
		}
		warm += time.Since(start)
		if env.Built {
			b.Fatal("the warm Acquire built again")
		}
		env.Release()
	}
	b.ReportMetric(float64(cold.Milliseconds())/float64(b.N), "cold_ms")
	b.ReportMetric(float64(warm.Microseconds())/1000/float64(b.N), "warm_ms")
}

// BenchmarkAcquireTogether has 8 goroutines and 8 other processes acquire
// one new runtime at once: one of them builds, the others wait and reuse.
func BenchmarkAcquireTogether(b *testing.B) {
	needVenv(b)
	wheelDir := wheels(b)
	src := sourceOf(b, projectSource)
	const goroutines, procs = 8, 8
	var total time.Duration
	builds := 0
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		rt := Runtime{Name: "news", ID: id1, Python: "python3"}
		c := newCache(b, dir, "--no-index", "--find-links", wheelDir)
		start := time.Now()
		type helperProc struct {
			out interface{ ReadString(byte) (string, error) }
			in  interface{ Close() error }
		}
		var hs []helperProc
		for j := 0; j < procs; j++ {
			_, out, in := helper(b, dir, rt, false, "--no-index", "--find-links", wheelDir)
			hs = append(hs, helperProc{out, in})
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for j := 0; j < goroutines; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				env, err := c.Acquire(context.Background(), rt, src)
				if err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				if env.Built {
					builds++
				}
				mu.Unlock()
				env.Release()
			}()
		}
		wg.Wait()
		for _, h := range hs {
			line, err := h.out.ReadString('\n')
			if err != nil {
				b.Fatalf("helper said %q: %v", line, err)
			}
			if line == "acquired built=true\n" {
				builds++
			}
		}
		total += time.Since(start)
		for _, h := range hs {
			h.in.Close()
		}
	}
	if builds != b.N {
		b.Errorf("%d builds in %d rounds; want one each", builds, b.N)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "all_16_ms")
	b.ReportMetric(float64(builds)/float64(b.N), "builds")
}
