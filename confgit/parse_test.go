package confgit

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"lorrycontroller.dev/lc/wire"
)

func mapFS(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, content := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(content)}
	}
	return fsys
}

func mustParse(t *testing.T, files map[string]string) *Config {
	t.Helper()
	cfg, err := Parse(mapFS(files))
	if err != nil {
		t.Fatalf("Parse: got error %v, want none", err)
	}
	return cfg
}

func lorryPaths(cfg *Config) []string {
	out := []string{}
	for _, l := range cfg.Lorries {
		out = append(out, l.Path)
	}
	return out
}

func findLorry(t *testing.T, cfg *Config, path string) Lorry {
	t.Helper()
	for _, l := range cfg.Lorries {
		if l.Path == path {
			return l
		}
	}
	t.Fatalf("no lorry %q; got %v", path, lorryPaths(cfg))
	return Lorry{}
}

func TestParseEmptyConfigurations(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
	}{
		{name: "no conf file", files: map[string]string{"x.lorry": `{"a": {"type": "git", "url": "u"}}`}},
		{name: "empty list", files: map[string]string{ConfFile: "[]", "x.lorry": `{"a": {"type": "git", "url": "u"}}`}},
		{name: "empty list with spaces", files: map[string]string{ConfFile: " [ ]\n"}},
		{name: "nothing at all", files: map[string]string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mustParse(t, tc.files)
			if len(cfg.Lorries) != 0 || len(cfg.Hosts) != 0 || len(cfg.Errors) != 0 {
				t.Errorf("got %d lorries, %d hosts, %d errors; want an empty configuration", len(cfg.Lorries), len(cfg.Hosts), len(cfg.Errors))
			}
			if cfg.Lorries == nil || cfg.Hosts == nil || cfg.Errors == nil {
				t.Errorf("got nil slices (%v, %v, %v), want empty ones so that JSON shows []", cfg.Lorries == nil, cfg.Hosts == nil, cfg.Errors == nil)
			}
		})
	}
}

