package confgit

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/wire"
)

// ErrReadWhole says that a commit cannot be read as a change of an earlier
// one, and is to be read whole.
var ErrReadWhole = errors.New("the configuration is to be read whole")

// Delta is a commit of CONFGIT read as a change of an earlier one whose
// lorries.conf is the same, and whose other changes are all .lorry files
// of lorries sections: Files are those files (added, changed or removed),
// and Config holds the commit's sections and the lorries, Errors and Kept
// of those files only.
type Delta struct {
	Config *Config
	Files  []string
	// OldPaths are the lorry paths that Files defined at the earlier
	// commit, as its lorries sections read them.
	OldPaths []string
}

// ReadChange brings Dir up to date as Read does and reads the commit of
// the branch as a change of commit old: only the .lorry files that
// differ between the two are read. It answers ErrReadWhole when that
// cannot be done: old is not in Dir, lorry-controller.conf differs, more
// than maxFiles files differ, or a file that differs is no .lorry file of
// a lorries section only (a scraper's, one of a runtime directory). A
// commit that is old answers a Delta of no files.
func (s *Source) ReadChange(ctx context.Context, old string, maxFiles int) (*Delta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, hash, err := s.head(ctx)
	if err != nil {
		return nil, err
	}
	newT, done, err := commitTree(repo, hash)
	if err != nil {
		return nil, fmt.Errorf("read configuration at commit %s: %w", hash, err)
	}
	defer done()
	oldC, err := newT.repo.CommitObject(plumbing.NewHash(old))
	if err != nil {
		return nil, ErrReadWhole
	}
	oldRoot, err := oldC.Tree()
	if err != nil {
		return nil, ErrReadWhole
	}
	if confHash(oldRoot) != confHash(newT.root) || confHash(newT.root).IsZero() {
		return nil, ErrReadWhole
	}
	var changed []string
	if err := diffTrees(newT, "", oldRoot, newT.root, &changed, maxFiles); err != nil {
		return nil, err
	}
	d, err := readDelta(ctx, newT, oldRoot, changed, s.now())
	if err != nil {
		return nil, err
	}
	d.Config.Commit = hash.String()
	return d, nil
}

// confHash is the blob of lorry-controller.conf in root, zero for none.
func confHash(root *object.Tree) plumbing.Hash {
	for _, e := range root.Entries {
		if e.Name == ConfFile && isFile(e.Mode) {
			return e.Hash
		}
	}
	return plumbing.ZeroHash
}

// diffTrees adds to out the paths of the files that differ between trees
// a and b, both under prefix; ErrReadWhole once there are more than max.
func diffTrees(t *gitTree, prefix string, a, b *object.Tree, out *[]string, max int) error {
	type side struct{ a, b *object.TreeEntry }
	names := map[string]*side{}
	for i := range a.Entries {
		names[a.Entries[i].Name] = &side{a: &a.Entries[i]}
	}
	for i := range b.Entries {
		if s, ok := names[b.Entries[i].Name]; ok {
			s.b = &b.Entries[i]
		} else {
			names[b.Entries[i].Name] = &side{b: &b.Entries[i]}
		}
	}
	for name, s := range names {
		if s.a != nil && s.b != nil && s.a.Hash == s.b.Hash && s.a.Mode == s.b.Mode {
			continue
		}
		aDir := s.a != nil && s.a.Mode == filemode.Dir
		bDir := s.b != nil && s.b.Mode == filemode.Dir
		if (s.a != nil && !aDir) || (s.b != nil && !bDir) {
			*out = append(*out, prefix+name)
		}
		if aDir || bDir {
			// A directory on either side: its files are compared one
			// by one.
			ta, tb := &object.Tree{}, &object.Tree{}
			var err error
			if aDir {
				if ta, err = object.GetTree(t.repo.Storer, s.a.Hash); err != nil {
					return err
				}
			}
			if bDir {
				if tb, err = object.GetTree(t.repo.Storer, s.b.Hash); err != nil {
					return err
				}
			}
			if err := diffTrees(t, prefix+name+"/", ta, tb, out, max); err != nil {
				return err
			}
		}
		if len(*out) > max {
			return ErrReadWhole
		}
	}
	return nil
}

// readDelta reads the changed files of tree t that lorries sections
// select.
func readDelta(ctx context.Context, t *gitTree, oldRoot *object.Tree, changed []string, now time.Time) (*Delta, error) {
	data, _, err := t.conf()
	if err != nil {
		return nil, err
	}
	pc, err := parseConf(data)
	if err != nil {
		return nil, err
	}
	cfg := &Config{Lorries: []Lorry{}, Hosts: pc.hosts, Runtimes: []Runtime{}, Errors: []FileError{}, Queues: pc.queues}
	if cfg.Hosts == nil {
		cfg.Hosts = []Host{}
	}
	if cfg.Queues == nil {
		cfg.Queues = []Queue{}
	}
	for _, ls := range pc.lorries {
		if err := ls.schedule.checkFires(now); err != nil {
			return nil, ErrReadWhole
		}
	}
	if cfg.Runtimes, err = resolveRuntimes(t, pc.runtimes); err != nil {
		return nil, err
	}
	sort.Strings(changed)
	b := &builder{cfg: cfg, from: newPathSet(), reported: map[FileError]bool{},
		runtimes: map[string]Runtime{}, files: map[string]bool{}, now: now,
		each: func(ls []Lorry) error { cfg.Lorries = append(cfg.Lorries, ls...); return nil }}
	d := &Delta{Config: cfg}
	for _, name := range changed {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for _, rs := range pc.runtimes {
			if name == rs.Path || strings.HasPrefix(name, strings.TrimSuffix(rs.Path, "/")+"/") {
				return nil, ErrReadWhole
			}
		}
		segs := strings.Split(name, "/")
		var matched []*lorriesSection
		for j := range pc.lorries {
			ls := &pc.lorries[j]
			for _, g := range ls.globs {
				if matchSegments(g, segs) {
					if ls.kind != wire.KindLorry {
						return nil, ErrReadWhole
					}
					matched = append(matched, ls)
					break
				}
			}
		}
		if len(matched) == 0 {
			continue
		}
		d.Files = append(d.Files, name)
		if err := d.oldPaths(t, oldRoot, name, matched); err != nil {
			return nil, err
		}
		f, err := t.root.FindEntry(name)
		if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
			continue // removed
		}
		if err != nil || !isFile(f.Mode) {
			return nil, ErrReadWhole
		}
		data, err := t.blob(f.Hash)
		if err != nil {
			b.report(name, err.Error())
			cfg.Kept.Files = append(cfg.Kept.Files, name)
			continue
		}
		b.addFile(name, data, matched)
	}
	return d, b.flush()
}

// oldPaths adds to d.OldPaths the lorry paths that file name defined in
// the tree oldRoot, if it was there, read by the sections that select it.
func (d *Delta) oldPaths(t *gitTree, oldRoot *object.Tree, name string, sections []*lorriesSection) error {
	f, err := oldRoot.FindEntry(name)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return nil
	}
	if err != nil || !isFile(f.Mode) {
		return ErrReadWhole
	}
	data, err := t.blob(f.Hash)
	if err != nil {
		return ErrReadWhole
	}
	specs, err := lorryspec.ParseFile(data)
	if err != nil {
		// It was skipped then; the caller knows it from the errors
		// recorded.
		return nil
	}
	for key := range specs {
		for _, ls := range sections {
			if p := ls.prefix + "/" + key; ValidatePath(p) == nil {
				d.OldPaths = append(d.OldPaths, p)
			}
		}
	}
	return nil
}
