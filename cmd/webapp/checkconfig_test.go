package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/gittest"
)

// runCheckConfig runs the real check-config, and returns its standard
// output and exit code.
func runCheckConfig(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(webappBin, append([]string{"check-config"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), 0
	case errors.As(err, &exit):
		return stdout.String() + stderr.String(), exit.ExitCode()
	}
	t.Fatalf("check-config: %v", err)
	return "", -1
}

// writeFiles makes a directory of configuration files.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const (
	daily = `{"hour": 3, "minute": 0, "timezone": "UTC", "dst_fixes": ["skip", "repeat_use_only_early"], "max_shift_seconds_for_unskip_and_do_not_repeat": 60}`
	// checkConf has something of every kind that the summary counts.
	checkConf = `[
	  {"type": "lorries", "prefix": "p", "globs": ["lorries/*.lorry"], "interval": "1h"},
	  {"type": "lorries", "prefix": "s", "globs": ["nightly/*.lorry"], "schedule": ` + daily + `, "queue": "night"},
	  {"type": "queue", "name": "night", "threads": 2},
	  {"type": "gitea", "host": "git.example.com", "org": "o"},
	  {"type": "trove", "host": "trove.example.com"}
	]`
	lorryA = `{"a": {"type": "git", "url": "https://example.com/a.git"}, "b": {"type": "git", "url": "https://example.com/b.git"}}`
	lorryN = `{"n": {"type": "git", "url": "https://example.com/n.git"}}`
)

func TestCheckConfigGood(t *testing.T) {
	dir := writeFiles(t, map[string]string{"lorry-controller.conf": checkConf,
		"lorries/a.lorry": lorryA, "nightly/n.lorry": lorryN})
	out, code := runCheckConfig(t, dir)
	if code != 0 {
		t.Fatalf("check-config of a good configuration: exit %d; want 0\n%s", code, out)
	}
	want := "3 lorries, 0 scrapers, 2 hosts, 1 queue, 1 schedule (next firing "
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.Contains(out, want) ||
		!strings.Contains(out, "T03:00:00Z, s/n); 0 errors, 0 warnings") {
		t.Errorf("check-config printed\n%s\nwant one line with %q and the schedule of s/n", out, want)
	}

	out, code = runCheckConfig(t, "--json", dir)
	var rep checkReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("check-config --json: exit %d, %v\n%s", code, err, out)
	}
	s := rep.Summary
	if !rep.OK || s == nil || s.Lorries != 3 || s.Scrapers != 0 || s.Hosts != 2 || s.Queues != 1 || len(rep.Errors) != 0 {
		t.Fatalf("check-config --json = %+v; want ok with 3 lorries, 2 hosts, 1 queue", rep)
	}
	if len(s.Schedules) != 1 || s.Schedules[0].Path != "s/n" || s.Schedules[0].Next == nil {
		t.Fatalf("schedules = %+v; want s/n's", s.Schedules)
	}
	// The next 03:00 UTC from when it ran.
	next := *s.Schedules[0].Next
	if next.Hour() != 3 || next.Minute() != 0 || next.Before(time.Now().Add(-time.Minute)) || next.After(time.Now().Add(25*time.Hour)) {
		t.Errorf("next firing %v; want the next 03:00 UTC", next)
	}
}

// Every broken section of lorry-controller.conf is named, with its key;
// the configuration is refused whole, so there is no summary.
func TestCheckConfigBrokenConf(t *testing.T) {
	conf := `[
	  {"type": "lorries", "prefix": "p", "globs": ["*.lorry"], "interval": "soon"},
	  {"type": "gitea", "host": "git.example.com", "org": "o", "queue": "nightly"},
	  {"type": "trove", "host": "bad%zz", "protocol": "https"}
	]`
	dir := writeFiles(t, map[string]string{"lorry-controller.conf": conf, "a.lorry": lorryA})
	out, code := runCheckConfig(t, dir)
	if code != 1 {
		t.Errorf("check-config of a broken lorry-controller.conf: exit %d; want 1\n%s", code, out)
	}
	for _, want := range []string{
		`error: lorry-controller.conf: section [0] (lorries): key "interval": `,
		`error: lorry-controller.conf: section [1] (gitea): key "queue": no queue section is named "nightly"`,
		"lorry-controller.conf is broken, 2 errors",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check-config printed\n%s\nwant %q", out, want)
		}
	}

	// Host sections are checked as read-configuration checks them, once
	// confgit has read them.
	conf = `[{"type": "gitea", "host": "git.example.com", "org": "o"}, {"type": "trove", "host": "bad%zz", "protocol": "https"}]`
	dir = writeFiles(t, map[string]string{"lorry-controller.conf": conf})
	out, code = runCheckConfig(t, "--json", dir)
	var rep checkReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
		t.Fatalf("check-config --json: exit %d, %v; want 1\n%s", code, err, out)
	}
	if rep.OK || rep.Summary != nil || len(rep.Errors) != 1 {
		t.Fatalf("check-config --json = %+v; want one error and no summary", rep)
	}
	e := rep.Errors[0]
	if e.File != "lorry-controller.conf" || e.Section == nil || *e.Section != 1 || e.Type != "trove" || e.Key != "host" {
		t.Errorf("error = %+v; want lorry-controller.conf, section 1 (trove), key host", e)
	}
}

