package mirror

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/redact"
)

// rawFileState is the last import of a raw-file spec.
type rawFileState struct {
	Branch string                   `json:"branch"`
	Commit string                   `json:"commit"`
	Files  map[string]rawFileRecord `json:"files"` // by URL
}

type rawFileRecord struct {
	Path    string `json:"path"`
	SHA256  string `json:"sha256"`
	ModTime int64  `json:"mtime"`
	validators
}

// rawFile is one URL of a raw-file spec in this run.
type rawFile struct {
	url     string
	changed bool
	d       download
	rec     rawFileRecord
}

// importRawFile adds or replaces each URL's file at its destination in the
// branch's tree, as one commit when any of them changed. Files are never
// removed: a URL dropped from the spec leaves its file as it was.
func importRawFile(ctx context.Context, j *job, v any) ([]string, bool, error) {
	r := v.(*lorryspec.RawFile)
	branch, err := j.branchName(ctx, r.Branch)
	if err != nil {
		return nil, false, err
	}
	dir := filepath.Join(j.dir, "raw-file")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, err
	}
	stateFile := filepath.Join(dir, "state.json")
	var st rawFileState
	j.loadState(stateFile, &st)
	refs, err := j.refs(ctx)
	if err != nil {
		return nil, false, err
	}
	head := refs["refs/heads/"+branch]
	trusted := st.Commit != "" && st.Commit == head && st.Branch == branch

	files, err := fetchRawFiles(ctx, j, r, dir, st, trusted)
	if err != nil {
		return nil, false, err
	}
	defer removeRawFiles(files)

	next := rawFileState{Branch: branch, Commit: head, Files: map[string]rawFileRecord{}}
	for _, f := range files {
		next.Files[f.url] = f.rec
	}
	push := []string{"+refs/heads/" + branch + ":refs/heads/" + branch, "+refs/tags/*:refs/tags/*"}
	if !slices.ContainsFunc(files, func(f rawFile) bool { return f.changed }) {
		fmt.Fprintf(j.out, "every file is as it was at the last import: nothing to import\n")
		return push, false, saveState(stateFile, &next)
	}

	c := commitInfo{branch: branch, parent: head, keepTree: true, message: rawFileMessage(files)}
	for _, f := range files {
		c.date = max(c.date, f.rec.ModTime)
	}
	commit, err := j.importFiles(ctx, dir, c, refs, func(t *treeBuilder) error {
		for _, f := range files {
			if f.changed {
				if err := addLocalFile(t, f.rec.Path, f.d.path); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("import raw files: %w", err)
	}
	next.Commit = commit
	if err := saveState(stateFile, &next); err != nil {
		return nil, false, err
	}
	return push, false, j.followBranch(ctx, branch)
}

// fetchRawFiles fetches the file of each URL of r into dir, asking only
// for a file modified since the last import, which st recorded, when
// that import is trusted, and says which changed. It removes what it
// fetched if it fails.
func fetchRawFiles(ctx context.Context, j *job, r *lorryspec.RawFile, dir string, st rawFileState, trusted bool) ([]rawFile, error) {
	files := make([]rawFile, 0, len(r.URLs))
	fetched := false
	defer func() {
		if !fetched {
			removeRawFiles(files)
		}
	}()
	byPath := map[string]string{}
	for i, u := range r.URLs {
		p, err := rawFilePath(u)
		if err != nil {
			return nil, err
		}
		if other, ok := byPath[p]; ok {
			return nil, fmt.Errorf("%s and %s would both be %s", redact.URLs(other), redact.URLs(u.URL), p)
		}
		byPath[p] = u.URL
		// The state names the URL without its credentials; a state
		// written before kept them.
		plain := withoutUserinfo(u.URL)
		rec, ok := st.Files[plain]
		if !ok {
			rec, ok = st.Files[u.URL]
		}
		usable := trusted && ok && rec.Path == p
		var cond *validators
		if usable {
			cond = &rec.validators
		}
		d, err := j.fetchFile(ctx, u.URL, r.CheckCertificates, filepath.Join(dir, strconv.Itoa(i)), cond)
		if err != nil {
			return nil, err
		}
		f := rawFile{url: plain, d: d}
		switch {
		case usable && d.notModified:
		case usable && d.sha256 == rec.SHA256:
			rec.validators = d.validators
		default:
			f.changed = true
			// The zero time is before 1970, and so becomes 0.
			rec = rawFileRecord{Path: p, SHA256: d.sha256, ModTime: max(d.modTime.Unix(), 0), validators: d.validators}
		}
		f.rec = rec
		files = append(files, f)
	}
	fetched = true
	return files, nil
}

// removeRawFiles removes the fetched files.
func removeRawFiles(files []rawFile) {
	for _, f := range files {
		if f.d.path != "" {
			os.Remove(f.d.path)
		}
	}
}

// rawFilePath is where the file of u goes in the tree.
func rawFilePath(u lorryspec.RawFileURL) (string, error) {
	base, err := urlBaseName(u.URL)
	if err != nil {
		return "", err
	}
	p, err := treePath(path.Join(u.Destination, base), 0)
	if err == nil && p == "" {
		err = fmt.Errorf("%q is no place for a file", path.Join(u.Destination, base))
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", redact.URLs(u.URL), err)
	}
	return p, nil
}

// rawFileMessage names every file of the spec with its SHA-256, in the
// form sha256sum prints and checks.
func rawFileMessage(files []rawFile) string {
	recs := make([]rawFileRecord, len(files))
	for i, f := range files {
		recs[i] = f.rec
	}
	slices.SortFunc(recs, func(a, b rawFileRecord) int { return strings.Compare(a.Path, b.Path) })
	var b strings.Builder
	b.WriteString("Import raw files\n\n")
	for _, r := range recs {
		fmt.Fprintf(&b, "%s  %s\n", r.SHA256, r.Path)
	}
	return b.String()
}

func addLocalFile(t *treeBuilder, name, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return t.add(name, modeFile, fi.Size(), f, time.Time{})
}
