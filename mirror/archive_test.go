package mirror

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ulikunitz/xz"

	"lorrycontroller.dev/lc/gittest"
	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/workarea"
)

// entryTime is the modification time of test archive entries unless they
// say otherwise.
var entryTime = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// archEntry is a member of a test archive: a regular file unless typ says.
type archEntry struct {
	name  string
	body  string
	mode  int64
	typ   byte
	link  string
	mtime time.Time
}

func (e archEntry) header() *tar.Header {
	h := &tar.Header{Name: e.name, Mode: e.mode, Typeflag: e.typ, Linkname: e.link, ModTime: e.mtime}
	if h.Mode == 0 {
		h.Mode = 0o644
	}
	if h.Typeflag == 0 {
		h.Typeflag = tar.TypeReg
	}
	if h.Typeflag == tar.TypeReg {
		h.Size = int64(len(e.body))
	}
	if h.ModTime.IsZero() {
		h.ModTime = entryTime
	}
	return h
}

func makeTar(t *testing.T, entries ...archEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		if err := tw.WriteHeader(e.header()); err != nil {
			t.Fatalf("tar header %q: %v", e.name, err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipped(t *testing.T, data []byte, mtime time.Time) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.ModTime = mtime
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func xzed(t *testing.T, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := xz.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func makeZip(t *testing.T, entries ...archEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: e.mtime}
		if h.Modified.IsZero() {
			h.Modified = entryTime
		}
		mode := fs.FileMode(e.mode)
		if mode == 0 {
			mode = 0o644
		}
		body := e.body
		switch e.typ {
		case tar.TypeSymlink:
			mode |= fs.ModeSymlink
			body = e.link
		case tar.TypeDir:
			mode |= fs.ModeDir
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "archive", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// archServer serves a directory over HTTP, recording the status of each
// answer.
type archServer struct {
	root string
	srv  *httptest.Server

	mu       sync.Mutex
	statuses []int
}

func newFileServer(t *testing.T, useTLS bool) *archServer {
	t.Helper()
	s := &archServer{root: t.TempDir()}
	files := http.FileServer(http.Dir(s.root))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		files.ServeHTTP(rec, r)
		s.mu.Lock()
		s.statuses = append(s.statuses, rec.status)
		s.mu.Unlock()
	})
	s.srv = httptest.NewUnstartedServer(h)
	// Refused certificates are expected here, not news.
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if useTLS {
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	t.Cleanup(s.srv.Close)
	return s
}

// put writes a file to serve, with a time of its own so that servers tell
// versions apart, and returns its URL.
func (s *archServer) put(t *testing.T, name string, data []byte, mtime time.Time) string {
	t.Helper()
	file := filepath.Join(s.root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(file, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return s.srv.URL + "/" + name
}

func (s *archServer) lastStatus() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.statuses) == 0 {
		return 0
	}
	return s.statuses[len(s.statuses)-1]
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

func archiveSpec(typ, url string, fields map[string]any) lorryspec.Spec {
	raw := map[string]any{"type": typ, "url": url}
	for k, v := range fields {
		raw[k] = v
	}
	return lorryspec.Spec{Name: "up/archive", Type: typ, Raw: raw}
}

// runArchive runs spec and returns the result and what the run said.
func runArchive(t *testing.T, spec lorryspec.Spec, opts Options) (Result, string) {
	t.Helper()
	var out strings.Builder
	opts.Out = &out
	if opts.LockWait == 0 {
		opts.LockWait = time.Second
	}
	// Some of the tests' archives are local files, and their servers
	// listen on loopback.
	opts.AllowLocalSources = true
	res := Run(context.Background(), spec, opts)
	t.Logf("%s\n%s", res, out.String())
	return res, out.String()
}

func mirrorOf(area string, spec lorryspec.Spec) string {
	return filepath.Join(workarea.Dir(area, spec.Name), "git")
}

// treeOf maps each file of rev in gitDir to its mode and content.
func treeOf(t *testing.T, gitDir, rev string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	out := gittest.Git(t, gitDir, nil, "ls-tree", "-r", "-z", rev)
	for _, line := range strings.Split(out, "\x00") {
		if line == "" {
			continue
		}
		meta, name, _ := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		tree[name] = f[0] + " " + catBlob(t, gitDir, f[2])
	}
	return tree
}

// catBlob returns a blob's content as it is, which gittest.Git would trim.
func catBlob(t *testing.T, gitDir, id string) string {
	t.Helper()
	cmd := exec.Command("git", "cat-file", "blob", id)
	cmd.Env = append(os.Environ(), gittest.GitEnv...)
	cmd.Dir = gitDir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git cat-file blob %s: %v", id, err)
	}
	return string(out)
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func equalTrees(got, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func TestArchiveFormats(t *testing.T) {
	srv := newFileServer(t, false)
	project := []archEntry{
		{name: "proj-1.0/", typ: tar.TypeDir},
		{name: "proj-1.0/README", body: "read me\n"},
		{name: "proj-1.0/bin/run", body: "#!/bin/sh\n", mode: 0o775},
		{name: "proj-1.0/doc/link", typ: tar.TypeSymlink, link: "../README"},
	}
	projectTree := map[string]string{
		"proj-1.0/README":   "100644 read me\n",
		"proj-1.0/bin/run":  "100755 #!/bin/sh\n",
		"proj-1.0/doc/link": "120000 ../README",
	}
	tests := []struct {
		name     string
		typ      string
		file     string
		data     []byte
		wantTree map[string]string
		wantTag  string
		wantNote string
	}{
		{name: "tar.gz", typ: "tarball", file: "proj-1.0.tar.gz", data: gzipped(t, makeTar(t, project...), time.Time{}),
			wantTree: projectTree, wantTag: "proj-1.0"},
		{name: "plain tar", typ: "tarball", file: "proj-1.0.tar", data: makeTar(t, project...),
			wantTree: projectTree, wantTag: "proj-1.0"},
		{name: "tar.xz", typ: "tarball", file: "proj-1.0.txz", data: xzed(t, makeTar(t, project...)),
			wantTree: projectTree, wantTag: "proj-1.0"},
		{name: "tar.bz2", typ: "tarball", file: "hello-1.0.tar.bz2", data: readFixture(t, "hello-1.0.tar.bz2"),
			wantTree: map[string]string{
				"hello-1.0/README":    "100644 hello from bzip2\n",
				"hello-1.0/bin/hello": "100755 #!/bin/sh\necho hello\n",
			}, wantTag: "hello-1.0"},
		{name: "compression told by content, not name", typ: "tarball", file: "misnamed.tar.bz2",
			data: gzipped(t, makeTar(t, project...), time.Time{}), wantTree: projectTree, wantTag: "misnamed"},
		{name: "zip", typ: "zip", file: "proj-1.0.zip", data: makeZip(t, project...),
			wantTree: projectTree, wantTag: "proj-1.0"},
		{name: "gzip", typ: "gzip", file: "notes-2.txt.gz", data: gzipped(t, []byte("just a file\n"), entryTime),
			wantTree: map[string]string{"notes-2.txt": "100644 just a file\n"}, wantTag: "notes-2.txt"},
		{name: "hard link copied, devices skipped", typ: "tarball", file: "links.tgz",
			data: gzipped(t, makeTar(t,
				archEntry{name: "a/data", body: "shared\n", mode: 0o755},
				archEntry{name: "a/same", typ: tar.TypeLink, link: "a/data"},
				archEntry{name: "a/null", typ: tar.TypeChar},
				archEntry{name: "a/pipe", typ: tar.TypeFifo},
			), time.Time{}),
			wantTree: map[string]string{"a/data": "100755 shared\n", "a/same": "100755 shared\n"},
			wantTag:  "links", wantNote: `skipping character device "a/null"`},
		{name: "modes normalised", typ: "tarball", file: "modes.tar",
			data: makeTar(t,
				archEntry{name: "private", body: "p", mode: 0o600},
				archEntry{name: "group-exec", body: "g", mode: 0o710},
				archEntry{name: "setuid", body: "s", mode: 0o4755},
			),
			wantTree: map[string]string{"private": "100644 p", "group-exec": "100755 g", "setuid": "100755 s"},
			wantTag:  "modes"},
		{name: "later entry wins", typ: "tarball", file: "dup.tar",
			data:     makeTar(t, archEntry{name: "f", body: "old"}, archEntry{name: "./f", body: "new"}),
			wantTree: map[string]string{"f": "100644 new"}, wantTag: "dup"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url := srv.put(t, fmt.Sprintf("%d/%s", i, tc.file), tc.data, entryTime)
			spec := archiveSpec(tc.typ, url, nil)
			area := t.TempDir()
			res, out := runArchive(t, spec, Options{WorkingArea: area, PullOnly: true})
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			git := mirrorOf(area, spec)
			if got := treeOf(t, git, "refs/heads/master"); !equalTrees(got, tc.wantTree) {
				t.Errorf("tree = %q; want %q", got, tc.wantTree)
			}
			refs := refsOf(t, git)
			if got, want := refs["refs/tags/"+tc.wantTag], refs["refs/heads/master"]; got != want {
				t.Errorf("tag %s = %q; want the branch head %q (refs %v)", tc.wantTag, got, want, refs)
			}
			if len(refs) != 2 {
				t.Errorf("refs = %v; want the branch and one tag", refs)
			}
			if tc.wantNote != "" && !strings.Contains(out, tc.wantNote) {
				t.Errorf("output does not say %q", tc.wantNote)
			}
		})
	}
}

// The commit depends on the archive only: its author, dates and message
// are fixed, so that any lorry importing it gets the same id.
func TestArchiveReproducible(t *testing.T) {
	newest := time.Date(2023, 5, 6, 7, 8, 9, 0, time.UTC)
	data := gzipped(t, makeTar(t,
		archEntry{name: "z/old", body: "old\n", mtime: newest.Add(-time.Hour)},
		archEntry{name: "a/new", body: "new\n", mtime: newest},
	), time.Time{})
	srv := newFileServer(t, false)
	url := srv.put(t, "rel/zlib-1.3.tar.gz", data, time.Now())
	local := filepath.Join(t.TempDir(), "zlib-1.3.tar.gz")
	if err := os.WriteFile(local, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, u := range []string{url, url, "file://" + local, local} {
		spec := archiveSpec("tarball", u, nil)
		area := t.TempDir()
		if res, _ := runArchive(t, spec, Options{WorkingArea: area, PullOnly: true}); res.Err != nil {
			t.Fatalf("%s: %v", u, res.Err)
		}
		ids = append(ids, gittest.Git(t, mirrorOf(area, spec), nil, "rev-parse", "refs/heads/master"))
		if len(ids) == 1 {
			got := gittest.Git(t, mirrorOf(area, spec), nil, "show", "-s", "--format=%an <%ae>|%cn <%ce>|%at|%ct|%B", "refs/heads/master")
			want := fmt.Sprintf("Lorry <lorry@localhost>|Lorry <lorry@localhost>|%d|%d|Import zlib-1.3.tar.gz\n\nsha256 %s",
				newest.Unix(), newest.Unix(), sha256Hex(data))
			if got != want {
				t.Errorf("commit = %q; want %q", got, want)
			}
		}
	}
	for i, id := range ids[1:] {
		if id != ids[0] {
			t.Errorf("import %d made commit %s; want %s, as the first", i+2, id, ids[0])
		}
	}
}

func TestArchiveCommitDate(t *testing.T) {
	tests := []struct {
		name string
		typ  string
		data []byte
		want int64
	}{
		{name: "gzip header time", typ: "gzip", data: gzipped(t, []byte("x"), entryTime), want: entryTime.Unix()},
		{name: "gzip without a time", typ: "gzip", data: gzipped(t, []byte("x"), time.Time{}), want: 0},
		{name: "zip newest entry", typ: "zip", data: makeZip(t,
			archEntry{name: "a", body: "a", mtime: entryTime},
			archEntry{name: "b", body: "b", mtime: entryTime.Add(48 * time.Hour)},
		), want: entryTime.Add(48 * time.Hour).Unix()},
		{name: "tar before 1970", typ: "tarball", data: makeTar(t, archEntry{name: "a", body: "a", mtime: time.Unix(-5000, 0)}), want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "f.gz")
			if err := os.WriteFile(file, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			spec := archiveSpec(tc.typ, file, nil)
			area := t.TempDir()
			if res, _ := runArchive(t, spec, Options{WorkingArea: area, PullOnly: true}); res.Err != nil {
				t.Fatal(res.Err)
			}
			got := gittest.Git(t, mirrorOf(area, spec), nil, "show", "-s", "--format=%at %ct", "refs/heads/master")
			if want := fmt.Sprintf("%d %d", tc.want, tc.want); got != want {
				t.Errorf("author and committer dates = %s; want %s", got, want)
			}
		})
	}
}

// A re-run with the same archive makes nothing; a new version makes a
// commit on top of the last, with a tag of its own.
func TestArchiveNewVersions(t *testing.T) {
	srv := newFileServer(t, false)
	down := downstream(t)
	area := t.TempDir()
	v1 := gzipped(t, makeTar(t, archEntry{name: "zlib/a", body: "1\n"}, archEntry{name: "zlib/gone", body: "x\n"}), time.Time{})
	url1 := srv.put(t, "zlib-1.3.tar.gz", v1, entryTime)
	spec := archiveSpec("tarball", url1, nil)
	opts := Options{WorkingArea: area, PushURL: down}
	git := mirrorOf(area, spec)

	res, _ := runArchive(t, spec, opts)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if got, want := strings.Join(res.Changes.Created, " "), "refs/heads/master refs/tags/zlib-1.3"; got != want {
		t.Errorf("first run created %q; want %q", got, want)
	}
	first := refsOf(t, git)["refs/heads/master"]

	res, out := runArchive(t, spec, opts)
	if res.Err != nil || len(res.Changes.Created)+len(res.Changes.Updated) != 0 || res.Changes.Unchanged != 2 {
		t.Errorf("re-run = %v; want 2 refs unchanged", res)
	}
	if got := srv.lastStatus(); got != http.StatusNotModified {
		t.Errorf("re-run got HTTP status %d; want %d: the server was not asked whether the file changed", got, http.StatusNotModified)
	}
	if !strings.Contains(out, "nothing to import") {
		t.Errorf("re-run output does not say there was nothing to import")
	}

	// The same content downloaded again, when the server cannot tell.
	srv.put(t, "zlib-1.3.tar.gz", v1, entryTime.Add(time.Hour))
	if res, _ = runArchive(t, spec, opts); res.Err != nil || res.Changes.Unchanged != 2 {
		t.Errorf("re-run with the same bytes = %v; want 2 refs unchanged", res)
	}

	v2 := gzipped(t, makeTar(t, archEntry{name: "zlib/a", body: "2\n"}, archEntry{name: "zlib/b", body: "new\n"}), time.Time{})
	spec.Raw["url"] = srv.put(t, "zlib-1.3.1.tar.gz", v2, entryTime)
	res, _ = runArchive(t, spec, opts)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	refs := refsOf(t, git)
	second := refs["refs/heads/master"]
	if got := gittest.Git(t, git, nil, "rev-parse", second+"^"); got != first {
		t.Errorf("parent of the second import = %s; want the first, %s", got, first)
	}
	if refs["refs/tags/zlib-1.3"] != first || refs["refs/tags/zlib-1.3.1"] != second {
		t.Errorf("tags = %v; want zlib-1.3 at %s and zlib-1.3.1 at %s", refs, first, second)
	}
	want := map[string]string{"zlib/a": "100644 2\n", "zlib/b": "100644 new\n"}
	if got := treeOf(t, git, second); !equalTrees(got, want) {
		t.Errorf("second tree = %q; want %q (the archive's files only)", got, want)
	}
	if got := refsOf(t, down); !equalRefs(got, refs) {
		t.Errorf("downstream refs = %v; want the mirror's %v", got, refs)
	}

	// The release tarball replaced upstream under the same name.
	v3 := gzipped(t, makeTar(t, archEntry{name: "zlib/a", body: "3\n"}), time.Time{})
	srv.put(t, "zlib-1.3.1.tar.gz", v3, entryTime.Add(time.Hour))
	res, out = runArchive(t, spec, opts)
	if res.Err != nil || strings.Join(res.Changes.Updated, " ") != "refs/heads/master refs/tags/zlib-1.3.1" {
		t.Errorf("run with a replaced archive = %v; want the branch and its tag updated", res)
	}
	if !strings.Contains(out, "moving tag zlib-1.3.1") {
		t.Error("moving a tag is not said in the output")
	}
}

// A mirror that lost its state file does not make a commit that changes
// nothing.
func TestArchiveLostState(t *testing.T) {
	file := filepath.Join(t.TempDir(), "x-1.tar")
	if err := os.WriteFile(file, makeTar(t, archEntry{name: "x", body: "x"}), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := archiveSpec("tarball", file, nil)
	area := t.TempDir()
	if res, _ := runArchive(t, spec, Options{WorkingArea: area, PullOnly: true}); res.Err != nil {
		t.Fatal(res.Err)
	}
	if err := os.Remove(filepath.Join(workarea.Dir(area, spec.Name), "archive", "state.json")); err != nil {
		t.Fatal(err)
	}
	res, out := runArchive(t, spec, Options{WorkingArea: area, PullOnly: true})
	if res.Err != nil || res.Changes.Unchanged != 2 || len(res.Changes.Updated) != 0 {
		t.Errorf("run without state = %v; want 2 refs unchanged", res)
	}
	if !strings.Contains(out, "no new commit") {
		t.Error("output does not say that no commit was made")
	}
}

func TestArchiveBranch(t *testing.T) {
	file := filepath.Join(t.TempDir(), "x-1.zip")
	if err := os.WriteFile(file, makeZip(t, archEntry{name: "x", body: "x"}), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		branch  any
		want    string
		wantErr string
	}{
		{name: "default", want: "refs/heads/master"},
		{name: "named", branch: "upstream/releases", want: "refs/heads/upstream/releases"},
		{name: "full ref", branch: "refs/heads/imports", want: "refs/heads/imports"},
		{name: "bad", branch: "two words", wantErr: `"branch" "two words" is not a usable branch name`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fields := map[string]any{}
			if tc.branch != nil {
				fields["branch"] = tc.branch
			}
			spec := archiveSpec("zip", file, fields)
			area := t.TempDir()
			down := downstream(t)
			res, _ := runArchive(t, spec, Options{WorkingArea: area, PushURL: down})
			if tc.wantErr != "" {
				if res.Err == nil || !strings.Contains(res.Err.Error(), tc.wantErr) {
					t.Fatalf("err = %v; want one containing %q", res.Err, tc.wantErr)
				}
				return
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if got, want := strings.Join(res.Changes.Created, " "), tc.want+" refs/tags/x-1"; got != want {
				t.Errorf("created %q; want %q", got, want)
			}
			for _, dir := range []string{mirrorOf(area, spec), down} {
				if got := gittest.Git(t, dir, nil, "symbolic-ref", "HEAD"); got != tc.want {
					t.Errorf("HEAD of %s = %s; want %s, the only branch", filepath.Base(dir), got, tc.want)
				}
			}
		})
	}
}

func TestArchiveStrip(t *testing.T) {
	tarball := makeTar(t,
		archEntry{name: "./", typ: tar.TypeDir},
		archEntry{name: "./pkg-2/", typ: tar.TypeDir},
		archEntry{name: "./pkg-2/top", body: "t"},
		archEntry{name: "./pkg-2/src/main.c", body: "m"},
	)
	tests := []struct {
		name    string
		typ     string
		data    []byte
		strip   int
		want    map[string]string
		wantErr string
	}{
		{name: "none keeps the top directory", typ: "tarball", data: tarball, strip: 0,
			want: map[string]string{"pkg-2/top": "100644 t", "pkg-2/src/main.c": "100644 m"}},
		{name: "the leading ./ counts, as for tar", typ: "tarball", data: tarball, strip: 1,
			want: map[string]string{"pkg-2/top": "100644 t", "pkg-2/src/main.c": "100644 m"}},
		{name: "top directory", typ: "tarball", data: tarball, strip: 2,
			want: map[string]string{"top": "100644 t", "src/main.c": "100644 m"}},
		{name: "entries that vanish are skipped", typ: "tarball", data: tarball, strip: 3,
			want: map[string]string{"main.c": "100644 m"}},
		{name: "nothing left", typ: "tarball", data: tarball, strip: 4,
			wantErr: "no files left once 4 leading path components are stripped"},
		{name: "zip", typ: "zip", data: makeZip(t, archEntry{name: "z-1/", typ: tar.TypeDir}, archEntry{name: "z-1/a/b", body: "b"}), strip: 1,
			want: map[string]string{"a/b": "100644 b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "pkg-2.tar")
			if err := os.WriteFile(file, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			spec := archiveSpec(tc.typ, file, map[string]any{"strip": tc.strip})
			area := t.TempDir()
			res, _ := runArchive(t, spec, Options{WorkingArea: area, PullOnly: true})
			if tc.wantErr != "" {
				if res.Err == nil || !strings.Contains(res.Err.Error(), tc.wantErr) {
					t.Fatalf("err = %v; want one containing %q", res.Err, tc.wantErr)
				}
				return
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if got := treeOf(t, mirrorOf(area, spec), "refs/heads/master"); !equalTrees(got, tc.want) {
				t.Errorf("tree = %q; want %q", got, tc.want)
			}
		})
	}
}

// Hostile entries fail the import, naming the entry, and leave the mirror
// as it was: no ref moves and no object is added.
func TestArchiveHostileEntries(t *testing.T) {
	good := archEntry{name: "ok/file", body: "fine"}
	tests := []struct {
		name    string
		typ     string
		data    []byte
		wantErr string
	}{
		{name: "parent", typ: "tarball", data: makeTar(t, good, archEntry{name: "../evil", body: "x"}),
			wantErr: `entry "../evil" leaves the tree`},
		{name: "parent inside", typ: "tarball", data: makeTar(t, good, archEntry{name: "a/../../evil", body: "x"}),
			wantErr: `entry "a/../../evil" leaves the tree`},
		{name: "absolute", typ: "tarball", data: makeTar(t, good, archEntry{name: "/abs", body: "x"}),
			wantErr: `entry "/abs" has an absolute path`},
		{name: "git config", typ: "tarball", data: makeTar(t, good, archEntry{name: ".git/config", body: "x"}),
			wantErr: `entry ".git/config" would land in .git`},
		{name: "git hooks in any case", typ: "tarball", data: makeTar(t, good, archEntry{name: "sub/.GIT/hooks/post-checkout", body: "x"}),
			wantErr: `would land in .git`},
		{name: "git below the top", typ: "tarball", data: makeTar(t, archEntry{name: "top/.git/config", body: "x"}),
			wantErr: `entry "top/.git/config" would land in .git`},
		{name: "hard link out", typ: "tarball", data: makeTar(t, good, archEntry{name: "passwd", typ: tar.TypeLink, link: "/etc/passwd"}),
			wantErr: `hard link "passwd": entry "/etc/passwd" has an absolute path`},
		{name: "zip parent", typ: "zip", data: makeZip(t, good, archEntry{name: "../evil", body: "x"}),
			wantErr: `entry "../evil" leaves the tree`},
		{name: "zip backslash parent", typ: "zip", data: makeZip(t, good, archEntry{name: `..\evil`, body: "x"}),
			wantErr: `leaves the tree`},
		{name: "zip absolute", typ: "zip", data: makeZip(t, good, archEntry{name: "/abs", body: "x"}),
			wantErr: `entry "/abs" has an absolute path`},
		{name: "zip git", typ: "zip", data: makeZip(t, good, archEntry{name: ".git/config", body: "x"}),
			wantErr: `entry ".git/config" would land in .git`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "archive")
			if err := os.WriteFile(file, makeTar(t, archEntry{name: "before", body: "b"}), 0o644); err != nil {
				t.Fatal(err)
			}
			spec := archiveSpec(tc.typ, file, nil)
			area := t.TempDir()
			first := lorryspec.Spec{Name: spec.Name, Type: "tarball", Raw: map[string]any{"type": "tarball", "url": file}}
			if res, _ := runArchive(t, first, Options{WorkingArea: area, PullOnly: true}); res.Err != nil {
				t.Fatal(res.Err)
			}
			git := mirrorOf(area, spec)
			before := refsOf(t, git)
			objectsBefore := objectFiles(t, git)

			if err := os.WriteFile(file, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			res, _ := runArchive(t, spec, Options{WorkingArea: area, PullOnly: true})
			if res.Err == nil || !strings.Contains(res.Err.Error(), tc.wantErr) {
				t.Fatalf("err = %v; want one containing %q", res.Err, tc.wantErr)
			}
			if after := refsOf(t, git); !equalRefs(after, before) {
				t.Errorf("refs = %v; want them as before, %v", after, before)
			}
			if got := objectFiles(t, git); got != objectsBefore {
				t.Errorf("object files = %s; want them as before, %s", got, objectsBefore)
			}
			if left, _ := filepath.Glob(filepath.Join(workarea.Dir(area, spec.Name), "archive", "*")); len(left) != 1 {
				t.Errorf("left in the spec's directory: %v; want only the state file", left)
			}
		})
	}
}

// objectFiles lists the files of a repository's object store.
func objectFiles(t *testing.T, gitDir string) string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join(gitDir, "objects"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, strings.TrimPrefix(p, gitDir))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(files, " ")
}

func TestArchiveDownloadFailures(t *testing.T) {
	srv := newFileServer(t, false)
	data := makeTar(t, archEntry{name: "a", body: "a"})
	url := srv.put(t, "rel/a-1.tar", data, entryTime)
	down := downstream(t)
	area := t.TempDir()
	spec := archiveSpec("tarball", url, nil)
	if res, _ := runArchive(t, spec, Options{WorkingArea: area, PushURL: down}); res.Err != nil {
		t.Fatal(res.Err)
	}
	git := mirrorOf(area, spec)
	before := refsOf(t, git)

	tests := []struct {
		name    string
		url     string
		wantErr string
	}{
		{name: "not found", url: srv.srv.URL + "/rel/a-2.tar", wantErr: "server answered 404 Not Found"},
		{name: "unsupported scheme", url: "ftp://example.com/a-2.tar", wantErr: "only http, https and file URLs"},
		{name: "missing local file", url: "/nonexistent/a-2.tar", wantErr: "no such file"},
		{name: "no file name", url: srv.srv.URL + "/rel/", wantErr: "does not end in a file name"},
		{name: "not an archive", url: srv.put(t, "rel/page.tar", []byte("<html>moved</html>"), entryTime), wantErr: "not a tarball"},
		{name: "zip for a tarball", url: srv.put(t, "rel/z.tar", makeZip(t, archEntry{name: "a", body: "a"}), entryTime), wantErr: `use a spec of type "zip"`},
		{name: "truncated", url: srv.put(t, "rel/t.tar.gz", gzipped(t, data, time.Time{})[:40], entryTime), wantErr: "unexpected EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec.Raw["url"] = tc.url
			res, _ := runArchive(t, spec, Options{WorkingArea: area, PushURL: down})
			if res.Err == nil || !strings.Contains(res.Err.Error(), tc.wantErr) {
				t.Fatalf("err = %v; want one containing %q", res.Err, tc.wantErr)
			}
			if after := refsOf(t, git); !equalRefs(after, before) {
				t.Errorf("mirror refs = %v; want them as before, %v", after, before)
			}
			if got := refsOf(t, down); !equalRefs(got, before) {
				t.Errorf("downstream refs = %v; want them as before, %v", got, before)
			}
			if left, _ := filepath.Glob(filepath.Join(workarea.Dir(area, spec.Name), "archive", "download*")); len(left) != 0 {
				t.Errorf("downloads left behind: %v", left)
			}
		})
	}
}

func TestArchiveCheckCertificates(t *testing.T) {
	srv := newFileServer(t, true)
	url := srv.put(t, "a-1.tar", makeTar(t, archEntry{name: "a", body: "a"}), entryTime)
	spec := archiveSpec("tarball", url, nil)
	res, _ := runArchive(t, spec, Options{WorkingArea: t.TempDir(), PullOnly: true})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "certificate") {
		t.Fatalf("download from a self-signed server = %v; want certificate verification to fail", res.Err)
	}
	spec.Raw["check-certificates"] = false
	if res, _ := runArchive(t, spec, Options{WorkingArea: t.TempDir(), PullOnly: true}); res.Err != nil {
		t.Fatalf("download with check-certificates false: %v", res.Err)
	}
	// The setting is the spec's own: the next spec checks again.
	delete(spec.Raw, "check-certificates")
	if res, _ := runArchive(t, spec, Options{WorkingArea: t.TempDir(), PullOnly: true}); res.Err == nil {
		t.Error("a spec without check-certificates skipped verification after one with it false")
	}
}

func TestArchiveRedirect(t *testing.T) {
	srv := newFileServer(t, false)
	target := srv.put(t, "files/r-1.tar", makeTar(t, archEntry{name: "r", body: "r"}), entryTime)
	mux := http.NewServeMux()
	mux.Handle("/download/r-1.tar", http.RedirectHandler(target, http.StatusFound))
	front := httptest.NewServer(mux)
	defer front.Close()
	spec := archiveSpec("tarball", front.URL+"/download/r-1.tar", nil)
	area := t.TempDir()
	if res, _ := runArchive(t, spec, Options{WorkingArea: area, PullOnly: true}); res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := refsOf(t, mirrorOf(area, spec))["refs/tags/r-1"]; got == "" {
		t.Error("no tag r-1: the tag is named after the spec's URL, not where it redirects")
	}
}

// A large file is streamed into git, not held in memory, and the job's
// output shows the download and the import moving.
func TestArchiveLargeFile(t *testing.T) {
	const size = 40 << 20
	file := filepath.Join(t.TempDir(), "big-1.tar")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	if err := tw.WriteHeader(&tar.Header{Name: "big/blob", Mode: 0o644, Size: size, ModTime: entryTime}); err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 1<<20)
	for i := range block {
		block[i] = byte(i * 7 / 3)
	}
	for range size / len(block) {
		if _, err := tw.Write(block); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []io.Closer{tw, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	spec := archiveSpec("tarball", file, nil)
	area := t.TempDir()
	res, out := runArchive(t, spec, Options{WorkingArea: area, PullOnly: true})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := gittest.Git(t, mirrorOf(area, spec), nil, "cat-file", "-s", "refs/heads/master:big/blob"); got != fmt.Sprint(size) {
		t.Errorf("blob size = %s; want %d", got, size)
	}
	for _, want := range []string{"downloaded 32.0 MiB of 40.0 MiB", "imported 32.0 MiB", "imported 40.0 MiB in 1 file\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q", want)
		}
	}
}

func TestRawFile(t *testing.T) {
	srv := newFileServer(t, false)
	down := downstream(t)
	area := t.TempDir()
	urlA := srv.put(t, "a/tool.sh", []byte("echo a\n"), entryTime)
	urlB := srv.put(t, "b/data.json", []byte("{}\n"), entryTime.Add(time.Hour))
	spec := lorryspec.Spec{Name: "raw", Type: "raw-file", Raw: map[string]any{
		"type": "raw-file",
		"urls": []any{
			map[string]any{"url": urlA, "destination": "bin"},
			map[string]any{"url": urlB},
		},
	}}
	opts := Options{WorkingArea: area, PushURL: down}
	git := mirrorOf(area, spec)
	res, _ := runArchive(t, spec, opts)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	want := map[string]string{"bin/tool.sh": "100644 echo a\n", "data.json": "100644 {}\n"}
	if got := treeOf(t, git, "refs/heads/master"); !equalTrees(got, want) {
		t.Errorf("tree = %q; want %q", got, want)
	}
	refs := refsOf(t, git)
	if len(refs) != 1 {
		t.Errorf("refs = %v; want the branch only, no tag", refs)
	}
	first := refs["refs/heads/master"]
	gotMsg := gittest.Git(t, git, nil, "show", "-s", "--format=%at|%B", first)
	wantMsg := fmt.Sprintf("%d|Import raw files\n\n%s  bin/tool.sh\n%s  data.json", entryTime.Add(time.Hour).Unix(),
		sha256Hex([]byte("echo a\n")), sha256Hex([]byte("{}\n")))
	if gotMsg != wantMsg {
		t.Errorf("commit = %q; want %q", gotMsg, wantMsg)
	}

	if res, _ = runArchive(t, spec, opts); res.Err != nil || res.Changes.Unchanged != 1 || len(res.Changes.Updated) != 0 {
		t.Errorf("re-run = %v; want the branch unchanged", res)
	}

	// One file changes: the other stays; then a URL dropped from the spec
	// leaves its file in the tree.
	srv.put(t, "b/data.json", []byte(`{"v": 2}`+"\n"), entryTime.Add(2*time.Hour))
	if res, _ = runArchive(t, spec, opts); res.Err != nil {
		t.Fatal(res.Err)
	}
	second := refsOf(t, git)["refs/heads/master"]
	if got := gittest.Git(t, git, nil, "rev-parse", second+"^"); got != first {
		t.Errorf("parent = %s; want the first import %s", got, first)
	}
	want["data.json"] = "100644 {\"v\": 2}\n"
	if got := treeOf(t, git, second); !equalTrees(got, want) {
		t.Errorf("tree = %q; want %q", got, want)
	}
	spec.Raw["urls"] = []any{map[string]any{"url": srv.put(t, "c/extra.txt", []byte("c\n"), entryTime), "destination": "docs/more"}}
	if res, _ = runArchive(t, spec, opts); res.Err != nil {
		t.Fatal(res.Err)
	}
	want["docs/more/extra.txt"] = "100644 c\n"
	if got := treeOf(t, git, "refs/heads/master"); !equalTrees(got, want) {
		t.Errorf("tree = %q; want %q", got, want)
	}
	if got, want := refsOf(t, down), refsOf(t, git); !equalRefs(got, want) {
		t.Errorf("downstream refs = %v; want %v", got, want)
	}

	// A failed download of one file imports none of them.
	head := refsOf(t, git)["refs/heads/master"]
	spec.Raw["urls"] = []any{
		map[string]any{"url": srv.put(t, "c/extra.txt", []byte("c2\n"), entryTime.Add(time.Hour))},
		map[string]any{"url": srv.srv.URL + "/missing.txt"},
	}
	res, _ = runArchive(t, spec, opts)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "404 Not Found") {
		t.Fatalf("err = %v; want a 404", res.Err)
	}
	if got := refsOf(t, git)["refs/heads/master"]; got != head {
		t.Errorf("branch = %s after a failed download; want it where it was, %s", got, head)
	}
}

func TestRawFileRefusals(t *testing.T) {
	srv := newFileServer(t, false)
	url := srv.put(t, "x/f.txt", []byte("f"), entryTime)
	tests := []struct {
		name    string
		urls    []any
		wantErr string
	}{
		{name: "same place twice", urls: []any{
			map[string]any{"url": url, "destination": "d"},
			map[string]any{"url": srv.put(t, "y/f.txt", []byte("g"), entryTime), "destination": "d/"},
		}, wantErr: "would both be d/f.txt"},
		{name: "into .git", urls: []any{map[string]any{"url": srv.srv.URL + "/x/.git"}}, wantErr: "would land in .git"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := lorryspec.Spec{Name: "raw", Type: "raw-file", Raw: map[string]any{"type": "raw-file", "urls": tc.urls}}
			res, _ := runArchive(t, spec, Options{WorkingArea: t.TempDir(), PullOnly: true})
			if res.Err == nil || !strings.Contains(res.Err.Error(), tc.wantErr) {
				t.Fatalf("err = %v; want one containing %q", res.Err, tc.wantErr)
			}
		})
	}
}

func TestTreePath(t *testing.T) {
	tests := []struct {
		name    string
		entry   string
		strip   int
		want    string
		wantErr string
	}{
		{name: "plain", entry: "a/b", want: "a/b"},
		{name: "dot slash", entry: "./a//b/", want: "a/b"},
		{name: "strip", entry: "top/a/b", strip: 1, want: "a/b"},
		{name: "stripped away", entry: "top/", strip: 1, want: ""},
		{name: "dots inside names", entry: "a/..b/c..", want: "a/..b/c.."},
		{name: "git-like names", entry: "a/.gitignore", want: "a/.gitignore"},
		{name: "parent", entry: "a/../b", wantErr: "leaves the tree"},
		{name: "parent stripped", entry: "../b", strip: 1, wantErr: "leaves the tree"},
		{name: "absolute", entry: "/etc/passwd", wantErr: "absolute"},
		{name: "drive", entry: `C:\x`, wantErr: "absolute"},
		{name: "git", entry: "x/.Git", wantErr: ".git"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := treePath(tc.entry, tc.strip)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("treePath(%q, %d) = %q, %v; want an error containing %q", tc.entry, tc.strip, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("treePath(%q, %d) = %q, %v; want %q", tc.entry, tc.strip, got, err, tc.want)
			}
		})
	}
}

