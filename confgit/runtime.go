package confgit

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"unicode"

	"lorrycontroller.dev/lc/requirements"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// RequirementsFile is the file every runtime directory must hold: the
// requirements the environment is built from.
const RequirementsFile = requirements.File

// DefaultPython is the interpreter a runtime is built with when its
// section names none.
const DefaultPython = "python3"

// Runtime is a "runtime" section: a directory of CONFGIT from which the
// minions build a Python environment for scrapers.
type Runtime struct {
	Name    string
	Path    string // the directory in CONFGIT
	Version string // "version", or the first 12 hex digits of ID
	Python  string // the interpreter to build with
	// ID is the git tree id of Path at the commit read, so any change to
	// any file in the directory is a new runtime.
	ID string
}

// runtimeSection is a "runtime" section before its directory is looked up.
type runtimeSection struct {
	index int
	Runtime
}

func parseRuntimeSection(i int, sec map[string]any) (runtimeSection, error) {
	fail := func(key string, err error) (runtimeSection, error) {
		return runtimeSection{}, &ConfError{Section: i, Type: "runtime", Key: key, Err: err}
	}
	rs := runtimeSection{index: i, Runtime: Runtime{Python: DefaultPython}}
	name, err := requireString(sec, "name")
	if err != nil {
		return fail("name", err)
	}
	if err := ValidateName(name); err != nil {
		return fail("name", err)
	}
	rs.Name = name
	p, err := requireString(sec, "path")
	if err != nil {
		return fail("path", err)
	}
	if err := ValidatePath(p); err != nil {
		return fail("path", err)
	}
	rs.Path = p
	for _, key := range []string{"version", "python"} {
		v, ok := sec[key]
		if !ok {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return fail(key, fmt.Errorf("must be a string, not %s", describe(v)))
		}
		if err := validateWord(s); err != nil {
			return fail(key, err)
		}
		if key == "version" {
			rs.Version = s
		} else {
			rs.Python = s
		}
	}
	return rs, nil
}

// ValidateName reports why name cannot name a runtime: it becomes one
// component of paths on the minions and of URLs, so it is a lorry path of
// one segment.
func ValidateName(name string) error {
	if err := ValidatePath(name); err != nil {
		return fmt.Errorf("name %q: %w", name, err)
	}
	if strings.Contains(name, "/") {
		return fmt.Errorf("name %q has a slash", name)
	}
	return nil
}

// validateWord refuses what could not be shown on one line or passed as
// one argument.
func validateWord(s string) error {
	if s == "" {
		return errors.New("is empty")
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return fmt.Errorf("%q has a space or control character", s)
		}
	}
	return nil
}

