package confgit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

const (
	benchFiles         = 10000
	benchSpecsPerFile  = 2
	benchConfiguration = `[
  {"type": "lorries", "prefix": "delta", "globs": ["open-source-lorries/**/*.lorry"], "interval": "PT6H"},
  {"type": "trove", "trovehost": "git.example.com", "prefixmap": {"baserock": "baserock"}}
]`
)

// makeBenchRepo builds a packed bare repository with benchFiles .lorry
// files in one commit, using git fast-import since committing that many
// files one by one would dominate the benchmark's set-up time.
func makeBenchRepo(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "upstream.git")
	runGit(tb, "", nil, "init", "-q", "--bare", "--initial-branch=master", dir)

	var in bytes.Buffer
	fmt.Fprintf(&in, "commit refs/heads/master\ncommitter Confgit Test <confgit@example.com> 1700000000 +0000\ndata 4\nbig\n")
	inline := func(name, content string) {
		fmt.Fprintf(&in, "M 100644 inline %s\ndata %d\n%s\n", name, len(content), content)
	}
	inline(ConfFile, benchConfiguration)
	for i := range benchFiles {
		var spec bytes.Buffer
		spec.WriteString("{\n")
		for j := range benchSpecsPerFile {
			if j > 0 {
				spec.WriteString(",\n")
			}
			fmt.Fprintf(&spec, "  \"project%05d/repo%d\": {\"type\": \"git\", \"url\": \"https://git.example.org/project%05d/repo%d.git\", \"refspecs\": [\"+refs/heads/*\"]}", i, j, i, j)
		}
		spec.WriteString("\n}\n")
		inline(fmt.Sprintf("open-source-lorries/group%03d/project%05d.lorry", i%100, i), spec.String())
	}
	in.WriteString("\n")
	runGit(tb, dir, in.Bytes(), "fast-import", "--quiet")
	runGit(tb, dir, nil, "repack", "-a", "-d", "-q")
	return dir
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
