// Package venv is a minion's cache of runtimes: the Python virtual
// environments that scrapers run in, shared by every job and every minion
// on the machine that needs the same one, built once, kept while any job
// uses them, and removed when outdated and unused.
//
// # Layout
//
// A runtime is named by Runtime: Name, Version (the short ID unless given)
// and ID, the git tree id of its source. The cache directory holds
//
//	DIR/NAME/VERSION/ID/        the environment: bin/python, lib/, ...
//	DIR/NAME/VERSION/ID/src/    the source it was built from
//	DIR/NAME/VERSION/ID/READY   written last, when the build is complete
//	DIR/NAME/VERSION/ID.usage   the usage lock; its mtime is the last use
//	DIR/NAME/VERSION/ID.build   the build lock
//
// # Locks
//
// Acquire takes a shared usage lock on the ID first, and keeps it for as
// long as the environment is in use. If READY is there, that is all. If
// not, it also takes the exclusive build lock, looks again (another process
// may have built it meanwhile), wipes whatever a crashed build left, builds,
// and releases the build lock. Whoever removes an environment holds its
// usage lock exclusively, which it only tries for, never waits for, and
// its build lock too, so no builder starts there meanwhile.
//
// The usage lock comes first so that, between a user finding the
// environment complete and using it, nothing can remove it. The other
// order lets a race through: a user that took only the build lock, found
// READY and let go, holds nothing until its usage lock is granted; a
// builder that just finished a newer environment can take the old one's
// usage lock in that gap and delete the environment the user is about to
// run.
//
// Each lock has two levels: an in-process one, on which the goroutines of
// one process wait for each other, and a flock(2) on the lock file, which
// orders processes. The kernel drops a flock when the last process holding
// the open file ends, so a crash never leaves a lock behind.
//
// # Building in place
//
// A virtual environment works only at the absolute path it was made at, so
// it is built where it will be used, never elsewhere and renamed: python -m
// venv, then pip install -r requirements.txt, with the Python project of
// the source too if it has a pyproject.toml or setup.py. When pip is done,
// the file system is synced and READY is written and synced; a directory
// without READY is an interrupted build, and the next builder wipes it. A
// failed build removes its directory and returns a *BuildError with the
// tail of pip's output.
//
// After a successful build the builder removes the other environments of
// the same name, of every version, whose usage lock it can take at once:
// those no job runs in. GC does the same for every name, keeping the newest
// environment of each unless it has not been used for a while, and removes
// the scraper working directories that no minion holds (LockWorkDir).
//
// # Use by a job
//
//	env, err := cache.Acquire(ctx, venv.Runtime{Name: "news", ID: id, Python: "python3"}, fetch)
//	if err != nil { ... }           // a *BuildError carries pip's output
//	defer env.Release()
//	cmd.Path = env.Python()
//	cmd.ExtraFiles = []*os.File{env.LockFile()}
//
// The job inherits the usage lock as an open file, so the environment stays
// in use for as long as any process of the job lives, even one that
// outlives the minion; Release drops only the minion's own hold.
package venv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"lorrycontroller.dev/lc/proc"

	"lorrycontroller.dev/lc/clock"
)

// Runtime names one environment.
type Runtime struct {
	Name string
	// Version groups IDs for the operator; it defaults to the short ID.
	Version string
	// ID is the git tree id of the runtime's source, in hex.
	ID string
	// Python is the interpreter that makes the environment, such as
	// python3, looked up in PATH unless it has a slash.
	Python string
}

// shortID is how much of the ID the default Version keeps, as git
// abbreviates.
const shortID = 12

var hexID = regexp.MustCompile(`^[0-9a-f]{4,64}$`)

