package routes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusCopyFailureNamesNoPath: whichever step of the atomic write
// fails, the page and status say why without the copy's path or that of
// its temporary file, which anyone may read.
func TestStatusCopyFailureNamesNoPath(t *testing.T) {
	ts := newTestServer(t)
	b := newBrowser(t, ts)
	dir := t.TempDir()
	// A directory in the way fails the rename, not the creation.
	ts.StatusHTML = filepath.Join(dir, "status.html")
	if err := os.MkdirAll(filepath.Join(ts.StatusHTML, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := b.do("GET", "/1.0/status-html", nil, nil)
	if r.code != 200 || !strings.Contains(r.body, "on-disk copy of this page could not be written: ") {
		t.Errorf("status-html with a directory in the way = %d %.300s; want 200 with the warning", r.code, r.body)
	}
	if strings.Contains(r.body, dir) {
		t.Errorf("the page names the path of the copy or its temporary file")
	}
	_, st := ts.call(t, "GET", "/1.0/status", nil)
	if msg, _ := st["warning_msg"].(string); !strings.Contains(msg, "could not be written: ") || strings.Contains(msg, dir) {
		t.Errorf("status warning_msg = %q; want the cause without a path", msg)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("the copy's directory holds %d entries, %v; want only the directory in the way", len(entries), err)
	}
}
