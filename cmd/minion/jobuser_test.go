package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"lorrycontroller.dev/lc/hosts/downstream"
	"lorrycontroller.dev/lc/seccomptest"
	"lorrycontroller.dev/lc/wire"
)

// The users of the --job-user tests: the minion's, with only the
// capabilities the unit grants it, and the jobs'. The minion's user is
// in the jobs' group, as sysusers.d makes it.
const (
	testMinionUser = "lc-test-minion"
	testJobUser    = "lc-test-jobs"
)

// ids is a user's uid and gid.
type ids struct{ uid, gid uint32 }

// ensureUser makes the system user name unless it exists, and adds it to
// the groups given.
func ensureUser(t *testing.T, name string, groups ...string) ids {
	t.Helper()
	if _, err := user.Lookup(name); err != nil {
		out, err := exec.Command("useradd", "--system", "--user-group", "--no-create-home",
			"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name).CombinedOutput()
		if err != nil {
			t.Fatalf("useradd %s: %v\n%s", name, err, out)
		}
	}
	for _, g := range groups {
		if out, err := exec.Command("usermod", "--append", "--groups", g, name).CombinedOutput(); err != nil {
			t.Fatalf("usermod %s: %v\n%s", name, err, out)
		}
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return ids{uint32(uid), uint32(gid)}
}

// jobUserRig runs the real minion as an unprivileged user with only
// CAP_SETUID, CAP_SETGID and CAP_KILL, and under RestrictSUIDSGID=, as its
// unit does, and its jobs as another user.
type jobUserRig struct {
	base   string // owned by the minion's user, open to all
	exe    string // the test binary, where the minion's user can run it
	token  string // the minion's token file, 0600
	minion ids
	jobs   ids
}

func newJobUserRig(t *testing.T) *jobUserRig {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: making the test users and starting the minion as one of them with capabilities takes root (CI runs this as root)")
	}
	r := &jobUserRig{jobs: ensureUser(t, testJobUser)}
	r.minion = ensureUser(t, testMinionUser, testJobUser)
	base, err := os.MkdirTemp("", "jobuser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	r.base = base
	r.chown(t, base, r.minion, 0o755)

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r.exe = filepath.Join(base, "minion.test")
	copyFile(t, self, r.exe, 0o755)
	r.token = filepath.Join(base, "minion.token")
	if err := os.WriteFile(r.token, []byte("minion-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.chown(t, r.token, r.minion, 0o600)
	return r
}

func (r *jobUserRig) chown(t *testing.T, path string, to ids, mode os.FileMode) {
	t.Helper()
	if err := os.Chown(path, int(to.uid), int(to.gid)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// dir makes a directory in the rig that the jobs' user may write.
func (r *jobUserRig) dir(t *testing.T, name string) string {
	t.Helper()
	d := filepath.Join(r.base, name)
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	r.chown(t, d, r.jobs, 0o755)
	return d
}

// script writes an executable shell script into the rig.
func (r *jobUserRig) script(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(r.base, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs the minion once, as its user with its three capabilities,
// and returns its log.
func (r *jobUserRig) run(t *testing.T, w *webapp, lorry string) string {
	t.Helper()
	cmd, logs := r.start(t, w, lorry, "--once")
	if code := waitExit(t, cmd, logs); code != 0 {
		t.Fatalf("minion exit code %d, want 0; log:\n%s", code, logs)
	}
	return logs.String()
}

// start starts the minion as its user, in the jobs' group, with its
// three capabilities.
func (r *jobUserRig) start(t *testing.T, w *webapp, lorry string, extra ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	return r.startIn(t, []uint32{r.jobs.gid}, w, lorry, extra...)
}

// startIn is start with the minion's supplementary groups given.
func (r *jobUserRig) startIn(t *testing.T, groups []uint32, w *webapp, lorry string, extra ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(r.exe, append([]string{
		"--webapp-url", w.srv.URL,
		"--name", "ju",
		"--lorry-cmd", lorry,
		"--working-area", filepath.Join(r.base, "work"),
		"--token-file", r.token,
		"--job-user", testJobUser,
		"--sleep", "20ms",
		"--update-interval", "20ms",
		"--kill-grace", "5s",
	}, extra...)...)
	cmd.Env = append(os.Environ(), mainEnv+"=1", "GORACE=atexit_sleep_ms=0", seccomptest.Env+"=1")
	cmd.Dir = r.base
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential:  &syscall.Credential{Uid: r.minion.uid, Gid: r.minion.gid, Groups: groups},
		AmbientCaps: []uintptr{unix.CAP_SETUID, unix.CAP_SETGID, unix.CAP_KILL},
	}
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &logs
}

// output is what the job wrote to stdout and to stderr, and its exit.
func output(w *webapp) (stdout, stderr, exit string) {
	_, updates := w.snapshot()
	var o, e strings.Builder
	for _, u := range updates {
		o.WriteString(u["stdout"])
		e.WriteString(u["stderr"])
	}
	if len(updates) > 0 {
		exit = updates[len(updates)-1]["exit"]
	}
	return o.String(), e.String(), exit
}

// A scraper, and the build of its runtime, run as --job-user: the
// scraper cannot open the minion's token file or its locks, and holds
// none of the minion's capabilities, inheritable ones included, though
// the minion is no root.
func TestJobUserScraper(t *testing.T) {
	r := newJobUserRig(t)
	python := r.script(t, "python", "if [ \"$1 $2\" = \"-m venv\" ]; then mkdir -p \"$3/bin\" && cp \"$0\" \"$3/bin/python\"; fi\n")
	lockFile := filepath.Join(r.base, "work", "scrapers", "ju.lock")
	nameLock := filepath.Join(r.base, "work", ".jobs", "ju.lock")
	probe := fmt.Sprintf(`id -u; id -G; grep '^Cap\(Inh\|Prm\|Eff\|Amb\)' /proc/self/status
stat -c 'env %%u' "$VIRTUAL_ENV"
for f in %s %s %s; do cat "$f" >/dev/null && echo "read $f"; done
true`, r.token, lockFile, nameLock)
	job := scraperJob(t, "sh", "-c", probe)
	var answer map[string]any
	if err := json.Unmarshal([]byte(job), &answer); err != nil {
		t.Fatal(err)
	}
	answer["scraper"].(map[string]any)["runtime"].(map[string]any)["python"] = python
	b, _ := json.Marshal(answer)
	w := newWebapp(t, string(b))
	logs := r.run(t, w, "/bin/true")

	stdout, stderr, exit := output(w)
	if exit != "0" {
		t.Fatalf("scraper exit %q, want 0; stdout %q, stderr %q; log:\n%s", exit, stdout, stderr, logs)
	}
	want := fmt.Sprintf("%d\n%d\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapAmb:\t0000000000000000\nenv %d\n", r.jobs.uid, r.jobs.gid, r.jobs.uid)
	if stdout != want {
		t.Errorf("scraper's ids, capabilities and runtime's owner:\ngot  %q\nwant %q", stdout, want)
	}
	for _, f := range []string{r.token, lockFile, nameLock} {
		if want := "cat: " + f + ": Permission denied\n"; !strings.Contains(stderr, want) {
			t.Errorf("scraper opening %s: stderr %q, want %q", f, stderr, want)
		}
	}
}

// lorry, run as --job-user under the units' umask, mirrors and pushes to
// a repository that a local downstream made in a base directory of the
// jobs' group, and what it found (the upstream's default branch, the
// refs it changed, the class of a failure) reaches the WEBAPP, though the
// minion cannot read the jobs' user's files.
func TestJobUserLorryMirrors(t *testing.T) {
	r := newJobUserRig(t)
	lorry := filepath.Join(r.base, "lorry")
	if out, err := exec.Command("go", "build", "-o", lorry, "lorrycontroller.dev/lc/cmd/lorry").CombinedOutput(); err != nil {
		t.Fatalf("build lorry: %v\n%s", err, out)
	}
	old := syscall.Umask(0o027)
	t.Cleanup(func() { syscall.Umask(old) })
	repos := r.dir(t, "repos")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: r.jobs.uid, Gid: r.jobs.gid}}
		cmd.Env = append(os.Environ(), "HOME="+repos, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	up := filepath.Join(repos, "up.git")
	git("init", "-q", "--bare", "-b", "main", up)
	src := filepath.Join(repos, "src")
	git("init", "-q", "-b", "main", src)
	git("-C", src, "commit", "-q", "--allow-empty", "-m", "first")
	git("-C", src, "tag", "v1")
	git("-C", src, "push", "-q", up, "main", "v1")

	// The WEBAPP's user owns the base directory and makes the repository;
	// the jobs' group, which is all lorry has, may enter it.
	mirrors := filepath.Join(r.base, "mirrors")
	if err := os.Mkdir(mirrors, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(mirrors, int(r.minion.uid), int(r.jobs.gid)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(mirrors, 0o750|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	down, err := downstream.Local{BaseDir: mirrors}.Prepare(t.Context(), downstream.Repo{Path: "upstream/project"})
	if err != nil {
		t.Fatal(err)
	}

	spec, _ := json.Marshal(map[string]any{"upstream/project": map[string]string{"type": "git", "url": "file://" + up}})
	jobFor := func(id int, pushURL string) string {
		job, _ := json.Marshal(map[string]any{
			"job_id": id, "path": "upstream/project", "kind": "lorry", "text": string(spec),
			"push_url": pushURL, "allow_local_sources": true,
		})
		return string(job)
	}
	w := newWebapp(t, jobFor(50, down))
	logs := r.run(t, w, lorry)
	stdout, stderr, exit := output(w)
	if exit != "0" {
		t.Fatalf("lorry exit %q, want 0; stdout %q, stderr %q; log:\n%s", exit, stdout, stderr, logs)
	}
	if got, want := git("--git-dir", down, "for-each-ref"), git("-C", up, "for-each-ref"); got != want {
		t.Errorf("downstream refs:\n%s\nwant the upstream's:\n%s", got, want)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(r.base, "work", "upstream%2Fproject"), &st); err != nil {
		t.Fatal(err)
	} else if st.Uid != r.jobs.uid {
		t.Errorf("lorry's working directory belongs to %d, want the job's user %d", st.Uid, r.jobs.uid)
	}
	final := lastUpdate(t, w)
	if got := final["head"]; got != "main" {
		t.Errorf("head in the final update: got %q, want main; log:\n%s", got, logs)
	}
	var refs wire.RefChanges
	if err := json.Unmarshal([]byte(final["refs"]), &refs); err != nil {
		t.Errorf("refs in the final update: %q: %v; log:\n%s", final["refs"], err, logs)
	}
	var created []string
	for _, c := range refs.Created {
		created = append(created, c.Ref)
	}
	if got, want := strings.Join(created, " "), "refs/heads/main refs/tags/v1"; got != want {
		t.Errorf("refs created in the final update: got %q, want %q", got, want)
	}

	// A push that fails is the downstream's failure.
	w = newWebapp(t, jobFor(51, filepath.Join(mirrors, "missing.git")))
	logs = r.run(t, w, lorry)
	if _, _, exit := output(w); exit != "1" {
		t.Fatalf("lorry pushing nowhere: exit %q, want 1; log:\n%s", exit, logs)
	}
	if got := lastUpdate(t, w)["error_class"]; got != "downstream" {
		t.Errorf("error class of a failed push: got %q, want downstream; log:\n%s", got, logs)
	}
}

// Under --job-user the spec file is of mode 0640, the minion's user's
// and the jobs' group's, so that lorry, run as the jobs' user, reads it
// and no other user does; it is removed when the job ends.
func TestJobUserSpecFile(t *testing.T) {
	r := newJobUserRig(t)
	lorry := r.script(t, "lorry", `for spec; do :; done
echo "$spec"
stat -c '%a %u %g' "$spec"
cat "$spec"
`)
	w := newWebapp(t, `{"job_id": 70, "path": "delta/spec", "kind": "lorry", "text": "{\"delta/spec\": {\"type\": \"git\"}}"}`)
	logs := r.run(t, w, lorry)

	stdout, stderr, exit := output(w)
	if exit != "0" {
		t.Fatalf("lorry exit %q, want 0; stdout %q, stderr %q; log:\n%s", exit, stdout, stderr, logs)
	}
	spec, rest, _ := strings.Cut(stdout, "\n")
	if !strings.HasPrefix(spec, filepath.Join(r.base, "work")+"/") || !strings.HasSuffix(spec, ".lorry") {
		t.Fatalf("spec file: got %q, want a .lorry file in the working area", spec)
	}
	want := fmt.Sprintf("640 %d %d\n{\"delta/spec\": {\"type\": \"git\"}}", r.minion.uid, r.jobs.gid)
	if rest != want {
		t.Errorf("spec file's mode, owner and group, and content, as lorry saw them:\ngot  %q\nwant %q", rest, want)
	}
	if _, err := os.Lstat(spec); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("spec file %s after the job: got %v, want it removed", spec, err)
	}
}

// lastUpdate is the final job-update that w received.
func lastUpdate(t *testing.T, w *webapp) map[string]string {
	t.Helper()
	_, updates := w.snapshot()
	if len(updates) == 0 {
		t.Fatal("no job-update")
	}
	return updates[len(updates)-1]
}

// readPid reads the pid a job wrote to path.
func readPid(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the job never started its child: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// A minion, no root, killed outright and started again kills what is
// left of its job, which runs as --job-user: it reads the job's mark in
// the environment of the job's processes as the job's user.
func TestJobUserCleanUp(t *testing.T) {
	r := newJobUserRig(t)
	pids := r.dir(t, "pids")
	pidFile := filepath.Join(pids, "child")
	lorry := r.script(t, "lorry", "sleep 1000 &\necho $! > "+pidFile+"\necho started\nwait\n")
	w := newWebapp(t, `{"job_id": 70, "path": "delta/left", "kind": "lorry", "text": "{}"}`)
	cmd, logs := r.start(t, w, lorry)
	select {
	case <-w.started:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the job did not start; log:\n%s", logs)
	}
	pid := readPid(t, pidFile)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	// The minion and its job's watchdog die at once, as a machine's
	// OOM killer might have them, leaving the child to the next start.
	killWatchdogs(t, cmd.Process.Pid)
	cmd.Process.Kill()
	cmd.Wait()
	if gone(pid) {
		t.Fatal("the job's child died with the minion; nothing to test")
	}

	logs2 := r.run(t, w, lorry)
	deadline := time.Now().Add(10 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the minion started again left the job's child %d running; log:\n%s", pid, logs2)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop-job kills the whole tree of a job that runs as --job-user: the
// minion, no root, signals it with CAP_KILL.
func TestJobUserStopJob(t *testing.T) {
	r := newJobUserRig(t)
	pids := r.dir(t, "pids")
	pidFile := filepath.Join(pids, "child")
	lorry := r.script(t, "lorry", "sleep 1000 &\necho $! > "+pidFile+"\necho started\nwait\n")
	w := newWebapp(t, `{"job_id": 60, "path": "delta/stop", "kind": "lorry", "text": "{}"}`)
	w.killOnStart.Store(true)
	logs := r.run(t, w, lorry)

	_, _, exit := output(w)
	if exit != "143" {
		t.Errorf("killed job's exit: got %q, want 143 (SIGTERM); log:\n%s", exit, logs)
	}
	pid := readPid(t, pidFile)
	deadline := time.Now().Add(10 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the job's child %d outlived stop-job", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A minion whose user is not in the jobs' user's group refuses to start,
// and says why, rather than fail every job: whether it makes its working
// area or finds it made, as systemd-tmpfiles makes it, already of the
// jobs' group.
func TestJobUserNotInGroup(t *testing.T) {
	r := newJobUserRig(t)
	for _, tc := range []struct {
		name string
		made bool
	}{
		{name: "working area to make"},
		{name: "working area made by tmpfiles", made: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := filepath.Join(r.base, "work")
			os.RemoveAll(work)
			if tc.made {
				if err := os.Mkdir(work, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Chown(work, int(r.minion.uid), int(r.jobs.gid)); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(work, 0o770|os.ModeSticky); err != nil {
					t.Fatal(err)
				}
			}
			w := newWebapp(t, `{"job_id": 80, "path": "delta/group", "kind": "lorry", "text": "{}"}`)
			cmd, logs := r.startIn(t, nil, w, "/bin/true", "--once")
			if code := waitExit(t, cmd, logs); code == 0 {
				t.Fatalf("minion not in the jobs' group: exit 0; want it refused. log:\n%s", logs)
			}
			if want := "not in the group"; !strings.Contains(logs.String(), want) {
				t.Errorf("the minion's log does not say %q:\n%s", want, logs)
			}
			if polls, _ := w.snapshot(); polls != 0 {
				t.Errorf("the minion asked for work %d times; want none", polls)
			}
		})
	}
}

// --job-user refuses users that would defeat it.
func TestLookupJobUserRefuses(t *testing.T) {
	self, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil {
		t.Skipf("the test's own user has no name: %v", err)
	}
	tests := []struct {
		name, user, want string
	}{
		{name: "unknown", user: "no-such-user-here", want: "unknown user"},
		{name: "root", user: "root", want: "must not run as root"},
		{name: "own user", user: self.Username, want: "the minion's own user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.user == "root" && os.Getuid() == 0 {
				// Root is also the test's own user; either refusal will do.
				tt.want = "root"
			}
			_, err := lookupJobUser(tt.user)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("lookupJobUser(%q): got %v, want an error saying %q", tt.user, err, tt.want)
			}
		})
	}
	if u, err := lookupJobUser(""); u != nil || err != nil {
		t.Errorf(`lookupJobUser(""): got %v, %v; want nil, nil`, u, err)
	}
}

// A local upstream that is not the jobs' user's own is refused by the
// git of a job, which says so, until the git configuration that
// --git-config names lists it in safe.directory.
func TestJobUserGitConfigSafeDirectory(t *testing.T) {
	r := newJobUserRig(t)
	lorry := filepath.Join(r.base, "lorry")
	if out, err := exec.Command("go", "build", "-o", lorry, "lorrycontroller.dev/lc/cmd/lorry").CombinedOutput(); err != nil {
		t.Fatalf("build lorry: %v\n%s", err, out)
	}
	git := func(t *testing.T, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// The upstream is root's; the downstream the jobs' user's.
	up, src := filepath.Join(r.base, "up.git"), filepath.Join(r.base, "src")
	git(t, "init", "-q", "-b", "main", src)
	git(t, "-C", src, "commit", "-q", "--allow-empty", "-m", "first")
	git(t, "clone", "-q", "--bare", src, up)
	down := filepath.Join(r.dir(t, "repos"), "down.git")
	git(t, "init", "-q", "--bare", down)
	if err := filepath.WalkDir(down, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(r.jobs.uid), int(r.jobs.gid))
	}); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(r.base, "jobs.gitconfig")
	if err := os.WriteFile(config, []byte("[safe]\n\tdirectory = "+up+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	spec, _ := json.Marshal(map[string]any{"upstream/project": map[string]string{"type": "git", "url": "file://" + up}})
	job, _ := json.Marshal(map[string]any{
		"job_id": 51, "path": "upstream/project", "kind": "lorry", "text": string(spec),
		"push_url": down, "allow_local_sources": true,
	})
	for _, tc := range []struct {
		name  string
		extra []string
		ok    bool
	}{
		{name: "refused by default"},
		{name: "allowed by --git-config", extra: []string{"--git-config", config}, ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWebapp(t, string(job))
			cmd, logs := r.start(t, w, lorry, append([]string{"--once"}, tc.extra...)...)
			if code := waitExit(t, cmd, logs); code != 0 {
				t.Fatalf("minion exit code %d, want 0; log:\n%s", code, logs)
			}
			stdout, stderr, exit := output(w)
			if (exit == "0") != tc.ok {
				t.Fatalf("lorry exit %q, want success %v; stdout %q, stderr %q", exit, tc.ok, stdout, stderr)
			}
			if !tc.ok {
				for _, want := range []string{"detected dubious ownership", "safe.directory"} {
					if !strings.Contains(stdout+stderr, want) {
						t.Errorf("job output does not say %q: stdout %q, stderr %q", want, stdout, stderr)
					}
				}
				return
			}
			if got, want := git(t, "-c", "safe.directory=*", "-C", down, "for-each-ref"), git(t, "-C", up, "for-each-ref"); got != want {
				t.Errorf("downstream refs:\n%s\nwant the upstream's:\n%s", got, want)
			}
		})
	}
}

// A job that runs as --job-user, of a minion that is stopped (SIGSTOP)
// and so cannot kill it, ends by the end of its lease all the same: its
// watchdog, which keeps the minion's capabilities, kills the leader and
// its child while the minion is still stopped.
func TestJobUserStoppedMinion(t *testing.T) {
	r := newJobUserRig(t)
	pids := r.dir(t, "pids")
	leaderFile, childFile := filepath.Join(pids, "leader"), filepath.Join(pids, "child")
	lorry := r.script(t, "lorry", "echo $$ > "+leaderFile+"\nsleep 1000 &\necho $! > "+childFile+
		"\necho started\nwhile :; do echo line; sleep 0.1; done\n")
	w := newWebapp(t, `{"job_id": 61, "path": "delta/stopped", "kind": "lorry", "text": "{}", "lease": 2, "kill_grace": 1}`)
	cmd, logs := r.start(t, w, lorry)
	defer func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Signal(syscall.SIGTERM)
		waitExit(t, cmd, logs)
	}()
	select {
	case <-w.started:
	case <-time.After(30 * time.Second):
		t.Fatalf("the job never started; log:\n%s", logs)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	leader, child := readPid(t, leaderFile), readPid(t, childFile)
	for deadline := time.Now().Add(30 * time.Second); !gone(leader) || !gone(child); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("the job (leader %d, child %d) outlived its lease by 30s while its minion was stopped", leader, child)
		}
	}
	if !stoppedProcess(cmd.Process.Pid) {
		t.Errorf("the minion is no longer stopped, want the job killed without it")
	}
}

// stoppedProcess says whether pid is stopped by a signal.
func stoppedProcess(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'T'
}
