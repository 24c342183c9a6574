// Package confgittest builds CONFGIT repositories for tests and benchmarks
// of the packages that read configuration.
package confgittest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
	Git(tb, "", nil, "init", "-q", "--bare", "--initial-branch=master", dir)

	var in bytes.Buffer
	fmt.Fprintf(&in, "commit refs/heads/master\ncommitter Confgit Test <confgit@example.com> 1700000000 +0000\ndata 4\nbig\n")
	inline := func(name, content string) {
		fmt.Fprintf(&in, "M 100644 inline %s\ndata %d\n%s\n", name, len(content), content)
	}
	inline("lorry-controller.conf", BigConf)
	for i := range files {
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
	in.WriteString("\n")
	Git(tb, dir, in.Bytes(), "fast-import", "--quiet")
	Git(tb, dir, nil, "repack", "-a", "-d", "-q")
	return dir
}

// GitEnv names an author and committer, so that tests need no git
// configuration of the machine's.
var GitEnv = []string{
	"GIT_AUTHOR_NAME=Confgit Test",
	"GIT_AUTHOR_EMAIL=confgit@example.com",
	"GIT_COMMITTER_NAME=Confgit Test",
	"GIT_COMMITTER_EMAIL=confgit@example.com",
	"GIT_CONFIG_GLOBAL=" + os.DevNull,
	"GIT_CONFIG_NOSYSTEM=1",
	"GIT_TERMINAL_PROMPT=0",
}

// Git runs the git command line in dir with stdin and returns its trimmed
// output, failing tb if git fails.
func Git(tb testing.TB, dir string, stdin []byte, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), GitEnv...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