func TestParseBrokenConf(t *testing.T) {
	tests := []struct {
		name        string
		conf        string
		wantSection int
		wantKey     string
		wantErr     string
	}{
		{name: "bad JSON", conf: `[{"type": "lorries",}]`, wantSection: -1, wantErr: "invalid JSON at line 1"},
		{name: "bad JSON on a later line", conf: "[\n {\"type\": \"lorries\"\n ,,}]", wantSection: -1, wantErr: "line 3"},
		{name: "truncated", conf: `[{"type": "lorries"`, wantSection: -1, wantErr: "unexpected end"},
		{name: "empty file", conf: ``, wantSection: -1, wantErr: "empty file"},
		{name: "trailing garbage", conf: `[] []`, wantSection: -1, wantErr: "after the top-level value"},
		{name: "not a list", conf: `{"type": "lorries"}`, wantSection: -1, wantErr: "must be a JSON list of sections, not an object"},
		{name: "item not an object", conf: `[{"type": "trove", "host": "h"}, "lorries"]`, wantSection: 1, wantErr: "must be an object, not a string"},
		{name: "missing type", conf: `[{"prefix": "p", "globs": []}]`, wantSection: 0, wantKey: "type", wantErr: "missing"},
		{name: "type not a string", conf: `[{"type": 3}]`, wantSection: 0, wantKey: "type", wantErr: "must be a string, not a number"},
		{name: "unknown type", conf: `[{"type": "troves", "host": "h"}]`, wantSection: 0, wantKey: "type", wantErr: `unknown type "troves"`},
		{name: "missing prefix", conf: `[{"type": "lorries", "globs": ["*.lorry"]}]`, wantSection: 0, wantKey: "prefix", wantErr: "missing"},
		{name: "prefix not a string", conf: `[{"type": "lorries", "prefix": ["p"], "globs": []}]`, wantSection: 0, wantKey: "prefix", wantErr: "must be a string, not a list"},
		{name: "prefix with dotdot", conf: `[{"type": "lorries", "prefix": "../p", "globs": []}]`, wantSection: 0, wantKey: "prefix", wantErr: `".." segment`},
		{name: "absolute prefix", conf: `[{"type": "lorries", "prefix": "/p", "globs": []}]`, wantSection: 0, wantKey: "prefix", wantErr: "absolute"},
		{name: "prefix with trailing slash", conf: `[{"type": "lorries", "prefix": "p/", "globs": []}]`, wantSection: 0, wantKey: "prefix", wantErr: "empty segment"},
		{name: "missing globs", conf: `[{"type": "lorries", "prefix": "p"}]`, wantSection: 0, wantKey: "globs", wantErr: "missing"},
		{name: "globs a string", conf: `[{"type": "lorries", "prefix": "p", "globs": "*.lorry"}]`, wantSection: 0, wantKey: "globs", wantErr: "must be a list of strings, not a string"},
		{name: "glob not a string", conf: `[{"type": "lorries", "prefix": "p", "globs": ["a", 1]}]`, wantSection: 0, wantKey: "globs", wantErr: "item [1] must be a string"},
		{name: "bad glob", conf: `[{"type": "lorries", "prefix": "p", "globs": ["x/[a-"]}]`, wantSection: 0, wantKey: "globs", wantErr: "syntax error"},
		{name: "absolute glob", conf: `[{"type": "lorries", "prefix": "p", "globs": ["/x/*"]}]`, wantSection: 0, wantKey: "globs", wantErr: "absolute"},
		{name: "bad interval", conf: `[{"type": "lorries", "prefix": "p", "globs": [], "interval": "soon"}]`, wantSection: 0, wantKey: "interval", wantErr: `interval "soon"`},
		{name: "zero interval", conf: `[{"type": "lorries", "prefix": "p", "globs": [], "interval": 0}]`, wantSection: 0, wantKey: "interval", wantErr: "not positive"},
		{name: "interval a boolean", conf: `[{"type": "lorries", "prefix": "p", "globs": [], "interval": true}]`, wantSection: 0, wantKey: "interval", wantErr: "not a boolean"},
		{name: "bad max-backoff", conf: `[{"type": "scrapers", "prefix": "p", "globs": [], "max-backoff": "forever"}]`, wantSection: 0, wantKey: "max-backoff", wantErr: "interval"},
		{name: "zero hard-fail-after", conf: `[{"type": "lorries", "prefix": "p", "globs": [], "hard-fail-after": 0}]`, wantSection: 0, wantKey: "hard-fail-after", wantErr: "from 1"},
		{name: "hard-fail-after a string", conf: `[{"type": "lorries", "prefix": "p", "globs": [], "hard-fail-after": "3"}]`, wantSection: 0, wantKey: "hard-fail-after", wantErr: "not a string"},
		{name: "bad host hard-fail-after", conf: `[{"type": "gitlab", "host": "h", "hard-fail-after": 1.5}]`, wantSection: 0, wantKey: "hard-fail-after", wantErr: "whole number"},
		{name: "bad lorry-timeout", conf: `[{"type": "lorries", "prefix": "p", "globs": [], "lorry-timeout": "-1"}]`, wantSection: 0, wantKey: "lorry-timeout", wantErr: "interval"},
		{name: "host missing", conf: `[{"type": "gitlab"}]`, wantSection: 0, wantKey: "host", wantErr: "missing"},
		{name: "host not a string", conf: `[{"type": "gitlab", "host": 1}]`, wantSection: 0, wantKey: "host", wantErr: "must be a string, not a number"},
		{name: "trovehost not a string", conf: `[{"type": "trove", "trovehost": null}]`, wantSection: 0, wantKey: "trovehost", wantErr: "must be a string, not null"},
		{name: "host empty", conf: `[{"type": "gitea", "host": ""}]`, wantSection: 0, wantKey: "host", wantErr: "empty"},
		{name: "host a URL", conf: `[{"type": "gitea", "host": "https://gitea.example.com"}]`, wantSection: 0, wantKey: "host", wantErr: "not a URL"},
		{name: "host and trovehost differ", conf: `[{"type": "trove", "host": "a", "trovehost": "b"}]`, wantSection: 0, wantKey: "trovehost", wantErr: "differs"},
		{name: "bad protocol", conf: `[{"type": "trove", "host": "h", "protocol": "git"}]`, wantSection: 0, wantKey: "protocol", wantErr: `not "git"`},
		{name: "protocol not a string", conf: `[{"type": "trove", "host": "h", "protocol": 443}]`, wantSection: 0, wantKey: "protocol", wantErr: "not a number"},
		{name: "bad on-vanish", conf: `[{"type": "gitlab", "host": "h", "on-vanish": "forget"}]`, wantSection: 0, wantKey: "on-vanish", wantErr: `not "forget"`},
		{name: "bad ls-interval", conf: `[{"type": "gitlab", "host": "h", "ls-interval": "1y"}]`, wantSection: 0, wantKey: "ls-interval", wantErr: "interval"},
		{name: "bad host interval", conf: `[{"type": "gitlab", "host": "h", "interval": "P1M"}]`, wantSection: 0, wantKey: "interval", wantErr: "ISO 8601"},
		{name: "bad host lorry-timeout", conf: `[{"type": "github", "host": "h", "lorry-timeout": []}]`, wantSection: 0, wantKey: "lorry-timeout", wantErr: "not a list"},
		{name: "prefixmap a list", conf: `[{"type": "trove", "host": "h", "prefixmap": ["a"]}]`, wantSection: 0, wantKey: "prefixmap", wantErr: "must be an object, not a list"},
		{name: "prefixmap value not a string", conf: `[{"type": "trove", "host": "h", "prefixmap": {"a": 1}}]`, wantSection: 0, wantKey: "prefixmap", wantErr: `value of "a" must be a string`},
		{name: "prefixmap value hostile", conf: `[{"type": "trove", "host": "h", "prefixmap": {"a": "../x"}}]`, wantSection: 0, wantKey: "prefixmap", wantErr: `".." segment`},
		{name: "ignore a string", conf: `[{"type": "trove", "host": "h", "ignore": "a/*"}]`, wantSection: 0, wantKey: "ignore", wantErr: "must be a list of strings"},
		{name: "ignore item not a string", conf: `[{"type": "trove", "host": "h", "ignore": [{}]}]`, wantSection: 0, wantKey: "ignore", wantErr: "item [0] must be a string, not an object"},
		{name: "ignore bad glob", conf: `[{"type": "trove", "host": "h", "ignore": ["[z-"]}]`, wantSection: 0, wantKey: "ignore", wantErr: "syntax error"},
		{name: "duplicate host", conf: `[{"type": "trove", "host": "h"}, {"type": "lorries", "prefix": "p", "globs": []}, {"type": "gitlab", "host": "h"}]`, wantSection: 2, wantKey: "host", wantErr: "already configured by section [0]"},
		{name: "duplicate host through trovehost and case", conf: `[{"type": "trove", "trovehost": "Git.Example.com"}, {"type": "trove", "trovehost": "git.example.com"}]`, wantSection: 1, wantKey: "trovehost", wantErr: "already configured"},
		{name: "error in a later section", conf: `[{"type": "lorries", "prefix": "a", "globs": []}, {"type": "lorries", "prefix": "b", "globs": [], "interval": "x"}]`, wantSection: 1, wantKey: "interval", wantErr: "interval"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse(mapFS(map[string]string{ConfFile: tc.conf, "a.lorry": `{"x": {"type": "git", "url": "u"}}`}))
			if err == nil {
				t.Fatalf("Parse = %+v, nil; want an error containing %q", cfg, tc.wantErr)
			}
			if cfg != nil {
				t.Errorf("Parse returned a Config with the error %v; want nil", err)
			}
			if !errors.Is(err, ErrBadConf) {
				t.Errorf("errors.Is(%v, ErrBadConf) = false, want true", err)
			}
			var ce *ConfError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T) is not a *ConfError", err, err)
			}
			if ce.Section != tc.wantSection || ce.Key != tc.wantKey {
				t.Errorf("got section %d key %q, want section %d key %q (%v)", ce.Section, ce.Key, tc.wantSection, tc.wantKey, err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got error %q, want it to contain %q", err, tc.wantErr)
			}
			if !strings.HasPrefix(err.Error(), ConfFile+": ") {
				t.Errorf("got error %q, want it to name %s first", err, ConfFile)
			}
		})
	}
}

