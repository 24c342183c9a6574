package lorryspec

import (
	"reflect"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		wantErr string // "" for a good spec
	}{
		{name: "git", spec: `{"type": "git", "url": "https://h/r.git", "refspecs": ["+refs/heads/*"], "prune": true, "future": 1}`},
		{name: "git without url", spec: `{"type": "git"}`, wantErr: `git spec needs a "url" string`},
		{name: "git refspecs not a list", spec: `{"type": "git", "url": "u", "refspecs": "x"}`, wantErr: `"refspecs" must be a list, not a string`},
		{name: "git check-certificates not a boolean", spec: `{"type": "git", "url": "u", "check-certificates": "no"}`, wantErr: `"check-certificates" must be a boolean, not a string`},
		{name: "tarball", spec: `{"type": "tarball", "url": "https://h/x.tar.gz", "strip": 1}`},
		{name: "zip without url", spec: `{"type": "zip"}`, wantErr: `zip spec needs a "url" string`},
		{name: "negative strip", spec: `{"type": "gzip", "url": "u", "strip": -1}`, wantErr: `"strip" must not be negative`},
		{name: "raw-file", spec: `{"type": "raw-file", "urls": [{"url": "https://h/a", "destination": "docs"}, {"url": "https://h/b"}]}`},
		{name: "raw-file without urls", spec: `{"type": "raw-file"}`, wantErr: `raw-file spec needs "urls"`},
		{name: "raw-file escaping destination", spec: `{"type": "raw-file", "urls": [{"url": "u", "destination": "../x"}]}`, wantErr: "must stay inside the tree"},
		{name: "raw-file absolute destination", spec: `{"type": "raw-file", "urls": [{"url": "u", "destination": "/etc"}]}`, wantErr: "must be a relative path"},
		{name: "raw-file into .git", spec: `{"type": "raw-file", "urls": [{"url": "u", "destination": "a/.git"}]}`, wantErr: "must stay inside the tree"},
		{name: "svn standard", spec: `{"type": "svn", "url": "svn://h/r", "layout": "standard"}`},
		{name: "svn custom layout", spec: `{"type": "svn", "url": "svn://h/r", "layout": {"trunk": "main", "branches": "br/*"}}`},
		{name: "svn bad layout", spec: `{"type": "svn", "url": "svn://h/r", "layout": "odd"}`, wantErr: `"layout" must be "standard" or an object`},
		{name: "svn layout without trunk", spec: `{"type": "svn", "url": "svn://h/r", "layout": {"tags": "t"}}`, wantErr: `"layout" needs a "trunk"`},
		{name: "hg", spec: `{"type": "hg", "url": "https://h/r"}`},
		{name: "bzr branches", spec: `{"type": "bzr", "branches": {"trunk": "bzr://h/trunk"}}`},
		{name: "bzr without url or branches", spec: `{"type": "bzr"}`, wantErr: `bzr spec needs a "url" string or "branches"`},
		{name: "cvs", spec: `{"type": "cvs", "url": ":pserver:anon@h:/cvs", "module": "m"}`},
		{name: "cvs without module", spec: `{"type": "cvs", "url": ":pserver:anon@h:/cvs"}`, wantErr: `cvs spec needs a "module" string`},
		{name: "unknown type", spec: `{"type": "darcs", "url": "u"}`, wantErr: `unknown type "darcs"`},
		{name: "not an object", spec: `"git"`, wantErr: "must be an object, not a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := DecodeJSON([]byte(tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Check(v)
			if tc.wantErr == "" && err != nil {
				t.Errorf("Check(%s) = %v; want no error", tc.spec, err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Check(%s) = %v; want an error containing %q", tc.spec, err, tc.wantErr)
			}
		})
	}
}

func TestReadAndDecode(t *testing.T) {
	specs, err := Read([]byte("b/x:\n  type: svn\n  url: svn://h/r\n  layout: {trunk: main, branches: br/*}\na:\n  type: git\n  url: https://h/a.git\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || specs[0].Name != "a" || specs[1].Name != "b/x" {
		t.Fatalf("specs = %+v; want a, b/x in order", specs)
	}
	v, err := specs[1].Decode()
	if err != nil {
		t.Fatal(err)
	}
	layout, err := v.(*Svn).ParsedLayout()
	if want := (SvnLayout{Trunk: "main", Branches: "br"}); err != nil || layout != want {
		t.Errorf("layout = %+v, %v; want %+v", layout, err, want)
	}
	g, err := specs[0].Decode()
	if want := (&Git{URL: "https://h/a.git"}); err != nil || !reflect.DeepEqual(g, want) {
		t.Errorf("git = %+v, %v; want %+v", g, err, want)
	}
	if _, err := Read([]byte(`{"ok": {"type": "git", "url": "u"}, "bad": {"type": "git"}}`)); err == nil || !strings.Contains(err.Error(), `spec "bad"`) {
		t.Errorf("Read with a broken spec = %v; want an error naming it", err)
	}
	if _, err := Read([]byte(`{}`)); err == nil {
		t.Error("Read of an empty mapping succeeded; want an error")
	}
}
