// Package mirror is what lorry does for one spec: bring the upstream into a
// persistent bare git repository in the working area (fetching git,
// importing archives, converting other version control systems), then push
// that repository to the downstream.
//
// The working area holds one directory per lorry path, named by
// workarea.Name so no path can leave it:
//
//	WORKING-AREA/<escaped path>/git        the bare mirror, pushed downstream
//	WORKING-AREA/<escaped path>/<tool>     state kept by a converter
//	WORKING-AREA/<escaped path>.lock       flock while a run works on it, held
//	                                       by every program the run starts
package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"lorrycontroller.dev/lc/flock"
	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/redact"
	"lorrycontroller.dev/lc/wire"
	"lorrycontroller.dev/lc/workarea"
)

// Options say where to work and where to push.
type Options struct {
	WorkingArea string
	// PushURL is the downstream repository of the spec. MirrorBaseURLPush,
	// used when PushURL is empty, is a base to which "/<name>.git" is
	// added. With neither, or with PullOnly, nothing is pushed.
	PushURL           string
	MirrorBaseURLPush string
	PullOnly          bool
	Verbose           bool
	// Out receives progress and messages, for the admin watching the job.
	Out io.Writer
	// LockWait is how long to wait for another run on the same mirror.
	LockWait time.Duration
	// AllowLocalSources lets specs mirror paths and file: URLs of this
	// machine; see checkSources.
	AllowLocalSources bool
	// GitConfig is the file of git configuration that every git of the
	// run reads as its global configuration, "" for none: the admin's
	// settings for the git hosts (URL rewrites, certificates, ssh,
	// safe.directory). git reads no other file of configuration but the
	// repository's own, whatever the environment says; lorry's own
	// settings (GIT_ALLOW_PROTOCOL, credentials, -c options) win over it.
	GitConfig string
}

// Result says what a run did to one spec.
type Result struct {
	Name    string
	Changes Changes
	// Head is the branch that the mirror's HEAD names, without
	// refs/heads/, or "" when HEAD names no branch of the mirror: the
	// upstream's default branch for git specs, the imported branch for
	// archives, master for converted repositories.
	Head string
	// Refs are the refs the run changed downstream, or in the mirror when
	// nothing is pushed; nil when that is unknown.
	Refs *wire.RefChanges
	Err  error
	// ErrorClass, with Err, names the kind of failure: ClassLFS, or one
	// of the classes of classes.go.
	ErrorClass string
}

// Changes lists refs by what happened to them in the mirror.
type Changes struct {
	Created, Updated, Deleted []string
	Unchanged                 int
}

// String is the line lorry prints for the result.
func (r Result) String() string {
	if r.Err != nil && r.ErrorClass != "" {
		return fmt.Sprintf("%s: FAILED: %v (%s)", r.Name, r.Err, r.ErrorClass)
	}
	if r.Err != nil {
		return fmt.Sprintf("%s: FAILED: %v", r.Name, r.Err)
	}
	c := r.Changes
	if len(c.Created)+len(c.Updated)+len(c.Deleted) == 0 {
		return fmt.Sprintf("%s: ok, nothing new (%d refs unchanged)", r.Name, c.Unchanged)
	}
	var parts []string
	for _, p := range []struct {
		what string
		refs []string
	}{{"created", c.Created}, {"updated", c.Updated}, {"deleted", c.Deleted}} {
		if len(p.refs) > 0 {
			parts = append(parts, fmt.Sprintf("%s %d (%s)", p.what, len(p.refs), shortList(p.refs, 5)))
		}
	}
	parts = append(parts, fmt.Sprintf("unchanged %d", c.Unchanged))
	return fmt.Sprintf("%s: ok, %s", r.Name, strings.Join(parts, ", "))
}

func shortList(refs []string, n int) string {
	if len(refs) <= n {
		return strings.Join(refs, " ")
	}
	return strings.Join(refs[:n], " ") + fmt.Sprintf(" and %d more", len(refs)-n)
}

// job is one run on one spec: what the type-specific code needs.
type job struct {
	spec   lorryspec.Spec
	dir    string // the spec's directory in the working area
	gitDir string // the bare mirror
	opts   Options
	out    io.Writer
	// lfs says that the importer fetched the mirror's LFS objects, which
	// are to be pushed with its refs.
	lfs bool
}

