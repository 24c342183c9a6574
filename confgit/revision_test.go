package confgit

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestReadRevision(t *testing.T) {
	r := newTestRepo(t, "master")
	first := r.commit(map[string]string{
		ConfFile:  `[{"type": "lorries", "prefix": "p", "globs": ["*.lorry"]}]`,
		"a.lorry": `{"a": {"type": "git", "url": "https://example.com/a"}}`,
	})
	second := r.commit(map[string]string{"b.lorry": `{"b": {"type": "git", "url": "https://example.com/b"}}`})
	ctx := context.Background()
	for _, tc := range []struct {
		name, rev, want string
		paths           []string
	}{
		{name: "commit id", rev: first, want: first, paths: []string{"p/a"}},
		{name: "branch", rev: "master", want: second, paths: []string{"p/a", "p/b"}},
		{name: "HEAD", rev: "HEAD", want: second, paths: []string{"p/a", "p/b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ReadRevision(ctx, r.dir, tc.rev, nil, time.Now())
			if err != nil {
				t.Fatalf("ReadRevision: %v", err)
			}
			if cfg.Commit != tc.want || !reflect.DeepEqual(lorryPaths(cfg), tc.paths) {
				t.Errorf("got commit %s, lorries %v; want %s, %v", cfg.Commit, lorryPaths(cfg), tc.want, tc.paths)
			}
		})
	}
	if _, err := ReadRevision(ctx, r.dir, "no-such-branch", nil, time.Now()); err == nil || errors.Is(err, ErrBadConf) {
		t.Errorf("ReadRevision of a missing revision: got %v; want an error that is not ErrBadConf", err)
	}
	if _, err := ReadRevision(ctx, t.TempDir(), "HEAD", nil, time.Now()); err == nil || errors.Is(err, ErrBadConf) {
		t.Errorf("ReadRevision of no repository: got %v; want an error that is not ErrBadConf", err)
	}
}

// A commit whose objects are only in another object directory, as those
// of a push are in its quarantine while pre-receive runs, is read from
// there, whether they are loose or packed.
func TestReadRevisionObjectDirs(t *testing.T) {
	for _, packed := range []bool{false, true} {
		name := "loose"
		if packed {
			name = "packed"
		}
		t.Run(name, func(t *testing.T) {
			repo := t.TempDir()
			runGit(t, repo, nil, "init", "-q", "--bare")
			other := newTestRepo(t, "master")
			commit := other.commit(map[string]string{
				ConfFile:  `[{"type": "lorries", "prefix": "p", "globs": ["*.lorry"]}, {"type": "gitea", "host": "git.example.com", "org": "o"}]`,
				"a.lorry": `{"a": {"type": "git", "url": "https://example.com/a"}}`,
			})
			if packed {
				runGit(t, other.dir, nil, "repack", "-a", "-d", "-q")
			}
			objects := filepath.Join(other.dir, ".git", "objects")
			ctx := context.Background()
			if _, err := ReadRevision(ctx, repo, commit, nil, time.Now()); err == nil {
				t.Fatal("ReadRevision found a commit of another repository without its object directory")
			}
			cfg, err := ReadRevision(ctx, repo, commit, []string{objects}, time.Now())
			if err != nil {
				t.Fatalf("ReadRevision with the object directory: %v", err)
			}
			if got := lorryPaths(cfg); !reflect.DeepEqual(got, []string{"p/a"}) || len(cfg.Hosts) != 1 {
				t.Errorf("got lorries %v and %d hosts; want [p/a] and 1", got, len(cfg.Hosts))
			}
		})
	}
}

// Every broken section is named, in the order of the file, and the whole
// still counts as one broken configuration.
func TestParseConfEveryError(t *testing.T) {
	conf := `[
	  {"type": "lorries", "prefix": "p", "globs": ["*.lorry"], "interval": "soon"},
	  {"type": "gitea", "host": "g.example.com", "queue": "nightly"},
	  {"type": "lorries", "prefix": "q", "globs": ["*.lorry"]},
	  {"type": "bogus"},
	  {"type": "lorries", "prefix": "r", "globs": ["*.lorry"], "schedule": {"year": 1999, "month": 1, "day": 1, "hour": 0, "minute": 0}}
	]`
	_, err := Parse(mapFS(map[string]string{ConfFile: conf}))
	var list ConfErrors
	if !errors.As(err, &list) || !errors.Is(err, ErrBadConf) {
		t.Fatalf("got error %v (%T); want ConfErrors matching ErrBadConf", err, err)
	}
	type where struct {
		section int
		key     string
	}
	var got []where
	for _, ce := range list {
		got = append(got, where{ce.Section, ce.Key})
	}
	want := []where{{0, "interval"}, {1, "queue"}, {3, "type"}, {4, "schedule"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got errors at %v; want %v\n(%v)", got, want, err)
	}
	var first *ConfError
	if !errors.As(err, &first) || first.Section != 0 {
		t.Errorf("errors.As finds %v; want the error of section [0]", first)
	}
	if n := strings.Count(err.Error(), ConfFile+": section"); n != 4 {
		t.Errorf("message %q names %d sections; want 4", err, n)
	}
}

// A skipped spec names its spec and, where known, the key at fault.
func TestFileErrorNamesSpecAndKey(t *testing.T) {
	conf := `[{"type": "lorries", "prefix": "p", "globs": ["*.lorry"]}]`
	cfg := mustParse(t, map[string]string{ConfFile: conf,
		"a.lorry": `{"bad-type": {"type": "gti"}, "no-url": {"type": "git"}, "ok": {"type": "git", "url": "u"},
		  "late": {"type": "git", "url": "u", "schedule": {"year": 1999}}}`,
		"b.lorry": `{`,
	})
	want := []FileError{
		{File: "a.lorry", Spec: "bad-type", Key: "type"},
		{File: "a.lorry", Spec: "late", Key: "schedule"},
		{File: "a.lorry", Spec: "no-url", Key: "url"},
		{File: "b.lorry"},
	}
	var got []FileError
	for _, e := range cfg.Errors {
		got = append(got, FileError{File: e.File, Spec: e.Spec, Key: e.Key})
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors name\n%+v\nwant\n%+v\n(%v)", got, want, cfg.Errors)
	}
}
