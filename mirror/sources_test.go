package mirror

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/gittest"
	"lorrycontroller.dev/lc/lorryspec"
)

// runLocal runs spec, allowing local sources or not, and returns the
// result and what the run said.
func runLocal(t *testing.T, spec lorryspec.Spec, allow bool) (Result, string) {
	t.Helper()
	var out strings.Builder
	res := Run(context.Background(), spec, Options{
		WorkingArea: t.TempDir(), PullOnly: true, LockWait: time.Second, Out: &out, AllowLocalSources: allow,
	})
	t.Logf("%s\n%s", res, out.String())
	return res, out.String()
}

// Specs naming files of the machine are refused unless allowed, with a
// message naming the spec and the URL and saying how to allow them; when
// allowed, they mirror.
func TestLocalSources(t *testing.T) {
	up := newUpstream(t, false)
	tarball := filepath.Join(t.TempDir(), "rel-1.0.tar.gz")
	data := gzipped(t, makeTar(t, archEntry{name: "rel-1.0/README", body: "hello\n"}), time.Time{})
	if err := os.WriteFile(tarball, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		spec lorryspec.Spec
		url  string // the URL the refusal names
	}{
		{name: "git file URL", spec: gitSpec("up/file-url", map[string]any{"url": "file://" + up.dir}), url: "file://" + up.dir},
		{name: "git path", spec: gitSpec("up/path", map[string]any{"url": up.dir}), url: up.dir},
		{name: "tarball file URL", spec: archiveSpec("tarball", "file://"+tarball, nil), url: "file://" + tarball},
		{name: "tarball path", spec: archiveSpec("tarball", tarball, nil), url: tarball},
		{
			name: "raw-file file URL",
			spec: lorryspec.Spec{Name: "up/raw", Type: "raw-file", Raw: map[string]any{
				"type": "raw-file",
				"urls": []any{map[string]any{"url": "file://" + tarball}},
			}},
			url: "file://" + tarball,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, out := runLocal(t, tc.spec, false)
			if res.Err == nil {
				t.Fatal("got success, want the local source refused")
			}
			line := res.String()
			for _, want := range []string{tc.spec.Name + ": FAILED", `"` + tc.url + `"`, "--allow-local-sources"} {
				if !strings.Contains(line, want) {
					t.Errorf("got %q, want it to contain %q", line, want)
				}
			}
			if strings.Contains(out, "copying") || strings.Contains(out, "cloning") {
				t.Errorf("the refused source was read:\n%s", out)
			}
			if res, _ := runLocal(t, tc.spec, true); res.Err != nil {
				t.Errorf("with local sources allowed: %v", res.Err)
			}
		})
	}
}

