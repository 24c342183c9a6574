package confgit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// remoteName is where fetched branches are kept, as git itself would keep
// them in a clone, so a Dir cloned by hand can be used as it is.
const remoteName = "origin"

// The remote's HEAD is kept outside refs/remotes/origin/, where pruning
// would take it for a deleted branch on every fetch. The refspecs carry no
// "+": go-git's pruning misreads forced refspecs and would delete and
// rewrite every ref on each fetch; FetchOptions.Force forces them instead.
var (
	headsSpec      = config.RefSpec("refs/heads/*:refs/remotes/" + remoteName + "/*")
	remoteHeadRef  = plumbing.ReferenceName("refs/confgit/" + remoteName + "-HEAD")
	remoteHeadSpec = config.RefSpec("HEAD:" + remoteHeadRef)
)

// FetchError means CONFGIT could not be cloned or fetched from URL: the
// remote is unreachable or refused, as opposed to a configuration that is
// broken (*ConfError).
type FetchError struct {
	URL string // with any password removed
	Err error
}

func (e *FetchError) Error() string { return fmt.Sprintf("fetch CONFGIT from %s: %v", e.URL, e.Err) }
func (e *FetchError) Unwrap() error { return e.Err }

// Source is a CONFGIT clone.
//
// Dir is the local directory. URL is the remote to clone and fetch; when it
// is empty the repository already in Dir (bare or not) is read as it is.
// Branch is the branch to read, "master" when empty; when that branch does
// not exist the remote's HEAD (or, without URL, the repository's HEAD) is
// read instead, so a CONFGIT whose only branch is "main" works unconfigured.
//
// A local URL (a path or file://) is fetched by git, which must be
// installed for it (see fetchLocal); ssh and http(s) URLs use go-git's own
// clients with their default authentication.
//
// A Source must not be copied after first use. Only one Source should use a
// given Dir at a time.
type Source struct {
	Dir    string
	URL    string
	Branch string
	// Now tells the time a schedule must have an event within 50 years
	// of; nil for the system clock.
	Now func() time.Time

	mu     sync.Mutex
	commit plumbing.Hash
	cached *Config
	// packs is held for reading while files of the history are read
	// (ReadFiles, RuntimeArchive), and for writing while the clone is
	// repacked, which deletes the packs a reader may be using.
	packs sync.RWMutex
}

// Read brings Dir up to date with URL, cloning it (bare) when Dir holds no
// repository yet and otherwise fetching all branches with force, and builds
// the Config from the committed tree of the branch. Working-tree files are
// never read.
//
// A broken lorry-controller.conf gives an error matching ErrBadConf (a
// *ConfError); a failed clone or fetch gives a *FetchError; anything else
// is a problem with Dir or the repository itself.
//
// The Config of the last commit read is kept, so reading again while the
// branch has not moved costs only the fetch. Each call returns its own copy.
// Read is safe for concurrent use; calls are serialised.
func (s *Source) Read(ctx context.Context) (*Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	repo, hash, err := s.head(ctx)
	if err != nil {
		return nil, err
	}
	if s.cached != nil && hash == s.commit {
		return s.cached.clone(), nil
	}
	cfg, err := readCommit(ctx, repo, hash, s.now(), false)
	if err != nil {
		return nil, fmt.Errorf("read configuration at commit %s: %w", hash, err)
	}
	cfg.Commit = hash.String()
	s.commit, s.cached = hash, cfg
	return cfg.clone(), nil
}

// head brings Dir up to date and returns it with the commit of the
// configured branch.
func (s *Source) head(ctx context.Context) (*git.Repository, plumbing.Hash, error) {
	repo, err := s.sync(ctx)
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	hash, err := s.resolve(repo)
	return repo, hash, err
}

