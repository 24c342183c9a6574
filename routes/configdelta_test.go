package routes

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/confgit"
)

// TestReadConfigurationReadsOnlyChangedFiles pushes commits that change a
// few .lorry files: each is read as a change of the commit before, only
// its changed files read, and leaves the run queue as a whole read
// would; a commit that a change cannot express is read whole.
func TestReadConfigurationReadsOnlyChangedFiles(t *testing.T) {
	repo := newConfRepo(t)
	conf := `[{"type": "lorries", "prefix": "a", "globs": ["a/*.lorry"]},
  {"type": "lorries", "prefix": "b", "globs": ["b/*.lorry"]}]`
	spec := func(names ...string) string {
		var s []string
		for _, n := range names {
			s = append(s, `"`+n+`": {"type": "git", "url": "https://example.com/`+n+`.git"}`)
		}
		return "{" + strings.Join(s, ", ") + "}"
	}
	repo.commit(map[string]string{confgit.ConfFile: conf,
		"a/1.lorry": spec("x", "y"), "a/2.lorry": spec("z"), "b/3.lorry": spec("w")})
	logs := &logRecords{}
	ts := newScraperServer(t, repo)
	ts.Log = slog.New(logs)
	read := func() (map[string]any, string) {
		t.Helper()
		m := ts.readConfig(t)
		applied := logs.find("configuration applied")
		return m, applied[len(applied)-1]["files_read"]
	}
	queue := func() []string {
		_, q := ts.call(t, "GET", "/1.0/list-queue", nil)
		got := toStrings(q["queue"])
		slices.Sort(got)
		return got
	}
	if m, files := read(); m["lorries"] != 4.0 || files != "-1" {
		t.Fatalf("first read = %v, files read %s; want 4 lorries, read whole", m, files)
	}

	// x changes, y goes, v comes; a/2.lorry goes; b/4.lorry comes.
	if err := os.Remove(filepath.Join(repo.dir, "a", "2.lorry")); err != nil {
		t.Fatal(err)
	}
	repo.commit(map[string]string{"a/1.lorry": `{"x": {"type": "git", "url": "https://example.com/x2.git"}, ` +
		`"v": {"type": "git", "url": "https://example.com/v.git"}}`, "b/4.lorry": spec("u")})
	m, files := read()
	if m["lorries"] != 4.0 || m["added"] != 2.0 || m["changed"] != 1.0 || m["removed"] != 2.0 || files != "3" {
		t.Errorf("read of a change = %v, files read %s; want 4 lorries, 2 added, 1 changed, 2 removed, 3 files read", m, files)
	}
	if got, want := queue(), []string{"a/v", "a/x", "b/u", "b/w"}; !slices.Equal(got, want) {
		t.Errorf("queue = %v; want %v", got, want)
	}
	_, st := ts.call(t, "GET", "/1.0/status?run_queue=false", nil)
	if c, _ := st["configuration"].(map[string]any); c["lorries"] != 4.0 || c["commit"] != m["commit"] {
		t.Errorf("status configuration = %v; want 4 lorries of commit %v", c, m["commit"])
	}

	// A file broken by a change keeps its lorries, and is read again
	// whole once fixed.
	repo.commit(map[string]string{"a/1.lorry": `{"x": `})
	if m, files := read(); m["lorries"] != 2.0 || len(m["errors"].([]any)) != 1 || files != "1" {
		t.Errorf("read of a broken file = %v, files read %s; want 2 lorries, 1 error, 1 file read", m, files)
	}
	if got := queue(); len(got) != 4 {
		t.Errorf("queue after a file broke = %v; want its lorries kept", got)
	}
	repo.commit(map[string]string{"a/1.lorry": spec("x")})
	if m, files := read(); m["lorries"] != 3.0 || m["removed"] != 1.0 || len(m["errors"].([]any)) != 0 || files != "-1" {
		t.Errorf("read of the fixed file = %v, files read %s; want 3 lorries, a/v removed, read whole", m, files)
	}

	// A path that an unchanged file defines: the whole read says which
	// file keeps it.
	repo.commit(map[string]string{"b/5.lorry": spec("w")})
	m, files = read()
	errs, _ := m["errors"].([]any)
	if files != "-1" || len(errs) != 1 || !strings.Contains(errs[0].(map[string]any)["error"].(string), "already defined") {
		t.Errorf("read of a path defined twice = %v, files read %s; want read whole, b/5.lorry skipped", m, files)
	}

	// lorry-controller.conf changed: read whole.
	repo.commit(map[string]string{confgit.ConfFile: strings.Replace(conf, `"a/*.lorry"]`, `"a/*.lorry"], "interval": "2h"`, 1)})
	if m, files := read(); m["changed"] != 1.0 || files != "-1" {
		t.Errorf("read after lorry-controller.conf changed = %v, files read %s; want a/x changed, read whole", m, files)
	}
}