// importer brings the upstream of j into j.gitDir, returning the refspecs
// to push downstream and whether refs gone upstream are to be deleted
// downstream.
type importer func(ctx context.Context, j *job, spec any) (push []string, prune bool, err error)

// importers are the implementations by spec type. A type without one
// fails with a message saying so.
var importers = map[string]importer{}

// allRefs are the refspecs that push every branch and tag.
var allRefs = []string{"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"}

// Run mirrors one spec.
func Run(ctx context.Context, spec lorryspec.Spec, opts Options) (res Result) {
	res.Name = spec.Name
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	// The spec's credentials are known: they are hidden in whatever the
	// run shows, in every form a program may print them, where parsing
	// the addresses it prints could miss them.
	known := redact.KnownInSpec([]any{spec.Raw, opts.PushURL, opts.MirrorBaseURLPush})
	shown := redact.NewWriter(out, known)
	out = shown
	defer func() {
		shown.Flush()
		res.ErrorClass = classify(res.Err, spec.Type)
		res.Err = known.Error(res.Err)
	}()
	v, err := spec.Decode()
	if err != nil {
		res.Err = err
		return res
	}
	imp, ok := importers[spec.Type]
	if !ok {
		res.Err = fmt.Errorf("%s specs are not supported by this lorry", spec.Type)
		return res
	}
	if err := checkSources(spec.Type, v, opts.AllowLocalSources); err != nil {
		res.Err = err
		return res
	}
	if opts.WorkingArea == "" {
		res.Err = errors.New("no working area")
		return res
	}
	if err := os.MkdirAll(opts.WorkingArea, 0o755); err != nil {
		res.Err = err
		return res
	}
	dir := workarea.Dir(opts.WorkingArea, spec.Name)
	lock, err := flock.Exclusive(ctx, dir+".lock", opts.LockWait)
	if err != nil {
		if errors.Is(err, flock.ErrLocked) {
			err = fmt.Errorf("another lorry is working on this mirror (%w); try again later", err)
		}
		res.Err = err
		return res
	}
	defer lock.Unlock()
	// Every program this run starts holds the lock too: if lorry is
	// killed, a git it started may go on writing to the mirror, and the
	// next run must wait for it rather than work beside it.
	if err := lock.Inherit(); err != nil {
		res.Err = err
		return res
	}

	j := &job{spec: spec, dir: dir, gitDir: filepath.Join(dir, "git"), opts: opts, out: out}
	if err := j.ensureRepo(ctx); err != nil {
		res.Err = err
		return res
	}
	before, err := j.refs(ctx)
	if err != nil {
		res.Err = err
		return res
	}
	refspecs, prune, err := imp(ctx, j, v)
	if err != nil {
		res.Err = err
		return res
	}
	after, err := j.refs(ctx)
	if err != nil {
		res.Err = err
		return res
	}
	res.Changes = diffRefs(before, after)
	if len(after) == 0 {
		res.Err = &classError{ClassEmpty, errors.New("the mirror has no refs: nothing upstream matched the spec")}
		return res
	}
	res.Head = j.headBranch(ctx, after)
	url := j.pushURL()
	if url == "" {
		res.Refs = refChanges(before, after, keepAll)
		return res
	}
	res.Refs, res.Err = j.pushCompared(ctx, url, refspecs, prune)
	if res.Err != nil && errorClass(res.Err) == "" {
		// Whatever went wrong, it went wrong downstream.
		res.Err = &classError{ClassDownstream, res.Err}
	}
	return res
}

