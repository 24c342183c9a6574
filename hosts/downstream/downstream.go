// Package downstream prepares the Downstream Host that mirrors are pushed
// to: it creates the repository of a lorry before a job is handed out,
// says where the minion pushes, and finishes what needs the pushed
// branches. Config names the host and how to reach it; New returns the
// Host it describes: none, a local directory, GitLab, Gitea, Gerrit or
// Gitano.
package downstream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
)

// Host prepares the repositories that jobs push to.
type Host interface {
	// Prepare makes sure the downstream repository for a lorry exists,
	// before a job is handed out, and returns the URL a minion pushes to.
	// The URL may carry credentials.
	Prepare(ctx context.Context, repo Repo) (pushURL string, err error)
	// Finish is called after a job mirrored repo successfully, for what
	// needs the pushed branches, such as setting the default branch.
	Finish(ctx context.Context, repo Repo) error
}

// Retirer is a Host that can archive or delete the repository of a
// lorry whose upstream repository vanished, by an Upstream Host's
// on-vanish policy. A repository that is not there is no error: there is
// nothing to retire.
type Retirer interface {
	Archive(ctx context.Context, path string) error
	Delete(ctx context.Context, path string) error
}

// Repo is a repository to prepare on the Downstream Host.
type Repo struct {
	Path          string // the lorry path
	Description   string // from the upstream, if known
	DefaultBranch string // from the upstream, if known
}

// None is no downstream: jobs get no push URL, and lorry only keeps its
// mirrors up to date.
type None struct{}

// Prepare returns no URL.
func (None) Prepare(context.Context, Repo) (string, error) { return "", nil }

// Finish does nothing.
func (None) Finish(context.Context, Repo) error { return nil }

// Local keeps downstream repositories as bare repositories under a
// directory of this machine: <BaseDir>/<path>.git.
type Local struct {
	BaseDir string
}

// Prepare creates the bare repository for the lorry if it is not there
// yet.
func (l Local) Prepare(ctx context.Context, repo Repo) (string, error) {
	path := repo.Path
	dir, err := l.repoDir(path)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("create downstream %s: %w", path, err)
	}
	// Made aside and renamed, so a crash never leaves half a repository
	// where a push would go.
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".new-*")
	if err != nil {
		return "", fmt.Errorf("create downstream %s: %w", path, err)
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "git", "init", "--quiet", "--bare", tmp)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("create downstream %s: git init: %w: %s", path, err, strings.TrimSpace(string(out)))
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process may have made it meanwhile; anything else in
		// the way is not a repository to push to.
		if _, statErr := os.Stat(filepath.Join(dir, "HEAD")); statErr != nil {
			return "", fmt.Errorf("create downstream %s: %s is in the way and is not a git repository", path, filepath.Base(dir))
		}
	}
	return dir, nil
}

// Finish does nothing: lorry sets a local repository's default branch
// itself when it pushes.
func (Local) Finish(context.Context, Repo) error { return nil }

// repoDir is where the repository of path lives. It refuses paths that
// would leave BaseDir, through ".." or through a symbolic link.
func (l Local) repoDir(path string) (string, error) {
	if l.BaseDir == "" {
		return "", errors.New("local downstream has no base directory")
	}
	if path == "" || strings.HasPrefix(path, "/") || strings.ContainsAny(path, "\\\x00") {
		return "", fmt.Errorf("downstream path %q is not a relative path", path)
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("downstream path %q has a %q segment", path, seg)
		}
	}
	base, err := filepath.Abs(l.BaseDir)
	if err != nil {
		return "", err
	}
	dir, err := securejoin.SecureJoin(base, path+".git")
	if err != nil {
		return "", fmt.Errorf("downstream path %q: %w", path, err)
	}
	if rel, err := filepath.Rel(base, dir); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("downstream path %q leaves %s", path, base)
	}
	return dir, nil
}
