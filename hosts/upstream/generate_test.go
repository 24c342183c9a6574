package upstream

import (
	"reflect"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/confgit"
)

func TestGenerate(t *testing.T) {
	repo := func(p string) Repo { return Repo{Path: p, CloneURL: "https://up.example.com/" + p + ".git"} }
	tests := []struct {
		name        string
		sec         map[string]any
		repos       []Repo
		wantPaths   []string // lorry paths, in order
		wantFrom    []string // upstream paths, in the same order
		wantSkipped []string // substrings, one for each skipped repository, in order
	}{
		{name: "longest prefix wins",
			sec:       map[string]any{"prefixmap": map[string]any{"gnome": "mirrors/gnome", "gnome/core": "core", "": "other"}},
			repos:     []Repo{repo("gnome/glib"), repo("gnome/core/gtk"), repo("gnome"), repo("kde/kio"), repo("gnomeish/x")},
			wantPaths: []string{"core/gtk", "mirrors/gnome", "mirrors/gnome/glib", "other/gnomeish/x", "other/kde/kio"},
			wantFrom:  []string{"gnome/core/gtk", "gnome", "gnome/glib", "gnomeish/x", "kde/kio"}},
		{name: "prefixes match whole segments",
			sec:         map[string]any{"prefixmap": map[string]any{"gnome/": "g"}},
			repos:       []Repo{repo("gnome/glib"), repo("gnomeish/x")},
			wantPaths:   []string{"g/glib"},
			wantFrom:    []string{"gnome/glib"},
			wantSkipped: []string{`"gnomeish/x": under no prefix of "prefixmap"`}},
		{name: "no prefixmap generates nothing",
			repos:       []Repo{repo("a/b")},
			wantSkipped: []string{`"a/b": under no prefix`}},
		{name: "ignore globs match upstream paths",
			sec: map[string]any{"prefixmap": map[string]any{"baserock": "br", "delta": "delta"},
				"ignore": []any{"baserock/tests/*", "delta/**/old-*", "delta/linux"}},
			repos:     []Repo{repo("baserock/tests/a"), repo("baserock/tests/deep/b"), repo("baserock/morph"), repo("delta/x/y/old-gcc"), repo("delta/linux"), repo("delta/gcc")},
			wantPaths: []string{"br/morph", "br/tests/deep/b", "delta/gcc"},
			wantFrom:  []string{"baserock/morph", "baserock/tests/deep/b", "delta/gcc"}},
		{name: "invalid lorry paths and missing URLs are skipped",
			sec:   map[string]any{"prefixmap": map[string]any{"up": "down"}},
			repos: []Repo{repo("up/ok"), repo("up/../etc"), repo("up//x"), repo("up/bad\x01"), {Path: "up/nourl"}, repo("up/a b")},
			// A space is allowed in a lorry path.
			wantPaths: []string{"down/a b", "down/ok"},
			wantFrom:  []string{"up/a b", "up/ok"},
			wantSkipped: []string{`"up/../etc": lorry path "down/../etc": path has a ".." segment`,
				`"up//x": lorry path "down//x": path has an empty segment`,
				`"up/bad\x01": lorry path "down/bad\x01": path has a control character`,
				`"up/nourl": the host gave no clone URL`}},
		{name: "duplicates: the first upstream path keeps the lorry",
			sec:         map[string]any{"prefixmap": map[string]any{"a": "m", "b": "m"}},
			repos:       []Repo{repo("b/r"), repo("a/r"), repo("a/s"), repo("a/r")},
			wantPaths:   []string{"m/r", "m/s"},
			wantFrom:    []string{"a/r", "a/s"},
			wantSkipped: []string{`"a/r": lorry path "m/r" is already generated from "a/r"`, `"b/r": lorry path "m/r" is already generated from "a/r"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := upstreamHost(t, sectionWith(map[string]any{"type": "gitlab", "host": "up.example.com"}, tc.sec))
			got, skipped := Generate(h, tc.repos)
			var paths, from []string
			for _, g := range got {
				paths = append(paths, g.Path)
				from = append(from, g.FromPath)
			}
			if !reflect.DeepEqual(paths, tc.wantPaths) || !reflect.DeepEqual(from, tc.wantFrom) {
				t.Errorf("got paths %q from %q; want %q from %q", paths, from, tc.wantPaths, tc.wantFrom)
			}
			if len(skipped) != len(tc.wantSkipped) {
				t.Fatalf("got skipped %q; want %d like %q", skipped, len(tc.wantSkipped), tc.wantSkipped)
			}
			for i, want := range tc.wantSkipped {
				if !strings.Contains(skipped[i], want) {
					t.Errorf("skipped[%d] = %q; want it to contain %q", i, skipped[i], want)
				}
			}
		})
	}
}

func TestGenerateText(t *testing.T) {
	repos := []Repo{{Path: "g/a", CloneURL: "https://oauth2:tok@up.example.com/g/a.git?x=1&y=2", Description: "The A", DefaultBranch: "main"}}
	tests := []struct {
		name string
		sec  map[string]any
		want GeneratedLorry
	}{
		{name: "certificates checked", sec: map[string]any{},
			want: GeneratedLorry{Path: "m/a", FromPath: "g/a", Description: "The A", DefaultBranch: "main",
				Text: `{"m/a":{"type":"git","url":"https://oauth2:tok@up.example.com/g/a.git?x=1\u0026y=2"}}`}},
		{name: "check-certificates false", sec: map[string]any{"check-certificates": false},
			want: GeneratedLorry{Path: "m/a", FromPath: "g/a", Description: "The A", DefaultBranch: "main",
				Text: `{"m/a":{"check-certificates":false,"type":"git","url":"https://oauth2:tok@up.example.com/g/a.git?x=1\u0026y=2"}}`}},
		{name: "check-certificates true", sec: map[string]any{"check-certificates": true},
			want: GeneratedLorry{Path: "m/a", FromPath: "g/a", Description: "The A", DefaultBranch: "main",
				Text: `{"m/a":{"type":"git","url":"https://oauth2:tok@up.example.com/g/a.git?x=1\u0026y=2"}}`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := upstreamHost(t, sectionWith(map[string]any{"type": "gitlab", "host": "up.example.com", "prefixmap": map[string]any{"g": "m"}}, tc.sec))
			got, skipped := Generate(h, repos)
			if len(skipped) != 0 || !reflect.DeepEqual(got, []GeneratedLorry{tc.want}) {
				t.Errorf("got %+v, skipped %q; want %+v and nothing skipped", got, skipped, tc.want)
			}
		})
	}
}

// Generate's input order does not matter: the same repositories give the
// same lorries.
func TestGenerateIsDeterministic(t *testing.T) {
	h := confgit.Host{Type: "trove", Name: "t", Protocol: "ssh", Prefixmap: map[string]string{"a": "x", "b": "x", "a/b": "y"}}
	repos := []Repo{{Path: "b/q", CloneURL: "u1"}, {Path: "a/q", CloneURL: "u2"}, {Path: "a/b/c", CloneURL: "u3"}, {Path: "b/b/c", CloneURL: "u4"}}
	first, firstSkipped := Generate(h, repos)
	for i := range 10 {
		shuffled := append(append([]Repo(nil), repos[i%4:]...), repos[:i%4]...)
		got, skipped := Generate(h, shuffled)
		if !reflect.DeepEqual(got, first) || !reflect.DeepEqual(skipped, firstSkipped) {
			t.Fatalf("order %d: got %+v %q; want %+v %q", i, got, skipped, first, firstSkipped)
		}
	}
}