func TestConfErrorMessage(t *testing.T) {
	_, err := Parse(mapFS(map[string]string{ConfFile: `[{"type": "gitlab", "host": "h"}, {"type": "gitlab", "host": "g", "ls-interval": "soon"}]`}))
	want := `lorry-controller.conf: section [1] (gitlab): key "ls-interval": interval "soon" is not a number of seconds, <n><unit> with unit s, m, h or d, or an ISO 8601 duration such as PT6H`
	if err == nil || err.Error() != want {
		t.Errorf("got error %v, want %s", err, want)
	}
}

func TestParseConfNotAFile(t *testing.T) {
	fsys := fstest.MapFS{ConfFile + "/x": &fstest.MapFile{Data: []byte("[]")}}
	_, err := Parse(fsys)
	if !errors.Is(err, ErrBadConf) || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("got error %v, want a ConfError saying it is not a regular file", err)
	}
}

func TestParseHosts(t *testing.T) {
	conf := `[
	  {"type": "trove", "trovehost": "trove.example.com", "uuid": "old", "serial": 3,
	   "prefixmap": {"baserock": "baserock", "delta": "delta/upstream"}, "ignore": ["baserock/lorries"]},
	  {"type": "gitlab", "host": "gitlab.example.com", "private-token": "s3cret", "ls-interval": "6H",
	   "interval": "PT2H", "lorry-timeout": 600, "protocol": "http", "group": "g", "check-certificates": false,
	   "max-backoff": "12h", "hard-fail-after": 5},
	  {"type": "gitea", "host": "gitea.example.com:3000", "org": "o", "auth": {"token": "t"}, "on-vanish": "archive"},
	  {"type": "github", "host": "github.com", "user": "u", "create": "always", "destroy": "never", "stagger": true, "tarball": "x", "shiny-new-key": 1}
	]`
	cfg := mustParse(t, map[string]string{ConfFile: conf})
	want := []Host{
		{Index: 0, Name: "trove.example.com", Type: "trove", Protocol: "ssh", LsInterval: 24 * time.Hour, Interval: 24 * time.Hour, Timeout: time.Hour, Queue: "default", MaxBackoff: DefaultMaxBackoff, HardFailAfter: DefaultHardFailAfter, OnVanish: "keep",
			Prefixmap: map[string]string{"baserock": "baserock", "delta": "delta/upstream"}, Ignore: []string{"baserock/lorries"}, SSHUser: "git"},
		{Index: 1, Name: "gitlab.example.com", Type: "gitlab", Protocol: "http", LsInterval: 6 * time.Hour, Interval: 2 * time.Hour, Timeout: 10 * time.Minute, Queue: "default", MaxBackoff: 12 * time.Hour, HardFailAfter: 5, OnVanish: "keep",
			Prefixmap: map[string]string{}, Ignore: []string{}, Group: "g", Token: "s3cret", TokenKey: "private-token", SkipCertificateCheck: true},
		{Index: 2, Name: "gitea.example.com:3000", Type: "gitea", Protocol: "https", LsInterval: 24 * time.Hour, Interval: 24 * time.Hour, Timeout: time.Hour, Queue: "default", MaxBackoff: DefaultMaxBackoff, HardFailAfter: DefaultHardFailAfter, OnVanish: "archive",
			Prefixmap: map[string]string{}, Ignore: []string{}, Org: "o", TokenKey: "private-token"},
		{Index: 3, Name: "github.com", Type: "github", Protocol: "https", LsInterval: 24 * time.Hour, Interval: 24 * time.Hour, Timeout: time.Hour, Queue: "default", MaxBackoff: DefaultMaxBackoff, HardFailAfter: DefaultHardFailAfter, OnVanish: "keep",
			Prefixmap: map[string]string{}, Ignore: []string{}, User: "u", TokenKey: "private-token"},
	}
	if len(cfg.Hosts) != len(want) {
		t.Fatalf("got %d hosts, want %d: %+v", len(cfg.Hosts), len(want), cfg.Hosts)
	}
	for i, h := range cfg.Hosts {
		section := h.Section
		h.Section = ""
		if !reflect.DeepEqual(h, want[i]) {
			t.Errorf("host %d:\n got %+v\nwant %+v", i, h, want[i])
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(section), &m); err != nil {
			t.Errorf("host %d: Section %q is not JSON: %v", i, section, err)
		}
	}
	if got, want := cfg.Hosts[1].Section, `{"check-certificates":false,"group":"g","hard-fail-after":5,"host":"gitlab.example.com","interval":"PT2H","lorry-timeout":600,"ls-interval":"6H","max-backoff":"12h","private-token":"s3cret","protocol":"http","type":"gitlab"}`; got != want {
		t.Errorf("Section:\n got %s\nwant %s", got, want)
	}
	if got := cfg.Hosts[2].Section; !strings.Contains(got, `"auth":{"token":"t"}`) {
		t.Errorf("Section %s does not keep auth", got)
	}
}

