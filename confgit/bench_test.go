package confgit

import (
	"context"
	"os"
	"testing"
	"time"

	"lorrycontroller.dev/lc/confgit/confgittest"
)

const (
	benchFiles        = 10000
	benchSpecsPerFile = 2
)

func makeBenchRepo(tb testing.TB) string {
	return confgittest.BigRepo(tb, benchFiles, benchSpecsPerFile)
}

// BenchmarkRead10kFiles reports, per iteration, the first Read into an
// empty Dir (clone and parse everything) and a second Read with nothing new
// upstream (fetch and cache hit).
func BenchmarkRead10kFiles(b *testing.B) {
	upstream := makeBenchRepo(b)
	ctx := context.Background()
	var first, again time.Duration
	n := 0
	for b.Loop() {
		dir, err := os.MkdirTemp(b.TempDir(), "clone")
		if err != nil {
			b.Fatal(err)
		}
		src := &Source{Dir: dir, URL: upstream}

		start := time.Now()
		cfg, err := src.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		first += time.Since(start)
		if got, want := len(cfg.Lorries), benchFiles*benchSpecsPerFile; got != want {
			b.Fatalf("got %d lorries, want %d (errors: %v)", got, want, cfg.Errors[:min(3, len(cfg.Errors))])
		}

		start = time.Now()
		if _, err := src.Read(ctx); err != nil {
			b.Fatal(err)
		}
		again += time.Since(start)
		n++
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(first.Seconds()/float64(n), "first-read-s")
	b.ReportMetric(again.Seconds()/float64(n), "unchanged-re-read-s")
}

// BenchmarkReadLocal10kFiles is the same first read without a URL: the
// repository in Dir is read as it is, so the figure is parsing alone.
func BenchmarkReadLocal10kFiles(b *testing.B) {
	upstream := makeBenchRepo(b)
	ctx := context.Background()
	for b.Loop() {
		src := &Source{Dir: upstream}
		cfg, err := src.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if got, want := len(cfg.Lorries), benchFiles*benchSpecsPerFile; got != want {
			b.Fatalf("got %d lorries, want %d", got, want)
		}
	}
}