// pushCompared pushes the mirror to url and says what that changed there.
// The downstream's refs are listed before and after, as push reports
// abbreviated object ids. A downstream whose refs cannot be listed is
// pushed to all the same, and its changes are unknown (nil).
func (j *job) pushCompared(ctx context.Context, url string, refspecs []string, prune bool) (*wire.RefChanges, error) {
	before, err := j.remoteRefs(ctx, url)
	if err != nil {
		fmt.Fprintf(j.out, "cannot tell what the push changes: %v\n", err)
	}
	if j.lfs {
		if err := j.pushLFS(ctx, url); err != nil {
			return nil, err
		}
	}
	if err := j.push(ctx, url, refspecs, prune); err != nil {
		return nil, err
	}
	if before == nil {
		return nil, nil
	}
	after, err := j.remoteRefs(ctx, url)
	if err != nil {
		fmt.Fprintf(j.out, "cannot tell what the push changed: %v\n", err)
		return nil, nil
	}
	return refChanges(before, after, pushedBy(refspecs)), nil
}

func (j *job) pushURL() string {
	switch {
	case j.opts.PullOnly:
		return ""
	case j.opts.PushURL != "":
		return j.opts.PushURL
	case j.opts.MirrorBaseURLPush != "":
		return strings.TrimSuffix(j.opts.MirrorBaseURLPush, "/") + "/" + j.spec.Name + ".git"
	}
	return ""
}