// A broken .lorry file is an error, though read-configuration only skips
// it, unless --warn-lorry-files makes it a warning.
func TestCheckConfigBrokenLorryFile(t *testing.T) {
	dir := writeFiles(t, map[string]string{"lorry-controller.conf": checkConf,
		"lorries/a.lorry": lorryA, "lorries/bad.lorry": `{"x": {"type": "gti"}, "y": {"type": "git", "url": "u"}}`,
		"nightly/n.lorry": `{`})
	out, code := runCheckConfig(t, "--json", dir)
	var rep checkReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
		t.Fatalf("check-config --json: exit %d, %v; want 1\n%s", code, err, out)
	}
	if rep.OK || rep.Summary == nil || rep.Summary.Lorries != 3 || len(rep.Errors) != 2 || len(rep.Warnings) != 0 {
		t.Fatalf("check-config --json = %+v; want 3 lorries and 2 errors", rep)
	}
	if e := rep.Errors[0]; e.File != "lorries/bad.lorry" || e.Spec != "x" || e.Key != "type" || !strings.Contains(e.Message, `unknown type "gti"`) {
		t.Errorf("first error = %+v; want lorries/bad.lorry, spec x, key type", e)
	}
	if e := rep.Errors[1]; e.File != "nightly/n.lorry" || e.Spec != "" || !strings.Contains(e.Message, "invalid JSON") {
		t.Errorf("second error = %+v; want nightly/n.lorry as a whole", e)
	}

	out, code = runCheckConfig(t, "--warn-lorry-files", dir)
	if code != 0 || !strings.Contains(out, `warning: lorries/bad.lorry: spec "x": unknown type "gti"`) ||
		!strings.Contains(out, "3 lorries, 0 scrapers, 2 hosts, 1 queue, 0 schedules; 0 errors, 2 warnings") {
		t.Errorf("check-config --warn-lorry-files: exit %d; want 0 with two warnings\n%s", code, out)
	}
}

// --git-dir reads a commit of a repository, not the files beside it.
func TestCheckConfigGitDir(t *testing.T) {
	repo := t.TempDir()
	gittest.Git(t, repo, nil, "init", "-q", "--initial-branch=master")
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("lorry-controller.conf", `[{"type": "lorries", "prefix": "p", "globs": ["*.lorry"]}]`)
	write("a.lorry", lorryA)
	gittest.Git(t, repo, nil, "add", "-A")
	gittest.Git(t, repo, nil, "commit", "-q", "-m", "good")
	good := gittest.Git(t, repo, nil, "rev-parse", "HEAD")
	write("a.lorry", "{")
	gittest.Git(t, repo, nil, "commit", "-q", "-am", "broken")

	out, code := runCheckConfig(t, "--git-dir", repo, "--rev", good)
	if code != 0 || !strings.Contains(out, good) || !strings.Contains(out, "2 lorries") {
		t.Errorf("check-config --rev of the good commit: exit %d; want 0 naming %s\n%s", code, good, out)
	}
	out, code = runCheckConfig(t, "--json", "--git-dir", repo, "--rev", "master~1")
	var rep checkReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || rep.Rev != "master~1" || rep.Commit != good {
		t.Errorf("check-config --json --rev master~1: exit %d, %+v, %v; want 0, rev master~1, commit %s\n%s", code, rep, err, good, out)
	}
	out, code = runCheckConfig(t, "--git-dir", repo)
	if code != 1 || !strings.Contains(out, "error: a.lorry: invalid JSON") {
		t.Errorf("check-config of HEAD: exit %d; want 1 naming a.lorry\n%s", code, out)
	}
	// The working tree does not count.
	write("a.lorry", lorryA)
	if out, code = runCheckConfig(t, "--git-dir", repo, "--rev", "master"); code != 1 {
		t.Errorf("check-config of master with a fixed working tree: exit %d; want 1\n%s", code, out)
	}
}

