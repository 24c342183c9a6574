package confgit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// A CONFGIT on this machine is usually the repository of a git server,
// owned by the server's user, not by the WEBAPP's. git-upload-pack refuses
// such a repository ("detected dubious ownership") unless safe.directory
// names it, and go-git runs git-upload-pack with no way to say so. CONFGIT
// is the admin's own, whoever owns its files: the WEBAPP fetches it with
// git itself, whose upload-pack is told to trust the one repository it
// serves.

// trustingUploadPack is the upload-pack that git fetch runs, through the
// shell, with the repository's path as its argument. It serves that one
// repository, so "*" trusts it and nothing else, however its path is
// spelt (a symbolic link, a working tree's .git). Configuration given to
// git fetch itself would not reach it: git clears it for a local
// transport.
const trustingUploadPack = "git -c 'safe.directory=*' upload-pack"

// isLocal tells whether rawURL names a repository on this machine, as
// go-git reads it: a path or a file:// URL.
func isLocal(rawURL string) bool {
	ep, err := transport.NewEndpoint(rawURL)
	return err == nil && ep.Protocol == "file"
}

// fetchLocal is fetch for a local URL, by git fetch into dir, which holds
// repo. It updates the same refs as go-git does, and leaves the new
// objects in one pack, as go-git does, for compact to count.
func fetchLocal(ctx context.Context, dir string, repo *git.Repository, rawURL string) (bool, error) {
	before, err := fetchedRefs(repo)
	if err != nil {
		return false, err
	}
	err = gitFetch(ctx, dir, rawURL, true)
	if err != nil && strings.Contains(err.Error(), "couldn't find remote ref HEAD") {
		// The remote's HEAD names no branch; branches are still usable,
		// but a HEAD remembered from before must not be used as fallback.
		if err := repo.Storer.RemoveReference(remoteHeadRef); err != nil {
			return false, err
		}
		err = gitFetch(ctx, dir, rawURL, false)
	}
	if err != nil {
		return false, err
	}
	after, err := fetchedRefs(repo)
	if err != nil {
		return false, err
	}
	if len(after) == 0 {
		return false, transport.ErrEmptyRemoteRepository
	}
	return !maps.Equal(before, after), nil
}

// fetchedRefs are the refs that a fetch updates, by name.
func fetchedRefs(repo *git.Repository) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	iter, err := repo.Storer.IterReferences()
	if err != nil {
		return nil, err
	}
	refs := map[plumbing.ReferenceName]plumbing.Hash{}
	err = iter.ForEach(func(r *plumbing.Reference) error {
		if r.Name() == remoteHeadRef || strings.HasPrefix(r.Name().String(), "refs/remotes/"+remoteName+"/") {
			refs[r.Name()] = r.Hash()
		}
		return nil
	})
	return refs, err
}

// gitFetch runs git fetch of the branches, and of HEAD if head, from
// rawURL into dir, forced and pruned as go-git's fetch is. It reads no
// configuration but dir's, leaves packing to compact, and fetches over
// no transport but a local one.
func gitFetch(ctx context.Context, dir, rawURL string, head bool) error {
	refspecs := []string{"+" + headsSpec.String()}
	if head {
		refspecs = append(refspecs, "+"+remoteHeadSpec.String())
	}
	args := append([]string{"--git-dir", dir,
		"-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "fetch.writeCommitGraph=false",
		// Every fetch that brings objects leaves one pack, never loose
		// objects, which nothing would pack.
		"-c", "fetch.unpackLimit=1",
		"fetch", "--quiet", "--no-tags", "--prune", "--no-write-fetch-head",
		"--upload-pack", trustingUploadPack, "--", rawURL}, refspecs...)
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0", "GIT_ALLOW_PROTOCOL=file")
	stderr := &tail{max: 4 << 10}
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, exec.ErrNotFound) {
		return fmt.Errorf("git is not installed, and a local CONFGIT is fetched with it: %w", err)
	}
	if err != nil {
		return fmt.Errorf("git fetch: %w: %s", err, strings.TrimSpace(string(stderr.buf)))
	}
	return nil
}

// tail keeps the last max bytes written to it, which say why git failed.
type tail struct {
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}