func TestParseLorries(t *testing.T) {
	conf := `[
	  {"type": "lorries", "prefix": "delta", "globs": ["open-source-lorries/*.lorry", "extra/**/*.lorry"], "interval": "6h", "lorry-timeout": "90m",
	   "uuid": "x", "serial": 1, "create": "always", "destroy": "never", "stagger": true, "tarball": "always", "something-new": {}},
	  {"type": "lorries", "prefix": "mirrors/yaml", "globs": ["yaml/*.lorry"], "max-backoff": "2d", "hard-fail-after": 3}
	]`
	files := map[string]string{
		ConfFile: conf,
		"open-source-lorries/gnome.lorry": `{
		  "gnome/glib": {"type": "git", "url": "https://gitlab.gnome.org/GNOME/glib.git", "check-certificates": true},
		  "gnome/gtk": {"type": "git", "url": "https://gitlab.gnome.org/GNOME/gtk.git", "refspecs": ["+refs/heads/main"]}
		}`,
		"open-source-lorries/tarballs.lorry":   `{"zlib": {"type": "tarball", "url": "https://zlib.net/zlib.tar.gz"}}`,
		"open-source-lorries/nested/x.lorry":   `{"not-matched": {"type": "git", "url": "u"}}`,
		"open-source-lorries/README":           `not a lorry`,
		"extra/a.lorry":                        `{"extra-a": {"type": "zip", "url": "https://example.com/a.zip"}}`,
		"extra/deep/down/b.lorry":              `{"extra-b": {"type": "hg", "url": "https://example.com/hg"}}`,
		"other/ignored.lorry":                  `{"ignored": {"type": "git", "url": "u"}}`,
		"yaml/apps.lorry":                      "apps/one:\n  type: git\n  url: https://example.com/one.git\n  refspecs:\n  - +refs/heads/*\napps/two:\n  type: svn\n  url: svn://example.com/two\n  layout: standard\n",
		"yaml/flow.lorry":                      "{flow: {type: raw-file, urls: [{url: 'https://example.com/f', destination: f}]}}",
		"yaml/bzr.lorry":                       "b: {type: bzr, url: 'bzr://example.com'}\nc: {type: cvs, url: ':pserver:x', module: m}\ng: {type: gzip, url: 'https://example.com/x.gz'}\n",
		"open-source-lorries/with-extra.lorry": `{"extra-keys": {"type": "git", "url": "u", "future-option": {"z": 1, "a": [1.50, 2]}}}`,
	}
	cfg := mustParse(t, files)
	wantPaths := []string{
		"delta/extra-a", "delta/extra-b", "delta/extra-keys", "delta/gnome/glib", "delta/gnome/gtk", "delta/zlib",
		"mirrors/yaml/apps/one", "mirrors/yaml/apps/two", "mirrors/yaml/b", "mirrors/yaml/c", "mirrors/yaml/flow", "mirrors/yaml/g",
	}
	if got := lorryPaths(cfg); !reflect.DeepEqual(got, wantPaths) {
		t.Errorf("paths:\n got %v\nwant %v", got, wantPaths)
	}
	if len(cfg.Errors) != 0 {
		t.Errorf("got errors %v, want none", cfg.Errors)
	}

	glib := findLorry(t, cfg, "delta/gnome/glib")
	wantGlib := Lorry{
		Path:     "delta/gnome/glib",
		Text:     `{"delta/gnome/glib":{"check-certificates":true,"type":"git","url":"https://gitlab.gnome.org/GNOME/glib.git"}}`,
		Kind:     wire.KindLorry,
		Type:     "git",
		File:     "open-source-lorries/gnome.lorry",
		Interval: 6 * time.Hour,
		Timeout:  90 * time.Minute,
		Queue:    "default",

		MaxBackoff:    DefaultMaxBackoff,
		HardFailAfter: DefaultHardFailAfter,
	}
	if glib != wantGlib {
		t.Errorf("glib:\n got %+v\nwant %+v", glib, wantGlib)
	}
	one := findLorry(t, cfg, "mirrors/yaml/apps/one")
	wantOne := Lorry{
		Path:     "mirrors/yaml/apps/one",
		Text:     `{"mirrors/yaml/apps/one":{"refspecs":["+refs/heads/*"],"type":"git","url":"https://example.com/one.git"}}`,
		Kind:     wire.KindLorry,
		Type:     "git",
		File:     "yaml/apps.lorry",
		Interval: 24 * time.Hour,
		Timeout:  time.Hour,
		Queue:    "default",

		MaxBackoff:    48 * time.Hour,
		HardFailAfter: 3,
	}
	if one != wantOne {
		t.Errorf("YAML lorry:\n got %+v\nwant %+v", one, wantOne)
	}
	if got, want := findLorry(t, cfg, "mirrors/yaml/flow").Text, `{"mirrors/yaml/flow":{"type":"raw-file","urls":[{"destination":"f","url":"https://example.com/f"}]}}`; got != want {
		t.Errorf("flow YAML Text:\n got %s\nwant %s", got, want)
	}
	// Unknown keys are kept, and numbers are kept as written.
	if got, want := findLorry(t, cfg, "delta/extra-keys").Text, `{"delta/extra-keys":{"future-option":{"a":[1.50,2],"z":1},"type":"git","url":"u"}}`; got != want {
		t.Errorf("unknown keys Text:\n got %s\nwant %s", got, want)
	}
	for path, typ := range map[string]string{"delta/zlib": "tarball", "delta/extra-a": "zip", "delta/extra-b": "hg", "mirrors/yaml/apps/two": "svn", "mirrors/yaml/b": "bzr", "mirrors/yaml/c": "cvs", "mirrors/yaml/g": "gzip"} {
		if got := findLorry(t, cfg, path).Type; got != typ {
			t.Errorf("%s: got type %q, want %q", path, got, typ)
		}
	}
}