func TestCheckConfigUnreadable(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{name: "no such directory", args: []string{filepath.Join(dir, "none")}},
		{name: "no repository", args: []string{"--git-dir", dir}},
		{name: "no such revision", args: []string{"--git-dir", gitRepo(t), "--rev", "nowhere"}},
		{name: "two directories", args: []string{dir, dir}},
		{name: "directory and --git-dir", args: []string{"--git-dir", dir, dir}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if out, code := runCheckConfig(t, tc.args...); code != 2 {
				t.Errorf("check-config %q: exit %d; want 2\n%s", tc.args, code, out)
			}
		})
	}
	out, code := runCheckConfig(t, "--json", filepath.Join(dir, "none"))
	var rep checkReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 2 || rep.OK || rep.Error == "" {
		t.Errorf("check-config --json of no directory: exit %d, %+v, %v; want 2 and the error\n%s", code, rep, err, out)
	}
}

// gitRepo is a repository with one empty commit.
func gitRepo(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	gittest.Git(t, repo, nil, "init", "-q")
	gittest.Git(t, repo, nil, "commit", "-q", "--allow-empty", "-m", "empty")
	return repo
}

// check-config DIR reads nothing outside DIR, whatever a symbolic link in
// it points at: lorry-controller.conf, a runtime's directory, its
// requirements.txt or a file that it names with -r, a .lorry file or a
// directory of them. A link is no file of the configuration, as in a
// commit that --git-dir reads, and the file outside does not show.
func TestCheckConfigSymlinksOut(t *testing.T) {
	const secret = "root:$6$SEKRIT-LINE:19000:0:99999:7:::"
	outside := writeFiles(t, map[string]string{
		"shadow":                     secret + "\n",
		"fn/requirements.txt":        "-r shadow\n",
		"fn/shadow":                  secret + "\n",
		"lorries/x.lorry":            secret + "\n",
		"conf/lorry-controller.conf": secret + "\n",
		"conf/runtimes/fn/req.txt":   secret + "\n",
	})
	shadow := filepath.Join(outside, "shadow")
	runtimeConf := `[{"type": "runtime", "name": "fn", "path": "runtimes/fn"},
	  {"type": "lorries", "prefix": "p", "globs": ["lorries/*.lorry"], "interval": "1h"}]`
	for _, tc := range []struct {
		name  string
		files map[string]string
		links map[string]string // link in DIR -> its target
		want  string            // in the output
	}{
		{name: "-r names a link out",
			files: map[string]string{"lorry-controller.conf": runtimeConf, "runtimes/fn/requirements.txt": "-r link.txt\n"},
			links: map[string]string{"runtimes/fn/link.txt": shadow},
			want:  `names "link.txt", which is not a file of the runtime`},
		{name: "requirements.txt is a link out",
			files: map[string]string{"lorry-controller.conf": runtimeConf, "runtimes/fn/keep": ""},
			links: map[string]string{"runtimes/fn/requirements.txt": shadow},
			want:  "has no requirements.txt"},
		{name: "the runtime's directory is a link out",
			files: map[string]string{"lorry-controller.conf": runtimeConf},
			links: map[string]string{"runtimes/fn": filepath.Join(outside, "fn")},
			want:  "runtimes/fn"},
		{name: "a directory on the way is a link out",
			files: map[string]string{"lorry-controller.conf": runtimeConf},
			links: map[string]string{"runtimes": filepath.Join(outside, "conf", "runtimes")},
			want:  "runtimes/fn"},
		{name: "lorry-controller.conf is a link out",
			links: map[string]string{"lorry-controller.conf": shadow},
			want:  "not a regular file"},
		{name: "a .lorry file and a directory of them are links out",
			files: map[string]string{"lorry-controller.conf": checkConf, "nightly/n.lorry": lorryN},
			links: map[string]string{"lorries": filepath.Join(outside, "lorries"), "nightly/x.lorry": shadow},
			want:  "1 lorry,"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, tc.files)
			for link, target := range tc.links {
				p := filepath.Join(dir, filepath.FromSlash(link))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, p); err != nil {
					t.Fatal(err)
				}
			}
			for _, args := range [][]string{{dir}, {"--json", dir}} {
				out, _ := runCheckConfig(t, args...)
				if strings.Contains(out, "SEKRIT") {
					t.Errorf("check-config %q shows the file outside:\n%s", args, out)
				}
				if len(args) == 1 && !strings.Contains(out, tc.want) {
					t.Errorf("check-config %q printed\n%s\nwant %q", args, out, tc.want)
				}
			}
		})
	}
}
