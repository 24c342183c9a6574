package mirror

// Archives (tarball, zip, gzip) and raw files are imported as one commit
// per new download, made with git fast-import. The commit depends only on
// what was downloaded and on the branch's previous head, never on the
// machine, the clock or the working area, so that two lorries mirroring
// the same release agree on its commit id.
//
// What is kept in the spec's directory:
//
//	archive/state.json      the last import: URL, type, branch, strip,
//	                        SHA-256, commit, and the server's ETag and
//	                        Last-Modified
//	archive/download.part   a download in progress
//	archive/download        a finished download, removed once imported
//	archive/import.git      scratch repository of an import in progress
//	raw-file/state.json     the last import of each URL: its path in the
//	                        tree, SHA-256, time, ETag and Last-Modified
//	raw-file/<n>[.part]     the n-th URL's download, as for archive/

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"lorrycontroller.dev/lc/atomicfile"
	"lorrycontroller.dev/lc/lorryspec"
)

func init() {
	for _, typ := range []string{"tarball", "zip", "gzip"} {
		importers[typ] = importArchive
	}
	importers["raw-file"] = importRawFile
}

// lorryIdent is the author and committer of every import: who ran the
// import must not change the commit.
const lorryIdent = "Lorry <lorry@localhost>"

// archiveExts are dropped from an archive's name to name its tag; a longer
// extension is tried before its own suffix.
var archiveExts = []string{".tar.bz2", ".tar.gz", ".tar.xz", ".tbz2", ".tar", ".tgz", ".txz", ".zip", ".gz"}

// errNoFiles is an import that would make an empty tree, which is a
// mistake in the spec or upstream rather than a release.
var errNoFiles = errors.New("nothing to import: no files")

// archiveState is the last import of an archive spec. A download is
// unchanged only if it has the same SHA-256 and the branch is still where
// that import left it with the same settings.
type archiveState struct {
	URL    string `json:"url"`
	Type   string `json:"type"`
	Branch string `json:"branch"`
	Strip  int    `json:"strip"`
	SHA256 string `json:"sha256"`
	Commit string `json:"commit"`
	validators
}

// commitInfo is the commit an import makes.
type commitInfo struct {
	branch string // without refs/heads/
	parent string // the branch's head, "" if it has none
	// keepTree starts from the parent's tree rather than an empty one.
	keepTree bool
	message  string
	// date is the least commit date, in Unix seconds; the newest time
	// among the imported files raises it.
	date int64
	tag  string // a lightweight tag to put on the commit, "" for none
}

// importArchive imports a tarball, zip or gzip file as one commit on the
// spec's branch, tagged after the archive's name.
func importArchive(ctx context.Context, j *job, v any) ([]string, bool, error) {
	a := v.(*lorryspec.Archive)
	typ := j.spec.Type
	branch, err := j.branchName(ctx, a.Branch)
	if err != nil {
		return nil, false, err
	}
	base, err := urlBaseName(a.URL)
	if err != nil {
		return nil, false, err
	}
	dir := filepath.Join(j.dir, "archive")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, err
	}
	stateFile := filepath.Join(dir, "state.json")
	var st archiveState
	j.loadState(stateFile, &st)
	refs, err := j.refs(ctx)
	if err != nil {
		return nil, false, err
	}
	head := refs["refs/heads/"+branch]
	// The state names the URL without its credentials; a state written
	// before kept them.
	plain := withoutUserinfo(a.URL)
	same := st.Commit != "" && st.Commit == head && (st.URL == plain || st.URL == a.URL) && st.Type == typ &&
		st.Strip == a.Strip && st.Branch == branch
	var cond *validators
	if same {
		cond = &st.validators
	}
	d, err := j.fetchFile(ctx, a.URL, a.CheckCertificates, filepath.Join(dir, "download"), cond)
	if err != nil {
		return nil, false, err
	}
	if d.path != "" {
		defer os.Remove(d.path)
	}
	push := []string{"+refs/heads/" + branch + ":refs/heads/" + branch, "+refs/tags/*:refs/tags/*"}
	if same && (d.notModified || d.sha256 == st.SHA256) {
		fmt.Fprintf(j.out, "%s is as it was at the last import (sha256 %s): nothing to import\n", base, st.SHA256)
		if !d.notModified && d.validators != st.validators {
			st.validators = d.validators
			return push, false, saveState(stateFile, &st)
		}
		return push, false, nil
	}

	c := commitInfo{
		branch:  branch,
		parent:  head,
		message: fmt.Sprintf("Import %s\n\nsha256 %s\n", base, d.sha256),
		tag:     j.tagName(ctx, base),
	}
	commit, err := j.importFiles(ctx, dir, c, refs, func(t *treeBuilder) error {
		switch typ {
		case "tarball":
			return readTarball(d.path, a.Strip, t)
		case "zip":
			return readZip(d.path, a.Strip, t)
		}
		name, err := treePath(trimSuffixFold(base, ".gz"), 0)
		if err != nil {
			return err
		}
		if name == "" {
			return fmt.Errorf("cannot name a file after %q", base)
		}
		return readGzip(d.path, name, t)
	})
	if errors.Is(err, errNoFiles) && a.Strip > 0 {
		err = fmt.Errorf("%w left once %d leading path components are stripped", err, a.Strip)
	}
	if err != nil {
		return nil, false, fmt.Errorf("import %s: %w", base, err)
	}
	st = archiveState{URL: plain, Type: typ, Branch: branch, Strip: a.Strip, SHA256: d.sha256, Commit: commit, validators: d.validators}
	if err := saveState(stateFile, &st); err != nil {
		return nil, false, err
	}
	return push, false, j.followBranch(ctx, branch)
}

