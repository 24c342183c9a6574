package confgit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-billy/v5/helper/mount"
	"github.com/go-git/go-billy/v5/helper/polyfill"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// ReadRevision builds the Config of commit rev of the repository in dir
// (bare or not), as Read builds that of the commit of its branch: rev is
// anything git rev-parse takes that go-git understands, such as a commit
// id or a branch name. Commit names the commit read.
//
// objectDirs are more object directories, searched before the
// repository's own: a pre-receive hook finds the objects of a push not
// yet accepted in the directory that git names in GIT_OBJECT_DIRECTORY,
// its quarantine, which the repository itself does not know of.
//
// It is for checks: a lorry-controller.conf broken in some of its
// sections gives a *BrokenConf, with what the rest of the commit defines,
// and one broken as a whole a *ConfError; both match ErrBadConf and leave
// the commit out, which the caller named. Anything else is a problem with
// the repository or rev.
func ReadRevision(ctx context.Context, dir, rev string, objectDirs []string, now time.Time) (*Config, error) {
	repo, err := openRepo(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	if len(objectDirs) > 0 {
		st := &extraObjects{Storer: repo.Storer}
		for _, d := range objectDirs {
			// The directory is an objects directory, not a repository.
			fs := polyfill.New(mount.New(memfs.New(), "objects", osfs.New(d)))
			st.extra = append(st.extra, filesystem.NewStorage(fs, cache.NewObjectLRUDefault()))
		}
		if repo, err = git.Open(st, nil); err != nil {
			return nil, fmt.Errorf("open %s: %w", dir, err)
		}
	}
	hash, err := repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return nil, fmt.Errorf("resolve %q in %s: %w", rev, dir, err)
	}
	cfg, err := readCommit(ctx, repo, *hash, now, true)
	if errors.Is(err, ErrBadConf) {
		// As it is: the caller knows what it asked for.
		var broken *BrokenConf
		if errors.As(err, &broken) {
			broken.Config.Commit = hash.String()
		}
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("read configuration at commit %s: %w", hash, err)
	}
	cfg.Commit = hash.String()
	return cfg, nil
}

// extraObjects is a repository's storage that also finds the objects of
// other object directories.
type extraObjects struct {
	storage.Storer
	extra []*filesystem.Storage
}

func (s *extraObjects) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	for _, e := range s.extra {
		obj, err := e.EncodedObject(t, h)
		if !errors.Is(err, plumbing.ErrObjectNotFound) {
			return obj, err
		}
	}
	return s.Storer.EncodedObject(t, h)
}

func (s *extraObjects) HasEncodedObject(h plumbing.Hash) error {
	for _, e := range s.extra {
		if err := e.HasEncodedObject(h); !errors.Is(err, plumbing.ErrObjectNotFound) {
			return err
		}
	}
	return s.Storer.HasEncodedObject(h)
}

func (s *extraObjects) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	for _, e := range s.extra {
		size, err := e.EncodedObjectSize(h)
		if !errors.Is(err, plumbing.ErrObjectNotFound) {
			return size, err
		}
	}
	return s.Storer.EncodedObjectSize(h)
}