// normal fills in the default Version and checks that the names can be
// path components.
func (rt Runtime) normal() (Runtime, error) {
	if rt.Version == "" {
		rt.Version = rt.ID[:min(shortID, len(rt.ID))]
	}
	if !hexID.MatchString(rt.ID) {
		return rt, fmt.Errorf("runtime %s: id %q is not a lowercase hex git id", rt.Name, rt.ID)
	}
	for _, c := range []struct{ what, value string }{{"name", rt.Name}, {"version", rt.Version}} {
		if err := component(c.value); err != nil {
			return rt, fmt.Errorf("runtime %s %s: %w", c.what, c.value, err)
		}
	}
	if rt.Python == "" {
		return rt, fmt.Errorf("runtime %s: no python", rt.Name)
	}
	return rt, nil
}

// component checks that s is usable as one directory name.
func component(s string) error {
	switch {
	case s == "":
		return errors.New("empty")
	case strings.HasPrefix(s, "."):
		return errors.New("may not start with a dot")
	case strings.ContainsAny(s, "/\x00\\"):
		return errors.New("may not hold a slash, backslash or NUL")
	case len(s) > 200:
		return errors.New("longer than 200 bytes")
	}
	return nil
}

// Source returns the runtime's source as a tar stream, such as the
// WEBAPP's GET /1.0/runtime/NAME/ID.tar. It is called only when the
// environment has to be built.
type Source func(ctx context.Context, rt Runtime) (io.ReadCloser, error)

// Config configures a Cache.
type Config struct {
	// Dir is the cache directory, made if missing.
	Dir string
	// PipArgs are passed to pip install, such as --index-url URL or
	// --no-index --find-links DIR.
	PipArgs []string
	// MaxSourceSize bounds the source archive; DefaultMaxSourceSize if 0.
	MaxSourceSize int64
	// Clock tells the build and use times; the system clock if nil.
	Clock clock.Clock
	// Logger; slog.Default() if nil.
	Logger *slog.Logger
	// User, when set, builds the environments: the steps of a build
	// run as that user, who owns what they make (the minion's
	// --job-user). A build runs code of the runtime's source.
	User *proc.User
}

// Cache is the runtime cache in one directory. Any number of Caches, in
// any number of processes, may share a directory.
type Cache struct {
	dir     string
	pipArgs []string
	maxSize int64
	clock   clock.Clock
	log     *slog.Logger
	locks   lockTable
	user    *proc.User

	// pipOuter caches outerPip's answer by python.
	pipMu    sync.Mutex
	pipOuter map[string]string

	// checked, when set by tests, runs after Acquire found the
	// environment complete, before it returns it.
	checked func()
}

