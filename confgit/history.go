package confgit

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Scrapers are handed what a commit held, not what the branch holds now:
// a job started from one commit sees one configuration however CONFGIT
// moves on during its run. The reads below take the commit or tree id
// recorded earlier and go to the object store, never to a working tree.

// ErrNoRuntime is matched by the error of RuntimeArchive when there is no
// runtime directory of that id.
var ErrNoRuntime = errors.New("no such runtime")

// MaxHandedFiles bounds the files one scraper is handed with its job,
// together: they travel in one answer.
const MaxHandedFiles = 4 << 20

// ReadFiles returns the contents of the files at paths as commit holds
// them, in the order of paths.
//
// A commit the clone does not hold (another WEBAPP sharing the STATEDB
// read it) is fetched first.
func (s *Source) ReadFiles(ctx context.Context, commit string, paths []string) ([][]byte, error) {
	out, err := s.readFiles(ctx, commit, paths)
	if s.fetchMissing(ctx, err) {
		out, err = s.readFiles(ctx, commit, paths)
	}
	return out, err
}

func (s *Source) readFiles(ctx context.Context, commit string, paths []string) ([][]byte, error) {
	s.packs.RLock()
	defer s.packs.RUnlock()
	repo, err := s.open()
	if err != nil {
		return nil, err
	}
	if !plumbing.IsHash(commit) {
		return nil, fmt.Errorf("commit %q is not a commit id", commit)
	}
	c, err := repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", commit, err)
	}
	root, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", commit, err)
	}
	out := make([][]byte, len(paths))
	var total int64
	for i, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, err := root.File(p)
		if err != nil {
			return nil, fmt.Errorf("read %s at %s: %w", p, commit, err)
		}
		if total += f.Size; total > MaxHandedFiles {
			return nil, fmt.Errorf("read %s at %s: the files come to more than %d bytes", p, commit, MaxHandedFiles)
		}
		text, err := f.Contents()
		if err != nil {
			return nil, fmt.Errorf("read %s at %s: %w", p, commit, err)
		}
		out[i] = []byte(text)
	}
	return out, nil
}

// RuntimeArchive finds the runtime directory whose git tree id is id,
// anywhere in the history fetched so far, so that a minion can build the
// runtime it was handed after CONFGIT has moved on. Only a tree that holds
// requirements.txt and is not the root of the configuration counts as a
// runtime directory: anything else is ErrNoRuntime, so this never serves
// other files of CONFGIT. Close the archive when done.
//
// A tree the clone does not hold (another WEBAPP sharing the STATEDB read
// the commit that has it) is looked for again after a fetch.
func (s *Source) RuntimeArchive(id string) (*Archive, error) {
	a, err := s.runtimeArchive(id)
	if err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), missingFetchTimeout)
		defer cancel()
		if s.fetchMissing(ctx, err) {
			a, err = s.runtimeArchive(id)
		}
	}
	return a, err
}

// missingFetchTimeout bounds a fetch for a runtime another WEBAPP read.
const missingFetchTimeout = 2 * time.Minute

// fetchMissing fetches URL into the clone when err says that what was
// asked for is not in it, and says whether it did: then the caller looks
// again.
func (s *Source) fetchMissing(ctx context.Context, err error) bool {
	if s.URL == "" || !(errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, ErrNoRuntime) ||
		errors.Is(err, git.ErrRepositoryNotExists)) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, serr := s.sync(ctx)
	return serr == nil
}

func (s *Source) runtimeArchive(id string) (*Archive, error) {
	if !plumbing.IsHash(id) {
		return nil, fmt.Errorf("runtime %q: %w", id, ErrNoRuntime)
	}
	s.packs.RLock()
	repo, err := s.open()
	if err != nil {
		s.packs.RUnlock()
		return nil, err
	}
	tr, err := repo.TreeObject(plumbing.NewHash(id))
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		s.packs.RUnlock()
		return nil, fmt.Errorf("runtime %s: %w", id, ErrNoRuntime)
	}
	if err != nil {
		s.packs.RUnlock()
		return nil, fmt.Errorf("read tree %s: %w", id, err)
	}
	if !hasRequirements(tr) || isConfRoot(tr) {
		s.packs.RUnlock()
		return nil, fmt.Errorf("runtime %s: %w", id, ErrNoRuntime)
	}
	return &Archive{repo: repo, tree: tr, release: s.packs.RUnlock}, nil
}

