package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"lorrycontroller.dev/lc/gittest"
	"lorrycontroller.dev/lc/mirror"
	"lorrycontroller.dev/lc/wire"
)

// upstreamOnTrunk makes a repository whose HEAD is trunk, with a branch
// side that sorts before it.
func upstreamOnTrunk(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "up")
	gittest.Git(t, "", nil, "init", "-q", "-b", "trunk", dir)
	gittest.Git(t, dir, nil, "commit", "-q", "--allow-empty", "-m", "first")
	gittest.Git(t, dir, nil, "branch", "side")
	return dir
}

func writeSpecFile(t *testing.T, specs map[string]any) string {
	t.Helper()
	data, err := json.Marshal(specs)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(t.TempDir(), "*.lorry")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// --result-file names the upstream's default branch of every spec that
// succeeded, from every spec file, and leaves nothing else behind.
func TestResultFile(t *testing.T) {
	trunk := upstreamOnTrunk(t)
	other := filepath.Join(t.TempDir(), "other")
	gittest.Git(t, "", nil, "init", "-q", "-b", "main", other)
	gittest.Git(t, other, nil, "commit", "-q", "--allow-empty", "-m", "first")
	files := []string{
		writeSpecFile(t, map[string]any{
			"delta/trunk": map[string]any{"type": "git", "url": trunk},
			"delta/other": map[string]any{"type": "git", "url": other},
		}),
		writeSpecFile(t, map[string]any{
			"delta/missing": map[string]any{"type": "git", "url": trunk + "-missing"},
		}),
	}
	out := t.TempDir()
	resultPath := filepath.Join(out, "result.json")
	cfg, err := parseArgs(append([]string{"--working-area", t.TempDir(), "--pull-only", "--allow-local-sources", "--result-file", resultPath}, files...), nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Options.Out = io.Discard
	if err := run(context.Background(), cfg, io.Discard); err == nil {
		t.Fatal("run with a missing upstream succeeded")
	}

	data, err := os.ReadFile(resultPath)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("result file is not JSON: %v\n%s", err, data)
	}
	created := func(dir string, branches ...string) map[string]any {
		id := gittest.Git(t, dir, nil, "rev-parse", "HEAD")
		var refs []any
		for _, b := range branches {
			refs = append(refs, map[string]any{"ref": "refs/heads/" + b, "new": id})
		}
		return map[string]any{"created": refs, "updated": []any{}, "deleted": []any{}, "truncated": false}
	}
	want := map[string]any{"lorries": map[string]any{
		"delta/trunk":   map[string]any{"ok": true, "head": "trunk", "refs": created(trunk, "side", "trunk")},
		"delta/other":   map[string]any{"ok": true, "head": "main", "refs": created(other, "main")},
		"delta/missing": map[string]any{"ok": false, "error_class": "gone"},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("result file = %s; want %v", data, want)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 1 {
		t.Errorf("result directory holds %v; want only the result file", entries)
	}
}

// A run replaces the result file of the run before, whole.
func TestResultFileReplaced(t *testing.T) {
	trunk := upstreamOnTrunk(t)
	spec := writeSpecFile(t, map[string]any{"p": map[string]any{"type": "git", "url": trunk}})
	out := t.TempDir()
	resultPath := filepath.Join(out, "result.json")
	if err := os.WriteFile(resultPath, []byte(`{"lorries": {"old": {"ok": true, "head": "x"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseArgs([]string{"--working-area", t.TempDir(), "--pull-only", "--allow-local-sources", "--result-file", resultPath, spec}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), cfg, io.Discard); err != nil {
		t.Fatal(err)
	}
	var got resultFile
	data, err := os.ReadFile(resultPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if p, ok := got.Lorries["p"]; len(got.Lorries) != 1 || !ok || !p.OK || p.Head != "trunk" {
		t.Errorf("result file = %s; want only p, ok, with head trunk", data)
	}
}

// --result-fd writes the result to a descriptor lorry was given, such as
// the minion's file that has no name; a descriptor that is not open fails
// the run before anything is mirrored.
func TestResultFD(t *testing.T) {
	trunk := upstreamOnTrunk(t)
	spec := writeSpecFile(t, map[string]any{"p": map[string]any{"type": "git", "url": trunk}})
	f, err := os.CreateTemp(t.TempDir(), "result")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Remove(f.Name()); err != nil {
		t.Fatal(err)
	}
	// run closes the descriptor it is given, as lorry's own.
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := parseArgs([]string{"--working-area", t.TempDir(), "--pull-only", "--allow-local-sources", "--result-fd", strconv.Itoa(fd), spec}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Options.Out = io.Discard
	if err := run(context.Background(), cfg, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
		t.Errorf("descriptor %d after the run: got %v, want it closed", fd, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	var got resultFile
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, data)
	}
	if p, ok := got.Lorries["p"]; len(got.Lorries) != 1 || !ok || !p.OK || p.Head != "trunk" || p.Refs == nil {
		t.Errorf("result = %s; want only p, ok, with head trunk and its refs", data)
	}

	area := filepath.Join(t.TempDir(), "area")
	cfg, err = parseArgs([]string{"--working-area", area, "--pull-only", "--allow-local-sources", "--result-fd", "999", spec}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Options.Out = io.Discard
	if err := run(context.Background(), cfg, io.Discard); err == nil || !strings.Contains(err.Error(), "--result-fd 999") {
		t.Errorf("run with a descriptor that is not open: got %v, want an error naming --result-fd 999", err)
	}
	if _, err := os.Stat(area); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run with a descriptor that is not open made its working area: %v", err)
	}
}

func TestResultFDRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--result-fd", "1", "x.lorry"},
		{"--result-fd", "3", "--result-file", "r.json", "x.lorry"},
	} {
		if _, err := parseArgs(args, nil, io.Discard); err == nil {
			t.Errorf("parseArgs(%q): got no error", args)
		}
	}
}

// The ref changes in the result file are cut at wire.MaxRefsPerKind per kind,
// and say so.
func TestResultRefsTruncated(t *testing.T) {
	many := make([]wire.RefChange, wire.MaxRefsPerKind+1)
	for i := range many {
		many[i] = wire.RefChange{Ref: fmt.Sprintf("refs/tags/t%05d", i), New: strings.Repeat("a", 40)}
	}
	tests := []struct {
		name      string
		in        wire.RefChanges
		created   int
		truncated bool
	}{
		{name: "at the bound", in: wire.RefChanges{Created: many[:wire.MaxRefsPerKind]}, created: wire.MaxRefsPerKind},
		{name: "over it", in: wire.RefChanges{Created: many}, created: wire.MaxRefsPerKind, truncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newResultFile()
			r.add(mirror.Result{Name: "p", Refs: &tt.in})
			got := r.Lorries["p"].Refs
			if len(got.Created) != tt.created || got.Truncated != tt.truncated {
				t.Errorf("got %d created, truncated %v; want %d, %v", len(got.Created), got.Truncated, tt.created, tt.truncated)
			}
		})
	}
}

// A failed spec's error class goes into its entry; a success has none.
func TestResultErrorClass(t *testing.T) {
	r := newResultFile()
	r.add(mirror.Result{Name: "failed", Err: errors.New("fetch the LFS objects"), ErrorClass: mirror.ClassLFS})
	r.add(mirror.Result{Name: "ok", Refs: &wire.RefChanges{}})
	if got := r.Lorries["failed"]; got.OK || got.ErrorClass != "lfs" {
		t.Errorf("failed spec: got %+v; want not ok, error_class lfs", got)
	}
	if got := r.Lorries["ok"]; !got.OK || got.ErrorClass != "" {
		t.Errorf("ok spec: got %+v; want ok, no error_class", got)
	}
}

// A push URL with credentials comes from the environment; on the command
// line, where any user can read it, it is refused.
func TestPushURLCredentials(t *testing.T) {
	const secret = "https://oauth2:TOKEN@git.example.com/a.git"
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantPush string
		wantBase string
		wantErr  string
	}{
		{name: "flag without credentials", args: []string{"--push-url", "https://git.example.com/a.git"}, wantPush: "https://git.example.com/a.git"},
		{name: "ssh flag", args: []string{"--push-url", "ssh://git@git.example.com/a.git"}, wantPush: "ssh://git@git.example.com/a.git"},
		{name: "environment", env: map[string]string{envPushURL: secret}, wantPush: secret},
		{name: "base in environment", env: map[string]string{envMirrorBaseURLPush: "https://u:p@git.example.com/m"}, wantBase: "https://u:p@git.example.com/m"},
		{name: "flag with credentials", args: []string{"--push-url", secret}, wantErr: envPushURL},
		{name: "base flag with credentials", args: []string{"--mirror-base-url-push", "https://u:p@git.example.com/m"}, wantErr: envMirrorBaseURLPush},
		{name: "both", args: []string{"--push-url", "https://git.example.com/a.git"}, env: map[string]string{envPushURL: secret}, wantErr: "exclude each other"},
		{name: "environment and base flag", args: []string{"--mirror-base-url-push", "https://git.example.com/m"}, env: map[string]string{envPushURL: secret}, wantErr: "exclude each other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseArgs(append(tt.args, "spec.lorry"), tt.env, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v; want an error containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "TOKEN") || strings.Contains(err.Error(), ":p@") {
					t.Errorf("the error shows the credentials: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Options.PushURL != tt.wantPush || cfg.Options.MirrorBaseURLPush != tt.wantBase {
				t.Errorf("push URL %q, base %q; want %q, %q", cfg.Options.PushURL, cfg.Options.MirrorBaseURLPush, tt.wantPush, tt.wantBase)
			}
		})
	}
}

// --git-config names the configuration that lorry's git reads: its URL
// rewrite sends the fetch to where the repository is.
func TestGitConfigFlag(t *testing.T) {
	trunk := upstreamOnTrunk(t)
	config := filepath.Join(t.TempDir(), "gitconfig")
	// Nothing listens on port 1.
	text := "[url \"file://" + filepath.Dir(trunk) + "/\"]\n\tinsteadOf = https://127.0.0.1:1/\n"
	if err := os.WriteFile(config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := writeSpecFile(t, map[string]any{"delta/trunk": map[string]any{"type": "git", "url": "https://127.0.0.1:1/" + filepath.Base(trunk)}})
	for _, tc := range []struct {
		name  string
		flags []string
		ok    bool
	}{
		{name: "without", ok: false},
		{name: "with", flags: []string{"--git-config", config}, ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--working-area", t.TempDir(), "--pull-only", "--allow-local-sources"}, tc.flags...)
			cfg, err := parseArgs(append(args, spec), nil, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			cfg.Options.Out = &out
			err = run(context.Background(), cfg, &out)
			if (err == nil) != tc.ok {
				t.Errorf("got %v, want success %v\n%s", err, tc.ok, out.String())
			}
		})
	}
}

// Without --git-config, lorry's git reads .gitconfig in the home of its
// user's passwd entry, whatever HOME says.
func TestUserGitConfigFromPasswd(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	u, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	got, err := userGitConfig(os.Getuid())
	if want := filepath.Join(u.HomeDir, ".gitconfig"); got != want || err != nil {
		t.Errorf("got %q, %v; want %q from the passwd entry", got, err, want)
	}
}
