package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/redact"
	"lorrycontroller.dev/lc/workarea"
)

func init() { importers["bzr"] = importBzr }

// bzrExportPlugin is a breezy plugin that lorry loads into brz
// fast-export, for two things brz 3.3 does not do.
//
// Given the marks of the revisions exported before, brz still walks the
// whole history of the branch and fails on the first revision it has
// already exported ("KeyError: b'null:'"), so an export cannot continue
// from its marks. The plugin leaves only the revisions not exported yet:
// their parents are written as marks, which git fast-import knows from
// its own marks file.
//
// brz names the branch only in the commits it exports, so a branch with
// no revision of its own, or moved back upstream, would keep its old
// commit or none. The plugin ends the stream by pointing the branch at
// the mark of its tip.
const bzrExportPlugin = `from breezy.plugins.fastimport import exporter as _exporter

_Exporter = _exporter.BzrFastExporter
_history = _Exporter.interesting_history
_emit_commits = _Exporter.emit_commits


def _not_exported(self):
    return [r for r in _history(self) if not self.revid_to_mark.get(r)]


def _emit_commits_and_tip(self, interesting):
    _emit_commits(self, interesting)
    tip = self.revid_to_mark.get(self.branch.last_revision())
    if tip:
        self.outf.write(b"reset " + self.ref + b"\nfrom :" + tip + b"\n\n")


_Exporter.interesting_history = _not_exported
_Exporter.emit_commits = _emit_commits_and_tip
`

const bzrPluginName = "lorry_bzr_marks"

