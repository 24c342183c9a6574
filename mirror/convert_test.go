package mirror_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/mirror"
	"lorrycontroller.dev/lc/workarea"
)

// What the converter tests share: real upstream repositories made with
// each tool's command line, converted through mirror.Run, pushed to a
// local bare repository.

// cvTool is a program a test needs, with the Debian package that has it.
type cvTool struct{ program, pkg string }

// cvNeed fails the test, naming the package to install, when a tool is
// missing. Skipping instead would hide a converter that does not work.
func cvNeed(t *testing.T, tools ...cvTool) {
	t.Helper()
	for _, tl := range tools {
		if _, err := exec.LookPath(tl.program); err == nil {
			continue
		}
		if strings.HasPrefix(tl.program, "git-") {
			out, err := exec.Command("git", "--exec-path").Output()
			if err == nil {
				if _, err := os.Stat(filepath.Join(strings.TrimSpace(string(out)), tl.program)); err == nil {
					continue
				}
			}
		}
		t.Fatalf("this test needs %s: install the Debian package %q", tl.program, tl.pkg)
	}
}

// cvRun runs a command in dir with env added to the environment, and
// returns its standard output.
func cvRun(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// cvGit runs git on the repository gitDir.
func cvGit(t *testing.T, gitDir string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(cvRun(t, "", []string{"GIT_DIR=" + gitDir}, "git", args...))
}

// cvMirror runs one spec again and again, as the minion would, into one
// working area and one downstream repository.
type cvMirror struct {
	t    *testing.T
	spec lorryspec.Spec
	area string
	down string
	// refuseLocal runs lorry as it runs by default, with local sources
	// refused; the tests' upstreams are on this machine, so they allow
	// them otherwise.
	refuseLocal bool
}

func newCvMirror(t *testing.T, typ string, fields map[string]any) *cvMirror {
	t.Helper()
	raw := map[string]any{"type": typ}
	for k, v := range fields {
		raw[k] = v
	}
	m := &cvMirror{
		t:    t,
		spec: lorryspec.Spec{Name: "upstream/" + typ, Type: typ, Raw: raw},
		area: filepath.Join(t.TempDir(), "area"),
		down: filepath.Join(t.TempDir(), "down.git"),
	}
	cvRun(t, "", nil, "git", "init", "--quiet", "--bare", m.down)
	return m
}

// run mirrors the spec and returns the result and the job's output.
func (m *cvMirror) run() (mirror.Result, string) {
	m.t.Helper()
	var out syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := mirror.Run(ctx, m.spec, mirror.Options{WorkingArea: m.area, PushURL: m.down, Out: &out, AllowLocalSources: !m.refuseLocal})
	return res, out.String()
}

// mustRun mirrors the spec, failing the test unless it succeeds.
func (m *cvMirror) mustRun() (mirror.Result, string) {
	m.t.Helper()
	res, out := m.run()
	if res.Err != nil {
		m.t.Fatalf("run %s: %v\noutput:\n%s", m.spec.Name, res.Err, out)
	}
	return res, out
}

// refs maps the downstream's refs to their object ids.
func (m *cvMirror) refs() map[string]string {
	m.t.Helper()
	return cvRefs(m.t, m.down)
}

// mirrorRefs maps the refs of the mirror in the working area.
func (m *cvMirror) mirrorRefs() map[string]string {
	m.t.Helper()
	return cvRefs(m.t, filepath.Join(workarea.Dir(m.area, m.spec.Name), "git"))
}

// stateDir is where the converter kind keeps its state.
func (m *cvMirror) stateDir(kind string) string {
	return filepath.Join(workarea.Dir(m.area, m.spec.Name), kind)
}

// markState leaves a file in the converter's state, which a later run
// keeps only if it continues from that state.
func (m *cvMirror) markState(kind string) {
	m.t.Helper()
	if err := os.WriteFile(filepath.Join(m.stateDir(kind), "test-mark"), nil, 0o644); err != nil {
		m.t.Fatal(err)
	}
}

func (m *cvMirror) checkStateKept(kind string) {
	m.t.Helper()
	if _, err := os.Stat(filepath.Join(m.stateDir(kind), "test-mark")); err != nil {
		m.t.Errorf("the %s state was not kept from the last run: %v", kind, err)
	}
}

// show returns a file of a revision downstream.
func (m *cvMirror) show(rev, file string) string {
	m.t.Helper()
	return cvGit(m.t, m.down, "show", rev+":"+file)
}

// subject returns the first line of the message of a commit downstream.
func (m *cvMirror) subject(rev string) string {
	m.t.Helper()
	return cvGit(m.t, m.down, "log", "-1", "--format=%s", rev)
}

// parent returns the first parent of a commit downstream.
func (m *cvMirror) parent(rev string) string {
	m.t.Helper()
	return cvGit(m.t, m.down, "rev-parse", rev+"^")
}

// checkFailureKeepsMirror runs the spec while its upstream is gone: the
// run must fail, naming what failed, and leave the mirror and the
// downstream as they were.
func (m *cvMirror) checkFailureKeepsMirror(upstream string) {
	m.t.Helper()
	mirrorBefore, downBefore := m.mirrorRefs(), m.refs()
	gone := upstream + ".gone"
	if err := os.Rename(upstream, gone); err != nil {
		m.t.Fatal(err)
	}
	res, out := m.run()
	if err := os.Rename(gone, upstream); err != nil {
		m.t.Fatal(err)
	}
	if res.Err == nil {
		m.t.Fatalf("run with the upstream gone: got success, want an error\noutput:\n%s", out)
	}
	if got := m.mirrorRefs(); !cvEqual(got, mirrorBefore) {
		m.t.Errorf("mirror refs after a failed run:\ngot  %v\nwant %v", got, mirrorBefore)
	}
	if got := m.refs(); !cvEqual(got, downBefore) {
		m.t.Errorf("downstream refs after a failed run:\ngot  %v\nwant %v", got, downBefore)
	}
}

func cvRefs(t *testing.T, gitDir string) map[string]string {
	t.Helper()
	refs := map[string]string{}
	for _, line := range strings.Split(cvGit(t, gitDir, "for-each-ref", "--format=%(objectname) %(refname)"), "\n") {
		if id, name, ok := strings.Cut(line, " "); ok {
			refs[name] = id
		}
	}
	return refs
}

func cvNames(refs map[string]string) []string {
	var names []string
	for name := range refs {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func cvEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// cvCheckNames fails unless refs are exactly want.
func cvCheckNames(t *testing.T, what string, refs map[string]string, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := cvNames(refs); !slices.Equal(got, want) {
		t.Errorf("%s:\ngot  %v\nwant %v", what, got, want)
	}
}

// cvCheckKept fails unless each of names has the same id in both maps.
func cvCheckKept(t *testing.T, before, after map[string]string, names ...string) {
	t.Helper()
	for _, name := range names {
		if after[name] != before[name] {
			t.Errorf("%s changed: got %s, want %s as before", name, after[name], before[name])
		}
	}
}

// syncBuffer is the job's output, written by the programs that run at
// the same time.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestConverterNeedsTool runs each converted type on a machine without
// its converter: the run fails before anything is converted, naming the
// program and the Debian package to install.
func TestConverterNeedsTool(t *testing.T) {
	// A PATH with git alone, and git's own commands in a directory
	// without git-svn or git-cvsimport.
	bin := t.TempDir()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("this test needs git: %v", err)
	}

	tests := []struct {
		name   string
		typ    string
		fields map[string]any
		kind   string
		want   string
	}{
		{
			name:   "svn",
			typ:    "svn",
			fields: map[string]any{"url": "file:///nowhere"},
			kind:   "svn",
			want:   `svn specs need git-svn: install the Debian package "git-svn"`,
		},
		{
			name:   "hg",
			typ:    "hg",
			fields: map[string]any{"url": "/nowhere"},
			kind:   "hg",
			want:   `hg specs need git-remote-hg: install the Debian package "git-remote-hg"`,
		},
		{
			name:   "bzr",
			typ:    "bzr",
			fields: map[string]any{"url": "/nowhere"},
			kind:   "bzr",
			want:   `bzr specs need brz: install the Debian package "brz"`,
		},
		{
			name:   "cvs",
			typ:    "cvs",
			fields: map[string]any{"url": "/nowhere", "module": "mod"},
			kind:   "cvs",
			want:   `cvs specs need git-cvsimport, cvsps, cvs: install the Debian packages "git-cvs" "cvsps" "cvs"`,
		},
	}
	if err := os.Symlink(gitPath, filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	t.Setenv("GIT_EXEC_PATH", t.TempDir())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newCvMirror(t, tt.typ, tt.fields)
			res, out := m.run()
			if res.Err == nil || res.Err.Error() != tt.want {
				t.Errorf("error:\ngot  %v\nwant %s\noutput:\n%s", res.Err, tt.want, out)
			}
			if _, err := os.Stat(m.stateDir(tt.kind)); err == nil {
				t.Errorf("a %s state directory was made before the tools were checked", tt.kind)
			}
		})
	}
}