// ensureRepo makes sure the bare mirror exists and is usable. A mirror
// that a crash left unusable is started afresh: the next fetch fills it.
func (j *job) ensureRepo(ctx context.Context) error {
	if _, err := os.Stat(j.gitDir); err == nil {
		if _, err := j.git(ctx, "rev-parse", "--git-dir"); err == nil {
			return nil
		}
		fmt.Fprintf(j.out, "mirror %s is unusable; starting it afresh\n", j.gitDir)
		if err := os.RemoveAll(j.gitDir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(j.dir, 0o755); err != nil {
		return err
	}
	tmp := j.gitDir + ".new"
	os.RemoveAll(tmp)
	if _, err := j.gitIn(ctx, "", "init", "--quiet", "--bare", tmp); err != nil {
		return err
	}
	if err := j.configure(ctx, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, j.gitDir)
}

// configure sets up a new mirror repository in dir.
func (j *job) configure(ctx context.Context, dir string) error {
	// Objects fetched are kept as packs as they come: repacking a large
	// mirror on every run would cost more than it saves.
	for _, kv := range [][2]string{{"gc.auto", "0"}, {"core.logAllRefUpdates", "false"}} {
		if _, err := j.gitIn(ctx, dir, "config", kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// replaceRepo puts the repository in dir in place of the mirror.
func (j *job) replaceRepo(ctx context.Context, dir string) error {
	if err := j.configure(ctx, dir); err != nil {
		return err
	}
	old := j.gitDir + ".old"
	os.RemoveAll(old)
	if err := os.Rename(j.gitDir, old); err != nil {
		return err
	}
	if err := os.Rename(dir, j.gitDir); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

// refs maps every ref of the mirror to its object id.
func (j *job) refs(ctx context.Context) (map[string]string, error) {
	out, err := j.git(ctx, "for-each-ref", "--format=%(objectname) %(refname)")
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if id, name, ok := strings.Cut(line, " "); ok {
			refs[name] = id
		}
	}
	return refs, nil
}

func diffRefs(before, after map[string]string) Changes {
	var c Changes
	for name, id := range after {
		old, ok := before[name]
		switch {
		case !ok:
			c.Created = append(c.Created, name)
		case old != id:
			c.Updated = append(c.Updated, name)
		default:
			c.Unchanged++
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			c.Deleted = append(c.Deleted, name)
		}
	}
	slices.Sort(c.Created)
	slices.Sort(c.Updated)
	slices.Sort(c.Deleted)
	return c
}

// push sends refspecs of the mirror to url. Progress goes to the output.
func (j *job) push(ctx context.Context, url string, refspecs []string, prune bool) error {
	args := []string{"push", "--porcelain"}
	if prune {
		args = append(args, "--prune")
	}
	if j.opts.Verbose {
		args = append(args, "--progress")
	}
	plain, creds, err := credentials(url)
	if err != nil {
		return err
	}
	args = append(args, trustLocal(plain, "receive-pack")...)
	args = append(args, "--", plain)
	args = append(args, refspecs...)
	fmt.Fprintf(j.out, "pushing to %s\n", redact.URLs(url))
	err = writeLocal(plain, func() error {
		_, err := run(ctx, j.out, j.gitEnv(j.gitDir, configEnv(creds)), "git", args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("push to %s: %w", redact.URLs(url), err)
	}
	if dir, ok := localRepo(url); ok {
		return j.setHead(ctx, dir)
	}
	return nil
}

// localRepo tells whether url is a repository on this machine, and where.
func localRepo(url string) (string, bool) {
	if dir, ok := strings.CutPrefix(url, "file://"); ok {
		return dir, true
	}
	return url, filepath.IsAbs(url)
}

// setHead points the HEAD of the local repository dir at the mirror's
// default branch, so that a clone of the downstream checks out what a clone
// of the upstream would. A push cannot do that; a remote host's default
// branch is set through its API instead.
func (j *job) setHead(ctx context.Context, dir string) error {
	head, err := j.git(ctx, "symbolic-ref", "--quiet", "HEAD")
	if err != nil {
		return nil // a detached HEAD: nothing to follow
	}
	head = strings.TrimSpace(head)
	if _, err := j.git(ctx, "rev-parse", "--verify", "--quiet", head); err != nil {
		return nil // the default branch was not mirrored
	}
	if _, err := j.gitIn(ctx, dir, "symbolic-ref", "HEAD", head); err != nil {
		return fmt.Errorf("set the default branch of %s: %w", dir, err)
	}
	return nil
}

// headBranch is the branch the mirror's HEAD names, without refs/heads/,
// or "" if refs has no such branch.
func (j *job) headBranch(ctx context.Context, refs map[string]string) string {
	out, err := j.git(ctx, "symbolic-ref", "--quiet", "HEAD")
	if err != nil {
		return "" // a detached HEAD
	}
	ref := strings.TrimSpace(out)
	branch, ok := strings.CutPrefix(ref, "refs/heads/")
	if !ok || refs[ref] == "" {
		return ""
	}
	return branch
}

// git runs git on the mirror.
func (j *job) git(ctx context.Context, args ...string) (string, error) {
	return j.gitIn(ctx, j.gitDir, args...)
}

// gitIn runs git with GIT_DIR dir ("" for none) and returns its standard
// output. Its standard error goes to the job's output as it comes, so an
// admin sees progress; a failure's error carries its last lines.
func (j *job) gitIn(ctx context.Context, dir string, args ...string) (string, error) {
	return run(ctx, j.out, j.gitEnv(dir, nil), "git", args...)
}

// gitEnv is the environment for git: never prompting, reading the
// configuration of Options.GitConfig and no other but the repository's
// (not the system's, not one that the inherited environment names),
// using only the transports of the mirror's own work (see upstreamEnv
// for fetching from upstream), plus extra.
func (j *job) gitEnv(gitDir string, extra []string) []string {
	global := j.opts.GitConfig
	if global == "" {
		global = os.DevNull
	}
	env := append(os.Environ(),
		"GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+global,
		"GIT_ALLOW_PROTOCOL="+workProtocols,
		"GIT_AUTHOR_NAME=Lorry", "GIT_AUTHOR_EMAIL=lorry@localhost",
		"GIT_COMMITTER_NAME=Lorry", "GIT_COMMITTER_EMAIL=lorry@localhost",
	)
	if gitDir != "" {
		env = append(env, "GIT_DIR="+gitDir)
	}
	return append(env, extra...)
}

// run runs a command with env and returns its standard output. Its
// standard error goes to out as it comes, with the credentials of URLs
// hidden; a failure's error carries the line that says what went wrong.
func run(ctx context.Context, out io.Writer, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var stdout bytes.Buffer
	tail := &tailWriter{max: 2048}
	errOut := &redactingWriter{w: out}
	cmd.Stdout = &stdout
	cmd.Stderr = io.MultiWriter(errOut, tail)
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	errOut.Flush()
	return stdout.String(), toolError(err, tail, name, args)
}

func lastLine(s string) string {
	if i := strings.LastIndexAny(s, "\r\n"); i >= 0 {
		return s[i+1:]
	}
	return s
}

// syncWriter lets programs that run at the same time share the job's
// output.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *syncWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// tailWriter keeps the last bytes written to it.
type tailWriter struct {
	max int
	buf []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailWriter) String() string { return string(t.buf) }