func TestParseTextIsCanonical(t *testing.T) {
	conf := `[{"type": "lorries", "prefix": "p", "globs": ["*.lorry"]}]`
	a := mustParse(t, map[string]string{ConfFile: conf, "a.lorry": `{"x": {"url": "u", "type": "git", "b": 1, "a": 2}}`})
	b := mustParse(t, map[string]string{ConfFile: conf, "a.lorry": "x:\n  a: 2\n  type: git\n  b: 1\n  url: u\n"})
	if a.Lorries[0].Text != b.Lorries[0].Text {
		t.Errorf("JSON and YAML of the same spec differ:\n got %s\nwant %s", b.Lorries[0].Text, a.Lorries[0].Text)
	}
	if want := `{"p/x":{"a":2,"b":1,"type":"git","url":"u"}}`; a.Lorries[0].Text != want {
		t.Errorf("got Text %s, want %s", a.Lorries[0].Text, want)
	}
}

func TestParseSkipsBrokenFilesAndSpecs(t *testing.T) {
	conf := `[{"type": "lorries", "prefix": "p", "globs": ["**/*.lorry"]}]`
	tests := []struct {
		name      string
		content   string
		wantPaths []string // lorries from bad.lorry that survive
		wantErr   string   // substring of the FileError for bad.lorry
	}{
		{name: "bad JSON", content: `{"a": {"type": "git" "url": "u"}}`, wantErr: "invalid JSON at line 1"},
		{name: "truncated JSON", content: `{"a": {"type": "git", "url": "u"}`, wantErr: "invalid JSON: unexpected end of file"},
		{name: "bad YAML", content: "a: [\n", wantErr: "invalid YAML"},
		{name: "tab-indented YAML", content: "a:\n\ttype: git\n", wantErr: "invalid YAML"},
		{name: "JSON list", content: `[{"type": "git", "url": "u"}]`, wantErr: "must be a mapping of names to specs, not a list"},
		{name: "JSON string", content: `"x"`, wantErr: "must be a mapping of names to specs, not a string"},
		{name: "YAML list", content: "- a\n- b\n", wantErr: "must be a mapping of names to specs, not a list"},
		{name: "YAML scalar", content: "just text\n", wantErr: "not a scalar"},
		{name: "empty", content: "", wantErr: "not an empty document"},
		{name: "spec not an object", content: `{"a": "git://x", "ok": {"type": "git", "url": "u"}}`, wantPaths: []string{"p/ok"}, wantErr: `spec "a": must be an object, not a string`},
		{name: "spec without type", content: `{"a": {"url": "u"}, "ok": {"type": "git", "url": "u"}}`, wantPaths: []string{"p/ok"}, wantErr: `spec "a": has no "type"`},
		{name: "spec type not a string", content: `{"a": {"type": ["git"]}, "ok": {"type": "git", "url": "u"}}`, wantPaths: []string{"p/ok"}, wantErr: `spec "a": "type" must be a string, not a list`},
		{name: "spec unknown type", content: `{"a": {"type": "darcs", "url": "u"}, "ok": {"type": "git", "url": "u"}}`, wantPaths: []string{"p/ok"}, wantErr: `spec "a": unknown type "darcs"`},
		{name: "git spec without url", content: `{"a": {"type": "git"}, "ok": {"type": "git", "url": "u"}}`, wantPaths: []string{"p/ok"}, wantErr: `spec "a": git spec needs a "url" string`},
		{name: "git spec url not a string", content: `{"a": {"type": "git", "url": ["u"]}, "ok": {"type": "git", "url": "u"}}`, wantPaths: []string{"p/ok"}, wantErr: `spec "a": "url" must be a string, not a list`},
		{name: "dotdot name", content: `{"../x": {"type": "git", "url": "u"}, "ok": {"type": "git", "url": "u"}}`, wantPaths: []string{"p/ok"}, wantErr: `spec "../x": path has a ".." segment`},
		{name: "empty name", content: `{"": {"type": "git", "url": "u"}, "ok": {"type": "git", "url": "u"}}`, wantPaths: []string{"p/ok"}, wantErr: `spec "": path has an empty segment`},
		{name: "absolute-looking name", content: `{"/x": {"type": "git", "url": "u"}, "ok": {"type": "git", "url": "u"}}`, wantPaths: []string{"p/ok"}, wantErr: `spec "/x": path has an empty segment`},
		{name: "name with newline", content: `{"a\nb": {"type": "git", "url": "u"}, "ok": {"type": "git", "url": "u"}}`, wantPaths: []string{"p/ok"}, wantErr: "control character"},
		{name: "name with backslash", content: `{"a\\b": {"type": "git", "url": "u"}, "ok": {"type": "git", "url": "u"}}`, wantPaths: []string{"p/ok"}, wantErr: "backslash"},
		{name: "YAML non-string name", content: "1: {type: git, url: u}\nok: {type: git, url: u}\n", wantPaths: []string{"p/ok"}, wantErr: `spec "1": name must be a string`},
		{name: "YAML non-string key in spec", content: "a: {type: git, url: u, 3: x}\nok: {type: git, url: u}\n", wantPaths: []string{"p/ok"}, wantErr: `spec "a": key 3 is not a string`},
		{name: "YAML infinity", content: "a: {type: git, url: u, x: .inf}\nok: {type: git, url: u}\n", wantPaths: []string{"p/ok"}, wantErr: `spec "a": +Inf cannot be represented in JSON`},
		{name: "YAML duplicate key", content: "a: {type: git, url: u}\na: {type: git, url: v}\n", wantErr: "invalid YAML"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mustParse(t, map[string]string{
				ConfFile:       conf,
				"a/good.lorry": `{"good": {"type": "git", "url": "https://example.com/good.git"}}`,
				"bad.lorry":    tc.content,
				"z.lorry":      "zz:\n  type: tarball\n  url: https://example.com/z.tgz\n",
			})
			want := append([]string{"p/good"}, tc.wantPaths...)
			want = append(want, "p/zz")
			if got := lorryPaths(cfg); !reflect.DeepEqual(got, want) {
				t.Errorf("got lorries %v, want %v", got, want)
			}
			if len(cfg.Errors) != 1 {
				t.Fatalf("got errors %v, want one for bad.lorry", cfg.Errors)
			}
			if fe := cfg.Errors[0]; fe.File != "bad.lorry" || !strings.Contains(fe.Error, tc.wantErr) {
				t.Errorf("got error %+v, want file bad.lorry and an error containing %q", fe, tc.wantErr)
			}
			// A file that could not be read keeps its old lorries; a broken
			// spec with a usable name keeps the old lorry of its path.
			var wantKept Kept
			if tc.wantPaths == nil {
				wantKept.Files = []string{"bad.lorry"}
			} else if name, _, ok := strings.Cut(strings.TrimPrefix(tc.wantErr, `spec "`), `"`); ok && ValidatePath("p/"+name) == nil {
				wantKept.Paths = []string{"p/" + name}
			}
			if !reflect.DeepEqual(cfg.Kept, wantKept) {
				t.Errorf("got kept %+v, want %+v", cfg.Kept, wantKept)
			}
		})
	}
}