func TestTagName(t *testing.T) {
	tests := []struct{ name, base, want string }{
		{name: "tar.gz", base: "zlib-1.3.tar.gz", want: "zlib-1.3"},
		{name: "tgz", base: "zlib-1.3.tgz", want: "zlib-1.3"},
		{name: "tar.bz2", base: "x-2.tar.bz2", want: "x-2"},
		{name: "tbz2", base: "x-2.tbz2", want: "x-2"},
		{name: "tar.xz", base: "x-2.tar.xz", want: "x-2"},
		{name: "txz", base: "x-2.txz", want: "x-2"},
		{name: "tar", base: "x-2.tar", want: "x-2"},
		{name: "zip", base: "x-2.zip", want: "x-2"},
		{name: "gz", base: "notes.txt.gz", want: "notes.txt"},
		{name: "upper case", base: "X-2.TAR.GZ", want: "X-2"},
		{name: "other extension kept", base: "x-2.tar.lz", want: "x-2.tar.lz"},
		{name: "bad characters", base: "x 2~rc:1.tar", want: "x-2-rc-1"},
		{name: "dots", base: ".hidden..x.lock.tar", want: "hidden-x"},
		{name: "only an extension", base: ".tar.gz", want: "tar"},
	}
	j := &job{out: io.Discard}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := j.tagName(context.Background(), tc.base); got != tc.want {
				t.Errorf("tagName(%q) = %q; want %q", tc.base, got, tc.want)
			}
		})
	}
}
