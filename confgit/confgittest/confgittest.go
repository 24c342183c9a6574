// Package confgittest builds CONFGIT repositories for tests and benchmarks
// of the packages that read configuration.
package confgittest

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"lorrycontroller.dev/lc/gittest"
)

// BigConf is the lorry-controller.conf of BigRepo: one lorries section
// reading every .lorry file, and one host section.
const BigConf = `[
  {"type": "lorries", "prefix": "delta", "globs": ["open-source-lorries/**/*.lorry"], "interval": "PT6H"},
  {"type": "trove", "trovehost": "git.example.com", "prefixmap": {"baserock": "baserock"}}
]`

// BigRepo builds a packed bare repository whose master branch holds BigConf
// and files .lorry files of specsPerFile git specs each, and returns its
// path. It uses git fast-import, since committing that many files one by
// one would dominate a benchmark's set-up time.
func BigRepo(tb testing.TB, files, specsPerFile int) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "upstream.git")
	gittest.Git(tb, "", nil, "init", "-q", "--bare", "--initial-branch=master", dir)

	var in bytes.Buffer
	fmt.Fprintf(&in, "commit refs/heads/master\ncommitter Confgit Test <confgit@example.com> 1700000000 +0000\ndata 4\nbig\n")
	fmt.Fprintf(&in, "M 100644 inline lorry-controller.conf\ndata %d\n%s\n", len(BigConf), BigConf)
	writeLorryFiles(&in, 0, files, specsPerFile)
	in.WriteString("\n")
	gittest.Git(tb, dir, in.Bytes(), "fast-import", "--quiet")
	gittest.Git(tb, dir, nil, "repack", "-a", "-d", "-q")
	return dir
}

// GrowBigRepo commits to the master branch of a BigRepo at dir the .lorry
// files numbered from to files-1 beside those it holds, each of
// specsPerFile specs, as BigRepo would have made them.
func GrowBigRepo(tb testing.TB, dir string, from, files, specsPerFile int) {
	tb.Helper()
	var in bytes.Buffer
	fmt.Fprintf(&in, "commit refs/heads/master\ncommitter Confgit Test <confgit@example.com> 1700000100 +0000\ndata 5\ngrow\nfrom refs/heads/master^0\n")
	writeLorryFiles(&in, from, files, specsPerFile)
	in.WriteString("\n")
	gittest.Git(tb, dir, in.Bytes(), "fast-import", "--quiet")
	gittest.Git(tb, dir, nil, "repack", "-a", "-d", "-q")
}

// writeLorryFiles writes fast-import's commands for the .lorry files
// numbered from to files-1.
func writeLorryFiles(in *bytes.Buffer, from, files, specsPerFile int) {
	inline := func(name, content string) {
		fmt.Fprintf(in, "M 100644 inline %s\ndata %d\n%s\n", name, len(content), content)
	}
	for i := from; i < files; i++ {
		var spec bytes.Buffer
		spec.WriteString("{\n")
		for j := range specsPerFile {
			if j > 0 {
				spec.WriteString(",\n")
			}
			fmt.Fprintf(&spec, "  \"project%05d/repo%d\": {\"type\": \"git\", \"url\": \"https://git.example.org/project%05d/repo%d.git\", \"refspecs\": [\"+refs/heads/*\"]}", i, j, i, j)
		}
		spec.WriteString("\n}\n")
		inline(fmt.Sprintf("open-source-lorries/group%03d/project%05d.lorry", i%100, i), spec.String())
	}
}