// New returns the cache in cfg.Dir.
func New(cfg Config) (*Cache, error) {
	if cfg.Dir == "" {
		return nil, errors.New("runtime cache: no directory")
	}
	// Environments live at absolute paths; a relative one would be
	// wrong as soon as the working directory changed.
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("runtime cache %s: %w", cfg.Dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("runtime cache: %w", err)
	}
	if err := cfg.User.ShareDir(dir); err != nil {
		return nil, fmt.Errorf("runtime cache: %w", err)
	}
	c := &Cache{dir: dir, pipArgs: cfg.PipArgs, maxSize: cfg.MaxSourceSize, clock: cfg.Clock, log: cfg.Logger, user: cfg.User}
	if c.maxSize <= 0 {
		c.maxSize = DefaultMaxSourceSize
	}
	if c.clock == nil {
		c.clock = clock.System{}
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	return c, nil
}

// Dir is the cache directory, absolute.
func (c *Cache) Dir() string { return c.dir }

// slot is where one runtime lives in the cache.
type slot struct {
	name, version, id string
	dir               string // DIR/NAME/VERSION
}

func (c *Cache) slot(name, version, id string) slot {
	return slot{name: name, version: version, id: id, dir: filepath.Join(c.dir, name, version)}
}

func (s slot) env() string   { return filepath.Join(s.dir, s.id) }
func (s slot) usage() string { return filepath.Join(s.dir, s.id+".usage") }
func (s slot) build() string { return filepath.Join(s.dir, s.id+".build") }
func (s slot) String() string {
	return s.name + "/" + s.version + "/" + s.id
}

// Env is an environment in use. It stays usable until Release, and after
// that for as long as a process given LockFile lives.
type Env struct {
	// Runtime is what was asked for, with its Version filled in.
	Runtime Runtime
	// Dir is the environment's absolute path.
	Dir string
	// Built says whether this Acquire built the environment, and
	// BuildTime how long that took; a reused environment has neither.
	Built     bool
	BuildTime time.Duration

	c       *Cache
	usage   *held
	release sync.Once
	err     error
}

// Python is the environment's interpreter.
func (e *Env) Python() string { return filepath.Join(e.Dir, "bin", "python") }

// SourceDir is the runtime's source, as extracted for the build.
func (e *Env) SourceDir() string { return filepath.Join(e.Dir, "src") }

// LockFile is the open usage lock. Pass it to the job's process (in
// exec.Cmd's ExtraFiles) so that the environment stays in use while the
// job runs, whatever happens to the minion.
func (e *Env) LockFile() *os.File { return e.usage.fl.File() }

// Release records the last use and drops this process's hold on the usage
// lock; a process given LockFile keeps its own. Only the first call does
// anything.
func (e *Env) Release() error {
	e.release.Do(func() {
		s := e.c.slot(e.Runtime.Name, e.Runtime.Version, e.Runtime.ID)
		err := touch(s.usage(), e.c.clock.Now())
		e.err = errors.Join(err, e.usage.close())
	})
	return e.err
}

// Acquire returns the environment of rt, building it from src if it is not
// there yet, and holds it in use until Release. Concurrent Acquires of one
// runtime, in any processes, build it once.
func (c *Cache) Acquire(ctx context.Context, rt Runtime, src Source) (*Env, error) {
	rt, err := rt.normal()
	if err != nil {
		return nil, err
	}
	s := c.slot(rt.Name, rt.Version, rt.ID)
	usage, err := c.locks.lockFile(ctx, s.usage(), false)
	if err != nil {
		return nil, fmt.Errorf("runtime %s: %w", s, err)
	}
	env := &Env{Runtime: rt, Dir: s.env(), c: c, usage: usage}
	fail := func(err error) (*Env, error) {
		usage.close()
		return nil, err
	}
	// The job's user reaches the environment, and builds it, through
	// directories of the minion's.
	for _, d := range []string{filepath.Dir(s.dir), s.dir} {
		if err := c.user.ShareDir(d); err != nil {
			return fail(fmt.Errorf("runtime %s: %w", s, err))
		}
	}
	if err := touch(s.usage(), c.clock.Now()); err != nil {
		return fail(fmt.Errorf("runtime %s: %w", s, err))
	}
	if ready(s.env()) {
		if c.checked != nil {
			c.checked()
		}
		return env, nil
	}

	build, err := c.locks.lockFile(ctx, s.build(), true)
	if err != nil {
		return fail(fmt.Errorf("runtime %s: %w", s, err))
	}
	if ready(s.env()) {
		build.unlock()
		return env, nil
	}
	start := time.Now()
	// The build lock's time says when the environment was first asked
	// for: which of two environments of a name is the newer (gc.go).
	err = touch(s.build(), c.clock.Now())
	if err == nil {
		err = c.build(ctx, rt, s, src)
	}
	env.BuildTime = time.Since(start)
	if uerr := build.unlock(); err == nil && uerr != nil {
		err = fmt.Errorf("runtime %s: %w", s, uerr)
	}
	if err != nil {
		return fail(err)
	}
	env.Built = true
	c.log.Info("runtime built", "runtime", rt.Name, "version", rt.Version, "id", rt.ID,
		"dir", s.env(), "build_seconds", env.BuildTime.Seconds())
	c.cleanup(s)
	return env, nil
}
