// Package downstream prepares the Downstream Host that mirrors are pushed
// to: it creates the repository of a lorry before a job is handed out,
// says where the minion pushes, and finishes what needs the pushed
// branches. Config names the host and how to reach it; New returns the
// Host it describes: none, a local directory, GitLab, Gitea, Gerrit or
// Gitano.
package downstream

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	securejoin "github.com/cyphar/filepath-securejoin"

	"lorrycontroller.dev/lc/proc"
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
//
// The repositories are shared with the base directory's group, so that
// jobs that run as another user of that group (the minion's --job-user)
// can push to them: each is made with core.sharedRepository, its
// directories setgid and group-writable, its files group-writable,
// whatever the WEBAPP's umask. When every user may enter the base
// directory, every user may read them too (git's "all"), so that a
// server that serves them needs no more. The directories above a
// repository are the base directory's group's to enter and read, not to
// write: a job can change what it pushes to, not where the WEBAPP makes
// repositories.
type Local struct {
	BaseDir string
}

// Prepare creates the bare repository for the lorry if it is not there
// yet.
func (l Local) Prepare(ctx context.Context, repo Repo) (string, error) {
	path := repo.Path
	base, dir, err := l.repoDir(path)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("create downstream %s: %w", path, err)
	}
	fi, err := os.Stat(base)
	if err != nil {
		return "", fmt.Errorf("create downstream %s: %w", path, err)
	}
	s := shareLike(fi)
	err = proc.WithUmask(s.umask(), func() error { return s.create(ctx, base, dir) })
	if err != nil {
		return "", fmt.Errorf("create downstream %s: %w", path, err)
	}
	return dir, nil
}

// sharing is how the repositories under a base directory are shared.
type sharing struct {
	gid     int
	git     string      // core.sharedRepository: group or all
	dirMode os.FileMode // of the directories above a repository
	repo    os.FileMode // of a repository's directories
}

// shareLike is the sharing of the repositories under the base directory
// fi: with its group, and with every user when every user may enter it.
func shareLike(fi os.FileInfo) sharing {
	s := sharing{gid: -1, git: "group", dirMode: 0o750, repo: 0o770}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.gid = int(st.Gid)
	}
	if fi.Mode().Perm()&0o001 != 0 {
		s.git, s.dirMode, s.repo = "all", 0o755, 0o775
	}
	return s
}

// umask is what the repositories are made under: it takes nothing from
// their modes, so neither the WEBAPP nor git need change them.
func (s sharing) umask() int { return int(0o777 &^ s.repo) }

// create makes the repository dir, and the directories above it, under
// base. It runs under s.umask: made so, in a setgid base directory, a
// directory has its modes and group from the start, and git has nothing
// to chmod; a setgid bit set by chmod is what systemd's
// RestrictSUIDSGID= refuses.
func (s sharing) create(ctx context.Context, base, dir string) error {
	rel, err := filepath.Rel(base, filepath.Dir(dir))
	if err != nil {
		return err
	}
	parent := base
	if rel != "." {
		for _, seg := range strings.Split(rel, string(filepath.Separator)) {
			parent = filepath.Join(parent, seg)
			if err := s.mkdir(parent, s.dirMode); err != nil {
				return err
			}
		}
	}
	// Made aside and renamed, so a crash never leaves half a repository
	// where a push would go.
	tmp := filepath.Join(parent, "."+filepath.Base(dir)+".new-"+rand.Text())
	if err := s.mkdir(tmp, s.repo); err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "git", "init", "--quiet", "--bare", "--shared="+s.git, tmp)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git init: %w: %s", err, strings.TrimSpace(string(out)))
	}
	// git init --shared also refuses non-fast-forward pushes, and a
	// mirror follows its upstream wherever it goes, forced updates too.
	cmd = exec.CommandContext(ctx, "git", "--git-dir", tmp, "config", "receive.denyNonFastForwards", "false")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git config: %w: %s", err, strings.TrimSpace(string(out)))
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process may have made it meanwhile; anything else in
		// the way is not a repository to push to.
		if _, statErr := os.Stat(filepath.Join(dir, "HEAD")); statErr != nil {
			return fmt.Errorf("%s is in the way and is not a git repository", filepath.Base(dir))
		}
	}
	return nil
}

// mkdir makes dir, unless it is there, with mode, the base directory's
// group and the setgid bit, so that what is made in it takes that group.
// A directory already there is left as it is.
func (s sharing) mkdir(dir string, mode os.FileMode) error {
	err := os.Mkdir(dir, mode)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	// A setgid base directory gives both; one without them is fixed
	// here, which needs the WEBAPP's user in the base directory's group,
	// and, under RestrictSUIDSGID=, the base directory made setgid.
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && s.gid >= 0 && int(st.Gid) != s.gid {
		if err := os.Lchown(dir, -1, s.gid); err != nil {
			return fmt.Errorf("give %s the base directory's group: %w", dir, err)
		}
	}
	if want := mode | os.ModeSetgid; fi.Mode()&(os.ModePerm|os.ModeSetgid) != want {
		if err := os.Chmod(dir, want); err != nil {
			return fmt.Errorf("share %s with the base directory's group: %w (make the base directory setgid: chmod g+s)", dir, err)
		}
	}
	return nil
}

// Finish does nothing: lorry sets a local repository's default branch
// itself when it pushes.
func (Local) Finish(context.Context, Repo) error { return nil }

// repoDir is where the repository of path lives. It refuses paths that
// would leave BaseDir, through ".." or through a symbolic link.
func (l Local) repoDir(path string) (base, dir string, err error) {
	if l.BaseDir == "" {
		return "", "", errors.New("local downstream has no base directory")
	}
	if path == "" || strings.HasPrefix(path, "/") || strings.ContainsAny(path, "\\\x00") {
		return "", "", fmt.Errorf("downstream path %q is not a relative path", path)
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", "", fmt.Errorf("downstream path %q has a %q segment", path, seg)
		}
	}
	base, err = filepath.Abs(l.BaseDir)
	if err != nil {
		return "", "", err
	}
	dir, err = securejoin.SecureJoin(base, path+".git")
	if err != nil {
		return "", "", fmt.Errorf("downstream path %q: %w", path, err)
	}
	if rel, err := filepath.Rel(base, dir); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", "", fmt.Errorf("downstream path %q leaves %s", path, base)
	}
	return base, dir, nil
}