// now is the time a schedule must have an event within 50 years of.
func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// ReadEach is Read for a configuration too large to hold at once. It
// brings Dir up to date as Read does, and hands the Config of the
// commit's sections (hosts, queues, runtimes; no lorries) to sections
// before it reads any .lorry or .scraper file: sections may return
// ErrSkipFiles to end the read there. It then hands the lorries to each in
// batches of about n, in the order of their files and by path within a
// batch, and returns the Config with the Errors and Kept of every file
// but no Lorries. An error from sections or each ends the read and is
// returned. Nothing of the configuration is kept after it returns.
//
// each runs on a goroutine of its own, one batch at a time and in order,
// while the files of the next batch are read; it has returned from its
// last call when ReadEach returns, and a panic of it is raised again by
// ReadEach.
func (s *Source) ReadEach(ctx context.Context, n int, sections func(*Config) error, each func([]Lorry) error) (*Config, error) {
	if n <= 0 {
		return nil, fmt.Errorf("batches of %d lorries", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()

	repo, hash, err := s.head(ctx)
	if err != nil {
		return nil, err
	}
	t, done, err := commitTree(repo, hash)
	if err != nil {
		return nil, fmt.Errorf("read configuration at commit %s: %w", hash, err)
	}
	defer done()
	// What sections and each return is the caller's, passed back as it
	// is; anything else is a fault of the commit, named as Read names it.
	var theirs error
	withCommit := func(c *Config) error {
		c.Commit = hash.String()
		theirs = sections(c)
		return theirs
	}
	// The batches are applied on another goroutine while the next ones
	// are read; each sees them in order, one at a time.
	pipe := newBatchPipe(each)
	cfg, err := walk(ctx, t, s.now(), n, false, withCommit, pipe.send)
	if eachErr := pipe.close(); eachErr != nil {
		return nil, eachErr
	}
	if err != nil && err == theirs {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("read configuration at commit %s: %w", hash, err)
	}
	cfg.Commit = hash.String()
	return cfg, nil
}

// sync opens Dir, first creating it from URL if needed, and fetches.
func (s *Source) sync(ctx context.Context) (*git.Repository, error) {
	if s.Dir == "" {
		return nil, errors.New("CONFGIT directory not set")
	}
	repo, err := openRepo(s.Dir)
	if s.URL == "" {
		if err != nil {
			return nil, fmt.Errorf("open CONFGIT in %s: %w", s.Dir, err)
		}
		return repo, nil
	}
	if errors.Is(err, git.ErrRepositoryNotExists) {
		if err := checkEmptyDir(s.Dir); err != nil {
			return nil, err
		}
		// A bare repository, since nothing here ever looks at files
		// outside the object store.
		repo, err = git.PlainInit(s.Dir, true)
	}
	if err != nil {
		return nil, fmt.Errorf("open CONFGIT in %s: %w", s.Dir, err)
	}
	updated, err := fetch(ctx, s.Dir, repo, s.URL)
	if err != nil {
		return nil, &FetchError{URL: redactURL(s.URL), Err: err}
	}
	if updated {
		// The storage remembers the packs it has seen, and git may have
		// added one (fetchLocal): open afresh.
		if repo, err = openRepo(s.Dir); err != nil {
			return nil, fmt.Errorf("open CONFGIT in %s: %w", s.Dir, err)
		}
	}
	// A repack waits for a fetch when readers are busy, rather than have
	// a fetch wait for a slow download of a runtime.
	if updated && s.packs.TryLock() {
		repacked, err := compact(repo)
		s.packs.Unlock()
		if err != nil {
			return nil, fmt.Errorf("repack CONFGIT in %s: %w", s.Dir, err)
		}
		if repacked {
			// The storage remembers the packs it has seen; open afresh.
			if repo, err = openRepo(s.Dir); err != nil {
				return nil, fmt.Errorf("open CONFGIT in %s: %w", s.Dir, err)
			}
		}
	}
	return repo, nil
}

// maxPacks bounds the packs a clone may collect: every fetch that brings
// something adds one, and every object lookup searches them all.
var maxPacks = 32

// compact repacks a clone that Read fetches into once it has too many
// packs. A repository read without URL belongs to someone else and is left
// alone.
func compact(repo *git.Repository) (bool, error) {
	pos, ok := repo.Storer.(storer.PackedObjectStorer)
	if !ok {
		return false, nil
	}
	packs, err := pos.ObjectPacks()
	if err != nil || len(packs) <= maxPacks {
		return false, err
	}
	return true, repo.RepackObjects(&git.RepackConfig{})
}

// openRepo opens the repository in dir, bare or not. The common directory
// option lets dir be a linked worktree, whose branches live in the main
// repository.
func openRepo(dir string) (*git.Repository, error) {
	return git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
}

// checkEmptyDir refuses to turn a directory holding something other than
// a repository into one.
func checkEmptyDir(dir string) error {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open CONFGIT in %s: %w", dir, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if err != nil && err != io.EOF {
		return fmt.Errorf("open CONFGIT in %s: %w", dir, err)
	}
	if len(names) > 0 {
		return fmt.Errorf("open CONFGIT in %s: not a git repository and not empty", dir)
	}
	return nil
}

// fetch updates the remote-tracking branches and the remote's HEAD of the
// clone repo in dir. The remote is not saved in the repository's
// configuration, so a URL changed between runs simply takes effect.
func fetch(ctx context.Context, dir string, repo *git.Repository, rawURL string) (updated bool, err error) {
	if isLocal(rawURL) {
		return fetchLocal(ctx, dir, repo, rawURL)
	}
	remote := git.NewRemote(repo.Storer, &config.RemoteConfig{Name: remoteName, URLs: []string{rawURL}})
	opts := &git.FetchOptions{
		RemoteName: remoteName,
		RefSpecs:   []config.RefSpec{headsSpec, remoteHeadSpec},
		Tags:       git.NoTags,
		Force:      true,
		Prune:      true,
	}
	err = remote.FetchContext(ctx, opts)
	if errors.Is(err, git.NoMatchingRefSpecError{}) {
		// The remote's HEAD names no branch; branches are still usable,
		// but a HEAD remembered from before must not be used as fallback.
		if err := repo.Storer.RemoveReference(remoteHeadRef); err != nil {
			return false, err
		}
		opts.RefSpecs = []config.RefSpec{headsSpec}
		err = remote.FetchContext(ctx, opts)
	}
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return false, nil
	}
	return err == nil, err
}