// TestConverterHidesCredentials runs converters on an upstream that
// refuses connections, with a password in its URL: the converters print
// the URL, and neither the job's output nor the error may show the
// password.
func TestConverterHidesCredentials(t *testing.T) {
	t.Parallel()
	cvNeed(t, cvTool{"git-svn", "git-svn"}, cvTool{"git-remote-hg", "git-remote-hg"}, cvTool{"brz", "brz"})
	const secret = "s3cr3t"
	// Nothing listens on the discard port of the loopback address.
	url := "http://someone:" + secret + "@127.0.0.1:9/repo"
	for _, typ := range []string{"svn", "hg", "bzr"} {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			m := newCvMirror(t, typ, map[string]any{"url": url})
			res, out := m.run()
			if res.Err == nil {
				t.Fatalf("got success, want a failure to connect\noutput:\n%s", out)
			}
			if strings.Contains(out, secret) || strings.Contains(res.Err.Error(), secret) {
				t.Errorf("the password shows:\nerror: %v\noutput:\n%s", res.Err, out)
			}
			if !strings.Contains(out+res.Err.Error(), "http://***@127.0.0.1:9/repo") {
				t.Errorf("got error %v and output\n%s\nwant the URL shown with its credentials hidden", res.Err, out)
			}
		})
	}
}