// followBranch points the mirror's HEAD at branch if HEAD names no
// branch of the mirror, so that the downstream's default branch is the
// imported one.
func (j *job) followBranch(ctx context.Context, branch string) error {
	head, err := j.git(ctx, "symbolic-ref", "--quiet", "HEAD")
	if err == nil {
		if _, err := j.git(ctx, "rev-parse", "--verify", "--quiet", strings.TrimSpace(head)); err == nil {
			return nil
		}
	}
	_, err = j.git(ctx, "symbolic-ref", "HEAD", "refs/heads/"+branch)
	return err
}

// branchName is the branch a spec imports to.
func (j *job) branchName(ctx context.Context, b string) (string, error) {
	b = strings.TrimPrefix(b, "refs/heads/")
	if b == "" {
		return "master", nil
	}
	if _, err := j.gitIn(ctx, "", "check-ref-format", "refs/heads/"+b); err != nil {
		return "", fmt.Errorf(`"branch" %q is not a usable branch name`, b)
	}
	return b, nil
}

// tagName is the tag for the archive base: its name without the archive
// extension, with what git refuses in a ref name replaced. A name that
// still will not do gets no tag rather than failing the import.
func (j *job) tagName(ctx context.Context, base string) string {
	name := base
	for _, ext := range archiveExts {
		if len(name) > len(ext) && strings.EqualFold(name[len(name)-len(ext):], ext) {
			name = name[:len(name)-len(ext)]
			break
		}
	}
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return '-'
		}
		return r
	}, name)
	name = strings.ReplaceAll(name, "..", "-")
	name = strings.ReplaceAll(name, "@{", "-{")
	name = strings.TrimSuffix(strings.TrimLeft(name, "."), ".lock")
	name = strings.TrimRight(name, ".")
	if name == "" || name == "@" {
		fmt.Fprintf(j.out, "no tag: %q gives no usable tag name\n", base)
		return ""
	}
	if _, err := j.gitIn(ctx, "", "check-ref-format", "refs/tags/"+name); err != nil {
		fmt.Fprintf(j.out, "no tag: %q is not a usable tag name\n", name)
		return ""
	}
	return name
}

func trimSuffixFold(s, suffix string) string {
	if len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix) {
		return s[:len(s)-len(suffix)]
	}
	return s
}

// importFiles makes commit c on its branch with the files that add sends,
// and puts c's tag on it. It works in a scratch repository that borrows
// the mirror's objects, and moves the new objects into the mirror only
// once the import is whole, so that a broken or hostile archive, or a
// killed job, leaves the mirror as it was and without garbage. It returns
// the branch's new head: the parent when the commit would add nothing to
// it.
func (j *job) importFiles(ctx context.Context, workDir string, c commitInfo, refs map[string]string, add func(*treeBuilder) error) (string, error) {
	scratch := filepath.Join(workDir, "import.git")
	if err := os.RemoveAll(scratch); err != nil {
		return "", err
	}
	defer os.RemoveAll(scratch)
	format, err := j.git(ctx, "rev-parse", "--show-object-format")
	if err != nil {
		return "", err
	}
	if _, err := j.gitIn(ctx, "", "init", "--quiet", "--bare", "--object-format="+strings.TrimSpace(format), scratch); err != nil {
		return "", err
	}
	objects, err := filepath.Abs(filepath.Join(j.gitDir, "objects"))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(scratch, "objects", "info", "alternates"), []byte(objects+"\n"), 0o644); err != nil {
		return "", err
	}

	ref := "refs/heads/" + c.branch
	out := &syncWriter{w: j.out}
	err = j.runFastImport(ctx, scratch, out, func(fi *fastImport) error {
		t := newTreeBuilder(fi, out)
		if err := add(t); err != nil {
			return err
		}
		t.finish()
		if len(t.files) == 0 {
			return errNoFiles
		}
		return fi.commit(ref, c, max(c.date, t.newest, 0), t.files)
	})
	if err != nil {
		return "", err
	}
	commit, err := j.gitIn(ctx, scratch, "rev-parse", "--verify", ref)
	if err != nil {
		return "", err
	}
	commit = strings.TrimSpace(commit)

	same, err := j.sameCommit(ctx, scratch, commit, c.parent)
	if err != nil {
		return "", err
	}
	if same {
		fmt.Fprintf(j.out, "the import has the files and message of %s: no new commit\n", c.parent)
		commit = c.parent
	} else {
		if err := moveObjects(filepath.Join(scratch, "objects"), objects); err != nil {
			return "", fmt.Errorf("move the imported objects into the mirror: %w", err)
		}
		// The old value makes sure that nothing else moved the branch.
		if _, err := j.git(ctx, "update-ref", ref, commit, c.parent); err != nil {
			return "", err
		}
		fmt.Fprintf(j.out, "committed %s on %s\n", commit, c.branch)
	}
	if c.tag == "" {
		return commit, nil
	}
	tagRef := "refs/tags/" + c.tag
	switch old := refs[tagRef]; old {
	case commit:
		return commit, nil
	case "":
		fmt.Fprintf(j.out, "tagged %s\n", c.tag)
	default:
		fmt.Fprintf(j.out, "moving tag %s from %s: the archive of that name has changed\n", c.tag, old)
	}
	if _, err := j.git(ctx, "update-ref", tagRef, commit); err != nil {
		return "", err
	}
	return commit, nil
}

