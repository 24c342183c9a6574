package venv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"lorrycontroller.dev/lc/atomicfile"
	"lorrycontroller.dev/lc/proc"
	"lorrycontroller.dev/lc/requirements"
)

// readyName is the marker of a complete environment.
const readyName = "READY"

// readyInfo is what READY says about the build.
type readyInfo struct {
	Name         string    `json:"name"`
	Version      string    `json:"version"`
	ID           string    `json:"id"`
	Python       string    `json:"python"`
	Built        time.Time `json:"built"`
	BuildSeconds float64   `json:"build_seconds"`
}

func ready(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, readyName))
	return err == nil
}

func readReady(dir string) (readyInfo, error) {
	var info readyInfo
	b, err := os.ReadFile(filepath.Join(dir, readyName))
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("read %s: %w", filepath.Join(dir, readyName), err)
	}
	return info, nil
}

// BuildError is a failed step of a build, with the end of its output: what
// a job shows as the reason it failed.
type BuildError struct {
	Runtime string // NAME/VERSION/ID
	Step    string // such as "pip install"
	Exit    int    // the step's exit code
	Output  string // the tail of its output
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("build runtime %s: %s exited with %d:\n%s", e.Runtime, e.Step, e.Exit, e.Output)
}

// tailSize is how much of a failed step's output a BuildError keeps: the
// reason pip gives is at its end.
const tailSize = 4 << 10

// killGrace is how long a cancelled step has between SIGTERM and SIGKILL.
const killGrace = 5 * time.Second

// build makes the environment of rt at its final path. It holds the build
// lock. Whatever is there without READY is what an interrupted build left
// and goes first; whatever a failed build made goes too.
func (c *Cache) build(ctx context.Context, rt Runtime, s slot, src Source) (err error) {
	dir := s.env()
	if err := c.user.RemoveAll(dir); err != nil {
		return fmt.Errorf("runtime %s: remove an interrupted build: %w", s, err)
	}
	defer func() {
		if err != nil {
			if rerr := c.user.RemoveAll(dir); rerr != nil {
				c.log.Warn("cannot remove a failed build", "dir", dir, "err", rerr)
			}
		}
	}()
	srcDir := filepath.Join(dir, "src")
	r, err := src(ctx, rt)
	if err != nil {
		return fmt.Errorf("runtime %s: fetch source: %w", s, err)
	}
	// Made as the user who builds, so that its steps may write there.
	err = c.user.Do(func() error {
		if err := os.MkdirAll(srcDir, 0o755); err != nil {
			return err
		}
		return extract(r, srcDir, c.maxSize)
	})
	r.Close()
	if err != nil {
		return fmt.Errorf("runtime %s: %w", s, err)
	}
	if _, err := os.Stat(filepath.Join(srcDir, "requirements.txt")); err != nil {
		return fmt.Errorf("runtime %s: the source has no requirements.txt", s)
	}
	// The WEBAPP refuses such requirements when it reads the
	// configuration; a runtime it accepted before it did is refused here.
	if err := checkRequirements(srcDir); err != nil {
		return fmt.Errorf("runtime %s: %w", s, err)
	}

	envPython := filepath.Join(dir, "bin", "python")
	venvArgs := []string{"-m", "venv", dir}
	pip, pipArgs := envPython, []string{"-m", "pip", "install"}
	if outer := c.outerPip(ctx, rt.Python); outer != "" {
		venvArgs = []string{"-m", "venv", "--without-pip", dir}
		pip, pipArgs = outer, []string{"-m", "pip", "--python", envPython, "install"}
	}
	if err := c.run(ctx, s, "python -m venv", srcDir, rt.Python, venvArgs...); err != nil {
		return err
	}
	args := append(pipArgs, c.pipArgs...)
	args = append(args, "-r", "requirements.txt")
	if hasProject(srcDir) {
		args = append(args, ".")
	}
	if err := c.run(ctx, s, "pip install", srcDir, pip, args...); err != nil {
		return err
	}
	return c.user.Do(func() error { return c.markReady(rt, s) })
}

// maxRequirementsSize bounds what the check reads of one requirements file.
const maxRequirementsSize = 1 << 20

// checkRequirements refuses requirements that make pip read a file outside
// the source or take packages from anywhere but the minion's --pip-arg.
// Files are opened under the source directory, so no link leads out.
func checkRequirements(srcDir string) error {
	root, err := os.OpenRoot(srcDir)
	if err != nil {
		return err
	}
	defer root.Close()
	return requirements.Check(func(name string) ([]byte, error) {
		f, err := root.Open(filepath.FromSlash(name))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if fi, err := f.Stat(); err != nil {
			return nil, err
		} else if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
		}
		b, err := io.ReadAll(io.LimitReader(f, maxRequirementsSize+1))
		if err == nil && len(b) > maxRequirementsSize {
			err = fmt.Errorf("%s is larger than %d bytes", name, maxRequirementsSize)
		}
		return b, err
	})
}

// outerPipProbe succeeds, printing "outer-pip 42" and the interpreter's
// own path, when the python's own pip can install into another
// environment (pip --python, from 22.3).
const outerPipProbe = `import sys, pip
v = tuple(int(x) for x in pip.__version__.split(".")[:2])
sys.exit(0 if v >= (22, 3) and sys.executable and print("outer-pip", 6 * 7, sys.executable) is None else 1)`