// resolve finds the commit to read.
func (s *Source) resolve(repo *git.Repository) (plumbing.Hash, error) {
	branch := strings.TrimPrefix(s.Branch, "refs/heads/")
	if branch == "" {
		branch = "master"
	}
	candidates := []plumbing.ReferenceName{plumbing.NewBranchReferenceName(branch), plumbing.HEAD}
	if s.URL != "" {
		candidates = []plumbing.ReferenceName{plumbing.NewRemoteReferenceName(remoteName, branch), remoteHeadRef}
	}
	for _, name := range candidates {
		ref, err := repo.Reference(name, true)
		if err == nil {
			return ref.Hash(), nil
		}
		if !errors.Is(err, plumbing.ErrReferenceNotFound) {
			return plumbing.ZeroHash, fmt.Errorf("resolve %s in CONFGIT: %w", name, err)
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("CONFGIT has no branch %q and its HEAD names no commit", branch)
}

func readCommit(ctx context.Context, repo *git.Repository, hash plumbing.Hash, now time.Time, check bool) (*Config, error) {
	t, done, err := commitTree(repo, hash)
	if err != nil {
		return nil, err
	}
	defer done()
	return build(ctx, t, now, check)
}

// objectCache bounds the objects kept while a commit's files are read.
const objectCache = 4 * cache.MiByte

// commitTree is the tree of commit hash, to be read until done is called.
func commitTree(repo *git.Repository, hash plumbing.Hash) (t *gitTree, done func(), err error) {
	done = func() {}
	// Reading thousands of blobs reopens the pack for each one unless the
	// storage keeps its descriptors, which then have to be closed. Its
	// cache of objects is small: every blob read is read once, and the
	// cache is for the bases of deltas; the default (96 MiB) would end
	// up holding most of the .lorry files of a large configuration.
	if fsStore, ok := repo.Storer.(*filesystem.Storage); ok {
		st := filesystem.NewStorageWithOptions(fsStore.Filesystem(), cache.NewObjectLRU(objectCache), filesystem.Options{KeepDescriptors: true})
		r, err := git.Open(st, nil)
		if err != nil {
			st.Close()
			return nil, nil, err
		}
		repo, done = r, func() { st.Close() }
	}
	commit, err := repo.CommitObject(hash)
	if err != nil {
		done()
		return nil, nil, err
	}
	root, err := commit.Tree()
	if err != nil {
		done()
		return nil, nil, err
	}
	return &gitTree{repo: repo, root: root}, done, nil
}

// gitTree reads files straight from the object store.
type gitTree struct {
	repo   *git.Repository
	root   *object.Tree
	hashes map[string]plumbing.Hash
}

func (t *gitTree) conf() ([]byte, bool, error) {
	for _, e := range t.root.Entries {
		if e.Name != ConfFile {
			continue
		}
		if !isFile(e.Mode) {
			return nil, false, &ConfError{Section: -1, Err: errors.New("is not a regular file")}
		}
		data, err := t.blob(e.Hash)
		if errors.Is(err, errTooLarge) {
			return nil, false, &ConfError{Section: -1, Err: err}
		}
		if err != nil {
			return nil, false, fmt.Errorf("read %s: %w", ConfFile, err)
		}
		return data, true, nil
	}
	return nil, false, nil
}

func isFile(m filemode.FileMode) bool {
	return m == filemode.Regular || m == filemode.Executable || m == filemode.Deprecated
}

func (t *gitTree) files() ([]string, error) {
	t.hashes = map[string]plumbing.Hash{}
	var names []string
	var walk func(prefix string, tr *object.Tree) error
	walk = func(prefix string, tr *object.Tree) error {
		for _, e := range tr.Entries {
			switch {
			case e.Mode == filemode.Dir:
				sub, err := object.GetTree(t.repo.Storer, e.Hash)
				if err != nil {
					return fmt.Errorf("read tree %s%s: %w", prefix, e.Name, err)
				}
				if err := walk(prefix+e.Name+"/", sub); err != nil {
					return err
				}
			case isFile(e.Mode):
				name := prefix + e.Name
				t.hashes[name] = e.Hash
				names = append(names, name)
			}
		}
		return nil
	}
	return names, walk("", t.root)
}

func (t *gitTree) read(name string) ([]byte, error) {
	h, ok := t.hashes[name]
	if !ok {
		return nil, fmt.Errorf("%s: not in tree", name)
	}
	return t.blob(h)
}

func (t *gitTree) blob(h plumbing.Hash) ([]byte, error) {
	obj, err := t.repo.Storer.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, err
	}
	if obj.Size() > maxFileSize {
		return nil, errTooLarge
	}
	r, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// redactURL keeps passwords written into a URL out of errors and logs.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}