// sameCommit tells whether commit has the tree and message of parent, as
// when a lost state file has an unchanged archive imported again.
func (j *job) sameCommit(ctx context.Context, gitDir, commit, parent string) (bool, error) {
	if parent == "" {
		return false, nil
	}
	var shown [2]string
	for i, id := range []string{commit, parent} {
		out, err := j.gitIn(ctx, gitDir, "show", "-s", "--format=%T%n%B", id)
		if err != nil {
			return false, err
		}
		shown[i] = out
	}
	return shown[0] == shown[1], nil
}

// runFastImport runs git fast-import on gitDir with the stream that write
// writes. If write fails, fast-import is killed before it updates any
// ref.
func (j *job) runFastImport(ctx context.Context, gitDir string, out io.Writer, write func(*fastImport) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Objects are kept in packs however few, so that they move into the
	// mirror as whole files. Blobs over the threshold go straight to the
	// pack instead of being held in memory for delta compression.
	cmd := exec.CommandContext(ctx, "git", "-c", "fastimport.unpackLimit=0",
		"fast-import", "--quiet", "--done", "--big-file-threshold=16m")
	cmd.Env = j.gitEnv(gitDir, nil)
	tail := &tailWriter{max: 2048}
	cmd.Stderr = io.MultiWriter(out, tail)
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return fmt.Errorf("git is not installed: %w", err)
		}
		return err
	}
	fi := &fastImport{w: bufio.NewWriterSize(stdin, 256<<10)}
	werr := write(fi)
	if werr == nil {
		werr = fi.w.Flush()
	}
	if werr != nil && !errors.Is(werr, syscall.EPIPE) {
		cancel()
		cmd.Wait()
		return werr
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		if msg := strings.TrimSpace(tail.String()); msg != "" {
			return fmt.Errorf("git fast-import: %w: %s", err, errorLine(msg))
		}
		return fmt.Errorf("git fast-import: %w", err)
	}
	return werr
}

// moveObjects moves the objects of a finished import into the mirror's
// object directory: loose objects, then packs, each pack's index last,
// since git uses a pack only once its index is there.
func moveObjects(from, to string) error {
	dirs, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if !d.IsDir() || len(d.Name()) != 2 {
			continue
		}
		if err := moveFiles(filepath.Join(from, d.Name()), filepath.Join(to, d.Name()), nil); err != nil {
			return err
		}
	}
	rank := func(name string) int {
		switch filepath.Ext(name) {
		case ".pack":
			return 0
		case ".idx":
			return 2
		}
		return 1
	}
	return moveFiles(filepath.Join(from, "pack"), filepath.Join(to, "pack"), func(a, b string) int {
		return rank(a) - rank(b)
	})
}

// moveFiles moves the regular files of from into to, in the order that
// cmp gives, leaving out unfinished ones and those that to already has.
func moveFiles(from, to string, cmp func(a, b string) int) error {
	entries, err := os.ReadDir(from)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if e.Type().IsRegular() && !strings.HasPrefix(name, "tmp_") && filepath.Ext(name) != ".keep" {
			names = append(names, name)
		}
	}
	if cmp != nil {
		slices.SortStableFunc(names, cmp)
	}
	if len(names) > 0 {
		if err := os.MkdirAll(to, 0o755); err != nil {
			return err
		}
	}
	for _, name := range names {
		dst := filepath.Join(to, name)
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		if err := os.Rename(filepath.Join(from, name), dst); err != nil {
			return err
		}
	}
	return nil
}

// loadState reads a state file into v. A missing file is a first run; a
// broken one is said and ignored, which costs at most one more import.
func (j *job) loadState(file string, v any) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		fmt.Fprintf(j.out, "ignoring the state in %s: %v\n", filepath.Base(filepath.Dir(file))+"/"+filepath.Base(file), err)
	}
}

// saveState writes v to a state file, whole or not at all.
func saveState(file string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(file, append(data, '\n'), 0o644)
}