// outerPip is the interpreter whose own pip can install into the new
// environment, which then needs no pip of its own, or "" if python's
// cannot: python -m venv with ensurepip copies pip into every
// environment, which takes several seconds, where --without-pip takes a
// fraction of one. The answer is asked once per python and kept.
//
// The interpreter is python's own path (sys.executable), not python as
// named: a wrapper such as pyenv's shim may do more around "-m pip
// install" (its rehash, which fails when two builds finish at once), and
// the build's pip needs the interpreter only.
func (c *Cache) outerPip(ctx context.Context, python string) string {
	c.pipMu.Lock()
	defer c.pipMu.Unlock()
	if outer, found := c.pipOuter[python]; found {
		return outer
	}
	// Started as a build step is, as the builder and without the
	// minion's capabilities: python is the runtime's choice.
	var out []byte
	p, err := proc.Start(proc.Command{Name: python, Args: []string{"-c", outerPipProbe}, Env: c.buildEnv(), User: c.user})
	if err == nil {
		select {
		case <-p.Done():
		case <-ctx.Done():
			p.Kill(0)
		}
		exit := p.Wait()
		out, _ = p.NewOutput()
		if exit != 0 {
			err = fmt.Errorf("exit %d", exit)
		}
	}
	var outer string
	if said, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "outer-pip 42 "); err == nil && ok && filepath.IsAbs(said) {
		outer = said
	}
	if ctx.Err() == nil {
		if c.pipOuter == nil {
			c.pipOuter = map[string]string{}
		}
		c.pipOuter[python] = outer
	}
	return outer
}

func hasProject(dir string) bool {
	for _, f := range []string{"pyproject.toml", "setup.py"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// markReady makes the environment durable, then says so. syncfs flushes
// the thousands of files pip wrote in one call, where an fsync of each
// would take longer; READY is written to a temporary name, synced and
// renamed, and the directory synced, so that after a crash READY is either
// absent or complete and stands for files that are on disk.
func (c *Cache) markReady(rt Runtime, s slot) error {
	dir := s.env()
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("runtime %s: %w", s, err)
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return fmt.Errorf("runtime %s: sync: %w", s, err)
	}
	now := c.clock.Now()
	b, err := json.MarshalIndent(readyInfo{Name: rt.Name, Version: rt.Version, ID: rt.ID, Python: rt.Python, Built: now.UTC()}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, readyName), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("runtime %s: %w", s, err)
	}
	return nil
}

// run runs one step of a build in its own process group, which dies with
// the minion: a pip left running by a dead builder would write into the
// directory that the next builder wipes and rebuilds.
func (c *Cache) run(ctx context.Context, s slot, step, dir, name string, args ...string) error {
	p, err := proc.Start(proc.Command{Name: name, Args: args, Env: c.buildEnv(), Dir: dir, User: c.user})
	if err != nil {
		return fmt.Errorf("runtime %s: %s: %w", s, step, err)
	}
	var out tail
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-p.Done():
			done = true
		case <-tick.C:
		case <-ctx.Done():
			p.Kill(killGrace)
			<-p.Done()
			return fmt.Errorf("runtime %s: %s: %w", s, step, ctx.Err())
		}
		// stdout and stderr are read separately; pip writes its
		// errors to stderr and progress to stdout, and the order
		// between the two matters less than keeping both.
		o, e := p.NewOutput()
		out.write(o)
		out.write(e)
	}
	if code := p.Wait(); code != 0 {
		return &BuildError{Runtime: s.String(), Step: step, Exit: code, Output: out.String()}
	}
	return nil
}

// buildEnv is the environment of a build's steps: the variables a build
// needs from the minion's and nothing that changes what gets installed.
//
// PIP_CONFIG_FILE=/dev/null makes pip read no configuration file at all,
// neither the machine's nor the service user's, so that the --pip-arg
// flags alone say where packages come from and every minion builds the
// same environment. No cache: the environments are the cache, and a pip
// cache in the service's home would grow with nothing to clean it. No
// version check: it only adds a network request and a warning.
func (c *Cache) buildEnv() []string {
	env := []string{
		"PIP_CONFIG_FILE=/dev/null",
		"PIP_NO_CACHE_DIR=1",
		"PIP_DISABLE_PIP_VERSION_CHECK=1",
		"PIP_NO_INPUT=1",
		"PIP_PROGRESS_BAR=off",
		"PIP_ROOT_USER_ACTION=ignore",
		"PYTHONNOUSERSITE=1",
	}
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL",
		"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if c.user != nil {
		// The minion's home is not the builder's.
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "HOME=") })
		env = append(env, "HOME="+c.user.Home)
	}
	return env
}

// tail keeps the last tailSize bytes written to it.
type tail struct {
	b   []byte
	cut bool
}

func (t *tail) write(p []byte) {
	t.b = append(t.b, p...)
	if len(t.b) > tailSize {
		t.b = append(t.b[:0], t.b[len(t.b)-tailSize:]...)
		t.cut = true
	}
}

// String is the kept output from its first whole line.
func (t *tail) String() string {
	s := string(t.b)
	if t.cut {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return strings.TrimRight(s, "\n")
}