// importBzr converts Bazaar branches with brz fast-export piped to git
// fast-import: the spec's url becomes master, and each of its branches a
// branch of that name. Tags become tags.
//
// The state lives in bzr/ beside the mirror: a brz shared repository
// with a copy of each branch (so that each run downloads only new
// revisions), the git repository that fast-import fills, and the marks
// files of both sides, which map each revision exported to its commit so
// that each run exports only new revisions.
func importBzr(ctx context.Context, j *job, v any) ([]string, bool, error) {
	b := v.(*lorryspec.Bzr)
	branches, err := bzrBranches(b)
	if err != nil {
		return nil, false, err
	}
	if err := needConverterTools(ctx, "bzr", converterTool{"brz", "brz"}); err != nil {
		return nil, false, err
	}
	dir, err := j.converterDir("bzr", "bzr")
	if err != nil {
		return nil, false, err
	}
	c := &bzrConversion{j: j, dir: dir, gitDir: filepath.Join(dir, "git")}
	if err := c.prepare(ctx); err != nil {
		return nil, false, err
	}
	names := slices.Sorted(maps.Keys(branches))
	for _, name := range names {
		if err := c.pull(ctx, name, branches[name]); err != nil {
			return nil, false, err
		}
	}
	if err := c.export(ctx, names); err != nil {
		return nil, false, err
	}
	return j.takeConverted(ctx, c.gitDir, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
}

// bzrBranches maps each git branch of the spec to its upstream URL.
func bzrBranches(b *lorryspec.Bzr) (map[string]string, error) {
	branches := maps.Clone(b.Branches)
	if branches == nil {
		branches = map[string]string{}
	}
	if b.URL != "" {
		if _, ok := branches["master"]; ok {
			return nil, errors.New(`bzr spec has both "url" and a "branches" entry "master", which would be the same git branch`)
		}
		branches["master"] = b.URL
	}
	for name := range branches {
		if err := exec.Command("git", "check-ref-format", "refs/heads/"+name).Run(); err != nil {
			return nil, fmt.Errorf(`bzr spec: %q is not a usable git branch name`, name)
		}
	}
	return branches, nil
}

type bzrConversion struct {
	j      *job
	dir    string
	gitDir string
}

func (c *bzrConversion) repo() string           { return filepath.Join(c.dir, "repo") }
func (c *bzrConversion) plugin() string         { return filepath.Join(c.dir, "plugin", bzrPluginName) }
func (c *bzrConversion) branch(n string) string { return filepath.Join(c.repo(), workarea.Name(n)) }

// The marks files of both sides, as the last successful run left them.
func (c *bzrConversion) bzrMarks() string { return filepath.Join(c.dir, "marks.bzr") }
func (c *bzrConversion) gitMarks() string { return filepath.Join(c.dir, "marks.git") }

func (c *bzrConversion) env() []string {
	plugins := bzrPluginName + "@" + c.plugin()
	if old := os.Getenv("BRZ_PLUGINS_AT"); old != "" {
		plugins += string(os.PathListSeparator) + old
	}
	return append(os.Environ(), "BRZ_PLUGINS_AT="+plugins)
}

// prepare makes the shared repository and the git repository, and
// writes the plugin.
func (c *bzrConversion) prepare(ctx context.Context) error {
	if err := os.MkdirAll(c.plugin(), 0o755); err != nil {
		return err
	}
	if err := writeConverterFile(filepath.Join(c.plugin(), "__init__.py"), []byte(bzrExportPlugin)); err != nil {
		return err
	}
	if _, err := os.Stat(c.gitDir); err != nil {
		// The marks name commits of the git repository, and are no use
		// without it.
		for _, m := range []string{c.bzrMarks(), c.gitMarks()} {
			if err := os.Remove(m); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	if _, err := os.Stat(c.repo()); err != nil {
		tmp := c.repo() + ".new"
		if err := os.RemoveAll(tmp); err != nil {
			return err
		}
		if err := c.j.runTool(ctx, c.dir, c.env(), "brz", "init-shared-repo", "--quiet", "--no-trees", tmp); err != nil {
			return err
		}
		if err := os.Rename(tmp, c.repo()); err != nil {
			return err
		}
	}
	return c.j.initConverterRepo(ctx, c.gitDir, nil)
}

// pull brings the copy of branch name up to date with url.
func (c *bzrConversion) pull(ctx context.Context, name, url string) error {
	fmt.Fprintf(c.j.out, "pulling %s for branch %s\n", redact.URLs(url), name)
	dst := c.branch(name)
	// brz is given the URL without credentials; Breezy takes them from
	// an authentication.conf outside the working area that only this user
	// can read, there for the pull alone.
	plain, auth, err := bzrCredentials(url)
	if err != nil {
		return err
	}
	env := c.env()
	if auth != "" {
		home, err := bzrAuthHome(auth)
		if err != nil {
			return err
		}
		defer os.RemoveAll(home)
		env = append(env, "BRZ_HOME="+home)
	}
	if _, statErr := os.Stat(dst); statErr == nil {
		// --overwrite: the copy follows upstream even when upstream
		// history was rewritten. --remember: the branch's parent is the
		// URL without credentials, also when a copy made before kept
		// it with them. --: a URL starting with "-" is the URL, not an
		// option.
		err = c.j.runTool(ctx, c.dir, env, "brz", "pull", "--quiet", "--overwrite", "--remember", "-d", dst, "--", plain)
	} else {
		tmp := filepath.Join(c.repo(), ".new-"+workarea.Name(name))
		if err := os.RemoveAll(tmp); err != nil {
			return err
		}
		err = c.j.runTool(ctx, c.dir, env, "brz", "branch", "--quiet", "--no-tree", "--", plain, tmp)
		if err == nil {
			err = os.Rename(tmp, dst)
		}
	}
	if err != nil {
		return fmt.Errorf("pull %s: %w", redact.URLs(url), err)
	}
	return nil
}

// bzrCredentials splits the user and password off url: plain is url
// without them, and auth a section of Breezy's authentication.conf that
// gives them for url's host, "" when url has none. The user is split off
// an http or https url even without a password, as it may be a token;
// of other schemes, such as bzr+ssh, only a user with a password.
func bzrCredentials(rawURL string) (plain, auth string, err error) {
	u, err := splitURL(rawURL)
	if errors.Is(err, errNoURL) {
		return rawURL, "", nil
	}
	if err != nil {
		return "", "", err
	}
	scheme := strings.ToLower(u.scheme)
	if !u.hasUser || !u.hasPassword && scheme != "http" && scheme != "https" {
		return rawURL, "", nil
	}
	lines := [][2]string{{"host", u.hostname()}, {"port", u.port()}, {"user", u.user}, {"password", u.password}}
	auth = "[lorry-url]\n"
	for _, kv := range lines {
		if kv[1] == "" {
			continue
		}
		v, ok := configObjQuote(kv[1])
		if !ok {
			return "", "", fmt.Errorf("bzr URL %q has a %s that Breezy's configuration cannot hold", redact.URLs(rawURL), kv[0])
		}
		auth += kv[0] + " = " + v + "\n"
	}
	return u.plain(false), auth, nil
}

// configObjQuote quotes s as a value of a Breezy configuration file,
// which has no escapes: s is put between quotes it does not hold.
func configObjQuote(s string) (string, bool) {
	switch {
	case strings.ContainsAny(s, "\r\n"):
		return "", false
	case !strings.Contains(s, `"`):
		return `"` + s + `"`, true
	case !strings.Contains(s, "'"):
		return "'" + s + "'", true
	case !strings.Contains(s, `"""`) && !strings.HasSuffix(s, `"`):
		return `"""` + s + `"""`, true
	}
	return "", false
}

// bzrAuthHome makes a Breezy configuration directory outside the working
// area (see privateDir), for BRZ_HOME,
// whose authentication.conf has auth before the sections of the user's
// own; the rest of the user's Breezy configuration (breezy.conf,
// locations.conf, plugins) is linked in. Breezy reads the first section
// that matches a host. The caller removes the directory.
func bzrAuthHome(auth string) (home string, err error) {
	home, err = privateDir("brz")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(home)
			home = ""
		}
	}()
	conf := filepath.Join(home, "breezy")
	if err := os.Mkdir(conf, 0o700); err != nil {
		return "", err
	}
	data := []byte(auth)
	if user := bzrConfigDir(); user != "" {
		entries, _ := os.ReadDir(user)
		for _, e := range entries {
			if e.Name() == "authentication.conf" {
				own, err := os.ReadFile(filepath.Join(user, e.Name()))
				if err != nil {
					return "", err
				}
				data = append(append(data, '\n'), own...)
				continue
			}
			if err := os.Symlink(filepath.Join(user, e.Name()), filepath.Join(conf, e.Name())); err != nil {
				return "", err
			}
		}
	}
	f, err := os.OpenFile(filepath.Join(conf, "authentication.conf"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return home, err
}

// bzrConfigDir is the user's Breezy configuration directory, where
// Breezy looks for it first, or "". (A Bazaar configuration directory
// that Breezy falls back to without one is not followed.)
func bzrConfigDir() string {
	base := os.Getenv("BRZ_HOME")
	if base == "" {
		base = os.Getenv("XDG_CONFIG_HOME")
	}
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".config")
	}
	return filepath.Join(base, "breezy")
}

// export converts the revisions of the branches that are not converted
// yet. Both marks files are replaced only when all of it has succeeded: a
// marks file that names revisions the other side does not have would
// break every later run.
func (c *bzrConversion) export(ctx context.Context, names []string) error {
	bzrWork, gitWork := c.bzrMarks()+".work", c.gitMarks()+".work"
	defer os.Remove(bzrWork)
	defer os.Remove(gitWork)
	for _, p := range [][2]string{{c.bzrMarks(), bzrWork}, {c.gitMarks(), gitWork}} {
		if err := copyMarksFile(p[0], p[1]); err != nil {
			return err
		}
	}
	for _, name := range names {
		if err := c.exportBranch(ctx, name, bzrWork, gitWork); err != nil {
			return err
		}
	}
	if err := os.Rename(bzrWork, c.bzrMarks()); err != nil {
		return err
	}
	return os.Rename(gitWork, c.gitMarks())
}

// exportBranch pipes brz fast-export of one branch into git fast-import.
func (c *bzrConversion) exportBranch(ctx context.Context, name, bzrMarks, gitMarks string) error {
	exp := exec.CommandContext(ctx, "brz", "fast-export", "--rewrite-tag-names",
		"--import-marks="+bzrMarks, "--export-marks="+bzrMarks,
		"--git-branch="+name, c.branch(name), "-")
	exp.Dir = c.dir
	exp.Env = c.env()
	stats := "--quiet"
	if c.j.opts.Verbose {
		stats = "--stats"
	}
	// --force: a branch follows upstream even when upstream history was
	// rewritten.
	imp := exec.CommandContext(ctx, "git", "fast-import", stats, "--force",
		"--import-marks-if-exists="+gitMarks, "--export-marks="+gitMarks)
	imp.Dir = c.dir
	imp.Env = c.j.gitEnv(c.gitDir, nil)

	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	expTail, impTail := &tailWriter{max: 2048}, &tailWriter{max: 2048}
	// Both programs write to the job's output as they run, each its own
	// lines.
	out := &syncWriter{w: c.j.out}
	expOut, impOut := &redactingWriter{w: out}, &redactingWriter{w: out}
	defer expOut.Flush()
	defer impOut.Flush()
	impW := io.MultiWriter(impOut, impTail)
	exp.Stdout, exp.Stderr = w, io.MultiWriter(expOut, expTail)
	imp.Stdin, imp.Stdout, imp.Stderr = r, impW, impW
	exp.WaitDelay, imp.WaitDelay = 5*time.Second, 5*time.Second

	fmt.Fprintf(c.j.out, "converting branch %s\n", name)
	if err := imp.Start(); err != nil {
		r.Close()
		w.Close()
		return toolError(err, impTail, "git", imp.Args[1:])
	}
	r.Close()
	expErr := exp.Start()
	w.Close()
	if expErr == nil {
		expErr = exp.Wait()
	}
	impErr := imp.Wait()
	expErr = toolError(expErr, expTail, "brz", exp.Args[1:])
	impErr = toolError(impErr, impTail, "git", imp.Args[1:])
	if expErr != nil && strings.Contains(expTail.String(), `Unable to import library "fastimport"`) {
		return errors.New(`bzr specs need the fastimport Python module: install the Debian package "python3-fastimport"`)
	}
	// When brz fails, fast-import reads a stream that stopped short,
	// which may look complete to it: brz's failure is the one to report.
	if expErr != nil {
		return fmt.Errorf("convert branch %s: %w", name, expErr)
	}
	if impErr != nil {
		return fmt.Errorf("convert branch %s: %w", name, impErr)
	}
	return nil
}

// copyMarksFile copies src to dst; a missing src gives an empty dst, which
// both brz and git read as no marks.
func copyMarksFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}
