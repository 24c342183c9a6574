// Package gittest runs the git command line in tests, with an author and
// committer of its own so that no configuration of the machine is needed.
package gittest

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// GitEnv names an author and committer, so that tests need no git
// configuration of the machine's.
var GitEnv = []string{
	"GIT_AUTHOR_NAME=Lorry Test",
	"GIT_AUTHOR_EMAIL=test@example.com",
	"GIT_COMMITTER_NAME=Lorry Test",
	"GIT_COMMITTER_EMAIL=test@example.com",
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