// The converters open local repositories under URL forms other than
// paths and file: URLs: Mercurial's union: and bundle:, Breezy's
// decorators of file: URLs. Allowed, each mirrors files of this machine;
// by default, each is refused before the converter runs.
func TestConverterLocalURLForms(t *testing.T) {
	t.Parallel()
	hg := newCvHgUpstream(t)
	hg.commitFile("README", "one\n", "one")
	bundle := filepath.Join(t.TempDir(), "repo.hg")
	hg.hg("bundle", "--quiet", "--all", bundle)
	bzr := newCvBzrUpstream(t)
	tests := []struct {
		name, typ, url string
	}{
		{"hg union", "hg", "union://" + hg.dir + "+" + hg.dir},
		{"hg bundle", "hg", "bundle:" + bundle},
		{"bzr readonly", "bzr", "readonly+file://" + bzr.trunk},
		{"bzr log", "bzr", "log+file://" + bzr.trunk},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newCvMirror(t, tc.typ, map[string]any{"url": tc.url})
			m.refuseLocal = true
			res, out := m.run()
			if res.Err == nil || !strings.Contains(res.Err.Error(), "--allow-local-sources") {
				t.Fatalf("got %v, want the local source refused\noutput:\n%s", res.Err, out)
			}
			if refs := m.refs(); len(refs) != 0 {
				t.Fatalf("the refused source reached the downstream: %v", refs)
			}
			m.refuseLocal = false
			if res, out := m.run(); res.Err != nil || len(m.refs()) == 0 {
				t.Errorf("with local sources allowed: %v, downstream refs %v; want the source mirrored\noutput:\n%s", res.Err, m.refs(), out)
			}
		})
	}
}
