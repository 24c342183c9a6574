package upstream

import (
	"context"
	"testing"
	"time"

	"lorrycontroller.dev/lc/hosts/hoststest"
)

// BenchmarkListAndGenerate20k lists 20,000 projects from a fake GitLab, a
// hundred a page as the lister asks, and generates their lorries: what one
// ls-troves of a large host costs the WEBAPP, less the network.
func BenchmarkListAndGenerate20k(b *testing.B) {
	const n = 20_000
	f := newGitLab(b, "glpat-bench", hoststest.GitLabProjects(n, "big"))
	h := upstreamHost(b, f.Section(map[string]any{"private-token": "glpat-bench",
		"prefixmap": map[string]any{"big": "mirrors/big", "bigish": "mirrors/other"}, "ignore": []any{"big/sub/p0000*"}}))
	l, err := NewLister(h, ListerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// Warm the fake's encoded projects so only the listing is measured.
	if _, err := l.List(ctx); err != nil {
		b.Fatal(err)
	}
	var listTime, genTime time.Duration
	var lorries int
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		repos, err := l.List(ctx)
		if err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		gen, _ := Generate(h, repos)
		listTime += mid.Sub(start)
		genTime += time.Since(mid)
		if len(repos) != n {
			b.Fatalf("got %d repos; want %d", len(repos), n)
		}
		lorries = len(gen)
	}
	b.ReportMetric(float64(listTime.Milliseconds())/float64(b.N), "list-ms/op")
	b.ReportMetric(float64(genTime.Milliseconds())/float64(b.N), "generate-ms/op")
	b.ReportMetric(float64(n)/((listTime+genTime).Seconds()/float64(b.N)), "repos/s")
	b.ReportMetric(float64(lorries), "lorries")
}