func TestParseYAMLValues(t *testing.T) {
	conf := `[{"type": "lorries", "prefix": "p", "globs": ["*.lorry"]}]`
	cfg := mustParse(t, map[string]string{ConfFile: conf, "a.lorry": "a:\n  type: tarball\n  url: u\n  date: 2024-01-02\n  n: 3\n  f: 1.5\n  none: ~\n  yes: true\n  bin: !!binary aGk=\n  anchor: &x [1, 2]\n  alias: *x\n"})
	want := `{"p/a":{"alias":[1,2],"anchor":[1,2],"bin":"hi","date":"2024-01-02","f":1.5,"n":3,"none":null,"type":"tarball","url":"u","yes":true}}`
	if len(cfg.Lorries) != 1 || cfg.Lorries[0].Text != want {
		t.Errorf("got %+v (errors %v), want Text %s", cfg.Lorries, cfg.Errors, want)
	}
}

func TestParseDuplicatePaths(t *testing.T) {
	conf := `[
	  {"type": "lorries", "prefix": "p", "globs": ["*.lorry"]},
	  {"type": "lorries", "prefix": "p/x", "globs": ["sub/*.lorry"]}
	]`
	cfg := mustParse(t, map[string]string{
		ConfFile:        conf,
		"b.lorry":       `{"same": {"type": "git", "url": "from-b"}, "x/y": {"type": "git", "url": "from-b-xy"}}`,
		"a.lorry":       `{"same": {"type": "git", "url": "from-a"}}`,
		"sub/c.lorry":   `{"y": {"type": "git", "url": "from-c"}}`,
		"sub/d.lorry":   `{"y2": {"type": "git", "url": "from-d"}}`,
		"c-also.lorry":  `{"other": {"type": "git", "url": "o"}}`,
		"sub/readme.md": "not matched",
	})
	want := []string{"p/other", "p/same", "p/x/y", "p/x/y2"}
	if got := lorryPaths(cfg); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := findLorry(t, cfg, "p/same").Text; !strings.Contains(got, "from-a") {
		t.Errorf("p/same: got %s, want the spec from a.lorry, the first file in sorted order", got)
	}
	if got := findLorry(t, cfg, "p/x/y").Text; !strings.Contains(got, "from-b-xy") {
		t.Errorf("p/x/y: got %s, want the spec from b.lorry, which sorts before sub/c.lorry", got)
	}
	wantErrs := []FileError{
		{File: "b.lorry", Spec: "same", Error: `spec "same": path "p/same" is already defined by a.lorry`},
		{File: "sub/c.lorry", Spec: "y", Error: `spec "y": path "p/x/y" is already defined by b.lorry`},
	}
	if !reflect.DeepEqual(cfg.Errors, wantErrs) {
		t.Errorf("errors:\n got %v\nwant %v", cfg.Errors, wantErrs)
	}
}

