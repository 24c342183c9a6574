package confgit

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"testing"
	"time"
)

// TestCheckReadsFilesOfBrokenConf: a check of a configuration whose
// lorry-controller.conf is broken in some of its sections reads the files
// that the rest of it selects, so that one check names every error.
func TestCheckReadsFilesOfBrokenConf(t *testing.T) {
	const (
		goodLorry  = `{"x": {"type": "git", "url": "u"}}`
		badLorry   = `{"y": {"type": "gti", "url": "u"}}`
		goodGitea  = `{"type": "gitea", "host": "git.example.com"}`
		badGitea   = `{"type": "gitea", "host": "git.example.com", "queue": "nightly"}`
		goodGlobs  = `{"type": "lorries", "prefix": "p", "globs": ["*.lorry"]}`
		badRuntime = `{"type": "runtime", "name": "fn", "path": "runtimes/none"}`
	)
	tests := []struct {
		name  string
		files map[string]string
		// wantSections are the sections of the errors of
		// lorry-controller.conf; wantFiles the files with errors, and
		// wantLorries the lorries read, in the Config of the BrokenConf.
		wantSections []int
		wantFiles    []string
		wantLorries  []string
	}{
		{name: "a host section broken",
			files:        map[string]string{ConfFile: "[" + goodGlobs + ", " + badGitea + "]", "a.lorry": goodLorry, "b.lorry": badLorry},
			wantSections: []int{1}, wantFiles: []string{"b.lorry"}, wantLorries: []string{"p/x"}},
		{name: "a lorries section broken after its globs",
			files:        map[string]string{ConfFile: `[{"type": "lorries", "prefix": "p", "globs": ["*.lorry"], "interval": "soon"}, ` + badGitea + `]`, "a.lorry": goodLorry, "b.lorry": badLorry},
			wantSections: []int{0, 1}, wantFiles: []string{"b.lorry"}, wantLorries: []string{"p/x"}},
		{name: "a lorries section broken in its globs",
			files:        map[string]string{ConfFile: `[{"type": "lorries", "prefix": "p", "globs": ["*.lorry", "[x-"]}, ` + goodGitea + `]`, "b.lorry": badLorry},
			wantSections: []int{0}, wantFiles: []string{}, wantLorries: []string{}},
		{name: "a lorries section broken in its prefix",
			files:        map[string]string{ConfFile: `[{"type": "lorries", "prefix": "../p", "globs": ["*.lorry"]}]`, "b.lorry": badLorry},
			wantSections: []int{0}, wantFiles: []string{}, wantLorries: []string{}},
		{name: "a runtime whose directory is missing, and another broken",
			files: map[string]string{
				ConfFile: "[" + badRuntime + `, {"type": "runtime", "name": "gn", "path": 3}, ` +
					`{"type": "scrapers", "prefix": "s", "globs": ["*.scraper"]}, ` + goodGlobs + "]",
				"a.scraper": `{"f": {"runtime": "fn", "module": "m"}, "g": {"runtime": "gn", "module": "m"}, "h": {"runtime": "hn", "module": "m"}}`,
				"b.lorry":   badLorry},
			// The scrapers of the broken runtimes are not faulted for
			// them; the one of a runtime that no section names is.
			wantSections: []int{0, 1}, wantFiles: []string{"a.scraper", "b.lorry"}, wantLorries: []string{"s/f", "s/g"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse(mapFS(tc.files))
			if cfg != nil || !errors.Is(err, ErrBadConf) {
				t.Fatalf("Parse = %v, %v; want no Config and an error matching ErrBadConf", cfg, err)
			}
			var broken *BrokenConf
			if !errors.As(err, &broken) {
				t.Fatalf("Parse error %v (%T) is not a *BrokenConf", err, err)
			}
			sections := []int{}
			for _, e := range leafConfErrors(err) {
				sections = append(sections, e.Section)
			}
			files := []string{}
			for _, e := range broken.Config.Errors {
				files = append(files, e.File)
			}
			if !reflect.DeepEqual(sections, tc.wantSections) || !reflect.DeepEqual(files, tc.wantFiles) ||
				!reflect.DeepEqual(lorryPaths(broken.Config), tc.wantLorries) {
				t.Errorf("got sections %v, file errors %v (%v), lorries %v; want sections %v, files %v, lorries %v",
					sections, files, broken.Config.Errors, lorryPaths(broken.Config), tc.wantSections, tc.wantFiles, tc.wantLorries)
			}
		})
	}

	// A lorry-controller.conf broken as a whole defines nothing to read.
	_, err := Parse(mapFS(map[string]string{ConfFile: `[{"type": "lorries",}]`, "b.lorry": badLorry}))
	var broken *BrokenConf
	if !errors.Is(err, ErrBadConf) || errors.As(err, &broken) {
		t.Errorf("Parse of broken JSON = %v (%T); want a *ConfError alone", err, err)
	}
}

// leafConfErrors are the *ConfErrors that err holds, in order.
func leafConfErrors(err error) []*ConfError {
	var ce *ConfError
	var list ConfErrors
	switch {
	case errors.As(err, &list):
		return list
	case errors.As(err, &ce):
		return []*ConfError{ce}
	}
	return nil
}

// TestCheckRevisionOfBrokenConf: ReadRevision, the pre-receive hook's
// read, finds the errors of both kinds in one commit, and names it;
// Source.Read, read-configuration's, refuses the commit without reading
// a .lorry file.
func TestCheckRevisionOfBrokenConf(t *testing.T) {
	repo := newTestRepo(t, "master")
	files := map[string]string{
		ConfFile:  `[{"type": "lorries", "prefix": "p", "globs": ["*.lorry"]}, {"type": "gitea", "host": "h", "queue": "nightly"}]`,
		"a.lorry": `{"x": {"type": "git", "url": "u"}}`,
		"b.lorry": `{"y": {"type": "gti", "url": "u"}}`,
	}
	commit := repo.commit(maps.Clone(files))
	_, err := ReadRevision(context.Background(), repo.dir, "master", nil, time.Now())
	var broken *BrokenConf
	if !errors.As(err, &broken) {
		t.Fatalf("ReadRevision = %v (%T); want a *BrokenConf", err, err)
	}
	if broken.Config.Commit != commit || len(broken.Config.Errors) != 1 || broken.Config.Errors[0].File != "b.lorry" {
		t.Errorf("BrokenConf's Config: commit %q, errors %+v; want commit %s and the error of b.lorry", broken.Config.Commit, broken.Config.Errors, commit)
	}
	if ce := leafConfErrors(err); len(ce) != 1 || ce[0].Section != 1 || ce[0].Key != "queue" {
		t.Errorf("errors of %s: %v; want section [1]'s queue", ConfFile, ce)
	}

	_, err = (&Source{Dir: repo.dir}).Read(context.Background())
	if !errors.Is(err, ErrBadConf) || errors.As(err, &broken) {
		t.Errorf("Source.Read = %v (%T); want an error matching ErrBadConf that is no *BrokenConf", err, err)
	}
}