func isConfRoot(tr *object.Tree) bool {
	for _, e := range tr.Entries {
		if e.Name == ConfFile {
			return true
		}
	}
	return false
}

// open opens Dir for reading what an earlier Read fetched.
func (s *Source) open() (*git.Repository, error) {
	if s.Dir == "" {
		return nil, errors.New("CONFGIT directory not set")
	}
	repo, err := openRepo(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("open CONFGIT in %s: %w", s.Dir, err)
	}
	return repo, nil
}

// Archive is a runtime directory to be written as a tar.
type Archive struct {
	repo    *git.Repository
	tree    *object.Tree
	release func()
}

// Close releases the repository, which may then be repacked.
func (a *Archive) Close() {
	if a.release != nil {
		a.release()
		a.release = nil
	}
}

// archiveTime is the time of every entry, so that one tree always gives
// the same bytes.
var archiveTime = time.Unix(0, 0)

// WriteTar writes the directory to w as a tar, in the order of git's trees:
// directories, regular files with their modes, and symbolic links whose
// targets stay inside the directory. Files are streamed, not held in
// memory.
func (a *Archive) WriteTar(ctx context.Context, w io.Writer) error {
	tw := tar.NewWriter(w)
	if err := a.writeTree(ctx, tw, "", a.tree); err != nil {
		return err
	}
	return tw.Close()
}

func (a *Archive) writeTree(ctx context.Context, tw *tar.Writer, prefix string, tr *object.Tree) error {
	for _, e := range tr.Entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := prefix + e.Name
		switch {
		case e.Mode == filemode.Dir:
			sub, err := object.GetTree(a.repo.Storer, e.Hash)
			if err != nil {
				return fmt.Errorf("read tree %s: %w", name, err)
			}
			hdr := &tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, ModTime: archiveTime}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			if err := a.writeTree(ctx, tw, name+"/", sub); err != nil {
				return err
			}
		case isFile(e.Mode):
			mode := int64(0o644)
			if e.Mode == filemode.Executable {
				mode = 0o755
			}
			if err := a.writeBlob(tw, name, e.Hash, mode); err != nil {
				return err
			}
		case e.Mode == filemode.Symlink:
			target, err := a.blobText(e.Hash)
			if err != nil {
				return fmt.Errorf("read link %s: %w", name, err)
			}
			if !linkInside(name, target) {
				continue
			}
			hdr := &tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: archiveTime}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
		}
		// Submodules have no content here: they are left out.
	}
	return nil
}

func (a *Archive) writeBlob(tw *tar.Writer, name string, h plumbing.Hash, mode int64) error {
	blob, err := a.repo.BlobObject(h)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: blob.Size, ModTime: archiveTime}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	r, err := blob.Reader()
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	defer r.Close()
	if _, err := io.Copy(tw, r); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// maxLinkTarget bounds what a symbolic link's target is read to be.
const maxLinkTarget = 4096

func (a *Archive) blobText(h plumbing.Hash) (string, error) {
	blob, err := a.repo.BlobObject(h)
	if err != nil {
		return "", err
	}
	if blob.Size > maxLinkTarget {
		return "", fmt.Errorf("target longer than %d bytes", maxLinkTarget)
	}
	r, err := blob.Reader()
	if err != nil {
		return "", err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	return string(b), err
}

// linkInside says whether a link at name (relative to the runtime
// directory) pointing at target stays inside the directory: a link that
// leaves it would make the built environment depend on the minion's disk.
func linkInside(name, target string) bool {
	if target == "" || path.IsAbs(target) || strings.ContainsRune(target, 0) {
		return false
	}
	p := path.Join(path.Dir(name), target)
	return p != ".." && !strings.HasPrefix(p, "../")
}