func TestParseFileMatchedByTwoSections(t *testing.T) {
	conf := `[
	  {"type": "lorries", "prefix": "one", "globs": ["*.lorry"], "interval": 60},
	  {"type": "lorries", "prefix": "two", "globs": ["shared.lorry"], "interval": 120}
	]`
	cfg := mustParse(t, map[string]string{
		ConfFile:       conf,
		"shared.lorry": `{"s": {"type": "git", "url": "u"}, "../bad": {"type": "git", "url": "u"}}`,
		"broken.lorry": `{`,
	})
	if got, want := lorryPaths(cfg), []string{"one/s", "two/s"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := findLorry(t, cfg, "two/s").Interval; got != 2*time.Minute {
		t.Errorf("two/s: got interval %v, want 2m from its own section", got)
	}
	// Each problem is reported once, however many sections read the file.
	if len(cfg.Errors) != 2 {
		t.Errorf("got errors %v, want one for broken.lorry and one for the bad spec", cfg.Errors)
	}
}

func TestParseIgnoresDotGit(t *testing.T) {
	conf := `[{"type": "lorries", "prefix": "p", "globs": ["**/*.lorry"]}]`
	cfg := mustParse(t, map[string]string{ConfFile: conf, ".git/x.lorry": `{"x": {"type": "git", "url": "u"}}`, "y.lorry": `{"y": {"type": "git", "url": "u"}}`})
	if got, want := lorryPaths(cfg), []string{"p/y"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestParseHostSection(t *testing.T) {
	cfg := mustParse(t, map[string]string{ConfFile: `[{"type": "gitlab", "host": "gitlab.example.com", "private-token": "t", "ignore": ["a/*"], "ls-interval": "2h"}]`})
	got, err := ParseHostSection(cfg.Hosts[0].Section)
	if err != nil {
		t.Fatalf("ParseHostSection: got error %v, want none", err)
	}
	// The section alone does not say where it was in the file.
	if got.Index != -1 {
		t.Errorf("Index of a section parsed on its own = %d; want -1", got.Index)
	}
	got.Index = cfg.Hosts[0].Index
	if !reflect.DeepEqual(got, cfg.Hosts[0]) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, cfg.Hosts[0])
	}

	for _, tc := range []struct {
		name    string
		section string
		wantErr string
	}{
		{name: "not JSON", section: `{`, wantErr: "invalid JSON"},
		{name: "not an object", section: `[]`, wantErr: "must be an object"},
		{name: "lorries section", section: `{"type": "lorries", "prefix": "p", "globs": []}`, wantErr: `not a host section type: "lorries"`},
		{name: "missing host", section: `{"type": "trove"}`, wantErr: `key "host": missing`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHostSection(tc.section)
			if !errors.Is(err, ErrBadConf) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got error %v, want a ConfError containing %q", err, tc.wantErr)
			}
		})
	}
}