// resolveRuntimes finds the directory of every runtime section in t. A
// missing directory, or one without requirements.txt, breaks the whole
// configuration: every scraper of that runtime would fail.
func resolveRuntimes(t tree, sections []runtimeSection) ([]Runtime, error) {
	out := make([]Runtime, 0, len(sections))
	for _, rs := range sections {
		r, err := resolveRuntime(t, rs)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// resolveRuntime finds the directory of one runtime section in t. What is
// wrong with the section is a *ConfError; any other error is of t.
func resolveRuntime(t tree, rs runtimeSection) (Runtime, error) {
	id, hasReq, err := t.dir(rs.Path)
	var ce *ConfError
	switch {
	case errors.As(err, &ce):
		return Runtime{}, err
	case errors.Is(err, fs.ErrNotExist):
		return Runtime{}, &ConfError{Section: rs.index, Type: "runtime", Key: "path",
			Err: fmt.Errorf("no directory %q in the repository", rs.Path)}
	case err != nil:
		return Runtime{}, fmt.Errorf("runtime %q: %w", rs.Name, err)
	case !hasReq:
		return Runtime{}, &ConfError{Section: rs.index, Type: "runtime", Key: "path",
			Err: fmt.Errorf("directory %q has no %s", rs.Path, RequirementsFile)}
	}
	err = requirements.Check(func(name string) ([]byte, error) {
		return t.file(path.Join(rs.Path, name))
	})
	var re *requirements.Error
	switch {
	case errors.As(err, &re):
		return Runtime{}, &ConfError{Section: rs.index, Type: "runtime", Key: "path",
			Err: fmt.Errorf("%s/%w", rs.Path, err)}
	case err != nil:
		return Runtime{}, fmt.Errorf("runtime %q: %w", rs.Name, err)
	}
	r := rs.Runtime
	r.ID = id
	if r.Version == "" {
		r.Version = id[:12]
	}
	return r, nil
}

// dir finds the directory p in the commit's tree: its tree id, and whether
// it holds requirements.txt as a file. fs.ErrNotExist if there is none.
func (t *gitTree) dir(p string) (string, bool, error) {
	sub, err := t.root.Tree(p)
	if errors.Is(err, object.ErrDirectoryNotFound) {
		return "", false, fs.ErrNotExist
	}
	if err != nil {
		return "", false, fmt.Errorf("read tree %s: %w", p, err)
	}
	return sub.Hash.String(), hasRequirements(sub), nil
}

// file reads the regular file name of the commit's tree, whether or not
// files has listed it.
func (t *gitTree) file(name string) ([]byte, error) {
	e, err := t.root.FindEntry(name)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) || (err == nil && !isFile(e.Mode)) {
		return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", name, err)
	}
	return t.blob(e.Hash)
}

func (t fsTree) file(name string) ([]byte, error) {
	fi, err := t.stat(name)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s: %w", name, errLink)
	}
	if err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	return t.read(name)
}

func hasRequirements(tr *object.Tree) bool {
	for _, e := range tr.Entries {
		if e.Name == RequirementsFile && isFile(e.Mode) {
			return true
		}
	}
	return false
}

// dir computes the id git would give directory p, so that Parse and Read
// agree on runtime ids.
func (t fsTree) dir(p string) (string, bool, error) {
	fi, err := t.stat(p)
	if err != nil {
		return "", false, err
	}
	if !fi.IsDir() {
		return "", false, fs.ErrNotExist
	}
	tr, err := fsGitTree(t.fsys, p)
	if err != nil {
		return "", false, err
	}
	return tr.Hash.String(), hasRequirements(tr), nil
}

// fsGitTree builds the git tree object of directory dir of fsys: files and
// executables as blobs, empty directories left out as git leaves them out.
func fsGitTree(fsys fs.FS, dir string) (*object.Tree, error) {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	tr := &object.Tree{}
	for _, e := range ents {
		name := path.Join(dir, e.Name())
		switch {
		case e.IsDir():
			if e.Name() == ".git" {
				continue
			}
			sub, err := fsGitTree(fsys, name)
			if err != nil {
				return nil, err
			}
			if len(sub.Entries) > 0 {
				tr.Entries = append(tr.Entries, object.TreeEntry{Name: e.Name(), Mode: filemode.Dir, Hash: sub.Hash})
			}
		case e.Type().IsRegular():
			fi, err := e.Info()
			if err != nil {
				return nil, err
			}
			data, err := fs.ReadFile(fsys, name)
			if err != nil {
				return nil, err
			}
			mode := filemode.Regular
			if fi.Mode()&0o111 != 0 {
				mode = filemode.Executable
			}
			tr.Entries = append(tr.Entries, object.TreeEntry{Name: e.Name(), Mode: mode,
				Hash: plumbing.ComputeHash(plumbing.BlobObject, data)})
		}
	}
	// Git orders a directory as if its name ended in a slash.
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(tr.Entries, func(i, j int) bool { return key(tr.Entries[i]) < key(tr.Entries[j]) })
	obj := &plumbing.MemoryObject{}
	if err := tr.Encode(obj); err != nil {
		return nil, err
	}
	tr.Hash = obj.Hash()
	return tr, nil
}