// Remote-helper transports are refused, even those that the git
// configuration allows: ext:: runs a command on the machine.
func TestGitRefusesExtTransport(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	url := "ext::sh -c touch% " + marker
	for _, allow := range []bool{false, true} {
		res, _ := runLocal(t, gitSpec("up/ext", map[string]any{"url": url}), allow)
		if res.Err == nil || !strings.Contains(res.Err.Error(), `transport "ext"`) {
			t.Errorf("allow local sources %v: got %v, want the ext transport refused", allow, res.Err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the ext:: command ran")
	}

	// Behind lorry's own check, git refuses it too, whatever lorry's git
	// configuration allows: GIT_ALLOW_PROTOCOL overrides protocol.*.allow.
	home := t.TempDir()
	global := filepath.Join(home, ".gitconfig")
	if err := os.WriteFile(global, []byte("[protocol \"ext\"]\n\tallow = always\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	userConfig := []string{"HOME=" + home, "GIT_CONFIG_GLOBAL=" + global}
	lsRemote := func(env []string) (string, error) {
		cmd := exec.Command("git", "-c", "protocol.ext.allow=always", "ls-remote", url)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, allow := range []bool{false, true} {
		j := &job{opts: Options{AllowLocalSources: allow, GitConfig: global}}
		out, err := lsRemote(j.upstreamEnv(""))
		if err == nil || !strings.Contains(out, "transport 'ext' not allowed") {
			t.Errorf("upstream git, allow local sources %v: got %v\n%s\nwant the ext transport refused", allow, err, out)
		}
	}
	if out, err := lsRemote((&job{opts: Options{GitConfig: global}}).gitEnv("", nil)); err == nil || !strings.Contains(out, "transport 'ext' not allowed") {
		t.Errorf("git of the mirror's own work: got %v\n%s\nwant the ext transport refused", err, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the ext:: command ran")
	}

	// Without GIT_ALLOW_PROTOCOL, that configuration runs the command:
	// the checks above would see it.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_ALLOW_PROTOCOL=") {
			env = append(env, kv)
		}
	}
	lsRemote(append(env, userConfig...))
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the configuration that allows ext:: did not run it: %v", err)
	}
}

// Only the upstream fetch is kept from local paths: pushing to a
// downstream on this machine works with local sources refused.
func TestLocalDownstreamWithoutLocalSources(t *testing.T) {
	up := newUpstream(t, false)
	down := downstream(t)
	var out strings.Builder
	res := Run(context.Background(), gitSpec("up/project", map[string]any{"url": up.url}),
		Options{WorkingArea: t.TempDir(), PushURL: down, LockWait: time.Second, Out: &out})
	if res.Err != nil {
		t.Fatalf("%v\n%s", res.Err, out.String())
	}
	if got, want := gittest.Git(t, down, nil, "rev-parse", "refs/heads/main"), up.git("rev-parse", "HEAD"); got != want {
		t.Errorf("downstream main = %s; want %s", got, want)
	}
}

func TestSourceKinds(t *testing.T) {
	tests := []struct {
		name   string
		typ    string
		fields map[string]any
		want   string // "" for a remote source, "local", or part of another refusal
	}{
		{name: "git https", typ: "git", fields: map[string]any{"url": "https://example.com/a.git"}},
		{name: "git ssh URL", typ: "git", fields: map[string]any{"url": "ssh://git@example.com/a.git"}},
		{name: "git scp-like", typ: "git", fields: map[string]any{"url": "git@example.com:a.git"}},
		{name: "git protocol", typ: "git", fields: map[string]any{"url": "git://example.com/a.git"}},
		{name: "git+ssh", typ: "git", fields: map[string]any{"url": "git+ssh://example.com/a.git"}},
		{name: "git file URL", typ: "git", fields: map[string]any{"url": "file:///srv/x"}, want: "local"},
		{name: "git absolute path", typ: "git", fields: map[string]any{"url": "/srv/x"}, want: "local"},
		{name: "git relative path", typ: "git", fields: map[string]any{"url": "./x"}, want: "local"},
		{name: "git parent path", typ: "git", fields: map[string]any{"url": "../x"}, want: "local"},
		{name: "git bare name", typ: "git", fields: map[string]any{"url": "x"}, want: "local"},
		{name: "git slash before colon", typ: "git", fields: map[string]any{"url": "dir/x:y"}, want: "local"},
		{name: "git ext helper", typ: "git", fields: map[string]any{"url": "ext::sh -c id"}, want: `transport "ext"`},
		{name: "git fd helper", typ: "git", fields: map[string]any{"url": "fd::0"}, want: `transport "fd"`},
		{name: "git unknown scheme", typ: "git", fields: map[string]any{"url": "foo://example.com/x"}, want: `transport "foo"`},
		{name: "tarball https", typ: "tarball", fields: map[string]any{"url": "https://example.com/a.tar.gz"}},
		{name: "zip path", typ: "zip", fields: map[string]any{"url": "/srv/a.zip"}, want: "local"},
		{name: "gzip file URL", typ: "gzip", fields: map[string]any{"url": "file:///srv/a.gz"}, want: "local"},
		{name: "svn https", typ: "svn", fields: map[string]any{"url": "https://svn.example.com/repo"}},
		{name: "svn svn+ssh", typ: "svn", fields: map[string]any{"url": "svn+ssh://svn.example.com/repo"}},
		{name: "svn file URL", typ: "svn", fields: map[string]any{"url": "file:///srv/svn"}, want: "local"},
		{name: "svn protocol", typ: "svn", fields: map[string]any{"url": "svn://svn.example.com/repo"}},
		{name: "svn path", typ: "svn", fields: map[string]any{"url": "/srv/svn"}, want: "local"},
		{name: "svn tunnel of another scheme", typ: "svn", fields: map[string]any{"url": "svn+evil://svn.example.com/repo"}, want: "local"},
		{name: "hg https", typ: "hg", fields: map[string]any{"url": "https://hg.example.com/repo"}},
		{name: "hg path", typ: "hg", fields: map[string]any{"url": "/srv/hg"}, want: "local"},
		{name: "hg file URL", typ: "hg", fields: map[string]any{"url": "FILE:///srv/hg"}, want: "local"},
		{name: "hg ssh option host", typ: "hg", fields: map[string]any{"url": "ssh://-oProxyCommand=touch%20x/repo"}, want: "option"},
		{name: "svn ssh option host", typ: "svn", fields: map[string]any{"url": "svn+ssh://u@-oProxyCommand=id/repo"}, want: "option"},
		{name: "bzr ssh option host", typ: "bzr", fields: map[string]any{"url": "bzr+ssh://-oProxyCommand=id/b"}, want: "option"},
		{name: "hg ssh", typ: "hg", fields: map[string]any{"url": "ssh://hg@example.com/repo"}},
		{name: "hg union", typ: "hg", fields: map[string]any{"url": "union:///srv/a+/srv/a"}, want: "local"},
		{name: "hg bundle", typ: "hg", fields: map[string]any{"url": "bundle:/srv/a.hg"}, want: "local"},
		{name: "hg bundle URL", typ: "hg", fields: map[string]any{"url": "bundle:///srv/a.hg"}, want: "local"},
		{name: "hg scheme in upper case", typ: "hg", fields: map[string]any{"url": "HTTPS://hg.example.com/repo"}, want: "local"},
		{name: "hg unknown scheme", typ: "hg", fields: map[string]any{"url": "foo://example.com/repo"}, want: "local"},
		{name: "bzr launchpad", typ: "bzr", fields: map[string]any{"url": "lp:project"}},
		{name: "bzr ssh", typ: "bzr", fields: map[string]any{"url": "bzr+ssh://example.com/b"}},
		{name: "bzr path", typ: "bzr", fields: map[string]any{"url": "/srv/bzr"}, want: "local"},
		{name: "bzr https", typ: "bzr", fields: map[string]any{"url": "https://example.com/b"}},
		{name: "bzr sftp", typ: "bzr", fields: map[string]any{"url": "sftp://example.com/b"}},
		{name: "bzr readonly file", typ: "bzr", fields: map[string]any{"url": "readonly+file:///srv/x"}, want: "local"},
		{name: "bzr log file", typ: "bzr", fields: map[string]any{"url": "log+file:///srv/x"}, want: "local"},
		{name: "bzr trace file", typ: "bzr", fields: map[string]any{"url": "trace+file:///srv/x"}, want: "local"},
		{name: "bzr chroot", typ: "bzr", fields: map[string]any{"url": "chroot-1:///srv/x"}, want: "local"},
		{name: "bzr memory", typ: "bzr", fields: map[string]any{"url": "memory:///"}, want: "local"},
		{
			name: "bzr branch decorator", typ: "bzr",
			fields: map[string]any{"url": "lp:project", "branches": map[string]any{"dev": "unlistable+file:///srv/x"}},
			want:   "local",
		},
		{
			name: "bzr branch path", typ: "bzr",
			fields: map[string]any{"url": "lp:project", "branches": map[string]any{"dev": "../dev"}},
			want:   "local",
		},
		{name: "cvs pserver", typ: "cvs", fields: map[string]any{"url": ":pserver:anon@cvs.example.com:/cvs", "module": "m"}},
		{name: "cvs implied ext", typ: "cvs", fields: map[string]any{"url": "cvs.example.com:/cvs", "module": "m"}},
		{name: "cvs local method", typ: "cvs", fields: map[string]any{"url": ":local:/srv/cvs", "module": "m"}, want: "local"},
		{name: "cvs fork method", typ: "cvs", fields: map[string]any{"url": ":fork:/srv/cvs", "module": "m"}, want: "local"},
		{name: "cvs ext option host", typ: "cvs", fields: map[string]any{"url": ":ext:-oProxyCommand=id:/cvs", "module": "m"}, want: "option"},
		{name: "cvs implied ext option host", typ: "cvs", fields: map[string]any{"url": "-oProxyCommand=id:/cvs", "module": "m"}, want: "option"},
		{name: "cvs pserver option host", typ: "cvs", fields: map[string]any{"url": ":pserver:anon@-x:/cvs", "module": "m"}, want: "option"},
		{name: "cvs unknown method", typ: "cvs", fields: map[string]any{"url": ":other:/srv/cvs", "module": "m"}, want: "local"},
		{name: "cvs path", typ: "cvs", fields: map[string]any{"url": "/srv/cvs", "module": "m"}, want: "local"},
		{
			name: "cvs method options", typ: "cvs",
			fields: map[string]any{"url": ":ext;CVS_RSH=/tmp/evil:cvs.example.com:/cvs", "module": "m"},
			want:   "method options",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := map[string]any{"type": tc.typ}
			for k, v := range tc.fields {
				raw[k] = v
			}
			v, err := lorryspec.Spec{Name: "n", Type: tc.typ, Raw: raw}.Decode()
			if err != nil {
				t.Fatal(err)
			}
			err = checkSources(tc.typ, v, false)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("got %v, want the source accepted", err)
			case tc.want == "local" && (err == nil || !strings.Contains(err.Error(), "--allow-local-sources")):
				t.Errorf("got %v, want the local source refused", err)
			case tc.want != "" && tc.want != "local" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
			if tc.want == "local" {
				if err := checkSources(tc.typ, v, true); err != nil {
					t.Errorf("with local sources allowed: got %v, want it accepted", err)
				}
			}
		})
	}
}

// A CVSROOT is local whenever cvs, or git cvsimport, would open a path
// of this machine: every method in any case, with and without a host and
// a user, with and without a method.
func TestCvsRootsLocal(t *testing.T) {
	cases := func(m string) []string { return []string{m, strings.ToUpper(m), strings.ToUpper(m[:1]) + m[1:]} }
	remote := map[string]bool{"pserver": true, "ext": true, "extssh": true, "server": true, "ssh": true}
	for _, method := range []string{"local", "fork", "pserver", "ext", "extssh", "server", "ssh", "gserver", "kserver", "other"} {
		for _, m := range cases(method) {
			for _, host := range []string{"", "u@", "cvs.example.com:", "u@cvs.example.com:"} {
				root := ":" + m + ":" + host + "/srv/cvsroot"
				r, err := parseCvsRoot(root)
				switch {
				case method == "gserver" || method == "kserver":
					if err == nil || !strings.Contains(err.Error(), "does not speak") {
						t.Errorf("%s: got %+v, %v; want it refused", root, r, err)
					}
				case err != nil:
					t.Errorf("%s: %v", root, err)
				case r.local != (!remote[method] || !strings.Contains(host, "cvs.example.com")):
					t.Errorf("%s: local = %v", root, r.local)
				case r.local && method != "other" && (host == "" || remote[method]) && r.plain() != "/srv/cvsroot":
					t.Errorf("%s: handed to the tools as %q, want the path", root, r.plain())
				case !r.local:
					want := ":ext:"
					if method == "pserver" {
						want = ":pserver:"
					}
					if !strings.HasPrefix(r.plain(), want) {
						t.Errorf("%s: handed to the tools as %q, want it to start with %s", root, r.plain(), want)
					}
				}
			}
		}
	}
	for root, local := range map[string]bool{
		"/srv/cvsroot": true, "cvsroot": true, "cvs.example.com:cvsroot": true, "u@cvs.example.com:cvsroot": true,
		"cvs.example.com:/srv/cvsroot": false, "u@cvs.example.com:/srv/cvsroot": false, ":ext:cvs.example.com/srv/cvsroot": false,
	} {
		r, err := parseCvsRoot(root)
		if err != nil || r.local != local {
			t.Errorf("%s: got local %v, %v; want local %v", root, r.local, err, local)
		}
	}
}

// A local CVS repository named by a root of a remote method without a
// host, its admin files as the module, is refused unless local sources
// are allowed, and nothing of it is converted.
func TestCvsLocalRootRefused(t *testing.T) {
	needTools(t, "cvs", "cvsps", "openssl")
	root := secretCvsRepo(t, t.TempDir(), nil)
	for _, url := range []string{":ext:" + root, ":EXT:" + root, ":extssh:" + root, ":ssh:" + root, ":server:" + root,
		":pserver:" + root, ":pserver:u@" + root, ":fork:" + root, ":LOCAL:" + root, root} {
		spec := lorryspec.Spec{Name: "up/cvs", Type: "cvs", Raw: map[string]any{"type": "cvs", "url": url, "module": "CVSROOT"}}
		res, out := runLocal(t, spec, false)
		if res.Err == nil || !strings.Contains(res.Err.Error(), "--allow-local-sources") {
			t.Errorf("%s: got %v, want the local source refused", url, res.Err)
		}
		if strings.Contains(out, "converting") {
			t.Errorf("%s: the refused root was converted:\n%s", url, out)
		}
	}
	spec := lorryspec.Spec{Name: "up/cvs", Type: "cvs", Raw: map[string]any{"type": "cvs", "url": ":ext:" + root, "module": "mod"}}
	if res, _ := runLocal(t, spec, true); res.Err != nil {
		t.Errorf("with local sources allowed: %v", res.Err)
	}
}
