package venv

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExtract(t *testing.T) {
	type entry struct {
		name, data, link string
		typ              byte
	}
	file := func(name, data string) entry { return entry{name: name, data: data, typ: tar.TypeReg} }
	dir := func(name string) entry { return entry{name: name, typ: tar.TypeDir} }
	link := func(name, target string) entry { return entry{name: name, link: target, typ: tar.TypeSymlink} }
	for _, tc := range []struct {
		name    string
		entries []entry
		max     int64
		wantErr string
		want    []string // files there afterwards
	}{
		{name: "git archive", entries: []entry{
			{name: "pax_global_header", typ: tar.TypeXGlobalHeader},
			dir("pkg/"), file("pkg/__init__.py", "x = 1\n"), file("requirements.txt", "greet\n"), link("pkg/alias.py", "__init__.py"),
		}, want: []string{"pkg/__init__.py", "pkg/alias.py", "requirements.txt"}},
		{name: "missing parents made", entries: []entry{file("a/b/c.txt", "c")}, want: []string{"a/b/c.txt"}},
		{name: "absolute", entries: []entry{file("/etc/x", "")}, wantErr: "absolute"},
		{name: "dot dot", entries: []entry{file("a/../../x", "")}, wantErr: "leaves the directory"},
		{name: "absolute link", entries: []entry{link("l", "/etc")}, wantErr: "relative target"},
		{name: "link up", entries: []entry{link("l", "a/../..")}, wantErr: "may not point up"},
		{name: "through a link", entries: []entry{dir("d/"), link("l", "d"), file("l/x", "")}, wantErr: "not a directory"},
		{name: "hard link", entries: []entry{file("a", ""), {name: "b", link: "a", typ: tar.TypeLink}}, wantErr: "not allowed"},
		{name: "device", entries: []entry{{name: "dev", typ: tar.TypeChar}}, wantErr: "not allowed"},
		{name: "too big", entries: []entry{file("a", "12345"), file("b", "67890")}, max: 8, wantErr: "more than 8 bytes"},
		{name: "twice", entries: []entry{file("a", "1"), file("a", "2")}, wantErr: "exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			for _, e := range tc.entries {
				h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: 0o644, Size: int64(len(e.data))}
				if e.typ == tar.TypeXGlobalHeader {
					h = &tar.Header{Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"comment": id1}}
				}
				if err := tw.WriteHeader(h); err != nil {
					t.Fatal(err)
				}
				tw.Write([]byte(e.data))
			}
			tw.Close()
			root := t.TempDir()
			dst := filepath.Join(root, "src")
			os.Mkdir(dst, 0o755)
			max := tc.max
			if max == 0 {
				max = DefaultMaxSourceSize
			}
			err := extract(&buf, dst, max)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("extract = %v; want an error with %q", err, tc.wantErr)
				}
				if entries, _ := os.ReadDir(root); len(entries) != 1 {
					t.Errorf("extract wrote beside its directory: %v", entries)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range tc.want {
				if _, err := os.Stat(filepath.Join(dst, f)); err != nil {
					t.Errorf("after extract: %v", err)
				}
			}
		})
	}
}
